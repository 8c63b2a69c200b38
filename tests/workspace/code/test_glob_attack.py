"""find_symbol's glob against hostile lines (issue 23, finding 2), through the real server over real pipes.

The prefilter (prefilter.py) tested the lines rg printed with the glob made a Python regex (`\\w*` a star):
twelve stars against a line that starts with a 44-character name backtrack for hours, holding the GIL
(ping was unanswered for 20 s, cancellation did nothing). The control runs that regex in a subprocess;
then the call through the server answers at once, right, with pings under 100 ms throughout.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from shipcode_mcp.transports.stdio import ORDER_GRACE
from support import McpProcess, request_while_pinging

pytest.importorskip("ast_grep_py")

GLOB = "a*" * 12 + "c"
LINE = "a" * 44 + " = " + "a_" * 12 + "c"
"""rg finds the glob's word (a_a_…c) on it; the name first on the line is what a backtracking match tries."""


def test_the_glob_as_a_regex_backtracks_for_longer_than_seconds() -> None:
    program = ("from shipcode_mcp.workspace.code import prefilter\nfrom shipcode_mcp.workspace.code.source import word_regex\n"
               f"prefilter._pattern(prefilter._PYTHON, word_regex({GLOB!r})).search({LINE!r})\n")
    with pytest.raises(subprocess.TimeoutExpired):
        subprocess.run([sys.executable, "-c", program], timeout=5, check=False)


def test_the_glob_is_matched_in_linear_time_and_ping_answers_meanwhile(tmp_path: Path) -> None:
    (tmp_path / "names.py").write_text(f"{LINE}\n{'a_' * 12}c = 2\n" * 200)
    with McpProcess(str(tmp_path)) as process:
        process.initialize()
        reply, took, latencies = request_while_pinging(
            process, "tools/call", {"name": "find_symbol", "arguments": {"name": GLOB}}, timeout=30,
            start_after=ORDER_GRACE + 0.01)
        print(f"find_symbol {GLOB}: {took:.2f} s, {len(latencies)} pings, slowest {max(latencies) * 1000:.1f} ms")
        assert max(latencies) < 0.1
        found = reply["result"]["structuredContent"]["symbols"]
        assert {item["name"] for item in found} == {"a_" * 12 + "c"}
        assert process.request("ping")["result"] == {}

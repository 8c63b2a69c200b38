"""find_symbol's glob against hostile lines (issue 23, finding 2), through the real server over real pipes.

The prefilter (prefilter.py) tested the lines rg printed with the glob made a Python regex (`\\w*` a star):
twelve stars against a line that starts with a 44-character name backtrack for hours, holding the GIL
(ping was unanswered for 20 s, cancellation did nothing). The control runs that regex in a subprocess;
then the call through the server answers at once, right, with pings under 100 ms throughout.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shipcode_mcp.transports.stdio import ORDER_GRACE
from support import McpProcess, assert_pinged_within, pinged_within_in_a_round, request_while_pinging

pytest.importorskip("ast_grep_py")

GLOB = "a*" * 12 + "c"
LINE = "a" * 44 + " = " + "a_" * 12 + "c"
"""rg finds the glob's word (a_a_…c) on it; the name first on the line is what a backtracking match tries."""


def test_the_glob_as_a_regex_backtracks_for_longer_than_seconds() -> None:
    program = ("from shipcode_mcp.workspace.code import prefilter\nfrom shipcode_mcp.workspace.code.names import word_regex\n"
               f"prefilter._pattern(prefilter._PYTHON, word_regex({GLOB!r})).search({LINE!r})\n")
    with pytest.raises(subprocess.TimeoutExpired):
        subprocess.run([sys.executable, "-c", program], timeout=5, check=False)


@pytest.mark.measures
def test_the_glob_is_matched_in_linear_time_and_ping_answers_meanwhile(tmp_path: Path) -> None:
    pinged_within_in_a_round(lambda number: glob_scenario(tmp_path / f"round {number}"))


def glob_scenario(root: Path) -> None:
    root.mkdir()
    (root / "names.py").write_text(f"{LINE}\n{'a_' * 12}c = 2\n" * 200)
    with McpProcess(str(root)) as process:
        process.initialize()
        reply, took, latencies = request_while_pinging(
            process, "tools/call", {"name": "find_symbol", "arguments": {"name": GLOB}}, timeout=30,
            start_after=ORDER_GRACE + 0.01)
        print(f"find_symbol {GLOB}: {took:.2f} s, {len(latencies)} pings, slowest {max(latencies) * 1000:.1f} ms")
        assert_pinged_within(0.1, latencies, "find_symbol")
        found = reply["result"]["structuredContent"]["symbols"]
        assert {item["name"] for item in found} == {"a_" * 12 + "c"}
        assert process.request("ping")["result"] == {}


NAME = st.text("ab_", min_size=1, max_size=5)
SHAPES = ("def {n}():", "class {n}:", "{n} = 1", "  {n} = 2", "x = 1; {n} = 2", "class A: {n} = 1", "a = {n} = 1",
          "y = z = {n} = 3", "a: {n} = 1", "if x: {n}()", "f({n})", "class A(B): x = {n} = 1", "a == {n} = 1",
          "x = {n} == 1")


@given(st.text("ab_*?", min_size=1, max_size=6).filter(lambda glob: "*" in glob or "?" in glob),
       st.sampled_from(SHAPES), NAME)
def test_the_linear_glob_test_keeps_every_line_the_regex_kept(glob: str, shape: str, name: str) -> None:
    """Every line of a definition's shape that the old regex kept for the glob is kept by the linear test
    (but a keyword's: `class` and `def` are never a symbol's name). It once dropped a chain's later
    target (`a = NAME = 1`), which the outline reports: find_symbol's glob missed it."""
    from shipcode_mcp.workspace.code import prefilter
    from shipcode_mcp.workspace.code.names import glob_matcher, word_regex

    line = shape.format(n=name)
    if any(glob_matcher(glob)(keyword) for keyword in ("def", "class")):
        return
    if re.search(prefilter._PYTHON.format(w=word_regex(glob)), line):
        test = prefilter.definition_test("python", glob)
        assert test is not None and test(line), (glob, line)


@pytest.mark.parametrize("glob", ["chained_*", "chain?d_name", "*_name"])
def test_a_glob_finds_a_chained_target_as_without_the_prefilter(tmp_path: Path, glob: str) -> None:
    from shipcode_mcp.context import Context
    from shipcode_mcp.workspace.code.navigate import find_symbol
    from shipcode_mcp.workspace.code.source import CACHE
    from shipcode_mcp.workspace.roots import Roots

    (tmp_path / "m.py").write_text("first = chained_name = 1\n")
    roots, ctx = Roots([str(tmp_path)]), Context(None, 1, "tools/call", {})
    answers = []
    for prefilter in (False, True):
        CACHE.clear()
        result = find_symbol(ctx, roots, glob, None, ".", 100, prefilter=prefilter)
        assert result.structured is not None
        answers.append([item["name"] for item in result.structured["symbols"]])
    assert answers == [["chained_name"], ["chained_name"]]

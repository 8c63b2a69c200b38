"""Hostile text for tree-sitter, through the real server over real pipes (issue 23, findings 1 and 3).

A grammar is C code: a Ruby text of heredocs trips an assertion in tree-sitter-ruby's scanner and the
process that parses it dies with SIGABRT; 80 KB of `(\\` as Lua keeps error recovery busy for tens of
seconds. Both were parsed in the server (the first killed it, the second held the GIL: no ping was
answered). Each attack is first shown to work on a plain parse (in a subprocess), then through the server,
where parses run in sandboxed workers (parsers.py): the call answers isError or counts the file as
skipped, ping answers within 100 ms throughout (in one of a few rounds: a loaded machine, not the server, now
and then delays one ping past that), and the server goes on.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from shipcode_mcp.transports.stdio import ORDER_GRACE
from support import McpProcess, assert_pinged_within, pinged_within_in_a_round, request_while_pinging

pytest.importorskip("ast_grep_py")

PING_BOUND = 0.1
SETTLE = ORDER_GRACE + 0.01
"""Pings start once the stdio loop has stopped waiting for the call it just started (support.request_while_pinging)."""
STALL_DEADLINE = 3.0
"""The parse deadline of the server in the stall test (PARSE_TIMEOUT, 10 s, made shorter for the test)."""


def heredocs(count: int = 5, length: int = 300) -> str:
    """Ruby with `count` heredocs opened on one line, each named by a `length`-character word: the scanner's
    state outgrows the buffer tree-sitter gives it, and an assertion aborts (3 KB for the defaults)."""
    names = [f"H{index}" + "X" * length for index in range(count)]
    return "x = [" + ", ".join("<<" + name for name in names) + "]\n" + "".join(f"line\n{name}\n" for name in names)


RUBY = heredocs()
STALL = ("(\\" * 40 + "\n") * 1000
"""81 KB, in lines of 80 characters, that keeps tree-sitter-lua's error recovery busy for tens of seconds
(0.8 s at a quarter of it)."""


def plain(code: str, text: str, timeout: float) -> subprocess.CompletedProcess[bytes]:
    """`code` run with ast-grep-py in a fresh Python, the text on stdin as `text`: a parse as the server did it."""
    program = f"import sys\nfrom ast_grep_py import SgRoot\ntext = sys.stdin.read()\n{code}\n"
    return subprocess.run([sys.executable, "-c", program], input=text.encode(), capture_output=True, timeout=timeout,
                          check=False)


def call(process: McpProcess, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A tool call, with pings every 10 ms meanwhile: each answered within PING_BOUND, else SlowPing (`took`,
    in seconds, is put in the result)."""
    reply, took, latencies = request_while_pinging(process, "tools/call", {"name": name, "arguments": arguments},
                                                   start_after=SETTLE)
    print(f"{name} {sorted(arguments)}: {took:.2f} s, {len(latencies)} pings, slowest {max(latencies) * 1000:.1f} ms")
    assert_pinged_within(PING_BOUND, latencies, name)
    result: dict[str, Any] = reply["result"]
    result["took"] = took
    return result


def warm(process: McpProcess, path: str) -> None:
    """The code tools' first call, on a good file, before any ping is timed: it imports their modules and
    starts a parse worker (the fork server too), tens of milliseconds of the interpreter that a loaded
    machine stretches past PING_BOUND, and no part of the attacks measured here."""
    assert not process.request("tools/call", {"name": "outline", "arguments": {"path": path}})["result"]["isError"]


def text(result: dict[str, Any]) -> str:
    return str(result["content"][0]["text"])


@pytest.mark.parametrize("code", ["SgRoot(text, 'ruby').root()", "SgRoot('', 'ruby').root().find(pattern=text)"],
                         ids=["file", "pattern"])
def test_the_ruby_text_aborts_a_plain_parse(code: str) -> None:
    done = plain(code, RUBY, 60)
    assert done.returncode == -signal.SIGABRT, done
    assert plain(code, "x = [1, 2]", 60).returncode == 0  # (the abort is this text's)


@pytest.mark.measures
@pytest.mark.timeout(300)
def test_the_ruby_text_fails_only_its_call_and_the_server_answers_on(tmp_path: Path) -> None:
    pinged_within_in_a_round(lambda number: ruby_scenario(tmp_path / f"round {number}"))


def ruby_scenario(root: Path) -> None:
    root.mkdir()
    (root / "evil.rb").write_text(RUBY)
    (root / "good.rb").write_text("def good_one\n  1\nend\n")
    with McpProcess(str(root)) as process:
        process.initialize()
        warm(process, "good.rb")
        result = call(process, "outline", {"path": "evil.rb"})
        assert result["isError"] and "the parser was killed by SIGABRT" in text(result), result
        assert "Assertion" in text(result)  # the last line the worker wrote on stderr: tree-sitter's
        folder = call(process, "outline", {"path": "."})
        assert not folder.get("isError") and folder["structuredContent"]["skipped"] == 1
        assert [item["name"] for item in folder["structuredContent"]["symbols"]] == ["good_one"]
        found = call(process, "search_structure", {"pattern": "x = $A", "language": "ruby"})
        assert found["structuredContent"]["skipped"] == 1, found
        pattern = call(process, "search_structure", {"pattern": RUBY, "language": "ruby"})
        assert pattern["isError"] and "SIGABRT" in text(pattern), pattern
        assert call(process, "find_symbol", {"name": "good_*"})["structuredContent"]["symbols"][0]["name"] == "good_one"
        assert call(process, "find_references", {"name": "good_one"})["structuredContent"]["file_count"] == 1
        assert process.proc.poll() is None
        assert process.request("ping")["result"] == {}


def test_a_pattern_longer_than_the_bound_is_refused(tmp_path: Path) -> None:
    from shipcode_mcp.workspace.code.structure import MAX_PATTERN_CHARS

    (tmp_path / "good.rb").write_text("x = 1\n")
    with McpProcess(str(tmp_path)) as process:
        process.initialize()
        result = process.call_tool("search_structure", {"pattern": "x" * (MAX_PATTERN_CHARS + 1), "language": "ruby"})
        assert result["isError"] and f"at most {MAX_PATTERN_CHARS}" in text(result)


def test_the_stall_outlasts_the_deadline_in_a_plain_parse() -> None:
    with pytest.raises(subprocess.TimeoutExpired):
        plain("SgRoot(text, 'lua').root()", STALL, STALL_DEADLINE)


@pytest.mark.measures
@pytest.mark.timeout(300)
def test_a_parse_past_its_deadline_is_stopped_and_the_server_answers_meanwhile(tmp_path: Path) -> None:
    pinged_within_in_a_round(lambda number: stall_scenario(tmp_path / f"round {number}"))


def stall_scenario(root: Path) -> None:
    root.mkdir()
    (root / "stall.lua").write_text(STALL)
    (root / "good.lua").write_text("function good_one()\n  return 1\nend\n")
    command = [sys.executable, "-c", "import sys\nfrom shipcode_mcp.workspace.code import parsers\n"
               f"parsers.PARSE_TIMEOUT = {STALL_DEADLINE}\nfrom shipcode_mcp.cli import main\nsys.exit(main())\n"]
    with McpProcess(str(root), command=command) as process:
        process.initialize()
        warm(process, "good.lua")
        result = call(process, "outline", {"path": "stall.lua"})
        assert result["isError"] and f"took longer than {STALL_DEADLINE:g} s to parse" in text(result), result
        assert result["took"] >= STALL_DEADLINE
        folder = call(process, "outline", {"path": "."})
        assert folder["structuredContent"]["skipped"] == 1
        assert [item["name"] for item in folder["structuredContent"]["symbols"]] == ["good_one"]
        assert folder["took"] < STALL_DEADLINE / 2, "the failed parse is remembered, not tried again"
        assert process.proc.poll() is None

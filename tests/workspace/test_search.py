"""search_code through the real process: matches, options, bounds, errors, progress and cancellation."""

from __future__ import annotations

import os
import random
import time
from pathlib import Path

import pytest

from workspace_support import Tools, make_repo

# Slow for ripgrep's regex engine (Unicode word boundaries rule out its fastest paths) and without a
# literal to skip by: well under 100 MB/s, so the tree below keeps rg busy long enough to cancel.
SLOW_PATTERN = r"\b\w{5}\b.{0,300}\b\w{5}\b.{0,300}\b\w{5}\b.{0,300}\d"


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = make_repo(tmp_path_factory.mktemp("search") / "repo")
    (repo / "build").mkdir()
    (repo / "build" / "gen.py").write_text("def answer(): pass  # ignored\n")
    (repo / "notes.log").write_text("answer in an ignored log\n")
    (repo / "blob.bin").write_bytes(b"answer\x00\x01\x02")
    (repo / "many.txt").write_text("".join(f"hit {n}\n" for n in range(1, 301)))
    (repo / "minified.js").write_text("var a=1;" * 2000 + "findme();" + "var b=2;" * 2000 + "\n")
    (repo / "context.txt").write_text("one\ntwo\nMATCH three\nfour\nfive\nsix\nseven\nMATCH eight\nnine\n")
    (repo / "regex.txt").write_text("a.b\naxb\n(paren)\n-dash-leading\n")
    (repo / "latin1.txt").write_bytes("caf\xe9 answer\n".encode("latin-1"))
    return repo


def test_matches_as_path_line_text(tools: Tools) -> None:
    result = tools.call("search_code", {"pattern": "def \\w+\\(", "path": "src"})
    assert result["content"][0]["text"] == (
        "src/app.py:4:def main():\nsrc/app.py:8:def greet(name):\nsrc/helpers.py:1:def answer():\n"
        "[3 matches in 2 files.]")
    data = result["structuredContent"]
    assert data["lines"][0] == {"path": "src/app.py", "line": 4, "text": "def main():", "match": True}
    assert (data["match_count"], data["file_count"], data["truncated"], data["path"]) == (3, 2, False, "src")


def test_same_files_as_list_files(tools: Tools) -> None:
    data = tools.data("search_code", {"pattern": "answer"})
    paths = {line["path"] for line in data["lines"]}
    assert paths == {"src/app.py", "src/helpers.py", "latin1.txt"}  # not build/, the log, or the binary
    listed = set(tools.data("list_files")["files"])
    assert paths <= listed and "build/gen.py" not in listed and "blob.bin" in listed
    latin = next(line for line in data["lines"] if line["path"] == "latin1.txt")
    assert latin["text"] == "caf\ufffd answer"


def test_options(tools: Tools) -> None:
    assert tools.data("search_code", {"pattern": "MATCH", "ignore_case": False})["match_count"] == 2
    assert tools.data("search_code", {"pattern": "match three"})["match_count"] == 0
    assert tools.data("search_code", {"pattern": "match three", "ignore_case": True})["match_count"] == 1
    assert [line["text"] for line in tools.data("search_code", {"pattern": "a.b", "path": "regex.txt"})["lines"]] == [
        "a.b", "axb"]
    assert [line["text"] for line in tools.data(
        "search_code", {"pattern": "a.b", "path": "regex.txt", "fixed_strings": True})["lines"]] == ["a.b"]
    assert tools.data("search_code", {"pattern": "(paren)", "fixed_strings": True})["match_count"] == 1
    assert tools.data("search_code", {"pattern": "-dash"})["match_count"] == 1  # a pattern, never an option
    assert tools.data("search_code", {"pattern": "--files"})["match_count"] == 0
    assert {line["path"] for line in tools.data("search_code", {"pattern": "answer", "glob": "*.py"})["lines"]} == {
        "src/app.py", "src/helpers.py"}
    assert {line["path"] for line in tools.data("search_code", {"pattern": "answer", "glob": "!*.py"})["lines"]} == {
        "latin1.txt"}
    assert tools.data("search_code", {"pattern": "answer", "glob": "*.log"})["match_count"] == 0  # stays ignored
    single = tools.data("search_code", {"pattern": "answer", "path": "src/helpers.py"})
    assert [(line["path"], line["line"]) for line in single["lines"]] == [("src/helpers.py", 1)]


def test_context_lines_and_separators(tools: Tools) -> None:
    result = tools.call("search_code", {"pattern": "MATCH", "context": 1})
    assert result["content"][0]["text"] == (
        "context.txt-2-two\ncontext.txt:3:MATCH three\ncontext.txt-4-four\n--\n"
        "context.txt-7-seven\ncontext.txt:8:MATCH eight\ncontext.txt-9-nine\n[2 matches in 1 file.]")
    lines = result["structuredContent"]["lines"]
    assert [line["match"] for line in lines] == [False, True, False, False, True, False]
    merged = tools.text("search_code", {"pattern": "MATCH", "context": 3}).splitlines()
    assert "--" not in merged and len(merged) == 10  # overlapping context is shown once


def test_limit_cuts_and_says_so_exactly(tools: Tools) -> None:
    result = tools.call("search_code", {"pattern": "^hit", "limit": 5})
    data = result["structuredContent"]
    assert data["match_count"] == 5 and data["truncated"] is True
    assert [line["line"] for line in data["lines"]] == [1, 2, 3, 4, 5]
    assert result["content"][0]["text"].endswith(
        "[Showing the first 5 matches in 1 file; there are more. Narrow the search with path or glob, or raise limit.]")
    exact = tools.data("search_code", {"pattern": "^hit", "limit": 300})
    assert exact["match_count"] == 300 and exact["truncated"] is False  # exactly all: not "cut"
    with_context = tools.data("search_code", {"pattern": "MATCH", "limit": 1, "context": 2})
    assert [line["line"] for line in with_context["lines"]] == [1, 2, 3, 4, 5]  # the last match keeps its after-context
    assert with_context["truncated"] is True
    assert tools.data("search_code", {"pattern": "^hit", "limit": 2000})["match_count"] == 300


def test_long_lines_are_cut_around_the_match(tools: Tools) -> None:
    line = tools.data("search_code", {"pattern": "findme"})["lines"][0]
    assert "findme();" in line["text"] and line["text"].startswith("…")
    assert line["text"].endswith("[line cut: 32009 characters]") and len(line["text"]) < 600


def test_no_match_is_not_an_error(tools: Tools) -> None:
    result = tools.call("search_code", {"pattern": "zzzz-nowhere"})
    assert result["content"][0]["text"] == "No matches for 'zzzz-nowhere' in the workspace root."
    assert result["structuredContent"]["lines"] == [] and result["structuredContent"]["truncated"] is False


def test_errors(tools: Tools) -> None:
    bad = tools.error("search_code", {"pattern": "(unclosed"})
    assert bad.startswith("The search failed: regex parse error") and "unclosed group" in bad
    look = tools.error("search_code", {"pattern": "(?<=a)b"})
    assert "look-around" in look and "--pcre2" not in look and "PCRE2" not in look
    assert tools.error("search_code", {"pattern": "x", "path": "blob.bin"}) == (
        "blob.bin is a binary file; search_code searches text")
    assert tools.error("search_code", {"pattern": "x", "path": "missing"}) == "Not found: missing"
    assert "NUL" in tools.error("search_code", {"pattern": "a\u0000b"})
    assert "line breaks" in tools.error("search_code", {"pattern": "x", "glob": "*\n!x"})


# -- progress and cancellation -----------------------------------------------------------------------
@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """About 50 MB of random words in 480 files, each starting with a line the slow pattern matches:
    the slow pattern keeps rg busy for most of a second here."""
    root = tmp_path_factory.mktemp("big")
    rng = random.Random(7)
    words = ["alpha", "beta", "gamma", "delta", "needle", "omega", "kappa", "sigma", "theta", "zeta"]
    blocks = ["".join(" ".join(rng.choice(words) for _ in range(12)) + "\n" for _ in range(1500)) for _ in range(5)]
    for d in range(40):
        folder = root / f"d{d:02d}"
        folder.mkdir()
        for f in range(12):
            (folder / f"f{f:02d}.txt").write_text(f"alpha gamma delta {d}-{f}\n" + blocks[(d + f) % 5])
    return root


def _children(pid: int, name: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)
            except OSError:
                continue
            if f"({name}" in fields[0] and int(fields[1].split()[1]) == pid:
                found.append(int(entry))
    return found


def test_progress_rises_through_the_files_and_ends_at_the_total(big: Path) -> None:
    with Tools(big) as tools:
        process = tools.process
        process.notifications = []
        reply = process.request("tools/call", {"name": "search_code", "arguments": {"pattern": SLOW_PATTERN, "limit": 2000},
                                               "_meta": {"progressToken": "p1"}}, timeout=60)
        assert reply["result"]["isError"] is False
        assert reply["result"]["structuredContent"]["match_count"] == 480
        progress = [n["params"] for n in process.notifications if n["method"] == "notifications/progress"]
        assert progress and all(p["progressToken"] == "p1" and p["total"] == 480 for p in progress)
        values = [p["progress"] for p in progress]
        assert values == sorted(set(values)) and values[0] == 0 and values[-1] == 480
        assert len(values) >= 3 and progress[-1]["message"] == "done: 480 matches"
        # Without a token, no progress at all.
        process.notifications = []
        process.request("tools/call", {"name": "search_code", "arguments": {"pattern": "alpha gamma delta 1"}})
        assert not [n for n in process.notifications if n["method"] == "notifications/progress"]


def test_cancel_kills_rg_and_sends_no_response_while_ping_still_answers(big: Path) -> None:
    with Tools(big) as tools:
        process = tools.process
        process.send({"jsonrpc": "2.0", "id": "slow", "method": "tools/call",
                      "params": {"name": "search_code", "arguments": {"pattern": SLOW_PATTERN, "limit": 2000},
                                 "_meta": {"progressToken": 7}}})
        first = process.read(timeout=30)
        assert first["method"] == "notifications/progress" and first["params"]["progressToken"] == 7
        deadline = time.monotonic() + 10
        while not _children(process.proc.pid, "rg") and time.monotonic() < deadline:
            time.sleep(0.01)
        assert _children(process.proc.pid, "rg"), "rg should be running"
        started = time.monotonic()
        process.send({"jsonrpc": "2.0", "id": "ping", "method": "ping"})
        while True:
            message = process.read(timeout=10)
            if message.get("id") == "ping":
                break
            assert message.get("method") == "notifications/progress"  # the search goes on meanwhile
        assert message == {"jsonrpc": "2.0", "id": "ping", "result": {}}
        assert time.monotonic() - started < 1.0
        assert _children(process.proc.pid, "rg"), "rg should still be searching"
        process.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "slow"}})
        deadline = time.monotonic() + 0.3
        while _children(process.proc.pid, "rg") and time.monotonic() < deadline:
            time.sleep(0.01)
        assert not _children(process.proc.pid, "rg"), "rg must be killed at once"
        reply = process.request("ping")  # the next answer is the ping's: no response for "slow", ever
        assert reply["result"] == {}
        assert all(n.get("id") != "slow" for n in process.notifications)
        process.no_output(0.5)
        assert process.close() == 0

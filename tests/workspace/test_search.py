"""search_code through the real process: matches, options, bounds, errors, progress and cancellation."""

from __future__ import annotations

import os
import random
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from shipcode_mcp.primitives import ToolError, ToolResult
from shipcode_mcp.workspace import process as process_module
from shipcode_mcp.workspace import search
from shipcode_mcp.workspace.roots import Roots
from shipcode_mcp.workspace.tools import run as run_tool
from support import REPO, family, peak_rss, wait_for
from workspace_support import Tools, context, make_repo

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
    """The processes named `name` the server started (through its fork server: descendants, not children)."""
    found = []
    for member in family(pid)[1:]:
        try:
            if Path(f"/proc/{member}/comm").read_text().strip() == name:
                found.append(member)
        except OSError:
            continue  # gone meanwhile
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


def _cmdline(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")
    except OSError:
        return []


def _cancel_while_searching(root: Path, sorted_phase: bool) -> None:
    """Cancel a slow search while rg runs the phase asked for: rg dies and no response is sent. rg is stopped
    (SIGSTOP) first, so the search cannot end by itself: a ping answered meanwhile did not wait for it, and
    rg can only be gone because it was killed, however loaded the machine."""
    with Tools(root) as tools:
        process = tools.process

        def searching() -> list[int]:  # the search's rg (not the walk's) in that phase
            return [pid for pid in _children(process.proc.pid, "rg")
                    if "--json" in _cmdline(pid) and ("--sort=path" in _cmdline(pid)) == sorted_phase]

        process.send({"jsonrpc": "2.0", "id": "slow", "method": "tools/call",
                      "params": {"name": "search_code", "arguments": {"pattern": SLOW_PATTERN, "limit": 2000},
                                 "_meta": {"progressToken": 7}}})
        first = process.read(timeout=30)
        assert first["method"] == "notifications/progress" and first["params"]["progressToken"] == 7
        stopped = wait_for(searching, 30, "rg to search")
        try:
            for pid in stopped:
                os.kill(pid, signal.SIGSTOP)
            process.send({"jsonrpc": "2.0", "id": "ping", "method": "ping"})
            while (message := process.read()).get("id") != "ping":
                assert message.get("method") == "notifications/progress"  # the search goes on meanwhile
            assert message == {"jsonrpc": "2.0", "id": "ping", "result": {}}
            assert searching() == stopped, "rg should still be searching"
            process.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "slow"}})
            wait_for(lambda: not _children(process.proc.pid, "rg"), 5, "rg to be killed")
            stopped = []
        finally:
            for pid in stopped:  # the test failed: no stopped rg outlives it
                os.kill(pid, signal.SIGKILL)
        reply = process.request("ping")  # the next answer is the ping's: no response for "slow", ever
        assert reply["result"] == {}
        process.no_output(0.5)
        assert tools.data("search_code", {"pattern": "alpha gamma delta 1"})["match_count"] >= 1  # it still searches
        assert all(n.get("id") != "slow" for n in process.notifications)
        assert process.close() == 0


def test_cancel_kills_rg_and_sends_no_response_while_ping_still_answers(big: Path) -> None:
    _cancel_while_searching(big, sorted_phase=False)  # 480 matches: the parallel search does it all


@pytest.fixture(scope="module")
def crowded(big: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The big tree (hard links) plus, sorting last, a file of 6000 quick matches: more than the parallel
    search takes (FALLBACK_MATCHES), so the sorted search runs, slowly, through the big tree first."""
    root = tmp_path_factory.mktemp("crowded")
    for source in big.rglob("*.txt"):
        (root / source.parent.name).mkdir(exist_ok=True)
        os.link(source, root / source.parent.name / source.name)
    (root / "zz").mkdir()
    (root / "zz" / "hits.txt").write_text("alpha gamma delta 1\n" * 6000)
    return root


def test_cancel_kills_rg_in_the_sorted_search_too(crowded: Path) -> None:
    assert search.FALLBACK_MATCHES < 6000 + 480
    _cancel_while_searching(crowded, sorted_phase=True)


# -- the parallel search and its sorted fallback give the same answers ------------------------------------
@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Files whose order by path component is not their order as strings (a/x.txt before a.txt, a.b/
    and a-b/ after a/, Z before a, é last), with a rare word, a frequent one, an empty file, a binary
    file and an ignored folder."""
    root = tmp_path_factory.mktemp("tree")
    rng = random.Random(11)
    words = ["alpha", "beta", "gamma", "common", "delta", "common", "omega"]
    names = ["a.txt", "a-b.txt", "a0.py", "x.py", "Z.txt", "\u00e9.py", *(f"f{n:02d}.txt" for n in range(14))]
    for folder in ("", "a", "a/x", "a.b", "a-b", "Z", "b/c/d", "\u00e9"):
        (root / folder).mkdir(parents=True, exist_ok=True)
        for name in names:
            lines = []
            for _ in range(rng.randrange(40)):
                line = " ".join(rng.choice(words) for _ in range(rng.randrange(1, 5)))
                lines.append(f"{line} needle" if rng.random() < 0.04 else line)
            (root / folder / name).write_text("".join(f"{line}\n" for line in lines))
    (root / "empty.txt").write_text("")
    (root / "blob.bin").write_bytes(b"\x00needle common\n")
    (root / ".gitignore").write_text("ignored/\n")
    (root / "ignored").mkdir()
    (root / "ignored" / "n.txt").write_text("needle common\n")
    return root


def _expected(root: Path, pattern: str) -> list[tuple[str, int]]:
    """Every (path, line) matching `pattern` in the order rg --sort=path gives, worked out in Python."""
    found = []
    for path in root.rglob("*"):
        relative = path.relative_to(root).as_posix()
        if path.is_file() and not relative.startswith("ignored/") and b"\0" not in path.read_bytes():
            lines = path.read_bytes().decode().split("\n")[:-1]
            found += [(relative, n) for n, line in enumerate(lines, 1) if re.search(pattern, line)]
    return sorted(found, key=lambda hit: (hit[0].encode().split(b"/"), hit[1]))


def _search(root: Path, monkeypatch: pytest.MonkeyPatch, fallback: int | None = None, token: str | None = None,
            race: bool = False, **arguments: Any) -> tuple[ToolResult, list[bool], list[dict[str, Any]]]:
    """search_code in-process: the result, for each rg search run whether it was sorted, and what was sent.
    Without `race`, the sorted search does not race the unsorted one (which runs is then certain)."""
    searches: list[bool] = []

    class Recorded(process_module.Child):
        def __init__(self, ctx: Any, argv: Any, **options: Any) -> None:
            if "--json" in argv:
                searches.append("--sort=path" in argv)
            super().__init__(ctx, argv, **options)

    with monkeypatch.context() as patch:
        patch.setattr(process_module, "Child", Recorded)
        if fallback is not None:
            patch.setattr(search, "FALLBACK_MATCHES", fallback)
        patch.setattr(search, "RACE", race)
        ctx = context(token)
        found = run_tool("search_code", ctx, Roots([str(root)]), **arguments)
    return found, searches, ctx.sent


@pytest.mark.parametrize("arguments", [
    {"pattern": "needle"},
    {"pattern": "needle", "limit": 1},
    {"pattern": "needle", "limit": 7, "context": 2},
    {"pattern": "needle", "limit": 30, "context": 10},
    {"pattern": "common", "limit": 50, "context": 1},
    {"pattern": "common", "limit": 2000},
    {"pattern": "NEEDLE", "ignore_case": True, "glob": "*.py"},
    {"pattern": "needle", "path": "a", "context": 1},
    {"pattern": "common", "path": "a.txt", "limit": 3, "context": 3},
    {"pattern": "zzz-nowhere"},
])
def test_the_parallel_search_answers_exactly_as_the_sorted_one(
        tree: Path, monkeypatch: pytest.MonkeyPatch, arguments: dict[str, Any]) -> None:
    parallel, ran, _ = _search(tree, monkeypatch, **arguments)
    assert ran == [False]
    fallback, ran, _ = _search(tree, monkeypatch, fallback=-1, **arguments)  # gives way at once
    assert ran == [False, True]
    assert parallel.to_dict() == fallback.to_dict()
    raced, ran, _ = _search(tree, monkeypatch, race=True, **arguments)  # whichever answers first
    assert ran in ([False], [False, True])
    assert raced.to_dict() == parallel.to_dict()


@pytest.mark.parametrize("pattern", ["needle", "common"])
def test_matches_are_the_first_in_path_order_at_any_limit(tree: Path, monkeypatch: pytest.MonkeyPatch,
                                                            pattern: str) -> None:
    expected = _expected(tree, pattern)
    total = len(expected)
    assert total > 20
    for limit in (1, 2, 5, 20, total - 1, total, total + 1):
        if limit > 2000:
            continue
        for fallback, race in ((None, False), (-1, False), (None, True)):
            data = _search(tree, monkeypatch, fallback, race=race, pattern=pattern, limit=limit)[0].structured
            assert data is not None
            assert [(line["path"], line["line"]) for line in data["lines"]] == expected[:limit], (limit, fallback)
            assert data["truncated"] is (total > limit)
            assert data["match_count"] == min(total, limit)
            assert data["file_count"] == len({path for path, _ in expected[:limit]})


@pytest.fixture(scope="module")
def frequent(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """6000 matches in 250 files: more than the parallel search reads before it gives way."""
    root = tmp_path_factory.mktemp("frequent")
    for n in range(250):
        folder = root / f"p{n % 10}"
        folder.mkdir(exist_ok=True)
        (folder / f"f{n:03d}.{'py' if n % 5 else 'txt'}").write_text("".join(f"hit {n} {i}\nmiss\n" for i in range(24)))
    return root


def test_a_frequent_pattern_falls_back_to_the_sorted_search(frequent: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert 6000 > search.FALLBACK_MATCHES >= 2000  # more than the largest limit
    expected = _expected(frequent, "hit")
    for limit, context_lines in ((1, 0), (200, 1), (2000, 0)):
        found, ran, _ = _search(frequent, monkeypatch, pattern="hit", limit=limit, context=context_lines)
        assert ran == [False, True]
        data = found.structured
        assert data is not None and data["truncated"] is True and data["match_count"] == limit
        assert [(line["path"], line["line"]) for line in data["lines"] if line["match"]] == expected[:limit]
    # 200 files, 4800 matches: few enough for the parallel search to see them all.
    found, ran, _ = _search(frequent, monkeypatch, pattern="hit", glob="*.py")
    assert ran == [False]
    assert found.structured is not None and found.structured["truncated"] is True
    with Tools(frequent) as tools:  # and through the server
        data = tools.data("search_code", {"pattern": "hit", "limit": 10})
        assert [(line["path"], line["line"]) for line in data["lines"]] == expected[:10] and data["truncated"]


def test_the_sorted_search_races_a_frequent_pattern(frequent: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Once the unsorted search has seen more than `limit` matches, the sorted one starts beside it; held back
    until the sorted one has answered, the unsorted search is stopped and the sorted answer is the first
    `limit` matches in path order. With no child slot free at once, there is no race: the unsorted search
    answers alone, the same matches."""
    expected = _expected(frequent, "hit")
    answered = threading.Event()
    real_race = search._SortedRace.__init__
    real_take = search._Smallest.take

    def race(self: Any, ctx: Any, command: Any, cwd: Any, fd: Any, readable: Any, collector: Any,
             on_answer: Any) -> None:
        def answer() -> None:
            answered.set()
            on_answer()
        real_race(self, ctx, command, cwd, fd, readable, collector, answer)

    def take(self: Any, line: bytes) -> None:
        real_take(self, line)
        if self.matches > 150:
            assert answered.wait(30)  # the unsorted search cannot finish first

    monkeypatch.setattr(search._SortedRace, "__init__", race)
    monkeypatch.setattr(search._Smallest, "take", take)
    for limit, context_lines in ((1, 0), (100, 1)):
        answered.clear()
        found, ran, _ = _search(frequent, monkeypatch, race=True, pattern="hit", limit=limit, context=context_lines)
        assert ran == [False, True] and answered.is_set()
        data = found.structured
        assert data is not None and data["truncated"] is True and data["match_count"] == limit
        assert [(line["path"], line["line"]) for line in data["lines"] if line["match"]] == expected[:limit]
    monkeypatch.setattr(search._Smallest, "take", real_take)
    monkeypatch.setattr(process_module, "_slots", threading.BoundedSemaphore(1))  # the unsorted search holds it
    answered.clear()
    found, ran, _ = _search(frequent, monkeypatch, race=True, pattern="hit", limit=100, glob="*.py")
    assert ran == [False, True] and not answered.is_set()  # tried, busy, never started
    data = found.structured
    assert data is not None and data["truncated"] is True
    python = [hit for hit in expected if hit[0].endswith(".py")]
    assert [(line["path"], line["line"]) for line in data["lines"]] == python[:100]


def _progress(sent: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [message["params"] for message in sent if message.get("method") == "notifications/progress"]


@pytest.mark.parametrize("fallback", [None, 100])
def test_progress_rises_in_either_search(big: Path, monkeypatch: pytest.MonkeyPatch, fallback: int | None) -> None:
    found, ran, sent = _search(big, monkeypatch, fallback, token="p", pattern=SLOW_PATTERN, limit=2000)
    assert ran == ([False] if fallback is None else [False, True])
    progress = _progress(sent)
    values = [p["progress"] for p in progress]
    assert values == sorted(set(values)) and values[0] == 0 and values[-1] == 480 and len(values) >= 3
    assert all(p["total"] == 480 for p in progress) and all(value < 480 for value in values[:-1])
    assert progress[-1]["message"] == "done: 480 matches"
    so_far = [int(p["message"].split()[0]) for p in progress[1:-1]]
    assert so_far == sorted(so_far) and all(count <= 480 for count in so_far)
    assert found.structured is not None and found.structured["match_count"] == 480


def test_progress_counts_files_where_nothing_matches(big: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """rg prints nothing for files without a match; progress still rises, from the bytes rg has read."""
    slow_and_rare = SLOW_PATTERN + "{4}"  # no line has four digits in a row
    found, ran, sent = _search(big, monkeypatch, token="p", pattern=slow_and_rare)
    values = [p["progress"] for p in _progress(sent)]
    assert ran == [False] and found.structured is not None and found.structured["match_count"] == 0
    assert values[0] == 0 and values[-1] == 480 and values == sorted(set(values))
    if os.path.exists("/proc/self/io"):
        assert len(values) >= 3


@pytest.mark.measures
@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="reads VmHWM from /proc")
def test_a_huge_matching_line_costs_memory_bounded_by_the_cap_not_the_line(tmp_path: Path) -> None:
    root = tmp_path / "huge"
    root.mkdir()
    with open(root / "one line.txt", "wb") as out:
        out.write(b"needle " + b"a" * (64 << 20) + b" needle\n")
    (root / "small.txt").write_text("a needle here\n")
    (root / "late.txt").write_bytes(b"b" * (4 << 20) + b" needle late\n")
    with Tools(root) as server:
        server.call("search_code", {"pattern": "not-there"})  # imports and the like, before measuring
        before = peak_rss(server.process.proc.pid)
        result = server.call("search_code", {"pattern": "needle"})
        grown = peak_rss(server.process.proc.pid) - before
    text = result["content"][0]["text"]
    assert grown < 8 * process_module.MAX_LINE_BYTES, f"{grown} bytes more at the peak"
    lines = text.splitlines()
    assert lines[0].startswith("late.txt:1:bbbb") and lines[0].endswith("… [line cut: longer than 1023.9 KiB]")
    assert lines[1].startswith("one line.txt:1:needle aaaa") and lines[1].endswith("… [line cut: longer than 1023.9 KiB]")
    assert len(lines[1]) < search.MAX_LINE_CHARS + 100
    assert lines[2:] == ["small.txt:1:a needle here", "[3 matches in 3 files.]"]
    assert [(line["path"], line["line"]) for line in result["structuredContent"]["lines"]] == [
        ("late.txt", 1), ("one line.txt", 1), ("small.txt", 1)]


def test_cut_messages_are_rebuilt_from_head_and_tail(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Lines past the cap (made small here): number and match place from the tail, when it holds them."""
    monkeypatch.setattr(process_module, "MAX_LINE_BYTES", 3000)
    monkeypatch.setattr(process_module.Child.lines, "__defaults__", (3000,))
    (tmp_path / "a.txt").write_text("x" * 2000 + "needle" + "y" * 2000 + "\n" + "z\n" * 5 + ("needle " * 3000) + "\n"
                                    + "caf\u00e9 " * 700 + "\\ needle\n")
    ctx = context()
    result = run_tool("search_code", ctx, Roots([str(tmp_path)]), pattern="needle")
    assert result.structured is not None
    lines = result.structured["lines"]
    # Thousands of matches in line 7: the tail holds only the last of them, not the number (0: unknown).
    assert [line["line"] for line in lines] == [1, 0, 8]
    assert "needle" in lines[0]["text"] and lines[0]["text"].endswith("… [line cut: longer than 2.9 KiB]")
    assert lines[0]["text"].startswith("…xxx") and len(lines[0]["text"]) < search.MAX_LINE_CHARS + 50
    assert lines[1]["text"].startswith("needle needle") and lines[1]["text"].endswith("… [line cut: longer than 2.9 KiB]")
    assert lines[2]["text"].startswith("café café")


# -- the race's answer is the unraced one (a review's findings, each first shown to differ) -----------------
def test_a_fifo_after_the_answers_end_fails_neither_search(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A FIFO named .gitignore late in path order stops the unsorted search (it opens every folder's ignore file)
    after it has seen more than `limit` matches: the sorted search, which never reaches it, answers, whether it
    raced or not (no child slot free to race); one before the end stops both alike."""
    for number in range(200):
        (tmp_path / f"a{number:03d}.txt").write_text("hit\n" * 10)
    (tmp_path / "zz").mkdir()
    os.mkfifo(tmp_path / "zz" / ".gitignore")
    answers = []
    for race, slots in ((False, process_module.MAX_CHILDREN), (True, process_module.MAX_CHILDREN), (True, 1)):
        monkeypatch.setattr(process_module, "_slots", threading.BoundedSemaphore(slots))
        found, _, _ = _search(tmp_path, monkeypatch, race=race, pattern="hit", limit=10)
        answers.append(found.to_dict())
    assert answers[0] == answers[1] == answers[2] and answers[0]["structuredContent"]["match_count"] == 10
    with pytest.raises(ToolError, match="named pipe"):  # the FIFO before the end: no answer can be given
        _search(tmp_path, monkeypatch, race=True, pattern="hit", limit=2000)


def test_past_the_fallback_a_racing_sorted_search_answers_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The unsorted search gives way past FALLBACK_MATCHES: a sorted search already racing goes on to its answer
    (it was stopped, and a second one started from the beginning)."""
    with open(tmp_path / "a_big.txt", "wb") as out:  # first in path order: read first by the sorted search, alone
        out.write((b"x" * 999 + b"\n") * 60_000)
    for number in range(20):
        (tmp_path / f"b{number:02d}.txt").write_text("hit\n" * 1000)
    found, ran, _ = _search(tmp_path, monkeypatch, fallback=2000, race=True, pattern="hit", limit=10)
    assert found.structured is not None and found.structured["match_count"] == 10
    assert ran == [False, True]  # one sorted search


def test_the_note_on_unreadable_files_is_the_same_whichever_search_answers(tmp_path: Path) -> None:
    """An unreadable folder after the answer's end is never needed: the note on skipped files is left out by both
    searches (the sorted one, stopped at the end, never reads it; the unsorted one, which reads all, said it);
    before the end, both say it. Run without the power to read any file (as root, that is dropped: setpriv)."""
    script = tmp_path / "check.py"
    tree = tmp_path / "tree"
    script.write_text(UNREADABLE_CHECK)
    command = [sys.executable, str(script), str(tree)]
    if os.geteuid() == 0:
        command = ["setpriv", "--inh-caps=-dac_override,-dac_read_search",
                   "--bounding-set=-dac_override,-dac_read_search", *command]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO / "tests"),
                                                                             str(REPO / "tests" / "workspace")])})
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.split() == ["unreadable", "late:", "no", "note", "early:", "note"], done.stdout


UNREADABLE_CHECK = '''
import os, sys, threading
from pathlib import Path
from shipcode_mcp.workspace import search
from shipcode_mcp.workspace.roots import Roots
from shipcode_mcp.workspace.tools import run
from workspace_support import context

tree = Path(sys.argv[1])
for number in range(50):
    (tree / f"m{number:02d}.txt").parent.mkdir(parents=True, exist_ok=True)
    (tree / f"m{number:02d}.txt").write_text("hit\\n" * 20)
for name in ("a_locked", "zz_locked"):
    (tree / name).mkdir()
    (tree / name / "x.txt").write_text("hit\\n")
(tree / "zz_locked").chmod(0)
assert not os.access(tree / "zz_locked", os.R_OK), "still readable"
print("unreadable")
answered = threading.Event()
real_init, real_take = search._SortedRace.__init__, search._Smallest.take

def init(self, *args):
    *rest, on_answer = args
    real_init(self, *rest, lambda: (answered.set(), on_answer()))

def take(self, line):  # the unsorted search held back until the sorted one answered
    real_take(self, line)
    if self.matches > 20:
        answered.wait(30)

def note(**arguments):
    text = run("search_code", context(), Roots([str(tree)]), pattern="hit", **arguments).to_dict()["content"][0]["text"]
    return "could not be read" in text

for place in ("late", "early"):
    search.RACE = False
    alone = note(limit=10)
    search.RACE = True
    search._SortedRace.__init__, search._Smallest.take = init, take
    answered.clear()
    raced = note(limit=10)
    search._SortedRace.__init__, search._Smallest.take = real_init, real_take
    assert answered.is_set() and raced == alone, (place, raced, alone)
    print(place + ":", "note" if alone else "no note")
    (tree / "zz_locked").chmod(0o755)
    (tree / "a_locked").chmod(0)
(tree / "a_locked").chmod(0o755)
'''

"""Client-sized answers (workspace/budget.py): a result over --max-result-tokens, or over the smaller budget a
request's `_meta` asks for, is cut at the tool's own boundary (whole lines, whole items), says so and where the
rest is, still fits the tool's outputSchema (Tools.call checks), and the rest is reachable as the note says.
A result within the budget is byte for byte what it was."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from shipcode_mcp import cli
from shipcode_mcp.cli import parse_args
from shipcode_mcp.settings import DEFAULTS
from shipcode_mcp.workspace import budget
from workspace_support import Tools, git, make_repo

CAP = 1000
SMALL = ("--max-result-tokens", str(CAP))
UNCAPPED = ("--max-result-tokens", "0")
HINT = budget.META_KEY


def tokens(result: dict[str, Any]) -> float:
    """The estimate budget.py makes, from what the client received."""
    text = result["content"][0]["text"].encode()
    data = json.dumps(result["structuredContent"], ensure_ascii=False, separators=(",", ":")).encode()
    return (len(text) + len(data)) / budget.BYTES_PER_TOKEN


def _text(result: dict[str, Any]) -> str:
    text: str = result["content"][0]["text"]
    return text


def _quoted(note: str, name: str) -> str:
    """The value the note gives an argument, such as path='src/m007.py'."""
    found = re.search(rf"{name}='([^']*)'", note)
    assert found is not None, note
    return found.group(1)


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = make_repo(tmp_path_factory.mktemp("budget") / "repo")
    (repo / "big.txt").write_text("".join(f"line {n:03d} " + "x" * 80 + "\n" for n in range(1, 401)))
    (repo / "pkg").mkdir()
    for n in range(60):
        (repo / "pkg" / f"m{n:03d}.py").write_text(
            f"def needle_{n}():\n    return 'needle'\n\n\nclass Holder{n}:\n    def needle(self):\n        return {n}\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "Add the big files")
    (repo / "many").mkdir()
    for n in range(150):
        (repo / "many" / f"file_{n:03d}.txt").write_text(f"{n}\n")
    for n in range(12):
        (repo / "log.txt").write_text(f"{n}\n")
        git(repo, "add", "log.txt")
        git(repo, "commit", "-q", "-m", f"Change {n}\n\n" + f"A long body, commit {n}. " * 40)
    (repo / "big.txt").write_text("".join(f"line {n:03d} " + "y" * 80 + "\n" for n in range(1, 401)))
    for n in range(0, 60, 7):
        (repo / "pkg" / f"m{n:03d}.py").write_text(f"def needle_{n}():\n    return 'changed'\n")
    return repo


@pytest.fixture(scope="module")
def small(repo: Path) -> Iterator[Tools]:
    with Tools(repo, options=SMALL) as server:
        yield server


@pytest.fixture(scope="module")
def whole(repo: Path) -> Iterator[Tools]:
    with Tools(repo, options=UNCAPPED) as server:
        yield server


def _cut(result: dict[str, Any], cap: int = CAP) -> str:
    """The text of a cut result, checked: within the budget, truncated (read_file says it by next_offset), the cut
    said as such."""
    assert tokens(result) <= cap, tokens(result)
    assert result["structuredContent"].get("truncated", True) is True
    text = _text(result)
    assert f"budget of {cap} tokens" in text
    return text


def test_the_option_and_its_default() -> None:
    assert DEFAULTS["max_result_tokens"] == budget.DEFAULT_MAX_TOKENS < 25_000
    assert (cli.META_KEY, cli.MIN_RESULT_TOKENS) == (budget.META_KEY, budget.MIN_TOKENS)  # said there without loading it
    assert parse_args([]).max_result_tokens == budget.DEFAULT_MAX_TOKENS
    assert parse_args(["--max-result-tokens", "5000", "."]).max_result_tokens == 5000
    assert parse_args(["--max-result-tokens", "0"]).max_result_tokens == 0
    refused = subprocess.run([sys.executable, "-m", "shipcode_mcp", "--max-result-tokens", "500"], capture_output=True,
                             text=True, stdin=subprocess.DEVNULL, timeout=30)
    assert refused.returncode == 2 and "--max-result-tokens takes 0 (no cap) or 1000 or more" in refused.stderr


def test_read_file_is_cut_at_a_line_and_the_next_offset_reads_on(small: Tools, repo: Path) -> None:
    first = small.call("read_file", {"path": "big.txt"})
    note = _cut(first)
    data = first["structuredContent"]
    assert 1 < data["end_line"] < 400 and data["next_offset"] == data["end_line"] + 1
    assert f"Call read_file with offset={data['next_offset']} to read on" in note
    # every line whole, in the text as in the data; following the offsets reads the whole file
    numbered = note.split("\n")[:data["end_line"]]
    assert [line.split("\t", 1)[1] for line in numbered] == data["text"].split("\n")
    texts, offset = [data["text"]], data["next_offset"]
    while offset is not None:
        page = small.data("read_file", {"path": "big.txt", "offset": offset})
        texts.append(page["text"])
        offset = page["next_offset"]
    assert "\n".join(texts) + "\n" == (repo / "big.txt").read_text()


def test_a_hint_in_meta_lowers_the_budget_and_cannot_raise_it(repo: Path, small: Tools, whole: Tools) -> None:
    uncut = whole.call("read_file", {"path": "big.txt"})
    assert uncut["structuredContent"]["end_line"] == 400 and tokens(uncut) > 10_000
    lowered = whole.call("read_file", {"path": "big.txt"}, meta={HINT: 2000})
    _cut(lowered, 2000)
    assert lowered["structuredContent"]["end_line"] < 400
    raised = small.call("read_file", {"path": "big.txt"}, meta={HINT: 50_000})
    assert raised == small.call("read_file", {"path": "big.txt"})  # the option's budget holds
    assert tokens(raised) <= CAP
    tiny = whole.call("read_file", {"path": "big.txt"}, meta={HINT: 10})  # below the floor: the floor
    assert f"budget of {budget.MIN_TOKENS} tokens" in _text(tiny) and tokens(tiny) <= budget.MIN_TOKENS
    for ignored in ("2000", True, -5, 0, None):
        assert whole.call("read_file", {"path": "big.txt"}, meta={HINT: ignored}) == uncut


def test_within_the_budget_nothing_changes(repo: Path, small: Tools, whole: Tools) -> None:
    with Tools(repo) as default:  # the default budget
        for name, arguments in (("read_file", {"path": "README.md"}), ("list_files", {"path": "src"}),
                                ("search_code", {"pattern": "answer"}), ("git_log", {"path": "src", "limit": 2}),
                                ("git_diff", {"path": "pkg/m000.py"}), ("git_show", {"ref": "v1.0"}),
                                ("git_status", {})):
            expected = whole.call(name, arguments)
            assert small.call(name, arguments) == expected == default.call(name, arguments)
            assert default.call(name, arguments, meta={HINT: 1000}) == expected


def test_git_diff_is_cut_at_a_line_and_a_path_shows_the_rest(small: Tools, whole: Tools) -> None:
    full = whole.data("git_diff")
    result = small.call("git_diff")
    note = _cut(result)
    data = result["structuredContent"]
    assert data["files"] == full["files"]  # the file list stays whole
    assert full["diff"].startswith(data["diff"]) and data["diff"].endswith("\n") and len(data["diff"]) < len(full["diff"])
    path = _quoted(note.split("\n")[-1], "path")
    assert path in [entry["path"] for entry in full["files"]]
    rest = small.call("git_diff", {"path": path})["structuredContent"]["diff"]
    assert rest.startswith(f"diff --git a/{path} b/{path}\n")
    shown_whole = full["diff"].split(f"diff --git a/{path} ", 1)[0]
    assert data["diff"].startswith(shown_whole)  # every file before it was shown whole


def test_the_default_keeps_a_big_git_diff_under_claude_codes_limit(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / "huge.txt").write_text("".join(f"{n} " + "a" * 60 + "\n" for n in range(5000)))
    git(repo, "add", "huge.txt")
    git(repo, "commit", "-q", "-m", "Huge")
    (repo / "huge.txt").write_text("".join(f"{n} " + "b" * 60 + "\n" for n in range(5000)))
    with Tools(repo) as tools:
        result = tools.call("git_diff")
        assert tokens(result) <= budget.DEFAULT_MAX_TOKENS < 25_000
        assert "budget of 20000 tokens" in _text(result)
        show = tools.call("git_show", {"ref": "HEAD"})
        assert tokens(show) <= budget.DEFAULT_MAX_TOKENS


def test_git_show_is_cut_at_a_line(small: Tools, whole: Tools) -> None:
    full = whole.data("git_show", {"ref": "HEAD~12"})
    result = small.call("git_show", {"ref": "HEAD~12"})
    note = _cut(result)
    data = result["structuredContent"]
    assert full["text"].startswith(data["text"]) and data["text"].endswith("\n")
    ref = _quoted(note.split("\n")[-1], "ref")
    assert re.fullmatch(r"[0-9a-f]{12}~1\.\.[0-9a-f]{12}", ref)
    # the range the note gives, with a file of the commit, shows that file's changes
    assert small.data("git_diff", {"ref": ref, "path": "pkg/m059.py"})["files"] == [
        {"path": "pkg/m059.py", "added": 7, "deleted": 0}]
    blob = small.call("git_show", {"ref": "HEAD", "path": "big.txt"})
    note = _cut(blob)
    kept = blob["structuredContent"]["text"]
    assert kept.endswith("\n") and whole.data("git_show", {"ref": "HEAD", "path": "big.txt"})["text"].startswith(kept)
    assert f"offset={kept.count(chr(10)) + 1} reads on" in note.split("\n")[-1]


def test_search_code_keeps_whole_matches_and_a_path_finds_the_rest(small: Tools, whole: Tools) -> None:
    full = whole.data("search_code", {"pattern": "needle", "limit": 2000})
    result = small.call("search_code", {"pattern": "needle", "limit": 2000})
    note = _cut(result)
    data = result["structuredContent"]
    kept = data["lines"]
    assert 0 < len(kept) < len(full["lines"]) and kept == full["lines"][:len(kept)]
    assert data["match_count"] == len(kept) and data["file_count"] == len({line["path"] for line in kept})
    assert note.split("\n")[:len(kept)] == [f"{line['path']}:{line['line']}:{line['text']}" for line in kept]
    following = full["lines"][len(kept)]
    assert _quoted(note.split("\n")[-1], "path") == following["path"]
    assert following in small.data("search_code", {"pattern": "needle", "path": following["path"]})["lines"]


def test_list_files_keeps_whole_paths_and_a_narrower_path_lists_the_rest(small: Tools, whole: Tools) -> None:
    full = whole.data("list_files")
    assert tokens(whole.call("list_files")) > CAP
    result = small.call("list_files")
    note = _cut(result)
    files = result["structuredContent"]["files"]
    assert files == full["files"][:len(files)] and result["structuredContent"]["total"] == full["total"]
    folder = _quoted(note.split("\n")[-1], "path")
    assert full["files"][len(files)] in small.data("list_files", {"path": folder})["files"]


def test_git_log_is_cut_at_a_commit_and_the_ref_reads_on(small: Tools, whole: Tools) -> None:
    full = whole.data("git_log", {"limit": 100})["commits"]
    result = small.call("git_log", {"limit": 100})
    note = _cut(result)
    kept = result["structuredContent"]["commits"]
    assert 0 < len(kept) < len(full) and kept == full[:len(kept)]
    ref = _quoted(note.split("\n")[-1], "ref")
    assert small.data("git_log", {"ref": ref, "limit": 1})["commits"][0] == full[len(kept)]


def test_code_tools_keep_whole_items(small: Tools, whole: Tools) -> None:
    if "outline" not in small.tools:
        pytest.skip("the code tools are not installed")
    outline = small.call("outline", {"path": "pkg"})
    note = _cut(outline)
    data = outline["structuredContent"]
    full = whole.data("outline", {"path": "pkg"})
    assert data["symbols"] == full["symbols"][:len(data["symbols"])] and data["files"] < full["files"]
    nxt = _quoted(note.split("\n")[-1], "path")
    assert small.data("outline", {"path": nxt})["symbols"][0]["path"] == nxt
    for name, arguments, key in (("find_references", {"name": "needle", "limit": 2000}, "references"),
                                 ("find_symbol", {"name": "needle*", "limit": 2000}, "symbols")):
        result = small.call(name, arguments)
        note = _cut(result)
        items, every = result["structuredContent"][key], whole.data(name, arguments)[key]
        assert 0 < len(items) < len(every) and items == every[:len(items)]
        path = _quoted(note.split("\n")[-1], "path")
        assert every[len(items)] in small.data(name, {**arguments, "path": path})[key]


def test_a_change_is_made_whole_and_its_diff_cut(tmp_path: Path) -> None:
    content = "".join(f"line {n} " + "z" * 70 + "\n" for n in range(500))
    with Tools(tmp_path, write=True, options=SMALL) as tools:
        result = tools.call("write_file", {"path": "a.txt", "content": content})
        text = _text(result)
        assert tokens(result) <= CAP and "the change was made whole" in text and f"budget of {CAP} tokens" in text
        diff = result["structuredContent"]["diff"]
        assert diff.endswith("\n") and diff in text and diff.startswith("--- /dev/null\n+++ b/a.txt\n@@ -0,0 +1,500 @@\n")
        assert (tmp_path / "a.txt").read_text() == content


# -- a review's findings (each reproduced first) --------------------------------------------------------
def _fit(root: Path, tool: str, cap: int, **arguments: Any) -> Any:
    """The tool called in this process and cut as the server cuts it (tools._tool)."""
    from shipcode_mcp.workspace.roots import Roots  # (these tests alone call the tools in this process)
    from shipcode_mcp.workspace.tools import run
    from workspace_support import context

    roots, ctx = Roots([str(root)]), context()
    value = run(tool, ctx, roots, **arguments)
    return budget.fit(tool, value, cap, arguments, lambda **changed: run(tool, ctx, roots, **{**arguments, **changed}))


def test_a_folder_outline_cut_before_files_without_symbols_names_the_next_file(tmp_path: Path) -> None:
    """The items left after the cut are in no block (files with no symbol): the next file is named from its line
    (it was an IndexError: an internal error for the whole call)."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "a.py").write_text("".join(f"def function_number_{n}():\n    pass\n" for n in range(60)))
    for number in range(80):
        (tmp_path / "pkg" / (f"z{number:03d}_" + "n" * 60 + ".py")).write_text("# nothing here\n")
    with Tools(tmp_path, options=("--max-result-tokens", "1000")) as tools:
        text = _text(tools.call("outline", {"path": "pkg"}))
    assert "The next file is pkg/z000_" in text and "call outline with path='pkg/z000_" in text


def test_a_log_with_merges_gives_no_ref_that_would_skip_commits(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r")
    git(repo, "checkout", "-q", "-b", "side")
    for number in range(8):  # a side branch and main, their commits' dates interleaved, then merged
        (repo / "s.txt").write_text(f"{number}\n")
        git(repo, "add", "s.txt")
        git(repo, "commit", "-q", "-m", f"side {number}\n\n" + "long body " * 60,
            date=f"2024-02-{10 + 2 * number:02d}T10:00:00+00:00")
    git(repo, "checkout", "-q", "main")
    for number in range(8):
        (repo / "m.txt").write_text(f"{number}\n")
        git(repo, "add", "m.txt")
        git(repo, "commit", "-q", "-m", f"main {number}\n\n" + "long body " * 60,
            date=f"2024-02-{11 + 2 * number:02d}T10:00:00+00:00")
    git(repo, "merge", "-q", "--no-ff", "-m", "merge", "side", date="2024-03-01T10:00:00+00:00")
    note = _fit(repo, "git_log", 1000, limit=100).content[0]["text"].split("\n")[-1]
    assert "has merges, so no one ref reaches the rest" in note and "ref=" not in note


def test_read_file_gives_its_smallest_page_where_the_path_alone_is_most_of_the_budget(tmp_path: Path) -> None:
    parts = [letter * 200 for letter in "defghijkl"]
    folder = tmp_path.joinpath(*parts)
    folder.mkdir(parents=True)
    (folder / "x.txt").write_text("x\n" * 2000)
    page = _fit(tmp_path, "read_file", 1000, path="/".join(parts) + "/x.txt").structured
    assert page["end_line"] < 100 and page["next_offset"] == page["end_line"] + 1  # (it sent all 2000 lines)


def test_a_hint_never_repeats_the_call_just_made(tmp_path: Path) -> None:
    (tmp_path / "many").mkdir()
    for number in range(400):
        (tmp_path / "many" / f"file_{number:03d}.txt").write_text("x")
    listed = _fit(tmp_path, "list_files", 1000, path="many").content[0]["text"].split("\n")[-1]
    assert "path='many'" not in listed and "give a pattern" in listed
    (tmp_path / "big.py").write_text("".join(f"needle {n} " + "q" * 60 + "\n" for n in range(500)))
    found = _fit(tmp_path, "search_code", 1000, pattern="needle", path="big.py")
    note = found.content[0]["text"].split("\n")[-1]
    line = found.structured["lines"][-1]["line"] + 1
    assert "call search_code with path='big.py'" not in note and f"path='big.py' and offset={line}" in note


def test_a_renamed_files_hint_says_what_its_path_alone_shows(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r")
    (repo / "a_first.txt").write_text("".join(f"a {n} " + "p" * 70 + "\n" for n in range(20)))
    (repo / "old.txt").write_text("".join(f"keep {n} " + "k" * 70 + "\n" for n in range(300)))
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "x")
    (repo / "a_first.txt").write_text("".join(f"b {n} " + "p" * 70 + "\n" for n in range(20)))
    git(repo, "mv", "old.txt", "new.txt")
    (repo / "new.txt").write_text("".join((f"chg {n} " if n < 60 else f"keep {n} ") + "k" * 70 + "\n" for n in range(300)))
    git(repo, "add", "-A")
    note = _fit(repo, "git_diff", 3000, staged=True).content[0]["text"].split("\n")[-1]
    assert "path='new.txt'" in note and "renamed from old.txt: with this path alone it shows as added" in note

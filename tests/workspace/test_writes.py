"""write_file and edit_file (with --allow-write): atomic, mode-keeping, parent-making, diff-returning."""

from __future__ import annotations

import difflib
import os
import random
import re
import stat
from pathlib import Path
from typing import Any

import pytest

from shipcode_mcp.primitives import ToolError
from shipcode_mcp.workspace import writes
from shipcode_mcp.workspace.roots import Roots
from workspace_support import Tools, context, make_repo, snapshot


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo")


@pytest.fixture
def tools(repo: Path) -> Any:
    with Tools(repo, write=True) as server:
        yield server


def _leftovers(folder: Path) -> list[str]:
    return [name for name in os.listdir(folder) if name.endswith(".tmp")]


# -- write_file ----------------------------------------------------------------------------------------
def test_write_creates_a_file_and_its_folders(tools: Tools, repo: Path) -> None:
    result = tools.call("write_file", {"path": "pkg/sub/new.py", "content": "print('hi')\n"})
    assert result["content"][0]["text"] == (
        "Created pkg/sub/new.py (12 bytes).\n--- /dev/null\n+++ b/pkg/sub/new.py\n@@ -0,0 +1 @@\n+print('hi')")
    assert result["structuredContent"] == {"path": "pkg/sub/new.py", "created": True, "size": 12,
                                           "diff": "--- /dev/null\n+++ b/pkg/sub/new.py\n@@ -0,0 +1 @@\n+print('hi')\n",
                                           "new_diagnostics": []}  # (no --precise: no language server checks it)
    assert (repo / "pkg" / "sub" / "new.py").read_text() == "print('hi')\n"
    assert stat.S_IMODE((repo / "pkg" / "sub" / "new.py").stat().st_mode) == 0o666 & ~_umask()
    assert tools.text("write_file", {"path": "empty.txt", "content": ""}) == "Created empty.txt (0 bytes)."
    assert _leftovers(repo / "pkg" / "sub") == [] and _leftovers(repo) == []


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_write_replaces_keeping_the_mode_and_returns_the_diff(tools: Tools, repo: Path) -> None:
    script = repo / "run.sh"
    script.write_text("#!/bin/sh\necho one\n")
    script.chmod(0o750)
    inode = script.stat().st_ino
    result = tools.call("write_file", {"path": "run.sh", "content": "#!/bin/sh\necho two\n"})
    assert result["structuredContent"]["created"] is False
    assert result["structuredContent"]["diff"] == (
        "--- a/run.sh\n+++ b/run.sh\n@@ -1,2 +1,2 @@\n #!/bin/sh\n-echo one\n+echo two\n")
    assert script.read_text() == "#!/bin/sh\necho two\n"
    assert stat.S_IMODE(script.stat().st_mode) == 0o750
    assert script.stat().st_ino != inode  # a new file renamed into place: never half-written
    assert tools.text("write_file", {"path": "run.sh", "content": "#!/bin/sh\necho two\n"}) == (
        "Wrote run.sh (19 bytes); the content is unchanged.")
    no_newline = tools.data("write_file", {"path": "run.sh", "content": "#!/bin/sh\necho three"})["diff"]
    assert no_newline.endswith("-echo two\n+echo three\n\\ No newline at end of file\n")
    assert _leftovers(repo) == []


def test_write_text_exactly_as_given(tools: Tools, repo: Path) -> None:
    content = "crlf\r\nünïcödé ✓\n\ttabs\n"
    tools.call("write_file", {"path": "exact.txt", "content": content})
    assert (repo / "exact.txt").read_bytes() == content.encode()
    assert "unpaired surrogate" in tools.error("write_file", {"path": "bad.txt", "content": "\ud800"})
    assert not (repo / "bad.txt").exists()


def test_write_refusals(tools: Tools, repo: Path) -> None:
    assert tools.error("write_file", {"path": "src", "content": "x"}) == "src is a folder; write_file writes files"
    assert tools.error("write_file", {"path": "README.md/x", "content": "x"}) == (
        "Not found: README.md/x (a part of the path is not a folder)")
    assert tools.error("write_file", {"path": ".git/config", "content": "x"}) == (
        "Refused: write_file does not write inside .git folders (.git/config)")
    assert (repo / "README.md").read_text().startswith("# Demo")


def test_without_allow_write_nothing_can_be_written(repo: Path) -> None:
    with Tools(repo) as tools:
        for name in ("write_file", "edit_file"):
            reply = tools.process.request("tools/call", {"name": name, "arguments": {
                "path": "README.md", "content": "x", "old_text": "Demo", "new_text": "x"}})
            assert reply["error"] == {"code": -32602, "message": f"Unknown tool: {name}"}
    assert (repo / "README.md").read_text() == "# Demo\n\nA demo project.\n"


# -- edit_file -----------------------------------------------------------------------------------------
def test_edit_replaces_one_occurrence_and_returns_the_diff(tools: Tools, repo: Path) -> None:
    (repo / "src" / "app.py").chmod(0o640)
    result = tools.call("edit_file", {"path": "src/helpers.py", "old_text": "return 42", "new_text": "return 43"})
    assert result["content"][0]["text"] == (
        "Replaced 1 occurrence in src/helpers.py.\n--- a/src/helpers.py\n+++ b/src/helpers.py\n"
        "@@ -1,2 +1,2 @@\n def answer():\n-    return 42\n+    return 43")
    assert result["structuredContent"]["replacements"] == 1
    assert (repo / "src" / "helpers.py").read_text() == "def answer():\n    return 43\n"
    tools.call("edit_file", {"path": "src/app.py", "old_text": "import util\n", "new_text": ""})
    assert (repo / "src" / "app.py").read_text().startswith("\n\ndef main()")
    assert stat.S_IMODE((repo / "src" / "app.py").stat().st_mode) == 0o640
    assert _leftovers(repo / "src") == []


def test_edit_needs_a_unique_match_unless_replace_all(tools: Tools, repo: Path) -> None:
    (repo / "dup.txt").write_text("x = 1\ny = 2\nx = 1\nz = 3\nx = 1\n")
    message = tools.error("edit_file", {"path": "dup.txt", "old_text": "x = 1", "new_text": "x = 9"})
    assert message == ("old_text occurs 3 times in dup.txt (at lines 1, 3, 5). Include more of the surrounding lines "
                       "to make it unique, or set replace_all to replace every occurrence.")
    assert (repo / "dup.txt").read_text() == "x = 1\ny = 2\nx = 1\nz = 3\nx = 1\n"
    tools.call("edit_file", {"path": "dup.txt", "old_text": "x = 1\nz", "new_text": "x = 2\nz"})
    assert (repo / "dup.txt").read_text() == "x = 1\ny = 2\nx = 2\nz = 3\nx = 1\n"
    assert tools.data("edit_file", {"path": "dup.txt", "old_text": "x = 1", "new_text": "x = 0",
                                    "replace_all": True})["replacements"] == 2
    assert (repo / "dup.txt").read_text() == "x = 0\ny = 2\nx = 2\nz = 3\nx = 0\n"


def test_edit_errors_help_the_next_try(tools: Tools, repo: Path) -> None:
    missing = tools.error("edit_file", {"path": "src/helpers.py", "old_text": "def answer():\n  return 42",
                                        "new_text": "x"})
    assert missing == ("old_text was not found in src/helpers.py. It must match the file exactly, whitespace and "
                       "indentation included; read the file again and copy the text. Its first line, ignoring "
                       "surrounding whitespace, appears at line(s) 1.")
    assert tools.error("edit_file", {"path": "src/helpers.py", "old_text": "nowhere", "new_text": "x"}).endswith(
        "read the file again and copy the text.")
    assert tools.error("edit_file", {"path": "src/helpers.py", "old_text": "a", "new_text": "a"}) == (
        "old_text and new_text are the same: there is nothing to change")
    assert tools.error("edit_file", {"path": "nope.py", "old_text": "a", "new_text": "b"}) == "Not found: nope.py"
    (repo / "latin1.txt").write_bytes("caf\xe9\n".encode("latin-1"))
    assert "not valid UTF-8" in tools.error("edit_file", {"path": "latin1.txt", "old_text": "caf", "new_text": "x"})
    (repo / "blob.bin").write_bytes(b"abc\x00def")
    assert "binary" in tools.error("edit_file", {"path": "blob.bin", "old_text": "abc", "new_text": "x"})
    assert (repo / "blob.bin").read_bytes() == b"abc\x00def"


def test_edit_of_a_crlf_file_accepts_plain_newlines(tools: Tools, repo: Path) -> None:
    (repo / "win.txt").write_bytes(b"one\r\ntwo\r\nthree\r\n")
    tools.call("edit_file", {"path": "win.txt", "old_text": "one\ntwo", "new_text": "uno\ndos"})
    assert (repo / "win.txt").read_bytes() == b"uno\r\ndos\r\nthree\r\n"


def test_edit_refuses_when_the_file_changed_meanwhile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Between reading and renaming, someone else writes the file: nothing is overwritten."""
    (tmp_path / "f.txt").write_text("original\n")
    def racing_replace(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("must not get here")

    original_lstat = writes.safe_open.lstat_in
    calls = []

    def lstat_then_change(parent: int, name: str, shown: str) -> os.stat_result | None:
        calls.append(name)
        if len(calls) == 2:  # the check just before the rename
            (tmp_path / "f.txt").write_text("someone else's change, longer\n")
        return original_lstat(parent, name, shown)

    monkeypatch.setattr(writes.safe_open, "lstat_in", lstat_then_change)
    monkeypatch.setattr(os, "replace", racing_replace)
    with pytest.raises(ToolError, match="changed while it was being written"):
        writes.edit_file(context(), Roots([str(tmp_path)]), "f.txt", "original", "mine", False, None, False, False, None)
    assert (tmp_path / "f.txt").read_text() == "someone else's change, longer\n"
    assert _leftovers(tmp_path) == []


def test_large_files_get_a_summary_instead_of_a_diff(tools: Tools, repo: Path) -> None:
    big = "start\n" + "x\n" * (writes.MAX_DIFF_INPUT // 2 + 10)
    data = tools.data("write_file", {"path": "big.txt", "content": big})
    assert data["diff"] == "(no diff: big.txt is larger than 1.0 MiB)\n" and data["size"] == len(big)
    edited = tools.data("edit_file", {"path": "big.txt", "old_text": "start\n", "new_text": "begin\n"})
    assert edited["diff"] == "(no diff: big.txt is larger than 1.0 MiB)\n"
    assert (repo / "big.txt").read_text().startswith("begin\nx\n")


def _patched(before: list[str], diff: str) -> list[str]:
    """`before` with a unified diff applied, as patch(1) would (no fuzz: every context line must match)."""
    out: list[str] = []
    at = 0
    lines = diff.split("\n")[2:]
    number = 0
    while number < len(lines):
        header = re.match(r"@@ -(\d+)(?:,(\d+))? \+\d+(?:,\d+)? @@$", lines[number])
        number += 1
        if header is None:
            continue
        start, length = int(header[1]), int(header[2] if header[2] is not None else 1)
        first = start - 1 if length else start  # an empty range names the line before it
        out += before[at:first]
        at = first
        while number < len(lines) and lines[number][:1] in (" ", "-", "+"):
            kind, text = lines[number][0], lines[number][1:] + "\n"
            if kind in " -":
                assert before[at] == text, (at, before[at], text)
                at += 1
            if kind in " +":
                out.append(text)
            number += 1
    return out + before[at:]


def test_a_diff_shows_the_part_that_changed_numbered_as_in_the_whole_file(monkeypatch: pytest.MonkeyPatch) -> None:
    """A one-line change in a long file is diffed in a window of the change and three lines around it (what
    difflib is given), not the whole file (0.15 s of Python for 90 000 lines: 32 such writes at once held
    pings 330-590 ms), and its diff is the one of the whole file, hunks numbered as there. Random edits of
    files of repeated lines apply back (patch(1)'s rule) to the text written."""
    whole = [f"line {number}\n" for number in range(90_000)]
    changed = [*whole[:45_000], "changed\n", *whole[45_001:]]
    given: list[int] = []
    unified_diff = difflib.unified_diff

    def recorded(a: list[str], b: list[str], *args: Any, **kwargs: Any) -> Any:
        given.append(len(a) + len(b))
        return unified_diff(a, b, *args, **kwargs)

    monkeypatch.setattr(writes.difflib, "unified_diff", recorded)
    mine = writes.unified_diff("".join(whole), "".join(changed), "f", created=False)
    assert given == [14]
    assert mine == "".join(unified_diff(whole, changed, "a/f", "b/f", n=3))
    assert "@@ -44998,7 +44998,7 @@" in mine
    chance = random.Random(24)
    for _ in range(2000):
        before = [chance.choice("abcdefgh") + "\n" for _ in range(chance.randint(0, 60))]
        after = list(before)
        for _ in range(chance.randint(1, 4)):
            at = chance.randint(0, len(after))
            if chance.random() < 0.5 or not after:
                after.insert(at, chance.choice("abxyz") + "\n")
            else:
                del after[min(at, len(after) - 1)]
        diff = writes.unified_diff("".join(before), "".join(after), "f", created=False)
        assert _patched(before, diff) == after, diff


# -- dry runs and the syntax check ------------------------------------------------------------------------
def test_a_dry_run_writes_nothing_and_makes_no_folder(tools: Tools, repo: Path) -> None:
    before = snapshot(repo)
    result = tools.call("write_file", {"path": "new/deep/file.py", "content": "x = 1\n", "dry_run": True})
    assert result["content"][0]["text"].startswith("Dry run: would create new/deep/file.py (6 bytes); nothing was written.")
    assert result["structuredContent"]["created"] is True and "+x = 1" in result["structuredContent"]["diff"]
    text = tools.text("edit_file", {"path": "src/helpers.py", "old_text": "42", "new_text": "43", "dry_run": True})
    assert text.startswith("Dry run: would replace 1 occurrence in src/helpers.py; nothing was written.\n") and "+    return 43" in text
    assert snapshot(repo) == before


def test_a_change_that_adds_syntax_errors_is_refused_unless_asked(tools: Tools, repo: Path) -> None:
    before = snapshot(repo)
    message = tools.error("edit_file", {"path": "src/helpers.py", "old_text": "return 42", "new_text": "return (42"})
    assert message.startswith("Refused: edit_file would leave src/helpers.py with syntax errors it did not have; "
                              "nothing was written:\n  src/helpers.py:2:12: '(' was never closed"), message
    assert message.endswith("Correct the change, or pass allow_syntax_errors: true to write it as it is.")
    (repo / "main.go").write_text("package main\n\nfunc main() {\n\tprintln(1)\n}\n")
    before = snapshot(repo)
    assert "main.go:4:" in tools.error("edit_file", {"path": "main.go", "old_text": "println(1)", "new_text": "println(1"})
    assert snapshot(repo) == before
    # newer Python than the server's is no error (the grammar agrees it is fine); C, C++ and PHP are not checked,
    # nor a new file outside Python (their grammars misread valid code: preprocessor lines, templates)
    tools.call("write_file", {"path": "new.py", "content": 'd = {}\nprint(f"{d["a"]}")\ntype X = int\n'})
    tools.call("write_file", {"path": "guard.h", "content": '#ifdef __cplusplus\nextern "C" {\n#endif\nint f(void);\n'
                                                            '#ifdef __cplusplus\n}\n#endif\n'})
    tools.call("write_file", {"path": "page.php", "content": "<h1>T</h1>\n<?php echo $x; ?>\n"})
    tools.call("edit_file", {"path": "src/helpers.py", "old_text": "return 42", "new_text": "return (42", "allow_syntax_errors": True})
    assert (repo / "src" / "helpers.py").read_text() == "def answer():\n    return (42\n"
    # a file that had an error may keep one (only more errors than before are refused), and plain text is not checked
    tools.call("edit_file", {"path": "src/helpers.py", "old_text": "answer", "new_text": "reply"})
    tools.call("write_file", {"path": "notes.txt", "content": "def (\n"})


def test_several_edits_in_one_call_apply_in_order_all_or_none(tools: Tools, repo: Path) -> None:
    (repo / "conf.py").write_text("A = 1\nB = 2\nC = 3\nA = 1\n")
    edits = [{"old_text": "B = 2", "new_text": "B = 20"},
             {"old_text": "A = 1", "new_text": "A = 10", "replace_all": True},
             {"old_text": "B = 20\nC", "new_text": "B = 21\nC"}]  # sees the first edit's text
    result = tools.call("edit_file", {"path": "conf.py", "edits": edits})
    assert result["content"][0]["text"].startswith("Replaced 4 occurrences in 3 edits in conf.py.\n")
    assert result["structuredContent"]["replacements"] == 4
    assert (repo / "conf.py").read_text() == "A = 10\nB = 21\nC = 3\nA = 10\n"
    before = snapshot(repo)
    failing = [{"old_text": "C = 3", "new_text": "C = 30"}, {"old_text": "D = 4", "new_text": "D = 40"}]
    message = tools.error("edit_file", {"path": "conf.py", "edits": failing})
    assert message.startswith("Edit 2 of 2: old_text was not found in conf.py.") and "Nothing was written" in message
    assert "Edit 1 of 2: old_text occurs 2 times" in tools.error("edit_file", {"path": "conf.py", "edits": [
        {"old_text": "A = 10", "new_text": "A = 11"}, {"old_text": "C = 3", "new_text": "C = 4"}]})
    assert snapshot(repo) == before
    assert tools.error("edit_file", {"path": "conf.py", "old_text": "C", "new_text": "D", "edits": edits}) == (
        "Give either old_text and new_text (one edit) or edits (several), not both")
    assert tools.error("edit_file", {"path": "conf.py"}) == (
        "edit_file needs old_text and new_text (one edit), or edits (several)")
    assert "edit 2: old_text and new_text are the same" in tools.error("edit_file", {"path": "conf.py", "edits": [
        {"old_text": "C", "new_text": "D"}, {"old_text": "x", "new_text": "x"}]})
    assert "Invalid arguments" in tools.error("edit_file", {"path": "conf.py", "edits": [{"old_text": "C"}]})

"""Forged lines: file names holding a line break or a bidi override (U+202E), through real tool calls.

Every text a model reads shows such a name escaped (`text.printable`): replies and diff headers of the
write tools, error messages (safe_open's, the write refusals, read_file's and list_files'), the
listing itself and the confinement refusal. structuredContent keeps the real names.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from workspace_support import Tools

FORGED = "new\nline\u202etxt.exe"
SHOWN = "new\\nline\\u202etxt.exe"
FOLDER = "dir\n\u202e"
FOLDER_SHOWN = "dir\\n\\u202e"
RAW = ("\n", "\u202e")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = tmp_path / "root"
    folder.mkdir()
    (folder / "README.md").write_text("# Demo\n")
    (folder / FOLDER).mkdir()
    return folder


@pytest.fixture
def tools(root: Path) -> Iterator[Tools]:
    with Tools(root, write=True) as server:
        yield server


def _clean(text: str) -> str:
    """`text` with no raw line break inside a name and no bidi control anywhere."""
    assert "\u202e" not in text, text
    assert FORGED not in text and FOLDER not in text, text
    return text


def _error(tools: Tools, name: str, arguments: dict[str, Any]) -> str:
    return _clean(tools.error(name, arguments))


def test_write_replies_and_diff_headers(tools: Tools, root: Path) -> None:
    created = tools.call("write_file", {"path": FORGED, "content": "one\n"})
    diff = f"--- /dev/null\n+++ b/{SHOWN}\n@@ -0,0 +1 @@\n+one\n"
    assert _clean(created["content"][0]["text"]) == f"Created {SHOWN} (4 bytes).\n{diff}".rstrip("\n")
    assert created["structuredContent"] == {"path": FORGED, "created": True, "size": 4, "diff": diff, "new_diagnostics": []}
    assert (root / FORGED).read_text() == "one\n"

    wrote = tools.call("write_file", {"path": FORGED, "content": "two\n"})
    assert _clean(wrote["content"][0]["text"]) == (
        f"Wrote {SHOWN} (4 bytes).\n--- a/{SHOWN}\n+++ b/{SHOWN}\n@@ -1 +1 @@\n-one\n+two")
    assert wrote["structuredContent"]["path"] == FORGED
    assert _clean(tools.text("write_file", {"path": FORGED, "content": "two\n"})) == (
        f"Wrote {SHOWN} (4 bytes); the content is unchanged.")

    edited = tools.call("edit_file", {"path": FORGED, "old_text": "two", "new_text": "three"})
    assert _clean(edited["content"][0]["text"]) == (
        f"Replaced 1 occurrence in {SHOWN}.\n--- a/{SHOWN}\n+++ b/{SHOWN}\n@@ -1 +1 @@\n-two\n+three")
    assert edited["structuredContent"]["path"] == FORGED

    absolute = tools.call("write_file", {"path": f"{root}/{FOLDER}/x.txt", "content": "x\n"})
    assert f"+++ b/{FOLDER_SHOWN}/x.txt" in _clean(absolute["content"][0]["text"])

    big = "x\n" * (600 * 1024)
    summary = tools.data("write_file", {"path": f"{FOLDER}/big.txt", "content": big})["diff"]
    assert _clean(summary) == f"(no diff: {FOLDER_SHOWN}/big.txt is larger than 1.0 MiB)\n"


def test_write_refusals(tools: Tools, root: Path) -> None:
    (root / FORGED).write_text("a\na\n")
    assert _error(tools, "edit_file", {"path": FORGED, "old_text": "zzz", "new_text": "b"}).startswith(
        f"old_text was not found in {SHOWN}.")
    assert _error(tools, "edit_file", {"path": FORGED, "old_text": "a", "new_text": "b"}).startswith(
        f"old_text occurs 2 times in {SHOWN} (at lines 1, 2).")
    assert _error(tools, "edit_file", {"path": FORGED, "old_text": "a", "new_text": "b" * 9_000_000,
                                       "replace_all": True}).startswith(
        f"Refused: replacing 2 occurrences would make {SHOWN} 17.2 MiB;")
    assert _error(tools, "edit_file", {"path": f"{FOLDER}/gone", "old_text": "a", "new_text": "b"}) == (
        f"Not found: {FOLDER_SHOWN}/gone")
    assert _error(tools, "write_file", {"path": FOLDER, "content": "x"}) == (
        f"{FOLDER_SHOWN} is a folder; write_file writes files")
    assert _error(tools, "write_file", {"path": f"{FORGED}/x", "content": "x"}) == (  # safe_open.os_error: ENOTDIR
        f"Not found: {SHOWN}/x (a part of the path is not a folder)")
    assert _error(tools, "write_file", {"path": f"{FOLDER}/.git/config", "content": "x"}) == (
        f"Refused: write_file does not write inside .git folders ({FOLDER_SHOWN}/.git/config)")
    (root / FOLDER / "HEAD").write_text("ref: refs/heads/main\n")
    (root / FOLDER / "refs").mkdir()
    assert _error(tools, "write_file", {"path": f"{FOLDER}/objects/x", "content": "x"}).startswith(
        f"Refused: writing objects would make {FOLDER_SHOWN} a git repository")
    os.chmod(root / FORGED, 0o444)
    assert _error(tools, "write_file", {"path": FORGED, "content": "x"}).startswith(f"Refused: {SHOWN} is read-only")
    (root / f"{FOLDER}/blob").write_bytes(b"a\x00b")
    assert _error(tools, "edit_file", {"path": f"{FOLDER}/blob", "old_text": "a", "new_text": "b"}) == (
        f"{FOLDER_SHOWN}/blob is a binary file; edit_file edits text only")
    (root / f"{FOLDER}/latin").write_bytes(b"caf\xe9\n")
    assert _error(tools, "edit_file", {"path": f"{FOLDER}/latin", "old_text": "caf", "new_text": "b"}).startswith(
        f"{FOLDER_SHOWN}/latin is not valid UTF-8;")
    os.mkfifo(root / FOLDER / "fifo")
    assert _error(tools, "edit_file", {"path": f"{FOLDER}/fifo", "old_text": "a", "new_text": "b"}) == (
        f"{FOLDER_SHOWN}/fifo is a named pipe (FIFO), not a regular file")


def test_read_and_list_texts(tools: Tools, root: Path) -> None:
    (root / FORGED).write_text("only line\n")
    (root / FOLDER / "empty.txt").write_text("")
    (root / FOLDER / "blob").write_bytes(b"a\x00b")
    (root / FOLDER / "two.txt").write_text("1\n2\n")
    listed = tools.call("list_files")
    assert _clean(listed["content"][0]["text"]).splitlines() == [
        "README.md", f"{FOLDER_SHOWN}/blob", f"{FOLDER_SHOWN}/empty.txt", f"{FOLDER_SHOWN}/two.txt", SHOWN]
    assert FORGED in listed["structuredContent"]["files"]
    assert _clean(tools.text("list_files", {"path": FOLDER, "limit": 1})).endswith(
        f"[Showing the first 1 of 3 files under {FOLDER_SHOWN}. Pass a deeper path or a pattern to narrow the list, "
        "or raise limit.]")
    assert _clean(tools.text("list_files", {"path": FOLDER, "pattern": "*.none\u202e"})) == (
        f"No files under {FOLDER_SHOWN} matching *.none\\u202e.")
    assert _error(tools, "list_files", {"path": FORGED}) == f"{SHOWN} is a file, not a folder; read it with read_file"
    assert _error(tools, "read_file", {"path": FOLDER}) == (
        f"{FOLDER_SHOWN} is a folder; use list_files to see what it holds")
    assert _error(tools, "read_file", {"path": FORGED, "offset": 5}) == (
        f"offset 5 is past the end of {SHOWN}, which has 1 line")
    assert _error(tools, "read_file", {"path": f"{FOLDER}/blob"}) == (
        f"{FOLDER_SHOWN}/blob is a binary file (3 bytes); read_file shows text only")
    assert _error(tools, "read_file", {"path": f"{FOLDER}/missing"}) == f"Not found: {FOLDER_SHOWN}/missing"
    assert _clean(tools.text("read_file", {"path": f"{FOLDER}/empty.txt"})) == f"({FOLDER_SHOWN}/empty.txt is empty)"
    assert _clean(tools.text("read_file", {"path": f"{FOLDER}/two.txt", "limit": 1})).endswith(
        f"[Lines 1-1 of 2 in {FOLDER_SHOWN}/two.txt. Call read_file with offset=2 to read on.]")
    read = tools.call("read_file", {"path": FORGED})
    assert read["structuredContent"]["path"] == FORGED


def test_the_confinement_refusal(tools: Tools) -> None:
    for tool, arguments in (("read_file", {"path": f"../{FORGED}"}), ("list_files", {"path": f"../{FOLDER}"}),
                            ("write_file", {"path": f"../{FORGED}", "content": "x"})):
        message = _error(tools, tool, arguments)
        assert message.startswith("Access denied: ../") and message.endswith(" is not inside the workspace roots")
        assert SHOWN in message or FOLDER_SHOWN in message

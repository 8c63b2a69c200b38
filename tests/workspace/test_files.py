"""list_files and read_file on a real repository, through the real process (and, for the bounds that
need big files, in-process with smaller limits)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from shipcode_mcp.primitives import ToolError
from shipcode_mcp.workspace import files
from shipcode_mcp.workspace.roots import Roots
from shipcode_mcp.workspace.tools import run as run_tool
from workspace_support import Tools, context, git, make_repo


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = make_repo(tmp_path_factory.mktemp("files") / "repo")
    (repo / "build").mkdir()
    (repo / "build" / "out.js").write_text("ignored by .gitignore\n")
    (repo / "debug.log").write_text("ignored too\n")
    (repo / ".env").write_text("HIDDEN=1\n")  # dotfiles are shown
    (repo / "docs" / ".ignore").write_text("draft.md\n")
    (repo / "docs" / "draft.md").write_text("ignored by .ignore\n")
    (repo / "a.txt").write_text("sorts after a/ in rg, before it as a string\n")
    (repo / "a").mkdir()
    (repo / "a" / "b.txt").write_text("b\n")
    (repo / "empty.txt").write_text("")
    (repo / "no-newline.txt").write_text("one\ntwo")
    (repo / "crlf.txt").write_bytes(b"first\r\nsecond\r\n")
    (repo / "latin1.txt").write_bytes("caf\xe9\n".encode("latin-1"))
    (repo / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(100))
    (repo / "long-line.txt").write_text("x" * 5000 + "\nshort\n")
    (repo / "numbers.txt").write_text("".join(f"line {n}\n" for n in range(1, 3001)))
    (repo / "wide.txt").write_text("".join(f"{n:05d} " + "w" * 1000 + "\n" for n in range(1, 401)))
    (repo / "spaced name ünïcode.txt").write_text("hi\n")
    return repo


# -- list_files ---------------------------------------------------------------------------------------
def test_list_files_is_sorted_honours_ignore_files_and_hides_git(tools: Tools) -> None:
    data = tools.data("list_files")
    assert data["path"] == "." and data["truncated"] is False
    assert data["files"] == sorted(data["files"])
    assert data["total"] == len(data["files"])
    assert {".env", ".gitignore", "README.md", "src/app.py", "src/helpers.py", "docs/guide.md", "docs/.ignore",
            "a.txt", "a/b.txt", "spaced name ünïcode.txt"} <= set(data["files"])
    for hidden in ("build/out.js", "debug.log", "docs/draft.md"):
        assert hidden not in data["files"]
    assert not any(name.startswith(".git/") for name in data["files"])
    assert tools.last["content"][0]["text"].splitlines() == data["files"]


def test_list_files_under_a_folder_with_a_pattern(tools: Tools, repo: Path) -> None:
    assert tools.data("list_files", {"path": "src"})["files"] == ["src/app.py", "src/helpers.py"]
    assert tools.data("list_files", {"path": "src/"})["path"] == "src"
    assert tools.data("list_files", {"pattern": "*.md"})["files"] == ["README.md", "docs/guide.md"]
    assert tools.data("list_files", {"pattern": "docs/**"})["files"] == ["docs/.ignore", "docs/guide.md"]
    assert tools.data("list_files", {"path": str(repo / "docs"), "pattern": "*.md"})["files"] == ["docs/guide.md"]
    assert tools.data("list_files", {"path": f"file://{repo}/src"})["files"] == ["src/app.py", "src/helpers.py"]
    assert tools.data("list_files", {"pattern": "--files"})["files"] == []  # a glob, never an option
    # A pattern narrows what the ignore files leave; it never brings ignored files back.
    assert tools.data("list_files", {"pattern": "*.log"})["files"] == []
    assert tools.data("list_files", {"pattern": "build/**"})["files"] == []
    everything = tools.data("list_files")["files"]
    assert tools.data("list_files", {"pattern": "!*.md"})["files"] == [f for f in everything if not f.endswith(".md")]
    assert tools.data("list_files", {"pattern": "#*"})["files"] == []  # not a comment line
    assert "line breaks" in tools.error("list_files", {"pattern": "*.md\n!*"})
    none = tools.call("list_files", {"pattern": "*.nothing"})
    assert none["structuredContent"]["files"] == [] and none["structuredContent"]["total"] == 0
    assert none["content"][0]["text"] == "No files under the workspace root matching *.nothing."


def test_list_files_says_when_the_list_was_cut(tools: Tools) -> None:
    full = tools.data("list_files")["files"]
    result = tools.call("list_files", {"limit": 3})
    data = result["structuredContent"]
    assert data["files"] == full[:3] and data["total"] == len(full) and data["truncated"] is True
    lines = result["content"][0]["text"].splitlines()
    assert lines[:3] == full[:3]
    assert lines[3] == (f"[Showing the first 3 of {len(full)} files under the workspace root. Pass a deeper path or a pattern to narrow "
                        "the list, or raise limit.]")


def test_list_files_errors(tools: Tools) -> None:
    assert tools.error("list_files", {"path": "README.md"}) == "README.md is a file, not a folder; read it with read_file"
    assert tools.error("list_files", {"path": "missing"}) == "Not found: missing"


# -- read_file ------------------------------------------------------------------------------------------
def test_read_file_numbers_lines_like_cat_n(tools: Tools, repo: Path) -> None:
    result = tools.call("read_file", {"path": "src/app.py", "limit": 3})
    assert result["content"][0]["text"] == (
        "     1\timport util\n     2\t\n     3\t\n"
        "[Lines 1-3 of 9 in src/app.py. Call read_file with offset=4 to read on.]")
    assert result["structuredContent"] == {
        "path": "src/app.py", "text": "import util\n\n", "start_line": 1, "end_line": 3, "total_lines": 9,
        "next_offset": 4, "size": (repo / "src" / "app.py").stat().st_size,
        "sha256": hashlib.sha256((repo / "src" / "app.py").read_bytes()).hexdigest()}


def test_read_file_whole_file_has_no_footer(tools: Tools, repo: Path) -> None:
    text = tools.text("read_file", {"path": "README.md"})
    assert text == "     1\t# Demo\n     2\t\n     3\tA demo project."
    data = tools.data("read_file", {"path": f"file://{repo}/README.md"})
    assert data["next_offset"] is None and data["total_lines"] == 3 and data["end_line"] == 3


def test_read_file_pages_through_a_long_file(tools: Tools) -> None:
    first = tools.data("read_file", {"path": "numbers.txt"})
    assert (first["start_line"], first["end_line"], first["total_lines"], first["next_offset"]) == (1, 2000, 3000, 2001)
    second = tools.call("read_file", {"path": "numbers.txt", "offset": 2001})
    data = second["structuredContent"]
    assert (data["start_line"], data["end_line"], data["next_offset"]) == (2001, 3000, None)
    assert second["content"][0]["text"].splitlines()[0] == "  2001\tline 2001"
    middle = tools.data("read_file", {"path": "numbers.txt", "offset": 1500, "limit": 2})
    assert middle["text"] == "line 1500\nline 1501" and middle["next_offset"] == 1502
    assert tools.data("read_file", {"path": "numbers.txt", "offset": 3000})["text"] == "line 3000"


def test_read_file_byte_budget_stops_early_and_says_where_to_go_on(repo: Path) -> None:
    with Tools(repo, options=("--max-result-tokens", "0")) as tools:  # the tool's own budget, not the client's
        result = tools.call("read_file", {"path": "wide.txt", "limit": 10000})
    data = result["structuredContent"]
    assert data["end_line"] < 400 and data["next_offset"] == data["end_line"] + 1
    assert len(data["text"].encode()) <= files.READ_BYTES
    assert result["content"][0]["text"].endswith(
        f"[Lines 1-{data['end_line']} of 400 in wide.txt. Call read_file with offset={data['next_offset']} to read on.]")


def test_read_file_edge_shapes(tools: Tools) -> None:
    empty = tools.call("read_file", {"path": "empty.txt"})
    assert empty["content"][0]["text"] == "(empty.txt is empty)"
    assert empty["structuredContent"]["total_lines"] == 0 and empty["structuredContent"]["end_line"] == 0
    assert tools.data("read_file", {"path": "no-newline.txt"})["text"] == "one\ntwo"
    assert tools.data("read_file", {"path": "no-newline.txt"})["total_lines"] == 2
    assert tools.data("read_file", {"path": "crlf.txt"})["text"] == "first\nsecond"
    latin = tools.call("read_file", {"path": "latin1.txt"})
    assert latin["structuredContent"]["text"] == "caf\ufffd"
    assert "[Not valid UTF-8: undecodable bytes are shown as \ufffd.]" in latin["content"][0]["text"]
    long = tools.call("read_file", {"path": "long-line.txt"})
    first = long["structuredContent"]["text"].splitlines()[0]
    assert first == "x" * 2000 + "… [line cut: 4.9 KiB in all]"
    assert "[1 line longer than 2000 characters cut; search_code finds text inside them.]" in long["content"][0]["text"]


def test_read_file_errors(tools: Tools) -> None:
    assert tools.error("read_file", {"path": "image.png"}) == "image.png is a binary file (116 bytes); read_file shows text only"
    assert tools.error("read_file", {"path": "src"}) == "src is a folder; use list_files to see what it holds"
    assert tools.error("read_file", {"path": "."}) == ". is a folder; use list_files to see what it holds"
    assert tools.error("read_file", {"path": "nope.txt"}) == "Not found: nope.txt"
    assert tools.error("read_file", {"path": "README.md/x"}) == "Not found: README.md/x (a part of the path is not a folder)"
    assert tools.error("read_file", {"path": "numbers.txt", "offset": 3001}) == (
        "offset 3001 is past the end of numbers.txt, which has 3000 lines")
    assert tools.error("read_file", {"path": "empty.txt", "offset": 2}) == "offset 2 is past the end of empty.txt, which has 0 lines"


def test_read_file_in_process_beyond_the_scan_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file larger than MAX_SCAN_BYTES: the start reads fine, without a total; far offsets are refused."""
    monkeypatch.setattr(files, "MAX_SCAN_BYTES", 1000)
    (tmp_path / "big.txt").write_text("".join(f"{n:09d}\n" for n in range(1, 301)))  # 3000 bytes
    roots = Roots([str(tmp_path)])
    page = files.read_file(context(), roots, "big.txt", 1, 5).structured
    assert page is not None and page["total_lines"] is None and page["next_offset"] == 6
    assert page["text"].splitlines()[-1] == "000000005"
    last = files.read_file(context(), roots, "big.txt", 99, 5).structured
    assert last is not None and last["text"] == "000000099\n000000100" and last["next_offset"] == 101
    with pytest.raises(ToolError, match=r"beyond the first 1000 bytes of big\.txt"):
        files.read_file(context(), roots, "big.txt", 101, 5)


def _bytes_read() -> int:
    """Bytes this process has read with read(2) and friends so far (Linux's /proc/self/io `rchar`)."""
    with open("/proc/self/io") as io:
        return next(int(line.split()[1]) for line in io if line.startswith("rchar:"))


@pytest.mark.skipif(not Path("/proc/self/io").exists(), reason="counts bytes read through /proc/self/io (Linux)")
def test_read_file_of_a_huge_file_reads_only_what_the_page_needs(tmp_path: Path) -> None:
    """A 2 GiB file (sparse: 2 MiB of text, then NUL bytes past the binary sniff): the first page reads one
    chunk, a far page the bytes before it and one chunk more; no page counts the rest of the file."""
    text = "".join(f"line {n:07d} of the text\n" for n in range(1, 80_001))  # 25 bytes a line, 2 MB
    path = tmp_path / "huge.txt"
    path.write_text(text)
    os.truncate(path, 2 << 30)
    roots = Roots([str(tmp_path)])
    files.read_file(context(), roots, "huge.txt", 1, 1)  # imports and caches warmed up: they read files too
    before = _bytes_read()
    page = files.read_file(context(), roots, "huge.txt", 1, 100).structured
    used = _bytes_read() - before
    assert page is not None and (page["start_line"], page["end_line"], page["next_offset"]) == (1, 100, 101)
    assert page["total_lines"] is None and page["text"].splitlines()[-1] == "line 0000100 of the text"
    assert used <= 2 * files._CHUNK
    before = _bytes_read()
    far = files.read_file(context(), roots, "huge.txt", 60_001, 100).structured
    used = _bytes_read() - before
    assert far is not None and far["text"].splitlines()[0] == "line 0060001 of the text" and far["next_offset"] == 60_101
    assert 60_000 * 25 <= used <= 60_100 * 25 + 2 * files._CHUNK


def test_read_file_counts_the_lines_left_only_when_few_bytes_are(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """total_lines is exact when the end of the file lies within COUNT_AHEAD bytes of what the page read, null
    before that; next_offset is exact either way, and the text says which it is."""
    monkeypatch.setattr(files, "COUNT_AHEAD", 1000)
    monkeypatch.setattr(files, "_CHUNK", 100)
    (tmp_path / "f.txt").write_text("".join(f"{n:09d}\n" for n in range(1, 301)))  # 3000 bytes, 10 a line
    roots = Roots([str(tmp_path)])
    start = files.read_file(context(), roots, "f.txt", 1, 5)
    assert start.structured is not None and start.structured["total_lines"] is None
    assert start.structured["next_offset"] == 6
    assert start.content[0]["text"].endswith(
        "[Lines 1-5 of f.txt (2.9 KiB), which goes on; lines past this page were not counted. "
        "Call read_file with offset=6 to read on.]")
    near = files.read_file(context(), roots, "f.txt", 150, 60).structured  # 900 bytes left after line 209
    assert near is not None and (near["total_lines"], near["next_offset"]) == (300, 210)
    last = files.read_file(context(), roots, "f.txt", 296, 10).structured
    assert last is not None and (last["total_lines"], last["end_line"], last["next_offset"]) == (300, 300, None)
    with pytest.raises(ToolError, match=r"offset 302 is past the end of f\.txt, which has 300 lines"):
        files.read_file(context(), roots, "f.txt", 302, 10)


def test_read_file_lines_across_chunks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Chunks of a few bytes: lines that span them, long lines kept cut mid-way, a last line without a
    newline, CR LF ends and a character cut in two all read as with one chunk."""
    body = "€" * 3000 + "\r\nshort\r\n" + "".join(f"{n}\n" for n in range(3, 40)) + "end"
    (tmp_path / "f.txt").write_text(body, encoding="utf-8", newline="")
    roots = Roots([str(tmp_path)])
    whole = files.read_file(context(), roots, "f.txt", 1, 100)
    monkeypatch.setattr(files, "_CHUNK", 7)
    monkeypatch.setattr(files, "_BLOCK", 3)
    for offset, limit in ((1, 100), (1, 2), (2, 5), (39, 3), (40, 1)):
        small = files.read_file(context(), roots, "f.txt", offset, limit)
        monkeypatch.setattr(files, "_CHUNK", 1 << 18)
        big = files.read_file(context(), roots, "f.txt", offset, limit)
        monkeypatch.setattr(files, "_CHUNK", 7)
        assert small.structured == big.structured and small.content == big.content
    assert whole.structured is not None and whole.structured["total_lines"] == 40
    assert whole.structured["text"].split("\n")[:2] == ["€" * 2000 + "… [line cut: 8.8 KiB in all]", "short"]
    assert whole.structured["text"].endswith("39\nend")
    assert "Not valid UTF-8" not in whole.content[0]["text"]  # the character the cut split is left out whole


def test_read_file_stops_when_cancelled(tmp_path: Path) -> None:
    from shipcode_mcp.context import Cancelled

    (tmp_path / "f.txt").write_text("x\n" * 10)
    ctx = context()
    ctx.cancel()
    with pytest.raises(Cancelled):
        run_tool("read_file", ctx, Roots([str(tmp_path)]), path="f.txt")


def test_paths_of_a_second_root_are_absolute(repo: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.md").write_text("notes\n")
    git(other, "init", "-q")
    with Tools(repo, other) as tools:
        assert tools.data("list_files", {"path": str(other)})["files"] == [f"{other}/notes.md"]
        assert tools.data("read_file", {"path": f"{other}/notes.md"})["path"] == f"{other}/notes.md"
        assert tools.data("list_files", {"pattern": "notes.md"})["files"] == []  # the default is the first root


def test_control_characters_in_names_cannot_forge_lines(tmp_path: Path) -> None:
    """A name such as 'new\\nline.txt' shows as one escaped entry; structuredContent keeps the real name."""
    root = tmp_path / "names"
    root.mkdir()
    for name in ("new\nline.txt", "esc\x1b[31mred.txt", "cr\rname.txt", "nel\x85.txt", "plain.txt"):
        (root / name).write_text("a needle\n")
    with Tools(root) as server:
        listed = server.call("list_files")
        assert listed["content"][0]["text"].splitlines() == [
            "cr\\rname.txt", "esc\\x1b[31mred.txt", "nel\\x85.txt", "new\\nline.txt", "plain.txt"]
        assert "new\nline.txt" in listed["structuredContent"]["files"]
        found = server.call("search_code", {"pattern": "needle"})
        assert found["content"][0]["text"].splitlines() == [
            "cr\\rname.txt:1:a needle", "esc\\x1b[31mred.txt:1:a needle", "nel\\x85.txt:1:a needle",
            "new\\nline.txt:1:a needle",
            "plain.txt:1:a needle", "[5 matches in 5 files.]"]
        assert {line["path"] for line in found["structuredContent"]["lines"]} >= {"new\nline.txt", "esc\x1b[31mred.txt"}
        (root / "new\nline.txt").write_text("one\ntwo\n")
        read = server.call("read_file", {"path": "new\nline.txt", "limit": 1})
        assert read["content"][0]["text"].splitlines()[-1].startswith("[Lines 1-1 of 2 in new\\nline.txt.")

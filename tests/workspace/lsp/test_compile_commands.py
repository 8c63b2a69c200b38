"""The compilation database clangd is given (lsp/compile_commands.py): a repository's compile_commands.json is
hostile input. Of its commands only the options that say how code reads are kept (nothing that loads or runs a
program: a plugin, a response file, a compiler's configuration or specs, a precompiled header), one option's value
is never another option, and the file is read one entry at a time within bounds (deep nesting, a million entries);
the made-up database stays bounded however many include folders a tree has."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import pytest

from shipcode_mcp.workspace.lsp import compile_commands
from shipcode_mcp.workspace.lsp.compile_commands import kept_entry, made_up, write

HOSTILE = ["/usr/bin/c++", "@/tmp/evil.rsp", "--config=/tmp/evil.cfg", "-B/tmp/evil", "-specs=/tmp/evil.specs",
           "-fplugin=/tmp/evil.so", "-fpass-plugin=/tmp/evil.so", "-Xclang", "-load", "-Xclang", "/tmp/evil.so",
           "-include-pch", "/tmp/evil.pch", "-isystem-after", "/tmp/x", "-I-", "-imacros", "m.h", "-iwithprefix", "w",
           "--driver-mode=cl", "-o", "out.o", "-MF", "deps.d",
           "-Iinclude", "-I", "other", "-isystem", "/usr/include/x", "-iquote", "q", "-DFEATURE=1", "-D", "TWO",
           "-UOLD", "-std=c++20", "-x", "c++", "-Xclang", "-include", "-Xclang", "pre.h", "-c", "src/a.cc"]


def test_only_the_options_that_say_how_code_reads_are_kept(tmp_path: Path) -> None:
    entry = kept_entry({"directory": str(tmp_path), "file": "src/a.cc", "arguments": HOSTILE}, (str(tmp_path),))
    assert entry == {"directory": str(tmp_path / "src"), "file": str(tmp_path / "src" / "a.cc"), "arguments": [
        "clang++", f"-I{tmp_path / 'include'}", f"-I{tmp_path / 'other'}", "-isystem/usr/include/x",
        f"-iquote{tmp_path / 'q'}", "-DFEATURE=1", "-DTWO", "-UOLD", "-std=c++20", "-xc++",
        f"-include{tmp_path / 'pre.h'}", str(tmp_path / "src" / "a.cc")]}
    # A command string is split as a shell would; a file outside the roots, or an entry of another shape, is left out.
    command = {"directory": str(tmp_path), "file": "a.c", "command": "cc -I'my include' -fplugin=x.so -c a.c"}
    assert kept_entry(command, (str(tmp_path),))["arguments"] == [  # type: ignore[index]
        "clang", f"-I{tmp_path / 'my include'}", str(tmp_path / "a.c")]
    outside = {"directory": str(tmp_path), "file": "../elsewhere.c", "arguments": ["cc", "-c", "../elsewhere.c"]}
    assert kept_entry(outside, (str(tmp_path / "root"),)) is None
    shapes: list[object] = [[], "x", {"directory": "relative", "file": "a.c", "arguments": []},
                            {"directory": str(tmp_path), "file": "a.c", "arguments": [1, 2]}]
    for shape in shapes:
        assert kept_entry(shape, (str(tmp_path),)) is None


def _project(tmp_path: Path, database: str) -> Path:
    root = tmp_path / "root"
    (root / "src").mkdir(parents=True)
    (root / "src" / "a.c").write_text("int a(void) { return 1; }\n")
    (root / "compile_commands.json").write_text(database)
    return root


def test_a_deeply_nested_or_broken_database_is_no_database(tmp_path: Path) -> None:
    for database in ("[" * 200_000, '[{"directory": "/", "file": "a.c", "arguments": [' + "[" * 100_000, "{}", "not json"):
        root = _project(tmp_path / str(len(database)), database)
        folder = tmp_path / f"scratch{len(database)}"
        folder.mkdir()
        assert write(str(folder), (str(root),), [str(root / "src" / "a.c")]) == "made up"
        assert json.loads((folder / "compile_commands.json").read_text())[0]["file"] == str(root / "src" / "a.c")


def test_a_database_of_a_million_entries_is_read_one_at_a_time(tmp_path: Path) -> None:
    root = _project(tmp_path, "[" + ",".join(["{}"] * 1_000_000) + "]")
    folder = tmp_path / "scratch"
    folder.mkdir()
    tracemalloc.start()
    try:
        origin = write(str(folder), (str(root),), [str(root / "src" / "a.c")])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert origin == "made up"  # (no entry of a file: the made-up one)
    assert peak < 32 << 20, f"{peak >> 20} MiB for a 3 MB file of empty entries (all at once: over 200 MiB)"


def test_the_written_database_is_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = [str(tmp_path / "src" / f"f{index}.c") for index in range(1000)]
    long = [str(tmp_path / ("d" * 200) / ("e" * 200) / "include" / "x.h") for _ in range(1)]
    includes = [str(tmp_path / f"{'n' * 250}{index}" / "include" / "h.h") for index in range(100)]
    entries = made_up((str(tmp_path),), files + long + includes)
    assert len(entries) == 1000
    assert sum(map(len, entries[0]["arguments"][1:-1])) <= compile_commands.MAX_INCLUDE_BYTES  # not 100 x 260 bytes
    monkeypatch.setattr(compile_commands, "MAX_WRITTEN", 64 << 10)
    folder = tmp_path / "scratch"
    folder.mkdir()
    write(str(folder), (str(tmp_path),), files + includes)
    written = (folder / "compile_commands.json").read_text()
    assert len(written) <= 64 << 10 and 0 < len(json.loads(written)) < 1000

"""The compilation database clangd is given: how each C and C++ file of the roots is compiled, which it must
know to read the file as the compiler does (its include folders, its macros, its language standard).

clangd is pointed at a folder of its own (`--compile-commands-dir`, the server's scratch folder, where its
background index is written too: nothing lands in the workspace) holding a `compile_commands.json` made here:

- from the project's own, where a root has one where clangd would look for it (the root or its `build/`
  folder), keeping of each command only the options that say how the code reads (`KEPT`: include folders,
  macros, the standard, the language, a file included first); everything else is dropped, above all what
  would load or run a program of the repository's choosing (`-fplugin=`, `-Xclang -load`, `--query-driver`'s
  compilers are never named), since a hostile repository writes that file;
- else made up, as a user without a build would set clangd up: every C and C++ source file the workspace's
  walk lists, compiled as its extension says, with the roots and every folder named `include` (as projects
  keep their public headers: `#include <brotli/encode.h>`) on the include path. Headers need no entry: clangd
  takes the command of the nearest source file for one.
"""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Iterable, Iterator
from itertools import islice
from typing import Any

from ...primitives import inside
from .. import safe_open
from ..roots import Roots

SOURCES = (".c", ".cc", ".cpp", ".cxx", ".c++")
"""The extensions of the files that get a command (the rest, headers, borrow one)."""
HEADERS = (".h", ".hh", ".hpp", ".hxx", ".h++", ".ipp", ".tpp", ".inl")
PROJECT_FILES = ("compile_commands.json", os.path.join("build", "compile_commands.json"))
"""Where in a root clangd would find a project's own database."""
MAX_DATABASE = 64 << 20
"""A project's database is read up to this size (one of a 50 000-file tree is some 20 MB), one entry at a time."""
MAX_ENTRIES = 100_000
MAX_WRITTEN = 64 << 20
"""The database written for clangd holds entries up to this size (files past it borrow a neighbour's command)."""
MAX_KEPT_ARGUMENTS = 512
"""Options kept of one command at most (a real one has tens)."""
MAX_VALUE = 4096
"""The longest value of a kept option."""
MAX_INCLUDE_FOLDERS = 64
MAX_INCLUDE_BYTES = 16 << 10
"""The made-up include path's folders, and their length together, at most (each entry repeats them)."""
INCLUDE_DEPTH = 4
"""A folder named `include` is put on the made-up include path down to this depth beneath a root."""
KEPT = ("-I", "-isystem", "-iquote", "-idirafter", "-D", "-U", "-include", "-x", "-std=")
"""The options kept of a project's commands, with their value joined (`-Iinclude`, `-std=c++20`) or, but for
`-std=`, as the next argument; a value that starts with `-` is another option (`-include-pch`, `-isystem-after`,
`-I-`: dropped). `-Xclang -include -Xclang FILE` is `-include FILE`; any other `-Xclang` is dropped with its value."""
_PATHS = ("-I", "-isystem", "-iquote", "-idirafter", "-include")
"""Those whose value is a path, made absolute from the command's folder."""


def write(folder: str, roots: tuple[str, ...], files: Iterable[str]) -> str:
    """Write `folder`/compile_commands.json for the C and C++ `files` (real paths the walk listed) of `roots`, at most
    MAX_WRITTEN bytes of it; return where its commands came from ("the project's compile_commands.json" or "made
    up")."""
    entries, origin = project_entries(roots)
    if not entries:
        entries, origin = made_up(roots, files), "made up"
    written = 2
    with open(os.path.join(folder, "compile_commands.json"), "w", encoding="utf-8") as database:
        database.write("[")
        for number, entry in enumerate(entries[:MAX_ENTRIES]):
            text = ("," if number else "") + json.dumps(entry)
            written += len(text)
            if written > MAX_WRITTEN:
                break
            database.write(text)
        database.write("]")
    return origin


def project_entries(roots: tuple[str, ...]) -> tuple[list[dict[str, Any]], str]:
    """The entries of the roots' own databases, each cut to the kept options, for files inside the roots."""
    entries: list[dict[str, Any]] = []
    named: list[str] = []
    for root in roots:
        for name in PROJECT_FILES:
            loaded = _load(roots, os.path.join(root, name))
            if loaded is None:
                continue
            named.append(os.path.join(os.path.basename(root), name))
            entries += [entry for item in loaded if (entry := kept_entry(item, roots)) is not None]
            break  # (clangd takes the first it finds)
    return entries, f"the project's {', '.join(named)}" if named else ""


def _load(roots: tuple[str, ...], path: str) -> Iterator[Any] | None:
    """A database's entries, read within the roots as every tool reads a file (no link followed on the way, a
    regular file of at most MAX_DATABASE bytes) and parsed one at a time (a hostile file's million empty objects
    are never all held), at most MAX_ENTRIES; None when there is none or it is not a JSON list. An entry that does
    not parse ends the list."""
    text = safe_open.small_text(Roots(list(roots)), path, MAX_DATABASE)
    if text is None:
        return None
    start = _spaces(text, 0)
    if not text.startswith("[", start):
        return None
    return _entries(text, start + 1)


def _spaces(text: str, index: int) -> int:
    """The index of the first character at or after `index` that is not JSON's white space."""
    while index < len(text) and text[index] in " \t\n\r":
        index += 1
    return index


def _entries(text: str, index: int) -> Iterator[Any]:
    decoder = json.JSONDecoder()
    for _ in range(MAX_ENTRIES):
        index = _spaces(text, index)
        if text.startswith("]", index):
            return
        try:
            entry, index = decoder.raw_decode(text, index)
        except (ValueError, RecursionError):
            return
        yield entry
        index = _spaces(text, index)
        if not text.startswith(",", index):
            return
        index += 1


def kept_entry(item: Any, roots: tuple[str, ...]) -> dict[str, Any] | None:
    """One entry of a project's database as clangd is given it: its file made absolute and inside a root, its
    arguments only the compiler (by the file's language) and the kept options, paths made absolute; None for an
    entry of another shape or a file elsewhere."""
    if not isinstance(item, dict):
        return None
    directory, file = item.get("directory"), item.get("file")
    if not isinstance(directory, str) or not isinstance(file, str) or not os.path.isabs(directory):
        return None
    path = os.path.normpath(os.path.join(directory, file))
    if not any(inside(path, root) for root in roots):
        return None
    arguments = item.get("arguments")
    if arguments is None and isinstance(item.get("command"), str) and len(item["command"]) <= MAX_COMMAND:
        try:
            arguments = shlex.split(item["command"])
        except ValueError:
            return None
    if not isinstance(arguments, list) or not all(isinstance(argument, str) for argument in arguments):
        return None
    kept = list(islice(_kept(arguments[1:], directory), MAX_KEPT_ARGUMENTS))
    return {"directory": os.path.dirname(path), "file": path, "arguments": [_compiler(path), *kept, path]}


MAX_COMMAND = 1 << 20
"""A command string longer than this is not read (it is split whole)."""


def _kept(arguments: list[str], directory: str) -> Iterator[str]:
    """The kept options of a command's arguments (its compiler left out), paths made absolute from `directory`."""
    index = 0
    while index < len(arguments):
        argument = arguments[index]
        index += 1
        if argument == "-Xclang":  # (the next is clang's own; only `-Xclang -include -Xclang FILE` is kept)
            if arguments[index:index + 3][:2] == ["-include", "-Xclang"] and len(arguments) > index + 2:
                argument, index = f"-include{arguments[index + 2]}", index + 3
            else:
                index += 1
                continue
        option = next((option for option in KEPT if argument.startswith(option)), None)
        if option is None:
            continue
        value = argument[len(option):]
        if not value and option != "-std=" and index < len(arguments):
            value, index = arguments[index], index + 1
        if not value or value.startswith("-") or len(value) > MAX_VALUE:
            continue
        if option in _PATHS:
            value = os.path.normpath(os.path.join(directory, value))
        yield f"{option}{value}"


def made_up(roots: tuple[str, ...], files: Iterable[str]) -> list[dict[str, Any]]:
    """A command for each source file of `files`: the roots and their `include` folders on the include path."""
    sources = sorted(path for path in files if path.lower().endswith(SOURCES))
    folders: list[str] = list(roots)
    for path in sorted(files):
        root = next((root for root in roots if inside(path, root)), None)
        if root is None:
            continue
        parts = os.path.relpath(path, root).split(os.sep)[:-1]
        for depth, part in enumerate(parts[:INCLUDE_DEPTH]):
            if part == "include":
                folder = os.path.join(root, *parts[:depth + 1])
                if folder not in folders and len(folders) < len(roots) + MAX_INCLUDE_FOLDERS:
                    folders.append(folder)
    includes: list[str] = []
    for folder in folders:
        if sum(map(len, includes)) + len(folder) + 2 > MAX_INCLUDE_BYTES:
            break
        includes.append(f"-I{folder}")
    return [{"directory": os.path.dirname(path), "file": path, "arguments": [_compiler(path), *includes, path]}
            for path in sources[:MAX_ENTRIES]]


def _compiler(path: str) -> str:
    """The compiler driver whose mode reads `path` (clangd runs neither: it names the language)."""
    return "clang" if path.endswith(".c") else "clang++"

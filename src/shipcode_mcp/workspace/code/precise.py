"""The code tools' questions to a language server (lsp/servers.py, with `--precise`): the references of
definitions and the edit of a rename, as positions in files of the roots; NotReady when the server cannot
answer now (not started, warming, failed, too slow), and the tool then answers from the syntax tree and
says why.

LSP counts columns in UTF-16 code units, the tools in characters: `utf16_column` and `column_of` convert with
the line's text. What the server names outside the roots (typeshed's stubs, installed packages) is left out:
the tools show the workspace only.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...primitives import ToolError
from ..lsp.servers import SERVERS, NotReady
from ..uris import file_uri, uri_path

if TYPE_CHECKING:
    from ..roots import Roots

REQUEST_TIMEOUT = 30.0
"""The most a call waits for the language server, all its requests together; then it answers from the syntax
tree (the first references of a common name on a large repository cost pyright a few seconds)."""
MAX_DEFINITIONS = 64
"""Definitions whose references one call asks for at most (a bare `get` may name many methods)."""

@dataclass(frozen=True)
class Place:
    """A position in a file of the roots: its real path, 0-based line, and column in UTF-16 code units (LSP's)."""

    real: str
    line: int
    units: int


@dataclass(frozen=True)
class Edit:
    """One text edit of a rename, on one line: its place, where it ends (UTF-16 units) and the new text."""

    place: Place
    end_units: int
    text: str


def utf16_column(line: str, column: int) -> int:
    """The UTF-16 column (LSP's) of character column `column` of `line`."""
    return len(line[:column].encode("utf-16-le", "surrogatepass")) // 2


def column_of(line: str, units: int) -> int:
    """The character column of UTF-16 column `units` of `line` (the inverse of utf16_column)."""
    if line.isascii():
        return units
    counted = 0
    for index, char in enumerate(line):
        if counted >= units:
            return index
        counted += 2 if ord(char) > 0xFFFF else 1
    return len(line)


def enabled() -> bool:
    """Whether language servers are used (`--precise`)."""
    return SERVERS.enabled


def server_name(roots: Roots, language: str) -> str:
    """The name of the language server that answers for `language` ("basedpyright"), once it is ready; NotReady
    (having started it, if it was not running) until then."""
    server = SERVERS.server(language, tuple(roots.paths))
    server.ready()
    return server.name


def references(roots: Roots, language: str, definitions: list[Place], check: Callable[[], None]) -> set[Place]:
    """Every use of the symbols defined at `definitions` (their definitions included) in files of the roots, as
    the language server finds them; NotReady when it cannot answer now."""
    server = SERVERS.server(language, tuple(roots.paths))
    server.ready()
    deadline = time.monotonic() + REQUEST_TIMEOUT
    found: set[Place] = set()
    for place in definitions[:MAX_DEFINITIONS]:
        left = deadline - time.monotonic()
        if left <= 0:
            raise NotReady(f"the {server.name} language server took longer than {REQUEST_TIMEOUT:g} s")
        answer = server.request("textDocument/references", {
            "textDocument": {"uri": file_uri(place.real)}, "position": {"line": place.line, "character": place.units},
            "context": {"includeDeclaration": True}}, timeout=left, check=check)
        for item in answer if isinstance(answer, list) else ():
            located = _place(roots, item)
            if located is not None:
                found.add(located)
    return found


LEVELS = {1: "error", 2: "warning"}
"""LSP's diagnostic severities the tools report (information and hints are left out)."""
MAX_MESSAGE = 2000
"""A diagnostic's message is cut to this many characters."""


def diagnostics(roots: Roots, language: str, real: str, text: str, check: Callable[[], None]) -> list[list[Any]]:
    """The language server's errors and warnings in file `real` holding `text`, as diagnostics lists them: [line,
    column (1-based, characters), severity, code, message]; NotReady when it cannot answer now."""
    server = SERVERS.server(language, tuple(roots.paths))
    lines = text.split("\n")
    found: list[list[Any]] = []
    for item in server.diagnostics(real, text, timeout=REQUEST_TIMEOUT, check=check):
        start = item.get("range", {}).get("start", {}) if isinstance(item, dict) else {}
        line, units, level = start.get("line"), start.get("character"), LEVELS.get(item.get("severity", 1))
        if not (isinstance(line, int) and isinstance(units, int)) or level is None or line < 0 or units < 0:
            continue
        column = column_of(lines[line], units) if line < len(lines) else units
        message = " ".join(str(item.get("message", "")).replace("\xa0", " ").split())[:MAX_MESSAGE]
        found.append([line + 1, column + 1, level, str(item.get("code") or server.name)[:100], message])
    return sorted(found, key=lambda finding: (finding[0], finding[1]))


MAX_EDIT_CHECKS = 5
"""Edited Python files a write has the language server check at most (two type checks each: before and after)."""
Edited = tuple[str, str, "str | None", str]
"""A file a write changed: real path, as shown, its text before (None: a new file) and after."""


def new_diagnostics(roots: Roots, edited: list[Edited], check: Callable[[], None]) -> tuple[list[dict[str, Any]], str | None]:
    """The errors and warnings the language server finds in the edited Python files after the change that it did
    not find before (matched by severity, rule and message, wherever the lines moved), and a note when it could
    not check them all (not ready: never waited for; too many files)."""
    python = [item for item in edited if item[0].endswith((".py", ".pyi"))]
    if not python:
        return [], None
    found: list[dict[str, Any]] = []
    try:
        server = SERVERS.server("python", tuple(roots.paths))
        server.ready()
        for real, shown, old, new in python[:MAX_EDIT_CHECKS]:
            before = Counter((level, code, message) for *_, level, code, message in
                             (diagnostics(roots, "python", real, old, check) if old is not None else []))
            for line, column, level, code, message in diagnostics(roots, "python", real, new, check):
                if before[(level, code, message)]:
                    before[(level, code, message)] -= 1
                    continue
                found.append({"path": shown, "line": line, "column": column, "severity": level, "code": code,
                              "message": message})
    except NotReady as err:
        return found, err.note
    left = len(python) - MAX_EDIT_CHECKS
    return found, (f"{server.name} checked the first {MAX_EDIT_CHECKS} of {len(python)} Python files" if left > 0 else None)


def definitions(roots: Roots, language: str, place: Place, check: Callable[[], None]) -> tuple[set[Place], bool]:
    """Where the language server says the name at `place` is defined, in files of the roots, and whether it named
    any place at all (outside the roots too: a library's stub); NotReady when it cannot answer now."""
    server = SERVERS.server(language, tuple(roots.paths))
    answer = server.request("textDocument/definition", {
        "textDocument": {"uri": file_uri(place.real)}, "position": {"line": place.line, "character": place.units}},
        timeout=REQUEST_TIMEOUT, check=check)
    items = answer if isinstance(answer, list) else [answer] if isinstance(answer, dict) else []
    found: set[Place] = set()
    for item in items:
        if isinstance(item, dict) and "targetUri" in item:  # a LocationLink
            item = {"uri": item.get("targetUri"), "range": item.get("targetSelectionRange")}
        located = _place(roots, item)
        if located is not None:
            found.add(located)
    return found, bool(items)


def rename_edits(roots: Roots, language: str, definition: Place, new_name: str, check: Callable[[], None]) -> list[Edit]:
    """The language server's rename of the symbol defined at `definition`: its edits in files of the roots.
    ToolError for an edit outside the roots or one that is not a text edit (a file renamed); NotReady when it
    cannot answer now."""
    server = SERVERS.server(language, tuple(roots.paths))
    server.ready()
    answer = server.request("textDocument/rename", {
        "textDocument": {"uri": file_uri(definition.real)},
        "position": {"line": definition.line, "character": definition.units}, "newName": new_name},
        timeout=REQUEST_TIMEOUT, check=check)
    if answer is None:
        return []
    if not isinstance(answer, dict):
        raise NotReady(f"the {server.name} language server answered the rename with no edit")
    by_uri: list[tuple[Any, Any]] = []
    changes = answer.get("changes")
    if isinstance(changes, dict):
        by_uri += list(changes.items())
    for change in answer.get("documentChanges") or ():
        if not isinstance(change, dict) or "textDocument" not in change:
            raise ToolError(f"Refused: the {server.name} language server's rename also creates, renames or deletes "
                            "files; nothing was changed")
        by_uri.append((change["textDocument"].get("uri"), change.get("edits")))
    edits: list[Edit] = []
    for uri, items in by_uri:
        for item in items if isinstance(items, list) else ():
            where = item.get("range") if isinstance(item, dict) else None
            place = _place(roots, {"uri": uri, "range": where}) if isinstance(where, dict) else None
            end = where.get("end") if isinstance(where, dict) else None
            if place is None or not isinstance(end, dict) or end.get("line") != place.line \
                    or not isinstance(end.get("character"), int) or not isinstance(item.get("newText"), str):
                raise ToolError(f"Refused: the {server.name} language server's rename edits text outside the "
                                "workspace roots, or across lines; nothing was changed")
            edits.append(Edit(place, end["character"], item["newText"]))
    return edits


def _place(roots: Roots, item: Any) -> Place | None:
    """The Place of an LSP Location in a file of the roots, None for one elsewhere or malformed."""
    if not isinstance(item, dict):
        return None
    uri, where = item.get("uri"), item.get("range")
    start = where.get("start") if isinstance(where, dict) else None
    path = uri_path(uri) if isinstance(uri, str) else None
    if path is None or not isinstance(start, dict):
        return None
    line, units = start.get("line"), start.get("character")
    if not (isinstance(line, int) and isinstance(units, int)) or line < 0 or units < 0:
        return None
    real = os.path.realpath(path)
    if roots.root_of(real) is None:
        return None
    return Place(real, line, units)

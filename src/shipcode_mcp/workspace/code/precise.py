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
from ..lsp.installed import LANGUAGES, backend
from ..lsp.servers import SERVERS, LanguageServer, NotReady
from ..uris import file_uri, uri_path
from .source import read_source
from .symbols import language_for

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


BACKENDS = LANGUAGES
"""The languages with a language server backend ("typescript" answers for JavaScript and TSX files too)."""
ALWAYS_ASKED = ("python", "cpp")
"""The backends whose server is asked (or said missing) even when it is not installed: the precise extra's own.
Another, not installed, is left out without a word (typescript-language-server is the user's to install)."""


def offered() -> tuple[str, ...]:
    """The backends a question may go to: those installed, and ALWAYS_ASKED."""
    return tuple(language for language in BACKENDS if language in ALWAYS_ASKED or SERVERS.installed(language) is not None)


def enabled() -> bool:
    """Whether language servers are used (`--precise`)."""
    return SERVERS.enabled


def _documents(roots: Roots, server: LanguageServer, reals: list[str]) -> dict[str, str] | None:
    """The texts of the files a question is about, for a server that must have them open (`Installed.opens`):
    read as every tool reads a file of the roots; one that cannot be read now is left out (the server then
    answers about it as it can, or not at all)."""
    if not server.installed.opens:
        return None
    texts: dict[str, str] = {}
    for real in dict.fromkeys(reals):
        try:
            texts[real] = read_source(roots, real, roots.display(real)).text
        except (ToolError, OSError):
            continue
    return texts


def server_name(roots: Roots, language: str, present: bool = False) -> str:
    """The name of the language server that answers for `language` ("basedpyright"), once it is ready; NotReady
    (having started it, if it was not running) until then; `present`: the caller knows a file of that language is
    there now (a server that found none is started again at once)."""
    server = SERVERS.server(language, tuple(roots.paths), present)
    server.ready()
    return server.name


def _server(roots: Roots, language: str, present: bool = False) -> LanguageServer:
    server = SERVERS.server(language, tuple(roots.paths), present)
    server.ready()
    return server


def _left(deadline: float, server: LanguageServer) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise NotReady(f"the {server.name} language server took longer than {REQUEST_TIMEOUT:g} s")
    return left


def references(roots: Roots, language: str, definitions: list[Place], check: Callable[[], None],
               deadline: float | None = None) -> set[Place]:
    """Every use of the symbols defined at `definitions` (their definitions included) in files of the roots that
    the workspace's walk lists, as the language server finds them, by `deadline` (REQUEST_TIMEOUT from now: a
    caller asking several servers gives them one); NotReady when it cannot answer now."""
    server = _server(roots, language)
    deadline = deadline if deadline is not None else time.monotonic() + REQUEST_TIMEOUT
    found: set[Place] = set()
    for place in definitions[:MAX_DEFINITIONS]:
        answer = server.request("textDocument/references", {
            **_position(place),
            "context": {"includeDeclaration": True}}, timeout=_left(deadline, server), check=check,
            documents=_documents(roots, server, [place.real]))
        for item in answer if isinstance(answer, list) else ():
            located = _place(roots, item)
            if located is not None and server.known(located.real):
                found.add(located)
    return found


def implementations(roots: Roots, language: str, definitions: list[Place], check: Callable[[], None],
                    defined: dict[Place, Place] | None = None) -> set[Place]:
    """The implementations of the interfaces, classes and methods defined at `definitions` (the classes that
    implement or extend them, the methods that implement them), in files of the roots that the workspace's walk
    lists, as the language server finds them; NotReady when it cannot answer now. `defined`: where each place
    clangd named is defined (`_defined`), kept by the caller across the levels of one walk, so that a place
    named again (each level names the classes of the one before again) costs nothing more."""
    server = _server(roots, language)
    deadline = time.monotonic() + REQUEST_TIMEOUT
    found: set[Place] = set()
    for place in definitions[:MAX_DEFINITIONS]:
        answer = server.request("textDocument/implementation", _position(place),
            timeout=_left(deadline, server), check=check, documents=_documents(roots, server, [place.real]))
        found |= _located(roots, server, answer)[0]
    if server.installed.symbol_info:
        defined = {} if defined is None else defined
        for item in sorted(found - defined.keys(), key=lambda item: (item.real, item.line, item.units)):
            if len(defined) >= MAX_DEFINED:
                break
            # (a place already found to be a definition is one)
            defined[item] = item if item in defined.values() else _defined(roots, server, item, deadline, check)
        found = {defined.get(item, item) for item in found}
    return found


MAX_DEFINED = 64
"""Places one walk asks clangd the definitions of at most (`_defined`: one or two requests each)."""


def _defined(roots: Roots, server: LanguageServer, place: Place, deadline: float, check: Callable[[], None]) -> Place:
    """Where the member at `place` is defined, as clangd knows it. clangd names an override by what its index
    holds of it: the declaration only (shapes.h), not the definition (shapes.cc), when the file opened for the
    question has been indexed as an open file first, a race of its own. `textDocument/definition` at a
    declaration answers the definition its whole index holds; at a definition it answers the declaration
    instead (a toggle), so clangd's `symbolInfo` (what the open file itself defines there) is asked first.
    Near the deadline, or where clangd says nothing more, `place` itself."""
    if deadline - time.monotonic() < REQUEST_TIMEOUT / 4:  # (a request past its deadline counts against the server)
        return place
    documents = _documents(roots, server, [place.real])
    position = _position(place)
    try:
        info = server.request("textDocument/symbolInfo", position, timeout=_left(deadline, server), check=check,
                              documents=documents)
        if isinstance(info, list) and info and isinstance(info[0], dict) and info[0].get("definitionRange"):
            answer = info[0]["definitionRange"]
        else:
            answer = server.request("textDocument/definition", position, timeout=_left(deadline, server),
                                    check=check, documents=documents)
    except NotReady:
        return place
    defined = _located(roots, server, answer)[0]
    return next(iter(defined)) if len(defined) == 1 else place


def _position(place: Place) -> dict[str, Any]:
    """LSP's TextDocumentPositionParams of `place`: what every question about a position sends."""
    return {"textDocument": {"uri": file_uri(place.real)}, "position": {"line": place.line, "character": place.units}}


def _located(roots: Roots, server: LanguageServer, answer: Any) -> tuple[set[Place], bool]:
    """The places of an answer of Locations or LocationLinks (one or a list) in files of the roots that the
    workspace's walk lists, and whether it named any place at all (outside the roots too)."""
    items = answer if isinstance(answer, list) else [answer] if isinstance(answer, dict) else []
    found: set[Place] = set()
    for item in items:
        if isinstance(item, dict) and "targetUri" in item:  # a LocationLink
            item = {"uri": item.get("targetUri"), "range": item.get("targetSelectionRange")}
        located = _place(roots, item)
        if located is not None and server.known(located.real):
            found.add(located)
    return found, bool(items)


LEVELS = {1: "error", 2: "warning"}
"""LSP's diagnostic severities the tools report (information and hints are left out)."""
MAX_MESSAGE = 2000
"""A diagnostic's message is cut to this many characters."""


def diagnostics(roots: Roots, language: str, texts: dict[str, str], check: Callable[[], None],
                timeout: float = REQUEST_TIMEOUT) -> dict[str, list[list[Any]]]:
    """The language server's errors and warnings in each file `real` as if it held `texts[real]` (all of them at
    once), as the diagnostics tool lists them: [line, column (1-based, characters), severity, code, message];
    NotReady when it cannot answer now."""
    server = _server(roots, language)
    answers = server.check_texts(texts, timeout=timeout, check=check)
    return {real: _findings(answers.get(real, []), texts[real], server.name) for real in texts}


def _findings(items: list[Any], text: str, name: str) -> list[list[Any]]:
    lines = text.split("\n")
    found: list[list[Any]] = []
    for item in items:
        try:
            start = item["range"]["start"]
            line, units, level = start["line"], start["character"], LEVELS.get(item.get("severity", 1))
            if not (isinstance(line, int) and isinstance(units, int)) or level is None or line < 0 or units < 0:
                continue
            column = column_of(lines[line], units) if line < len(lines) else units
            message = " ".join(str(item.get("message", "")).replace("\xa0", " ").split())[:MAX_MESSAGE]
            found.append([line + 1, column + 1, level, str(item.get("code") or name)[:100], message])
        except (TypeError, KeyError, AttributeError, IndexError):
            continue  # a diagnostic of a shape LSP does not have: left out
    return sorted(found, key=lambda finding: (finding[0], finding[1]))


MAX_EDIT_CHECKS = 5
"""Edited files a write has the language servers check at most (two type checks each: before and after)."""
EDIT_CHECK_TIMEOUT = 10.0
"""The most a write's result waits for the language server's checks, all together (the write is done)."""
Edited = tuple[str, str, "str | None", str]
"""A file a write changed: real path, as shown, its text before (None: a new file) and after."""


def new_diagnostics(roots: Roots, edited: list[Edited], check: Callable[[], None]) -> tuple[list[dict[str, Any]], str | None]:
    """The errors and warnings the language servers find in the edited files of their languages after the change
    that they did not find before (matched by severity, rule and message, wherever the lines moved), and a note
    when they could not check them all (not ready: never waited for; too many files; too slow). The files of a
    language are checked together, as they were, then as they are (the change to one may break another)."""
    typed = [(item, language) for item in edited if (language := backend(language_for(item[0]))) in offered()]
    if not typed:
        return [], None
    checked = typed[:MAX_EDIT_CHECKS]
    deadline = time.monotonic() + EDIT_CHECK_TIMEOUT
    found: list[dict[str, Any]] = []
    notes: list[str] = []
    for language in BACKENDS:
        mine = [item for item, of in checked if of == language]
        if not mine:
            continue
        try:
            server = _server(roots, language, present=True)  # (the edited files are of its language)
            before = diagnostics(roots, language, {real: old for real, _, old, _ in mine if old is not None}, check,
                                 _left(deadline, server))
            after = diagnostics(roots, language, {real: new for real, _, _, new in mine}, check, _left(deadline, server))
        except NotReady as err:
            notes.append(err.note)
            continue
        for real, shown, _, _ in mine:
            seen = Counter((level, code, message) for *_, level, code, message in before.get(real, []))
            for line, column, level, code, message in after[real]:
                if seen[(level, code, message)]:
                    seen[(level, code, message)] -= 1
                    continue
                found.append({"path": shown, "line": line, "column": column, "severity": level, "code": code,
                              "message": message})
    if len(typed) > MAX_EDIT_CHECKS:
        notes.append(f"the first {MAX_EDIT_CHECKS} of {len(typed)} edited files with a language server were "
                     f"type-checked (at most {MAX_EDIT_CHECKS} a write)")
    return found, "; ".join(notes) or None


def definitions(roots: Roots, language: str, place: Place, check: Callable[[], None],
                deadline: float) -> tuple[set[Place], bool]:
    """Where the language server says the name at `place` is defined, in files of the roots, and whether it named
    any place at all (outside the roots too: a library's stub); NotReady when it cannot answer by `deadline`."""
    server = _server(roots, language)
    answer = server.request("textDocument/definition", _position(place),
        timeout=_left(deadline, server), check=check, documents=_documents(roots, server, [place.real]))
    return _located(roots, server, answer)


def rename_edits(roots: Roots, language: str, places: list[Place], new_name: str, check: Callable[[], None],
                 ) -> tuple[list[Edit], set[str]]:
    """The language server's rename of the symbols defined at `places`: its edits in the files the workspace's
    walk lists, and the other files of the roots it would change (ignored ones: left alone, as every tool leaves
    them). ToolError for an edit outside the roots or that is not a text edit (a file renamed); NotReady when it
    cannot answer now (all the renames within REQUEST_TIMEOUT)."""
    server = _server(roots, language)
    deadline = time.monotonic() + REQUEST_TIMEOUT
    edits: list[Edit] = []
    ignored: set[str] = set()
    for definition in places[:MAX_DEFINITIONS]:
        answer = server.request("textDocument/rename", {
            "textDocument": {"uri": file_uri(definition.real)},
            "position": {"line": definition.line, "character": definition.units}, "newName": new_name},
            timeout=_left(deadline, server), check=check, documents=_documents(roots, server, [definition.real]))
        for edit in _edits(roots, answer, server.name):
            if server.known(edit.place.real):
                edits.append(edit)
            else:
                ignored.add(edit.place.real)
    return edits, ignored


def _edits(roots: Roots, answer: Any, name: str) -> list[Edit]:
    """A WorkspaceEdit's text edits, each on one line of a file of the roots; ToolError for anything else."""
    if answer is None:
        return []
    if not isinstance(answer, dict):
        raise NotReady(f"the {name} language server answered the rename with no edit")
    by_uri: list[tuple[Any, Any]] = []
    changes = answer.get("changes")
    if isinstance(changes, dict):
        by_uri += list(changes.items())
    for change in answer.get("documentChanges") or ():
        document = change.get("textDocument") if isinstance(change, dict) else None
        if not isinstance(document, dict):
            raise ToolError(f"Refused: the {name} language server's rename also creates, renames or deletes "
                            "files; nothing was changed")
        by_uri.append((document.get("uri"), change.get("edits")))
    edits: list[Edit] = []
    for uri, items in by_uri:
        for item in items if isinstance(items, list) else ():
            where = item.get("range") if isinstance(item, dict) else None
            place = _place(roots, {"uri": uri, "range": where}) if isinstance(where, dict) else None
            end = where.get("end") if isinstance(where, dict) else None
            if place is None or not isinstance(end, dict) or end.get("line") != place.line \
                    or not isinstance(end.get("character"), int) or not isinstance(item.get("newText"), str):
                raise ToolError(f"Refused: the {name} language server's rename edits text outside the "
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

"""find_definition: go to the definition of the name at a place in a file (path, line, column).

What an agent reading a file asks most: `self.request(...)` on line 40, where is that? In Python the
parse worker looks the name up by Python's scopes (pydefinitions.py): a local, a parameter, a def of this
file, a member of the class `self` or a variable's class is, an import. A name another module defines is
followed there, through that module's own imports (a package's `__init__` that re-exports it), to the
def, class or assignment that makes it: `scoped`. What the scopes cannot tell (an attribute of an object
of unknown class), and every name in the other languages, is answered by name: the definitions of that
name in the workspace, the same file's first (`name`).
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable
from functools import partial
from itertools import chain
from typing import TYPE_CHECKING, Any

from ...primitives import ToolError
from ..lsp.installed import backend
from ..lsp.servers import NotReady
from ..text import cut_line, plural, printable, result
from . import precise
from .jsdefinitions import js_definitions
from .names import word_regex
from .parsers import POOL, Failed
from .pyscopes import STANDARD_LIBRARY, module_path, path_ends
from .references import JS_LANGUAGES, MAX_LINE_CHARS
from .source import Folder, Skipped, Source, cached_outline, read_source
from .symbols import Symbol, language_for

if TYPE_CHECKING:
    from ...context import Context
    from ...primitives import ToolResult
    from ..roots import Roots

MAX_HOPS = 8
"""Modules followed for one name (a re-export of a re-export...); past them the scopes do not tell. (A cycle
of imports ends sooner: a module and name met twice add nothing.)"""
MAX_DEFINITIONS = 50
"""The most definitions shown (a name by name may have hundreds)."""
MAX_TRIED = 8
"""Places of the name on its line asked of the scopes, in turn, until one is code."""
MAX_MODULE_FILES = 8
"""Files of one dotted module path read at most (a tree with hundreds of copies of `m.py`)."""
_SCOPES = {"javascript": "JavaScript", "typescript": "TypeScript", "tsx": "TypeScript"}
"""The language whose scopes decided, as the answer names it."""
_ANY_WORD = re.compile(r"[^\W\d][\w$]*|\$[\w$]*")
"""A name as written in code: a word, or one with `$` in it (JavaScript's, PHP's)."""


def find_definition(ctx: Context, roots: Roots, path: str, line: int, name: str, column: int | None) -> ToolResult:
    """The definitions of `name` as written at `line` of `path`: its first occurrence on the line, or the one
    nearest `column` (1-based)."""
    real = roots.resolve(path)
    shown = roots.display(real)
    if os.path.isdir(real):
        raise ToolError(f"{printable(shown)} is a folder; find_definition looks at a place in a file "
                        "(find_symbol finds a name's definitions under a folder)")
    try:
        source = read_source(roots, real, shown)
    except Skipped as err:
        raise ToolError(str(err)) from None
    if not _ANY_WORD.fullmatch(name.strip()):
        raise ToolError(f"name must be one name as written on the line (request for self.request), not '{printable(name)}'")
    lines = source.lines()
    if not 0 < line <= len(lines):
        raise ToolError(f"line {line} is past the end of {printable(shown)} ({plural(len(lines), 'line')})")
    word = name.strip()
    starts = _starts(lines[line - 1], line, column, word, shown)
    start = starts[0]
    answer = None
    note = None
    language = backend(source.language)
    if language is not None and precise.enabled() and language in precise.offered():
        try:
            exact = _exact(ctx, roots, source, line, starts, language)
        except NotReady as err:
            note = err.note
        else:
            if exact is not None:
                return _exact_result(word, source, line, *exact)
    scopes = None
    if source.language == "python":
        for candidate in starts[:MAX_TRIED]:  # the first one that is code (not in a string or a comment)
            answer = _scoped(ctx, roots, source, line, candidate)
            if answer is not None:
                start = candidate
                break
    elif source.language in JS_LANGUAGES:
        scopes = js_definitions(ctx, roots, source, word, line, starts[:MAX_TRIED], Follow(ctx, roots))
    external: list[str] = []
    builtin: str | None = None
    precision = "scoped"
    definitions: list[dict[str, Any]] = []
    if answer is not None:
        follow = Follow(ctx, roots)
        definitions = follow.targets(source, answer["targets"])
        external = [] if definitions else list(dict.fromkeys(follow.missing))
        builtin = follow.builtin
        if (follow.unknown or not (builtin or external)) and not definitions:
            answer = None
    elif scopes is not None:
        start, definitions, external = scopes
        external = [] if definitions else list(dict.fromkeys(external))
    if answer is None and scopes is None:
        precision = "name"
        definitions = _by_name(ctx, roots, word, source, attribute=_after_dot(lines[line - 1], start))
    for item in definitions:
        item.setdefault("precision", precision)
    truncated = len(definitions) > MAX_DEFINITIONS
    definitions = definitions[:MAX_DEFINITIONS]
    out = [f"{printable(item['path'])}:{item['line']}:{item['column']}: "
           f"{'[' + item['kind'] + '] ' if item.get('kind') else ''}{printable(item['text'])}" for item in definitions]
    where = f"{printable(shown)}:{line}:{start}"
    if builtin is not None and not definitions:
        out.append(f"'{printable(word)}' at {where} is Python's builtin {printable(builtin)} (no source in the workspace).")
    elif external and not definitions:
        out.append(f"'{printable(word)}' at {where} is {', '.join(map(printable, external))}, defined outside the "
                   "workspace (no module of that name under its roots).")
    elif not definitions:
        out.append(f"No definition of '{printable(word)}' found for {where}.")
    elif precision == "scoped":
        more = f" (the first {MAX_DEFINITIONS}: there are more)" if truncated else ""
        out.append(f"[{plural(len(definitions), 'definition')}{more} of '{printable(word)}' at {where}, decided by "
                   f"{_SCOPES.get(source.language, 'Python')}'s scopes.]")
    else:
        how = "the scopes could not tell which one (types would)" if source.language == "python" else \
            "decided by the name alone in this language"
        out.append(f"[{plural(len(definitions), 'definition')} named '{printable(word)}' for {where}: {how}; this "
                   f"file's first.{' There are more: narrow with find_symbol.' if truncated else ''}]")
    if note is not None:
        out.append(f"[Not exact: {note}; these come from the syntax tree.]")
    return result("\n".join(out), {"name": word, "path": shown, "line": line, "column": start, "precision": precision,
                                   "definitions": definitions, "builtin": builtin, "external": external,
                                   "truncated": truncated, "language_server": None, "language_server_note": note})


def _exact(ctx: Context, roots: Roots, source: Source, line: int, starts: list[int], language: str,
           ) -> tuple[int, list[dict[str, Any]], str] | None:
    """The language server's definitions of the name at the first of `starts` (1-based columns on `line`) where
    it names one in the roots: the column, the definitions, the server's name; None where it names none there
    (a builtin, a library's name, a string: the scopes say which)."""
    name = precise.server_name(roots, language, present=True)  # NotReady before any work when it is not ready
    row = _row(source, line)
    deadline = time.monotonic() + precise.REQUEST_TIMEOUT
    for start in starts[:MAX_TRIED]:
        found, named = precise.definitions(roots, language, precise.Place(source.real, line - 1,
                                                                           precise.utf16_column(row, start - 1)),
                                           ctx.check_cancelled, deadline)
        if named and not found:
            return None  # defined outside the workspace
        if found:
            follow = Follow(ctx, roots)
            definitions = []
            for place in sorted(found, key=lambda place: (place.real, place.line, place.units)):
                shown = roots.display(place.real)
                try:
                    target = source if place.real == source.real else read_source(roots, place.real, shown)
                except (ToolError, OSError):
                    continue
                text = _row(target, place.line + 1)
                definitions.append({**follow.placed(target, place.line + 1, precise.column_of(text, place.units) + 1),
                                    "precision": "exact"})
            return (start, definitions, name) if definitions else None  # (none readable: the scopes answer)
    return None


def _exact_result(word: str, source: Source, line: int, start: int, definitions: list[dict[str, Any]],
                  server: str) -> ToolResult:
    truncated = len(definitions) > MAX_DEFINITIONS
    definitions = definitions[:MAX_DEFINITIONS]
    out = [f"{printable(item['path'])}:{item['line']}:{item['column']}: "
           f"{'[' + item['kind'] + '] ' if item.get('kind') else ''}{printable(item['text'])}" for item in definitions]
    out.append(f"[{plural(len(definitions), 'definition')} of '{printable(word)}' at {printable(source.shown)}:{line}:{start}, "
               f"exact: {server}'s.]")
    return result("\n".join(out), {"name": word, "path": source.shown, "line": line, "column": start, "precision": "exact",
                                   "definitions": definitions, "builtin": None, "external": [], "truncated": truncated,
                                   "language_server": server, "language_server_note": None})


def _starts(text: str, line: int, column: int | None, name: str, shown: str) -> list[int]:
    """Where `name` is written on the line (1-based columns): in order, or nearest `column` first."""
    starts = [found.start() + 1 for found in re.finditer(word_regex(name), text)]
    if not starts:
        raise ToolError(f"'{printable(name)}' is not written on line {line} of {printable(shown)} (give the name as "
                        "written there: request for self.request)")
    return sorted(starts, key=lambda start: abs(start - column)) if column is not None else starts


def _after_dot(text: str, start: int) -> bool:
    """Whether the name starting at `start` (1-based) is an attribute (`x.name`, `x->name`, `X::name`)."""
    before = text[:start - 1].rstrip()
    return before.endswith((".", "->", "::"))


def _scoped(ctx: Context, roots: Roots, source: Source, line: int, column: int) -> dict[str, Any] | None:
    """The parse worker's answer for the name at `line`, `column` of a Python file (pydefinitions.definition_at);
    None where the scopes cannot say: no code there (a string, a comment), or a file that does not parse."""
    try:
        answer: dict[str, Any] | None = POOL.ask({"op": "definition_at", "text": source.text, "line": line,
                                                  "shown": in_root(roots, source.real), "column": column},
                                                 ctx.check_cancelled)
    except Failed:
        return None
    return answer


def in_root(roots: Roots, real: str) -> str:
    """A file's path from the root it is under, with `/`: its dotted module path is made of it (a file shown
    with its absolute path, in a second root, is not the module `tmp.r1.pkg.core`)."""
    root = roots.root_of(real) or roots.first
    return os.path.relpath(real, root).replace(os.sep, "/")


class Follow:
    """The definitions targets lead to: modules followed to their files, and their imports on (at most
    MAX_HOPS modules deep; a module and name met twice, as in a cycle of imports, adds nothing); with the
    dotted names of modules found nowhere under the roots (defined outside the workspace), the builtin named,
    and whether some target could not be told. Each file is read, parsed and outlined once a call."""

    def __init__(self, ctx: Context, roots: Roots, files: ModuleFiles | None = None) -> None:
        self.ctx = ctx
        self.roots = roots
        self.files = files or ModuleFiles(ctx, roots)
        self.missing: list[str] = []
        self.builtin: str | None = None
        self.unknown = False
        self._seen: set[tuple[str, ...]] = set()
        self._sources: dict[str, Source] = {}
        self._kinds: dict[str, dict[tuple[int, str], str]] = {}

    def targets(self, source: Source, targets: list[dict[str, Any]], hops: int = 0) -> list[dict[str, Any]]:
        self._sources.setdefault(source.real, source)
        found: list[dict[str, Any]] = []
        for target in targets:
            found += self._one(source, target, hops)[0]
            if len(found) > MAX_DEFINITIONS:
                break
        unique: dict[tuple[str, int, int], dict[str, Any]] = {}
        for item in found:
            unique.setdefault((item["path"], item["line"], item["column"]), item)
        return list(unique.values())

    def _one(self, source: Source, target: dict[str, Any], hops: int) -> tuple[list[dict[str, Any]], bool]:
        """The definitions one target leads to, and whether it reached a module of the workspace."""
        if "places" in target:
            return [self.placed(source, row, column) for row, column in target["places"][:MAX_DEFINITIONS + 1]], True
        if "builtin" in target:
            self.builtin = self.builtin or target["builtin"]
        elif "unknown" in target:
            self.unknown = True
        elif "first_of" in target:
            return self._first_of(source, target["first_of"], hops)
        elif "module" in target:
            if hops >= MAX_HOPS:
                self.unknown = True
                return [], True
            module, names = tuple(target["module"]), list(target["path"])
            reached = self._module(module, names, source.real, hops)
            if reached is not None:
                return reached, True
            if target.get("star"):
                self.unknown = True  # what a star import of a module outside brings: only its source tells
            else:
                self.missing.append(".".join((*module, *names)))
        return [], False

    def _first_of(self, source: Source, alternatives: list[dict[str, Any]], hops: int) -> tuple[list[dict[str, Any]], bool]:
        """The first alternative that leads to definitions. When none does, the modules found nowhere are those
        of the alternatives that reached none of the workspace's (`a.x` is a name of module a, which is here,
        rather than a module a.x that is nowhere)."""
        before = len(self.missing)
        kept: list[str] = []
        reached_any = False
        for alternative in alternatives:
            start = len(self.missing)
            found, reached = self._one(source, alternative, hops)
            if found:
                del self.missing[before:]
                return found, True
            if reached and not reached_any:
                kept, reached_any = [], True
            if reached or not reached_any:
                kept += self.missing[start:]
        self.missing[before:] = kept
        return [], reached_any

    def _module(self, module: tuple[str, ...], names: list[str], near: str, hops: int) -> list[dict[str, Any]] | None:
        """The definitions of `names` in the workspace's files of `module` as the file `near` imports it (the
        module itself for no names); None when no file of the workspace is that module."""
        files = self.files.of(module, near)
        if not files:
            return None
        key = (*module, "\0", *names)
        if key in self._seen:
            return []
        self._seen.add(key)
        for real, shown in files:
            other = self._sources.get(real)
            if other is None:
                try:
                    other = self._sources[real] = read_source(self.roots, real, shown, "python")
                except (ToolError, OSError):
                    continue
            if not names:
                return [self.placed(other, 1, 1, "module")]
            try:
                more = POOL.ask({"op": "definition_of", "text": other.text, "shown": in_root(self.roots, real),
                                 "path": names}, self.ctx.check_cancelled)
            except Failed:
                continue
            found = self.targets(other, more or [], hops + 1)
            if found:
                return found
        return []

    def placed(self, source: Source, line: int, column: int, kind: str | None = None) -> dict[str, Any]:
        """A definition at `line`, `column` (1-based) of `source`: its place, its line, and the kind of the symbol
        the outline lists with its name there (none for a parameter or a variable the outline does not list)."""
        row = _row(source, line)
        stripped = row.lstrip()
        item: dict[str, Any] = {"path": source.shown, "line": line, "column": column,
                                "text": cut_line(stripped.rstrip(), MAX_LINE_CHARS, max(0, column - 1 - (len(row) - len(stripped))))}
        if kind is None:
            kinds = self._kinds.get(source.real)
            if kinds is None:
                try:
                    outline = cached_outline(self.roots, source.real, source.shown, self.ctx.check_cancelled)
                except (ToolError, OSError):
                    outline = []
                kinds = self._kinds[source.real] = {(symbol.def_line, symbol.name): symbol.kind
                                                    for top in outline for symbol in top.walk()}
            found = _ANY_WORD.match(row, column - 1)
            kind = kinds.get((line, found[0])) if found is not None else None
        if kind is not None:
            item["kind"] = kind
        return item


def _row(source: Source, line: int) -> str:
    """Line `line` (1-based) of a file, without its end; the file's lines split once (Source keeps them)."""
    lines = source.lines()
    return lines[line - 1].rstrip("\r") if 0 < line <= len(lines) else ""


class ModuleFiles:
    """The workspace's Python files of a dotted module path (`requests.sessions`: requests/sessions.py or
    src/requests/sessions/__init__.py), as an absolute import finds them: under a folder that is not itself
    a package (a root, its src/ or lib/, a folder above the importing file that has no __init__.py; a few
    stat calls), else anywhere under a root that is not a package (one listing of the Python files under
    each root, made when first needed: some 0.2 s at 20 000 files). A standard library module found in
    neither is not listed for; at most MAX_MODULE_FILES files are a module's."""

    def __init__(self, ctx: Context, roots: Roots) -> None:
        self.ctx = ctx
        self.roots = roots
        self._files: list[tuple[str, str, tuple[str, ...]]] | None = None

    def of(self, module: tuple[str, ...], near: str) -> list[tuple[str, str]]:
        """The files of `module` as imported from the file `near` (a real path)."""
        if not module or not all(part.isidentifier() for part in module):
            return []
        probed = self._probed(module, near)
        if probed or module[0] in STANDARD_LIBRARY:
            return probed
        if self._files is None:
            self._files = []
            for root in self.roots.paths:
                folder = Folder(self.roots, root)
                for relative in folder.files(self.ctx, "python"):
                    real, shown = folder.file(relative)
                    self._files.append((real, shown, module_path(relative)))
        found = [(real, shown, path) for real, shown, path in self._files
                 if path_ends(path, module) and not _package(_base_of(real, len(module)))]
        found.sort(key=lambda item: (len(item[2]), item[1].endswith(".pyi"), item[1]))  # the shortest path: the project's
        return [(real, shown) for real, shown, _ in found[:MAX_MODULE_FILES]]

    def _probed(self, module: tuple[str, ...], near: str) -> list[tuple[str, str]]:
        """The files of `module` under the first folder an import may start from that holds them."""
        bases = [folder for root in self.roots.paths for folder in (root, os.path.join(root, "src"), os.path.join(root, "lib"))]
        folder = os.path.dirname(near)
        while self.roots.containing(folder):
            if not _package(folder):
                bases.append(folder)
            folder, up = os.path.dirname(folder), folder
            if folder == up:
                break
        for base in dict.fromkeys(bases):
            stem = os.path.join(base, *module)
            found = [(real, self.roots.display(real)) for real in (
                stem + ".py", os.path.join(stem, "__init__.py"), stem + ".pyi", os.path.join(stem, "__init__.pyi"))
                if os.path.isfile(real) and not os.path.islink(real) and self.roots.containing(real)]
            if found:
                return found
        return []


def _package(folder: str) -> bool:
    """Whether a folder is a package (its __init__.py makes an import of its modules go through it)."""
    return os.path.isfile(os.path.join(folder, "__init__.py")) or os.path.isfile(os.path.join(folder, "__init__.pyi"))


def _base_of(real: str, depth: int) -> str:
    """The folder an import of a module `depth` parts deep starts from, for the module's file `real`."""
    folder = os.path.dirname(real)
    if os.path.basename(real).startswith("__init__."):
        folder = os.path.dirname(folder)
    for _ in range(depth - 1):
        folder = os.path.dirname(folder)
    return folder


def _by_name(ctx: Context, roots: Roots, word: str, source: Source, attribute: bool) -> list[dict[str, Any]]:
    """The definitions named `word` under the roots, `source`'s first (members of a class only, for an
    attribute): the answer where the scopes cannot tell."""
    folder = Folder(roots, roots.first)
    names = folder.definition_candidates(ctx, word_regex(word), word)
    found: list[dict[str, Any]] = []
    written = re.compile(word_regex(word))
    outlined: Callable[[str, str], list[Symbol]] = partial(cached_outline, roots, check=ctx.check_cancelled)
    others = folder.parsed(ctx, [item for item in names if folder.file(item)[0] != source.real], "candidate file",
                           outlined, code_only=True)
    for shown, symbols in chain([(source.shown, _own_outline(ctx, roots, source))], others):
        real = roots.resolve(shown) if shown != source.shown else source.real
        text: list[str] | None = None
        for top in symbols:
            for symbol in top.walk():
                if symbol.name != word or (attribute and "." not in symbol.qualified_name and
                                           language_for(real) == "python"):
                    continue
                if text is None:
                    text = source.lines() if shown == source.shown else _lines(roots, real, shown)
                row = text[symbol.def_line - 1].rstrip("\r") if symbol.def_line <= len(text) else ""
                found_at = written.search(row)
                column = found_at.start() + 1 if found_at is not None else 1
                found.append({"path": shown, "line": symbol.def_line, "column": column,
                              "text": cut_line(row.strip(), MAX_LINE_CHARS), "kind": symbol.kind})
                if len(found) > MAX_DEFINITIONS:
                    return found
    return found


def _own_outline(ctx: Context, roots: Roots, source: Source) -> list[Symbol]:
    try:
        return cached_outline(roots, source.real, source.shown, ctx.check_cancelled)
    except ToolError:
        return []


def _lines(roots: Roots, real: str, shown: str) -> list[str]:
    try:
        return read_source(roots, real, shown).lines()
    except (ToolError, OSError):
        return []


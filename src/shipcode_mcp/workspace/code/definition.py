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
from collections.abc import Callable
from functools import partial
from itertools import chain
from typing import TYPE_CHECKING, Any

from ...primitives import ToolError
from ..text import cut_line, plural, printable, result
from .names import word_regex
from .parsers import POOL, Failed
from .pyscopes import STANDARD_LIBRARY, module_path, path_ends
from .references import MAX_LINE_CHARS
from .source import Folder, Skipped, Source, cached_outline, read_source
from .symbols import Symbol, language_for

if TYPE_CHECKING:
    from ...context import Context
    from ...primitives import ToolResult
    from ..roots import Roots

MAX_HOPS = 8
"""Modules followed for one name (a re-export of a re-export...): a cycle of imports ends there."""
MAX_DEFINITIONS = 50
"""The most definitions shown (a name by name may have hundreds)."""
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
    lines = source.text.split("\n")
    if not 0 < line <= len(lines):
        raise ToolError(f"line {line} is past the end of {printable(shown)} ({plural(len(lines), 'line')})")
    word = name.strip()
    start = _column(lines[line - 1], line, column, word, shown)
    answer = _scoped(ctx, roots, source, line, start) if source.language == "python" else None
    external: list[str] = []
    builtin: str | None = None
    precision = "scoped"
    definitions: list[dict[str, Any]] = []
    if answer is not None:
        follow = Follow(ctx, roots)
        definitions = follow.targets(source, answer["targets"])
        external = [] if definitions else list(dict.fromkeys(follow.external))
        builtin = follow.builtin
        if follow.unknown and not definitions:
            answer = None
    if answer is None:
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
        out.append(f"[{plural(len(definitions), 'definition')} of '{printable(word)}' at {where}, decided by Python's "
                   "scopes.]")
    else:
        how = "the scopes could not tell which one (types would)" if source.language == "python" else \
            "decided by the name alone in this language"
        out.append(f"[{plural(len(definitions), 'definition')} named '{printable(word)}' for {where}: {how}; this "
                   f"file's first.{' There are more: narrow with find_symbol.' if truncated else ''}]")
    return result("\n".join(out), {"name": word, "path": shown, "line": line, "column": start, "precision": precision,
                                   "definitions": definitions, "builtin": builtin, "external": external,
                                   "truncated": truncated})


def _column(text: str, line: int, column: int | None, name: str, shown: str) -> int:
    """Where `name` is written on the line: its first occurrence, or the one nearest `column`."""
    starts = [found.start() + 1 for found in re.finditer(word_regex(name.strip()), text)] if name.strip() else []
    if not starts:
        raise ToolError(f"'{printable(name)}' is not written on line {line} of {printable(shown)} (give the name as "
                        "written there: request for self.request)")
    return min(starts, key=lambda start: abs(start - column)) if column is not None else starts[0]


def _after_dot(text: str, start: int) -> bool:
    """Whether the name starting at `start` (1-based) is an attribute (`x.name`, `x->name`, `X::name`)."""
    before = text[:start - 1].rstrip()
    return before.endswith((".", "->", "::"))


def _scoped(ctx: Context, roots: Roots, source: Source, line: int, column: int) -> dict[str, Any] | None:
    try:
        answer: dict[str, Any] | None = POOL.ask({"op": "definition_at", "text": source.text, "shown": source.shown,
                                                  "line": line, "column": column}, ctx.check_cancelled)
    except Failed:
        return None
    return answer


class Follow:
    """The definitions targets lead to: modules followed to their files, and their imports on (at most
    MAX_HOPS modules deep); with the dotted names defined outside the workspace, the builtin named, and
    whether some target could not be told."""

    def __init__(self, ctx: Context, roots: Roots, files: ModuleFiles | None = None) -> None:
        self.ctx = ctx
        self.roots = roots
        self.files = files or ModuleFiles(ctx, roots)
        self.external: list[str] = []
        self.builtin: str | None = None
        self.unknown = False
        self._seen: set[tuple[str, ...]] = set()

    def targets(self, source: Source, targets: list[dict[str, Any]], hops: int = 0) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        for target in targets:
            if "places" in target:
                found += [placed(self.ctx, self.roots, source, row, column) for row, column in target["places"]]
            elif "builtin" in target:
                self.builtin = self.builtin or target["builtin"]
            elif "unknown" in target:
                self.unknown = True
            elif "module" in target and hops < MAX_HOPS:
                reached = self._module(tuple(target["module"]), list(target["path"]), source.real, hops)
                if reached is None and "else" in target:  # `from m import x`: m's submodule x
                    reached = self._module(tuple(target["else"]["module"]), list(target["else"]["path"]), source.real,
                                           hops)
                if reached is None and not target.get("star"):
                    self.external.append(".".join((*target["module"], *target["path"])))
                found += reached or []
        unique: dict[tuple[str, int, int], dict[str, Any]] = {}
        for item in found:
            unique.setdefault((item["path"], item["line"], item["column"]), item)
        return list(unique.values())

    def _module(self, module: tuple[str, ...], names: list[str], near: str, hops: int) -> list[dict[str, Any]] | None:
        """The definitions of `names` in the workspace's files of `module` as the file `near` imports it (the
        module itself for no names); None when no such file defines them."""
        key = (*module, "\0", *names)
        if key in self._seen:
            return []
        self._seen.add(key)
        found: list[dict[str, Any]] = []
        for real, shown in self.files.of(module, near):
            try:
                other = read_source(self.roots, real, shown, "python")
            except (ToolError, OSError):
                continue
            if not names:
                return [placed(self.ctx, self.roots, other, 1, 1, "module")]
            try:
                more = POOL.ask({"op": "definition_of", "text": other.text, "shown": other.shown, "path": names},
                                self.ctx.check_cancelled)
            except Failed:
                continue
            found += self.targets(other, more or [], hops + 1)
            if found:
                return found
        return None


def placed(ctx: Context, roots: Roots, source: Source, line: int, column: int, kind: str | None = None) -> dict[str, Any]:
    """A definition at `line`, `column` (1-based) of `source`: its place, its line, and the kind of the symbol
    the outline lists with its name there (none for a parameter or a variable the outline does not list)."""
    lines = source.text.split("\n")
    text = lines[line - 1].rstrip("\r") if 0 < line <= len(lines) else ""
    stripped = text.lstrip()
    item: dict[str, Any] = {"path": source.shown, "line": line, "column": column,
                            "text": cut_line(stripped.rstrip(), MAX_LINE_CHARS, max(0, column - 1 - (len(text) - len(stripped))))}
    if kind is None:
        try:
            outline = cached_outline(roots, source.real, source.shown, ctx.check_cancelled)
        except (ToolError, OSError):
            outline = []
        kind = next((symbol.kind for top in outline for symbol in top.walk()
                     if symbol.def_line == line and text[column - 1:column - 1 + len(symbol.name)] == symbol.name), None)
    if kind is not None:
        item["kind"] = kind
    return item


class ModuleFiles:
    """The workspace's Python files of a dotted module path (`requests.sessions`: requests/sessions.py or
    src/requests/sessions/__init__.py). Looked for first where an import finds them (a root, its src/ or
    lib/, a folder above the importing file: a few stat calls), then in one listing of the Python files
    under each root, made when first needed (some 0.2 s at 20 000 files); a standard library module found
    in neither place is not listed for."""

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
        found = [(real, shown, path) for real, shown, path in self._files if path_ends(path, module)]
        found.sort(key=lambda item: (len(item[2]), item[1].endswith(".pyi"), item[1]))  # the shortest path: the project's
        return [(real, shown) for real, shown, _ in found]

    def _probed(self, module: tuple[str, ...], near: str) -> list[tuple[str, str]]:
        """The files of `module` under the first folder an import may start from that holds them."""
        bases = [folder for root in self.roots.paths for folder in (root, os.path.join(root, "src"), os.path.join(root, "lib"))]
        folder = os.path.dirname(near)
        while self.roots.containing(folder):
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


def _by_name(ctx: Context, roots: Roots, word: str, source: Source, attribute: bool) -> list[dict[str, Any]]:
    """The definitions named `word` under the roots, `source`'s first (members of a class only, for an
    attribute): the answer where the scopes cannot tell."""
    folder = Folder(roots, roots.first)
    names = folder.definition_candidates(ctx, word_regex(word), word)
    found: list[dict[str, Any]] = []
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
                    text = source.text.split("\n") if shown == source.shown else _lines(roots, real, shown)
                row = text[symbol.def_line - 1].rstrip("\r") if symbol.def_line <= len(text) else ""
                column = row.find(word) + 1 or 1
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
        return read_source(roots, real, shown).text.split("\n")
    except (ToolError, OSError):
        return []


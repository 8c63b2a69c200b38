"""find_definition in JavaScript and TypeScript from scopes and imports (no language server).

The parse worker reads where the name at a place is bound (jsscopes.definition_at): in this file (a local, a
parameter, a module-level declaration, a member of this file's class through `this` or the class's name), or in
another module (an import, `require`, `ns.name` through a module object). A relative module is followed to its
file (`./parse.js` is parse.ts; `./core` is core.ts or core/index.ts, as TypeScript resolves them), and there to
the declaration of the export (jsscopes.definitions_in_module), through the modules that export it again
(`export { name } from`, an import exported again, `export * from`: at most MAX_HOPS modules deep). A package's
module (`react`) is outside the workspace: said so, not looked for.
"""

from __future__ import annotations

import os
import posixpath
import re
from typing import TYPE_CHECKING, Any

from ...primitives import ToolError
from .jsscopes import EXTENSIONS
from .parsers import POOL, Failed
from .source import Source, cached_outline, read_source

if TYPE_CHECKING:
    from ...context import Context
    from ..roots import Roots
    from .definition import Follow

MAX_HOPS = 5
"""How many modules an export is followed through (`export ... from` of `export ... from`)."""
MAX_MODULES = 64
"""How many modules one call reads at most (a barrel of `export * from` lines fans out)."""
RESOLVED = (".ts", ".tsx", ".d.ts", ".js", ".jsx")
"""The extensions tried for a relative import written without one, in the order TypeScript tries them."""
WRITTEN = {".js": (".ts", ".tsx", ".d.ts", ".js", ".jsx"), ".jsx": (".tsx", ".d.ts", ".jsx"),
           ".mjs": (".mts", ".d.mts", ".mjs"), ".cjs": (".cts", ".d.cts", ".cjs")}
"""An import written with a JavaScript extension names the TypeScript file it is compiled from first."""
_MEMBER_NAME = r"(?<![\w$.]){word}(?=\s*[?!]?\s*(?:[(:=;<,]|$))"
"""Where a member's name is on its line: followed by its parameters, type, value or the line's end (not a use of the
word in a decorator before it: `@Column({ type: "varchar" }) type: string`)."""


def js_definitions(ctx: Context, roots: Roots, source: Source, word: str, line: int, starts: list[int],
                   follow: Follow) -> tuple[int, list[dict[str, Any]], list[str]] | None:
    """The definitions of `word` at the first of `starts` (1-based columns on `line`, the caller's few) that is code,
    as the scopes and imports tell them, and the packages outside the workspace it comes from; None where they
    cannot tell (then by name)."""
    for start in starts:
        try:
            answer = POOL.ask({"op": "js_definition_at", "text": source.text, "language": source.language,
                               "shown": source.shown, "name": word, "line": line - 1, "column": start - 1},
                              ctx.check_cancelled)
        except Failed:
            return None
        if answer is None:
            continue  # not code there (a comment, a string): the next occurrence on the line
        if "unknown" in answer:
            return None
        found, external = _Chase(ctx, roots, follow).answer(source, word, answer, 0)
        if not found and not external:
            return None
        return start, found, external
    return None


def _member_name(row: str, word: str) -> re.Match[str] | None:
    """Where a member's name is on its definition's line: outside any brackets (not in a decorator's arguments),
    followed by its parameters, type, value or the line's end; else the word's first whole occurrence."""
    for found in re.finditer(_MEMBER_NAME.format(word=re.escape(word)), row):
        before = row[:found.start()]
        if sum(before.count(char) for char in "({[") == sum(before.count(char) for char in ")}]"):
            return found
    return re.search(rf"(?<![\w$]){re.escape(word)}(?![\w$])", row)


class _Chase:
    """Follows an answer to the definitions it leads to, through modules (each module and name once a call)."""

    def __init__(self, ctx: Context, roots: Roots, follow: Follow) -> None:
        self.ctx = ctx
        self.roots = roots
        self.follow = follow
        self.seen: set[tuple[str, str | None]] = set()
        self.read = 0  # modules read

    def answer(self, source: Source, word: str, answer: dict[str, Any], hops: int,
               ) -> tuple[list[dict[str, Any]], list[str]]:
        if "places" in answer:
            return [self.follow.placed(source, row, column) for row, column in answer["places"]], []
        if "member" in answer:
            return self._member(source, answer["member"], word), []
        if "module" in answer:
            return self._module(source, answer["module"], answer["name"], hops)
        return [], []

    def _member(self, source: Source, owner: str, word: str) -> list[dict[str, Any]]:
        """The members named `word` of the classes named `owner` in the file."""
        try:
            outline = cached_outline(self.roots, source.real, source.shown, self.ctx.check_cancelled)
        except (ToolError, OSError):
            return []
        found = []
        lines = source.lines()
        for top in outline:
            for symbol in top.walk():
                if symbol.name != owner or symbol.kind not in ("class", "interface"):
                    continue
                for member in symbol.children:
                    row = lines[member.def_line - 1] if member.def_line <= len(lines) else ""
                    at = _member_name(row, word)
                    if member.name == word and at is not None:
                        found.append(self.follow.placed(source, member.def_line, at.start() + 1, member.kind))
        return found

    def _module(self, source: Source, module: str, name: str | None, hops: int,
                ) -> tuple[list[dict[str, Any]], list[str]]:
        if not module.startswith("."):
            return [], [module]  # a package's: outside the workspace
        if hops >= MAX_HOPS or self.read >= MAX_MODULES:
            return [], []
        self.ctx.check_cancelled()
        other = self._file(source.shown, module, name)
        if other is None:
            return [], []
        if name is None:
            return [self.follow.placed(other, 1, 1, "module")], []
        try:
            more = POOL.ask({"op": "js_definition_of", "text": other.text, "language": other.language,
                             "shown": other.shown, "name": name}, self.ctx.check_cancelled)
        except Failed:
            return [], []
        found: list[dict[str, Any]] = []
        external: list[str] = []
        asked: set[tuple[str, str | None]] = set()
        for item in (more or [])[:MAX_MODULES]:  # (a barrel of thousands of `export * from` lines: the first)
            if item.get("star") and found:
                break  # `export * from` is looked at only when the module's own exports do not hold the name
            if "module" in item:
                if (item["module"], item["name"]) in asked:
                    continue  # the same `export * from` line again
                asked.add((item["module"], item["name"]))
            more_found, more_external = self.answer(other, name, item, hops + 1)
            found += more_found
            external += more_external
        return found, ([] if found else external)

    def _file(self, near: str, module: str, name: str | None) -> Source | None:
        """The workspace's file a relative import in the file `near` names, as TypeScript resolves it: the path with
        the TypeScript extensions (for one written `.js`, `.mjs`, `.cjs`, `.jsx`: the TypeScript file compiled to
        it first), then the folder's index file (only that for `.`, `..` or a path ending in `/`); None when none
        is in the roots, or it was read already for this name (a cycle, a diamond), or MAX_MODULES were read."""
        if ":" in module or "\0" in module:
            return None  # (`./file:///...`: no module of a relative path)
        path = posixpath.normpath(posixpath.join(posixpath.dirname(near), module))
        folder_only = module in (".", "..") or module.endswith(("/", "/.", "/.."))
        stem, extension = posixpath.splitext(path)
        candidates: list[str] = []
        if not folder_only:
            if extension in WRITTEN:
                candidates += [stem + other for other in WRITTEN[extension]]
            elif extension in EXTENSIONS:
                candidates.append(path)
            candidates += [path + other for other in RESOLVED]
        candidates += [posixpath.join(path, "index") + other for other in RESOLVED]
        for shown in candidates:
            try:
                real = self.roots.resolve(shown)  # (OutsideRoots for `../../../etc/x`: a module outside is none)
            except ToolError:
                continue
            if not os.path.isfile(real):
                continue
            if (real, name) in self.seen:
                return None
            self.seen.add((real, name))
            self.read += 1
            try:
                return read_source(self.roots, real, self.roots.display(real))
            except (ToolError, OSError):
                return None
        return None

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
from .jsscopes import EXTENSIONS, imported_module
from .parsers import POOL, Failed
from .source import Source, cached_outline, read_source

if TYPE_CHECKING:
    from ...context import Context
    from ..roots import Roots
    from .definition import Follow

MAX_TRIED_HERE = 8
"""How many occurrences of the name on the line are tried, nearest the column first (as definition.MAX_TRIED)."""
MAX_HOPS = 5
"""How many modules an export is followed through (`export ... from` of `export ... from`)."""
RESOLVED = (".ts", ".tsx", ".d.ts", ".mts", ".cts", ".js", ".jsx", ".mjs", ".cjs")
"""The extensions a relative import's file may have, in the order TypeScript tries them."""


def js_definitions(ctx: Context, roots: Roots, source: Source, word: str, line: int, starts: list[int],
                   follow: Follow) -> tuple[int, list[dict[str, Any]], list[str]] | None:
    """The definitions of `word` at the first of `starts` (1-based columns on `line`) that is code, as the scopes
    and imports tell them, and the packages outside the workspace it comes from; None where they cannot tell
    (then by name)."""
    for start in starts[:MAX_TRIED_HERE]:
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


class _Chase:
    """Follows an answer to the definitions it leads to, through modules (each module and name once a call)."""

    def __init__(self, ctx: Context, roots: Roots, follow: Follow) -> None:
        self.ctx = ctx
        self.roots = roots
        self.follow = follow
        self.seen: set[tuple[str, str | None]] = set()

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
                    at = re.search(rf"(?<![\w$]){re.escape(word)}(?![\w$])", row)
                    if member.name == word and at is not None:
                        found.append(self.follow.placed(source, member.def_line, at.start() + 1, member.kind))
        return found

    def _module(self, source: Source, module: str, name: str | None, hops: int,
                ) -> tuple[list[dict[str, Any]], list[str]]:
        target = imported_module(source.shown, module)
        if target is None:
            return [], [module]  # a package's: outside the workspace
        other = self._file(target)
        if other is None or hops >= MAX_HOPS or (other.real, name) in self.seen:
            return [], []
        self.seen.add((other.real, name))
        if name is None:
            return [self.follow.placed(other, 1, 1, "module")], []
        try:
            more = POOL.ask({"op": "js_definition_of", "text": other.text, "language": other.language,
                             "shown": other.shown, "name": name}, self.ctx.check_cancelled)
        except Failed:
            return [], []
        found: list[dict[str, Any]] = []
        external: list[str] = []
        for item in more or []:
            if item.get("star") and found:
                break  # `export * from` is looked at only when the module's own exports do not hold the name
            more_found, more_external = self.answer(other, name, item, hops + 1)
            found += more_found
            external += more_external
        return found, ([] if found else external)

    def _file(self, module: str) -> Source | None:
        """The workspace's file of a module path (as jsscopes.module_of names files): the first that exists of
        the path itself, with each extension, and its folder's index file with each."""
        candidates = [module] if module.endswith(EXTENSIONS) else []
        candidates += [module + extension for extension in RESOLVED]
        candidates += [posixpath.join(module, "index") + extension for extension in RESOLVED]
        for shown in candidates:
            try:
                real = self.roots.resolve(shown)  # (OutsideRoots for `../../../etc/x`: a module outside is none)
            except ToolError:
                continue
            if not os.path.isfile(real):
                continue
            try:
                return read_source(self.roots, real, shown)
            except (ToolError, OSError):
                continue
        return None

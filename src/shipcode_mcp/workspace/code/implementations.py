"""find_implementations: the classes that derive from a class, and their own definitions of its method.

What an agent asks before it changes an interface: who implements `BaseAdapter.send`? A name search for
`def send` lists every send of every class. Here the class statements that name the base (`class
HTTPAdapter(BaseAdapter)`, `class X(adapters.BaseAdapter)`) are found first (ripgrep names the files, the
parse worker reads them), and each base expression is looked up as find_definition looks a name up
(Python's scopes, imports followed across files): a class is kept when its base leads to the class asked
for (`scoped`), or when the scopes cannot tell where the base leads (`name`), and left out when it leads to
another class of that name. Derived classes are followed on (a subclass of a subclass implements too).
Python only: in the other languages a class statement names its interfaces in as many ways as there are
languages, and only their language servers (not built yet) tell.
"""

from __future__ import annotations

from collections import deque
from functools import partial
from typing import TYPE_CHECKING, Any

from ...primitives import ToolError
from ..text import place, plural, printable, result
from .definition import Follow, ModuleFiles, in_root
from .names import word_regex
from .parsers import POOL, Failed
from .references import QUERY, python_definitions
from .source import Folder, Source, cached_outline, known_language, read_source
from .symbols import Symbol

if TYPE_CHECKING:
    from ...context import Context
    from ...primitives import ToolResult
    from ..roots import Roots

MAX_CLASSES = 2000
"""Derived classes followed at most (a hierarchy that large is cut, and the result says so)."""


def find_implementations(ctx: Context, roots: Roots, name: str, path: str, limit: int) -> ToolResult:
    """The classes under `path` that derive from the class `name` names, directly or not, or their own
    definitions of the method `name` names (`Base.method`)."""
    query = name.strip().replace("::", ".")
    if not QUERY.fullmatch(query):
        raise ToolError("name must be a class (BaseAdapter) or a method with its class (BaseAdapter.send), "
                        f"not '{printable(name)}'")
    folder = Folder(roots, path)
    if not folder.is_dir:
        known_language(folder.real, folder.shown)
    try:
        bases, member = _bases(ctx, roots, folder, query)
    except _NoBase as err:
        return result(str(err), {"name": query, "bases": [], "implementations": [], "derived_classes": 0,
                                 "truncated": False, "skipped": 0, "skipped_files": []})
    files = ModuleFiles(ctx, roots)
    queue = deque(bases)
    seen = {(item["path"], item["line"]) for item in bases}
    found: list[dict[str, Any]] = []
    classes = 0
    truncated = False
    while queue and not truncated:
        base = queue.popleft()
        names = folder.candidates(ctx, word_regex(base["class"]), "python")
        subclasses = partial(_subclasses, ctx, roots, base["class"])
        for shown, (source, entries) in folder.parsed(ctx, names, "candidate file", subclasses, code_only=True):
            for entry in entries:
                precision = _derives(ctx, roots, files, source, entry, base)
                if precision is None or (shown, entry["line"]) in seen:
                    continue
                seen.add((shown, entry["line"]))
                classes += 1
                derived = {"path": shown, "line": entry["line"], "class": entry["name"].rsplit(".", 1)[-1],
                           "qualified_name": entry["name"], "precision": precision, "base": base["qualified_name"]}
                if classes > MAX_CLASSES:
                    truncated = True
                    break
                queue.append(derived)
                item = _implementation(ctx, roots, source, derived, member)
                if item is not None:
                    found.append(item)
                    if len(found) > limit:
                        truncated = True
                        break
            if truncated:
                break
    found = sorted(found[:limit], key=lambda item: item["precision"] != "scoped")  # the surest first, as found
    ctx.report_progress(1, 1, f"done: {plural(len(found), 'implementation')}")
    what = f"{printable(member)} of the classes derived from" if member else "classes derived from"
    out = [f"{printable(item['path'])}:{item['line']}: [{item['kind']}{', by name' if item['precision'] == 'name' else ''}] "
           f"{printable(item['signature'])}  ({printable(item['class'])}, from {printable(item['base'])})" for item in found]
    targets = ", ".join(f"{printable(item['qualified_name'])} ({printable(item['path'])}:{item['line']})" for item in bases)
    if not found:
        out.append(f"No {what} {targets} under {place(folder.shown)}"
                   f"{f' define {printable(member)}' if member and classes else ''} ({plural(classes, 'derived class')}).")
    elif truncated:
        out.append(f"[Showing the first {plural(len(found), 'implementation')}; there are more. Narrow with path, or "
                   "raise limit.]")
    else:
        out.append(f"[{plural(len(found), 'implementation')} of {printable(query)} ({targets}) under "
                   f"{place(folder.shown)}, in {plural(classes, 'derived class')}.]")
    out += folder.skipped_note()
    return result("\n".join(out), {"name": query, "bases": [{key: item[key] for key in ("path", "line", "qualified_name")}
                                                            for item in bases],
                                   "implementations": found, "derived_classes": classes, "truncated": truncated,
                                   "skipped": folder.skipped, "skipped_files": folder.skipped_files})


def _bases(ctx: Context, roots: Roots, folder: Folder, query: str) -> tuple[list[dict[str, Any]], str | None]:
    """The classes the query names (its own, or its method's) in the Python files under the first root, and
    the method's name (None for a class)."""
    parts = tuple(query.split("."))
    classes: list[dict[str, Any]] = []
    methods: list[dict[str, Any]] = []
    others: list[str] = []
    for shown, symbol, outer in python_definitions(ctx, roots, Folder(roots, roots.first), parts):
        if symbol.kind == "class":
            classes.append(_place(shown, symbol))
        elif outer and outer[-1].kind == "class" and symbol.kind in ("method", "function", "constructor", "property"):
            methods.append(_place(shown, outer[-1]))
        else:
            others.append(f"{symbol.kind} {symbol.qualified_name} ({shown}:{symbol.def_line})")
    if classes or methods:
        return (classes, None) if classes else (methods, parts[-1])
    if others:
        raise _NoBase(f"{printable(query)} is not a class or a method of one, so nothing derives from it: "
                      f"{printable('; '.join(others[:5]))}.")
    raise _NoBase(f"No Python class or method {printable(query)} in the workspace (find_symbol finds a name in every "
                  "language).")


class _NoBase(Exception):
    """The query names no class nor method of one: an answer (nothing implements it), not an error."""


def _place(shown: str, cls: Symbol) -> dict[str, Any]:
    return {"path": shown, "line": cls.def_line, "class": cls.name, "qualified_name": cls.qualified_name}


def _subclasses(ctx: Context, roots: Roots, name: str, real: str, shown: str) -> tuple[Source, list[dict[str, Any]]]:
    """The classes of a Python file with a base written `name`, and the file (the parse worker reads it)."""
    source = read_source(roots, real, shown, "python")
    try:
        entries = POOL.ask({"op": "subclasses", "text": source.text, "shown": in_root(roots, real), "name": name},
                           ctx.check_cancelled)
    except Failed:
        entries = None
    return source, entries or []


def _derives(ctx: Context, roots: Roots, files: ModuleFiles, source: Source, entry: dict[str, Any],
             base: dict[str, Any]) -> str | None:
    """How surely the class `entry` derives from `base`: `scoped` when its base leads there, `name` when the
    scopes cannot tell where it leads, None when it leads elsewhere."""
    follow = Follow(ctx, roots, files)
    reached = follow.targets(source, entry["targets"])
    if any((item["path"], item["line"]) == (base["path"], base["line"]) for item in reached):
        return "scoped"
    return "name" if not reached and follow.unknown else None


def _implementation(ctx: Context, roots: Roots, source: Source, derived: dict[str, Any], member: str | None,
                    ) -> dict[str, Any] | None:
    """The derived class itself, or its own definition of `member` (None when it has none)."""
    outline = cached_outline(roots, source.real, source.shown, ctx.check_cancelled)
    wanted = f"{derived['qualified_name']}.{member}" if member else derived["qualified_name"]
    for top in outline:
        for symbol in top.walk():
            if symbol.qualified_name == wanted and (member or symbol.def_line == derived["line"]):
                return {"path": source.shown, "line": symbol.def_line, "kind": symbol.kind, "signature": symbol.signature,
                        "qualified_name": symbol.qualified_name, "class": derived["class"], "base": derived["base"],
                        "precision": derived["precision"]}
    return None

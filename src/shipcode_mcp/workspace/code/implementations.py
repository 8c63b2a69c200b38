"""find_implementations: the classes that derive from a class, and their own definitions of its method.

What an agent asks before it changes an interface: who implements `BaseAdapter.send`? A name search for
`def send` lists every send of every class. Here the class statements that name the base (`class
HTTPAdapter(BaseAdapter)`, `class X(adapters.BaseAdapter)`) are found first (ripgrep names the files, the
parse worker reads them), and each base expression is looked up as find_definition looks a name up
(Python's scopes, imports followed across files): a class is kept when its base leads to the class asked
for (`scoped`), or when the scopes cannot tell where the base leads (`name`), and left out when it leads to
another class of that name. Derived classes are followed on (a subclass of a subclass implements too), one
level of the hierarchy at a time: one rg and one read of each file for all of the level's classes.
In the other languages a class statement names its interfaces in as many ways as there are languages: only
their language servers tell. With --precise, TypeScript's and JavaScript's implementations are tsserver's
(`exact`): the classes that implement an interface or extend a class (directly or not), the methods that
implement a method, the objects typed as an interface; C++'s are clangd's (the classes derived from a class, the
overrides of a virtual method: it names the direct ones, so each is asked for its own in turn).
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

from ...primitives import ToolError, inside
from ..lsp.servers import NotReady
from ..text import place, plural, printable, result
from . import precise
from .definition import Follow, ModuleFiles, in_root
from .names import word_regex
from .parsers import POOL, Failed
from .references import C_LANGUAGES, QUERY, definition_places, python_definitions
from .source import Folder, Source, cached_outline, known_language, read_source
from .symbols import Symbol, language_for

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
    note = None
    if precise.enabled() and any(language in precise.offered() for language in IMPLEMENTING):
        try:
            exact = _exact(ctx, roots, query, folder, limit)
        except NotReady as err:
            note = err.note
        else:
            if exact is not None:
                return exact
    try:
        bases, member = _bases(ctx, roots, query)
    except _NoBase as err:
        said = f"\n[Not exact: {note}.]" if note is not None else ""
        return result(str(err) + said, {"name": query, "bases": [], "implementations": [], "derived_classes": 0,
                                        "truncated": False, "skipped": 0, "skipped_files": [], "language_server": None,
                                        "language_server_note": note})
    files = ModuleFiles(ctx, roots)
    level = bases
    seen = {(item["path"], item["line"]) for item in bases}
    found: list[dict[str, Any]] = []
    classes = 0
    cut = ""  # why the answer stops early: "limit" or "classes"
    while level and not cut:  # one hierarchy level a pass: one rg and one read of each file for all its classes
        by_name: dict[str, list[dict[str, Any]]] = {}
        for known in level:
            by_name.setdefault(known["class"], []).append(known)
        names = sorted(by_name)
        candidates = folder.candidates(ctx, "|".join(word_regex(item) for item in names), "python")
        subclasses = partial(_subclasses, ctx, roots, names)
        level = []
        for shown, (source, entries) in folder.parsed(ctx, candidates, "candidate file", subclasses, code_only=True):
            for entry in entries:
                if (shown, entry["line"]) in seen:
                    continue
                reached, unknown = _reached(ctx, roots, files, source, entry)
                base = next((item for item in by_name[entry["base"]] if (item["path"], item["line"]) in reached), None)
                if base is None and not (unknown and not reached):
                    continue  # its base is another class of that name
                seen.add((shown, entry["line"]))
                classes += 1
                if classes > MAX_CLASSES:
                    cut = "classes"
                    break
                derived = {"path": shown, "line": entry["line"], "class": entry["name"].rsplit(".", 1)[-1],
                           "qualified_name": entry["name"], "precision": "scoped" if base is not None else "name",
                           "base": (base or by_name[entry["base"]][0])["qualified_name"]}
                level.append(derived)
                item = _implementation(ctx, roots, source, derived, member)
                if item is not None:
                    found.append(item)
                    if len(found) > limit:
                        cut = "limit"
                        break
            if cut:
                break
    classes = min(classes, MAX_CLASSES)
    found = sorted(found[:limit], key=lambda item: item["precision"] != "scoped")  # the surest first, as found
    ctx.report_progress(1, 1, f"done: {plural(len(found), 'implementation')}")
    out = [f"{printable(item['path'])}:{item['line']}: [{item['kind']}{', by name' if item['precision'] == 'name' else ''}] "
           f"{printable(item['signature'])}  ({printable(item['class'])}, from {printable(item['base'])})" for item in found]
    targets = _targets(bases)
    if cut == "classes":
        out.append(f"[Stopped after {MAX_CLASSES} derived classes of {printable(query)} ({targets}): the hierarchy is "
                   "larger. Narrow with path, or ask for a class further down.]")
    elif cut == "limit":
        out.append(f"[Showing the first {plural(len(found), 'implementation')}; there are more. Narrow with path, or "
                   "raise limit.]")
    elif not found and member:
        out.append(f"None of the {plural(classes, 'class')} derived from {targets} under {place(folder.shown)} defines "
                   f"{printable(member)}.")
    elif not found:
        out.append(f"No class derives from {targets} under {place(folder.shown)}.")
    else:
        out.append(f"[{plural(len(found), 'implementation')} of {printable(query)} ({targets}) under "
                   f"{place(folder.shown)}, in {plural(classes, 'derived class')}.]")
    out += folder.skipped_note()
    return result("\n".join(out), {"name": query, "bases": [{key: item[key] for key in ("path", "line", "qualified_name")}
                                                            for item in bases],
                                   "implementations": found, "derived_classes": classes, "truncated": bool(cut),
                                   "skipped": folder.skipped, "skipped_files": folder.skipped_files,
                                   "language_server": None, "language_server_note": note})


IMPLEMENTING = ("typescript", "cpp")
"""The language server backends asked for implementations (tsserver's; clangd's: a C++ class's derived classes, a
virtual method's overrides)."""
TRANSITIVELY = ("cpp",)
"""The backends whose server names the direct implementations only (clangd): each is asked for its own in turn."""
MAX_ASKED = 256
"""Implementation requests one call makes at most (a deep hierarchy asked level by level)."""
_IMPLEMENTED = frozenset({"class", "struct", "interface", "method", "property", "function", "field"})
"""Kinds of definitions a language server is asked the implementations of (a method may be outlined as a
function-valued property or field)."""


def _exact(ctx: Context, roots: Roots, query: str, folder: Folder, limit: int) -> ToolResult | None:
    """The implementations under `folder` of the TypeScript, JavaScript and C++ classes, interfaces and methods
    `query` names, as their language servers find them; None when the roots define none (the syntax tree answers);
    NotReady when a server cannot answer now."""
    places, definitions = definition_places(ctx, roots, query,
                                            tuple(language for language in IMPLEMENTING if language in precise.offered()))
    chosen = [(place, item) for place, item in zip(places, definitions, strict=True) if item["kind"] in _IMPLEMENTED]
    if not chosen:
        return None
    server = " and ".join(precise.server_name(roots, language, present=True)
                          for language in dict.fromkeys(item["backend"] for _, item in chosen))
    asked = {where for where, _ in chosen}
    defined: dict[precise.Place, precise.Place] = {}  # (clangd's places and their definitions: precise.implementations)
    found: list[dict[str, Any]] = []
    todo = list(chosen)
    for _ in range(MAX_ASKED):
        if not todo or len(found) > limit:
            break
        where, definition = todo.pop(0)
        for item in sorted(precise.implementations(roots, definition["backend"], [where], ctx.check_cancelled,
                                                       defined) - asked,
                           key=lambda item: (item.real, item.line, item.units)):
            asked.add(item)
            if definition["backend"] in TRANSITIVELY:
                todo.append((item, definition))
            if inside(item.real, folder.real):
                entry = _implemented(ctx, roots, item, definition["qualified_name"])
                if entry is not None and all((other["path"], other["line"]) != (entry["path"], entry["line"])
                                             for other in found):
                    found.append(entry)
    found.sort(key=lambda item: (item["path"], item["line"]))
    truncated = len(found) > limit
    found = found[:limit]
    classes = len({(item["path"], item["class"]) for item in found})
    ctx.report_progress(1, 1, f"done: {plural(len(found), 'implementation')}")
    bases = [{"path": item["path"], "line": item["line"], "qualified_name": item["qualified_name"]} for _, item in chosen]
    targets = _targets(bases)
    out = [f"{printable(item['path'])}:{item['line']}: [{item['kind']}] {printable(item['signature'])}  "
           f"({printable(item['class'])}, from {printable(item['base'])})" for item in found]
    if not found:
        out.append(f"Nothing implements {targets} under {place(folder.shown)}, exact: {server}'s.")
    elif truncated:
        out.append(f"[Showing the first {plural(len(found), 'implementation')}; there are more. Narrow with path, or "
                   "raise limit.]")
    else:
        out.append(f"[{plural(len(found), 'implementation')} of {printable(query)} ({targets}) under "
                   f"{place(folder.shown)}, exact: {server}'s.]")
    return result("\n".join(out), {"name": query, "bases": bases, "implementations": found, "derived_classes": classes,
                                   "truncated": truncated, "skipped": 0, "skipped_files": [], "language_server": server,
                                   "language_server_note": None})


def _implemented(ctx: Context, roots: Roots, item: precise.Place, base: str) -> dict[str, Any] | None:
    """What the language server named at `item`: the definition the outline lists there (a class, a method), or
    the innermost one around it (an object typed as the interface); None when the file cannot be read now."""
    shown = roots.display(item.real)
    try:
        outline = cached_outline(roots, item.real, shown, ctx.check_cancelled)
    except (ToolError, OSError):
        return None
    line = item.line + 1
    around: list[tuple[Symbol, Symbol | None]] = []
    for top in outline:
        stack: list[tuple[Symbol, Symbol | None]] = [(top, None)]
        while stack:
            symbol, parent = stack.pop()
            if symbol.line <= line <= symbol.end_line:
                around.append((symbol, parent))
                stack += [(child, symbol) for child in symbol.children]
    if not around:
        return None
    symbol, parent = next(((symbol, parent) for symbol, parent in reversed(around) if symbol.def_line == line), around[-1])
    owner = parent if parent is not None and symbol.kind not in ("class", "interface", "struct") else symbol
    name = owner.name
    if owner is symbol and symbol.kind in ("function", "method") and language_for(item.real) in C_LANGUAGES \
            and "." in symbol.qualified_name:
        name = symbol.qualified_name.split(".")[-2]  # (a C++ method defined outside its class: Square::area)
    return {"path": shown, "line": symbol.def_line, "kind": symbol.kind, "signature": symbol.signature,
            "qualified_name": symbol.qualified_name, "class": name, "base": base, "precision": "exact"}


def _bases(ctx: Context, roots: Roots, query: str) -> tuple[list[dict[str, Any]], str | None]:
    """The classes the query names (its own, or its method's) in the Python files under the roots, each once,
    and the method's name (None for a class)."""
    parts = tuple(query.split("."))
    classes: dict[tuple[str, int], dict[str, Any]] = {}
    methods: dict[tuple[str, int], dict[str, Any]] = {}
    others: list[str] = []
    for root in roots.paths:
        for shown, symbol, outer in python_definitions(ctx, roots, Folder(roots, root), parts):
            if symbol.kind == "class":
                classes.setdefault((shown, symbol.def_line), _place(shown, symbol))
            elif outer and outer[-1].kind == "class" and symbol.kind in ("method", "function", "constructor", "property"):
                methods.setdefault((shown, outer[-1].def_line), _place(shown, outer[-1]))  # (a property's setter too)
            else:
                others.append(f"{symbol.kind} {symbol.qualified_name} ({shown}:{symbol.def_line})")
    if classes or methods:
        return (list(classes.values()), None) if classes else (list(methods.values()), parts[-1])
    if others:
        raise _NoBase(f"{printable(query)} is not a class or a method of one, so nothing derives from it: "
                      f"{printable('; '.join(others[:5]))}.")
    raise _NoBase(f"No Python class or method {printable(query)} in the workspace (find_symbol finds a name in every "
                  "language).")


def _targets(bases: list[dict[str, Any]]) -> str:
    """The classes (or methods) asked about, as the result's last line names them: the first five."""
    named = ", ".join(f"{printable(item['qualified_name'])} ({printable(item['path'])}:{item['line']})" for item in bases[:5])
    return named + (f", and {len(bases) - 5} more" if len(bases) > 5 else "")


class _NoBase(Exception):
    """The query names no class nor method of one: an answer (nothing implements it), not an error."""


def _place(shown: str, cls: Symbol) -> dict[str, Any]:
    return {"path": shown, "line": cls.def_line, "class": cls.name, "qualified_name": cls.qualified_name}


def _subclasses(ctx: Context, roots: Roots, names: list[str], real: str, shown: str) -> tuple[Source, list[dict[str, Any]]]:
    """The classes of a Python file with a base written as one of `names`, and the file (the parse worker reads it)."""
    source = read_source(roots, real, shown, "python")
    try:
        entries = POOL.ask({"op": "subclasses", "text": source.text, "shown": in_root(roots, real), "names": names},
                           ctx.check_cancelled)
    except Failed:
        entries = None
    return source, entries or []


def _reached(ctx: Context, roots: Roots, files: ModuleFiles, source: Source, entry: dict[str, Any],
             ) -> tuple[set[tuple[str, int]], bool]:
    """Where the base of the class `entry` leads ((path, line) of its definitions), and whether the scopes could
    not tell."""
    follow = Follow(ctx, roots, files)
    reached = follow.targets(source, entry["targets"])
    return {(item["path"], item["line"]) for item in reached}, follow.unknown


def _implementation(ctx: Context, roots: Roots, source: Source, derived: dict[str, Any], member: str | None,
                    ) -> dict[str, Any] | None:
    """The derived class itself, or its own definition of `member` (None when it has none): the class the
    outline lists at its line, and its children (another class of that name elsewhere in the file is another)."""
    outline = cached_outline(roots, source.real, source.shown, ctx.check_cancelled)
    cls = next((symbol for top in outline for symbol in top.walk()
                if symbol.def_line == derived["line"] and symbol.kind == "class" and symbol.name == derived["class"]), None)
    if cls is None:
        return None
    symbol = cls if member is None else next((child for child in cls.children if child.name == member), None)
    if symbol is None:
        return None
    return {"path": source.shown, "line": symbol.def_line, "kind": symbol.kind, "signature": symbol.signature,
            "qualified_name": symbol.qualified_name, "class": derived["class"], "base": derived["base"],
            "precision": derived["precision"]}

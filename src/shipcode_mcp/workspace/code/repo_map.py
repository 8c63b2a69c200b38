"""repo_map: what an agent reads first on an unknown repository. The definitions the rest of the code uses most,
as their signatures (not bodies), grouped by file, within a token budget.

The ranking, from the code index (code/index.py: each file's outline and the identifiers it uses) or, without it,
from the same reading of the files:
- The definitions are those of a file's outline but the ones inside a function (closures, local helpers).
- A definition of `name` in file D is used by each other file F whose syntax tree has an identifier `name` that F
  does not bind itself (comments and strings hold none; the index leaves out of a file's uses the names it defines,
  takes as parameters or assigns, and keyword arguments' names: code/worker.py's BINDINGS and NOT_USES), and which
  can reach D: for a member (a method, a field) F also names its top-level symbol (`stdout` of `class Result`
  counts in a file that names `Result`, not in every file that says `sys.stdout`; a namespace or module (_is_scope)
  is no owner: its classes are top-level); in a language whose imports name modules by identifiers
  (MODULES_NAMED) F also names D's module, its file name or one of its folders under the root
  (`from email.message import Message`, `pkg.Func`), unless both are of one package folder (PACKAGE_FOLDERS).
- F adds sqrt(the times it has the name), so a file that calls it ten times counts more than one that names it
  once, but not ten times more. A name F can reach in several files shares what F adds among them (the syntax
  cannot tell which one a use reaches); a name that starts with `_` (private by convention) counts a tenth; a name
  defined in more than AMBIGUOUS files counts for none.
- A file's rank is the sum of its names' scores; `used_by` is the number of other files that use the name.
- Definitions are taken by score (ties: by the file's rank, then path and source order) while the result fits the
  budget; the enclosing symbols of one taken (a method's class) are shown with it. What no other file uses comes
  last, top-level definitions first, so a small repository is shown whole.
"""

from __future__ import annotations

import heapq
import json
import math
import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ...primitives import ToolError
from .. import budget as budgets
from ..text import place, plural, printable, result
from ..tools import MAX_MAP_SCANNED
from .index import Derived, FileFacts, Unavailable, indexed_folder, scanned_facts
from .source import MAX_SKIPPED_NAMED, Folder
from .symbols import language_for

if TYPE_CHECKING:
    from ...context import Context
    from ...primitives import ToolResult
    from ..roots import Roots

PRIVATE = 0.1
"""The weight of a use of a name that starts with `_`."""
AMBIGUOUS = 16
"""A name defined in more files than this (`__init__`, `run`, `setUp`) ties a use to none of them."""
_BATCH = 64
"""Files read between two progress reports in a scan."""


class _Definition:
    """One row of a file's outline, with what ranking it found."""

    __slots__ = ("below", "def_line", "depth", "end_line", "kind", "line", "name", "owner", "parent", "path", "qualified",
                 "score", "seq", "signature", "used_by")

    def __init__(self, path: str, seq: int, row: Sequence[Any], parent: _Definition | None, score: float,
                 used_by: int) -> None:
        self.path, self.seq, self.parent, self.score, self.used_by = path, seq, parent, score, used_by
        _, self.name, self.qualified, self.kind, self.line, self.end_line, self.signature, self.def_line = row
        self.depth: int = 0 if parent is None else parent.depth + 1
        self.owner: str | None = None if parent is None else parent.below  # the top-level symbol (or None)
        self.below: str | None = (self.owner if _is_scope(self.kind, self.signature)
                                  else self.owner or self.name)  # its members' owner

    def item(self) -> dict[str, Any]:
        return {"qualified_name": self.qualified, "kind": self.kind, "line": self.line, "end_line": self.end_line,
                "def_line": self.def_line, "signature": self.signature, "used_by": self.used_by}

    def text(self) -> str:
        return f"{self.def_line:>6}: {'    ' * self.depth}{printable(self.signature)}"


def repo_map(ctx: Context, roots: Roots, path: str, budget: int) -> ToolResult:
    """The map of the folder at `path` within `budget` tokens (see the module's doc)."""
    folder = Folder(roots, path)
    if not folder.is_dir:
        raise ToolError(f"{place(folder.shown)} is a file: repo_map maps a folder (outline lists one file's symbols)")
    try:
        ranking = _indexed_ranking(ctx, roots, folder)
        state, note = "fresh", ""
    except Unavailable as why:
        root = roots.root_of(folder.real)
        base = "" if root is None or root == folder.real else os.path.relpath(folder.real, root)
        ranking = _Ranking(_scan(ctx, roots, folder, str(why)), base, ctx.check_cancelled)
        state, note = ("building" if why.building else "off"), str(why)
    for name, reason in ranking.skipped:
        folder.skipped += 1
        if len(folder.skipped_files) < MAX_SKIPPED_NAMED:
            folder.skipped_files.append({"path": folder.file(name)[1], "reason": reason})
    ctx.report_progress(1, 1, f"ranked {plural(ranking.total, 'definition')}")
    order, ranks, users = ranking.order, ranking.ranks, ranking.users

    def render(chosen: set[_Definition]) -> ToolResult:
        return _render(folder, chosen, ranks, users, ranking.total, ranking.code_files, budget, state, note)

    limit = budget * budgets.BYTES_PER_TOKEN
    named, folder.skipped_files = folder.skipped_files, []  # named after the definitions, in the room they leave
    spent = budgets.size(*_parts(render(set()))) + _SLACK
    chosen: set[_Definition] = set()
    files: set[str] = set()
    taken: list[list[_Definition]] = []  # what each definition taken added (it and the parents not shown yet)
    for definition in order:
        added = [d for d in _enclosing(definition) if d not in chosen]
        cost = sum(_cost(d) for d in added)
        if definition.path not in files:
            cost += _file_cost(folder.file(definition.path)[1], users.get(definition.path, 0))
        if spent + cost > limit:
            break
        spent += cost
        chosen.update(added)
        files.add(definition.path)
        taken.append(added)
    shown = render(chosen)
    while taken and budgets.tokens(shown) > budget:  # the estimate was short (the notes' numbers grew)
        chosen.difference_update(taken.pop())
        shown = render(chosen)
    for item in named:  # the files that could not be read, named while they fit (counted always)
        folder.skipped_files.append(item)
        more = render(chosen)
        if budgets.tokens(more) > budget:
            folder.skipped_files.pop()
            break
        shown = more
    return shown


_SLACK = 64
"""Bytes kept for the notes' numbers, which grow as definitions are taken."""
KEPT = 2_000
"""The definitions a ranking keeps, in order: more than the largest budget can show (each takes 100 bytes or more)."""


class _Ranking:
    """What maps of a folder are made from: its definitions in the order a map takes them (the first KEPT), the
    rank of each file and the number of other files that use it, the counts, the files skipped and why."""

    def __init__(self, facts: dict[str, FileFacts], base: str, check: Callable[[], None]) -> None:
        entries, weight, count, self.ranks, self.users = _ranked(facts, base, check)
        self.total = len(entries)
        ranks = self.ranks
        scored = sorted((entry for entry in entries if (entry[0], entry[3], entry[2]) in weight),
                        key=lambda e: (-weight[(e[0], e[3], e[2])], -ranks.get(e[0], 0.0), e[0], e[1]))[:KEPT]
        if len(scored) < KEPT:  # then what no other file uses: top-level definitions first
            scored += heapq.nsmallest(KEPT - len(scored), (entry for entry in entries if (entry[0], entry[3], entry[2])
                                                           not in weight),
                                      key=lambda e: (e[4], -ranks.get(e[0], 0.0), e[0], e[1]))
        made: dict[tuple[str, int], _Definition] = {}

        def definition(path: str, seq: int) -> _Definition:
            """The definition at `seq` of the file, and the symbols enclosing it, made once."""
            known = made.get((path, seq))
            if known is None:
                value = facts[path]
                assert not isinstance(value, str)  # (an entry's file was read)
                row = value[0][seq]
                parent = definition(path, row[0]) if 0 <= row[0] < seq else None
                key = (path, None if parent is None else parent.below, _named(row[1]))
                known = made[(path, seq)] = _Definition(path, seq, row, parent, weight.get(key, 0.0), count.get(key, 0))
            return known

        self.order = [definition(entry[0], entry[1]) for entry in scored]
        self.code_files = sum(1 for value in facts.values() if not isinstance(value, str))
        self.skipped = sorted((name, value) for name, value in facts.items()  # binary: not code, as a scan leaves out
                              if isinstance(value, str) and value != "binary")


_RANKINGS: Derived[_Ranking] = Derived(lambda indexed, check, _: _Ranking(indexed.facts(), indexed.prefix, check))
"""The rankings of the last folders mapped from the index, each kept while its stamp holds: a second map of an
unchanged folder ranks nothing again."""


def _indexed_ranking(ctx: Context, roots: Roots, folder: Folder) -> _Ranking:
    """The folder's ranking from its root's index, made fresh first; Unavailable when the files must be read. A
    database found damaged on the way (also while its facts are read) is built again at once."""
    try:
        return _RANKINGS.get(indexed_folder(ctx, roots, folder), ctx.check_cancelled)
    except Unavailable as why:
        if not why.damaged:
            raise
    return _RANKINGS.get(indexed_folder(ctx, roots, folder), ctx.check_cancelled)


def _parts(value: ToolResult) -> tuple[str, dict[str, Any]]:
    assert isinstance(value.structured, dict)
    return "".join(item.get("text", "") for item in value.content), value.structured


def _cost(definition: _Definition) -> int:
    """The bytes one definition adds to a map: its line and its item."""
    return (len(definition.text().encode("utf-8", "surrogatepass")) + 1
            + len(json.dumps(definition.item(), ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass")) + 1)


def _file_cost(shown: str, used: int) -> int:
    """The bytes a file's heading adds to a map: its line and its item without symbols."""
    heading = printable(shown) + (f" (used by {plural(used, 'other file')})" if used else "")
    item = {"path": shown, "used_by": used, "symbols": []}
    return (len(heading.encode("utf-8", "surrogatepass")) + 1
            + len(json.dumps(item, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass")) + 1)


def _enclosing(definition: _Definition | None) -> list[_Definition]:
    """The definition and the symbols that enclose it, outermost first."""
    chain = []
    while definition is not None:
        chain.append(definition)
        definition = definition.parent
    return chain[::-1]


def _scan(ctx: Context, roots: Roots, folder: Folder, why: str) -> dict[str, FileFacts]:
    """file_facts read from the files: every code file under the folder, at most MAX_MAP_SCANNED."""
    names = folder.files(ctx)
    if len(names) > MAX_MAP_SCANNED:
        raise ToolError(f"repo_map reads at most {MAX_MAP_SCANNED} files without the code index, and "
                        f"{place(folder.shown)} holds {len(names)} code files "
                        f"({why or 'no code index: --no-index, or a folder the index does not hold'}). "
                        "Map a smaller folder with path, or call again once the index is built.")
    facts: dict[str, FileFacts] = {}
    for start in range(0, len(names), _BATCH):
        ctx.report_progress(start, len(names), f"reading {plural(len(names), 'code file')}")
        ctx.check_cancelled()
        for name, value in scanned_facts(roots, folder, names[start:start + _BATCH], ctx.check_cancelled):
            if value is not None:
                facts[name] = value
    return facts


Entry = tuple[str, int, str, "str | None", int]
"""A definition a map can show: its file, its place in the file's outline, its name, the name of its top-level
symbol (None for one at the top) and its depth."""
Key = tuple[str, "str | None", str]
"""What uses are counted for: a file, a top-level symbol of it (or None) and a name."""


def _ranked(facts: dict[str, FileFacts], base: str, check: Callable[[], None]) -> tuple[
        list[Entry], dict[Key, float], dict[Key, int], dict[str, float], dict[str, int]]:
    """Every definition a map can show (not those inside a function: its own business), the score and used_by of
    each key that other files use, each file's rank, and how many other files use a name of each file; `base` is
    the folder's path under its root (a module's name may be a folder above it), `check` the call's cancellation."""
    entries: list[Entry] = []
    defined: dict[str, set[tuple[str, str | None]]] = {}  # name: (file, top-level owner) of each definition
    ordered = sorted(facts.items(), key=lambda item: item[0])  # the sums in one order: the index's map is the scan's
    for path, value in ordered:
        if isinstance(value, str):
            continue
        shown: list[tuple[str | None, int] | None] = []  # each row: (the owner of what it encloses, depth) or None
        for seq, row in enumerate(value[0]):
            parent = shown[row[0]] if 0 <= row[0] < seq else None
            if (parent is None and row[0] >= 0) or (parent is not None and value[0][row[0]][3] in _BODIES):
                shown.append(None)  # inside a function (or under one)
                continue
            if row[1] in value[1]:  # a file uses no name it defines, but for what JavaScript's require() declares
                shown.append(None)
                continue
            name = _named(row[1])
            owner, depth = (None, 0) if parent is None else parent
            shown.append((owner if _is_scope(row[3], row[6]) else owner or row[1], depth + 1))
            entries.append((path, seq, name, owner, depth))
            defined.setdefault(name, set()).add((path, owner))
    definers = {name: sorted(where, key=lambda place: (place[0], place[1] or "")) for name, where in defined.items()
                if len({path for path, _ in where}) <= AMBIGUOUS}
    weight: dict[Key, float] = {}  # what the other files' uses add
    count: dict[Key, int] = {}  # the other files that use it
    users: dict[str, set[str]] = {}  # defining file: the other files that use one of its names
    modules = {path: (_module_names(os.path.join(base, path)), os.path.dirname(path)) for path in facts}
    for done, (path, value) in enumerate(ordered):
        if done % _BATCH == 0:
            check()
        if isinstance(value, str):
            continue
        uses = value[1]  # (without the names it binds itself: its own definitions among them)
        language = language_for(path)
        named, folder = language in MODULES_NAMED, os.path.dirname(path) if language in PACKAGE_FOLDERS else None
        reaches: dict[str, bool] = {}  # defining file: whether this one names its module
        for name in uses.keys() & definers.keys():
            reached = []
            for defining, owner in definers[name]:
                if defining == path or (owner is not None and owner not in uses):
                    continue
                if named:
                    reach = reaches.get(defining)
                    if reach is None:
                        module, place = modules[defining]
                        reach = reaches[defining] = place == folder or any(part in uses for part in module)
                    if not reach:
                        continue
                reached.append((defining, owner))
            if not reached:
                continue
            added = math.sqrt(uses[name]) / len(reached) * (PRIVATE if name.startswith("_") else 1.0)
            for defining, owner in reached:
                key = (defining, owner, name)
                weight[key] = weight.get(key, 0.0) + added
                count[key] = count.get(key, 0) + 1
                users.setdefault(defining, set()).add(path)
    scores: dict[str, list[float]] = {}
    for (path, _, _), score in weight.items():
        scores.setdefault(path, []).append(score)
    ranks = {path: math.fsum(each) for path, each in scores.items()}  # (exact: the same in any order)
    return entries, weight, count, ranks, {path: len(files) for path, files in users.items()}


def _module_names(path: str) -> set[str]:
    """The names by which code imports or qualifies what `path` defines: its file name without the extension
    (not a package's own file: __init__.py, mod.rs, index.js; a Rust crate's root is `crate`) and its folders'
    names."""
    parts = path.split("/")
    stem, extension = os.path.splitext(parts[-1])
    if extension == ".rs" and stem in ("lib", "main"):
        stem = "crate"  # a crate's root: `use crate::Thing`
    return {*parts[:-1], stem} - {"", "__init__", "mod", "index"}


MODULES_NAMED = frozenset({"python", "go", "rust", "java", "kotlin", "scala"})
"""Languages whose files name the module of what they use from another file (an import or a qualified name holds
it as identifiers: `from email.message import Message`, `pkg.Func`, `use crate::utils::env`); in the others (a
module named by a string: JavaScript, TypeScript, C, C++, Ruby; or none) any file may reach a name."""
PACKAGE_FOLDERS = frozenset({"go", "java", "kotlin", "scala"})
"""Of those, the languages whose files see what the other files of their folder (their package) define unnamed."""
_BODIES = frozenset({"function", "method", "constructor"})
"""Kinds whose nested definitions are local (a closure, a helper class): not on a map."""


def _is_scope(kind: str, signature: str) -> bool:
    """Whether a symbol only holds names (a C# or C++ namespace, a Ruby module, a Rust mod): its members are
    reached as top-level names are (`using App;` then `Proc`), not through it. A Rust impl and a Swift extension
    are outlined as modules too, but their members are their type's."""
    return kind == "module" and not signature.startswith(("impl", "extension"))


def _named(name: str) -> str:
    """The name uses reach a definition by: PHP's property `$items` is used as `->items`."""
    return name[1:] if name.startswith("$") else name


def _render(folder: Folder, chosen: set[_Definition], ranks: dict[str, float], users: dict[str, int], total: int,
            code_files: int, budget: int, state: str, note: str) -> ToolResult:
    by_file: dict[str, list[_Definition]] = {}
    for definition in chosen:
        by_file.setdefault(definition.path, []).append(definition)
    paths = sorted(by_file, key=lambda path: (-ranks.get(path, 0.0), path))
    lines: list[str] = []
    files: list[dict[str, Any]] = []
    for path in paths:
        shown = folder.file(path)[1]
        used = users.get(path, 0)
        lines.append(f"{printable(shown)}" + (f" (used by {plural(used, 'other file')})" if used else ""))
        symbols = sorted(by_file[path], key=lambda d: d.seq)
        lines += [definition.text() for definition in symbols]
        files.append({"path": shown, "used_by": used, "symbols": [definition.item() for definition in symbols]})
    what = f"{plural(code_files, 'code file')}, {plural(total, 'definition')}"
    if not chosen:
        lines.append(f"No definitions in {place(folder.shown)} ({what})." if not total else
                     f"[No definition of {total} fits in {budget} tokens beside this note.]")
    elif len(chosen) < total:
        lines.append(f"[{plural(len(chosen), 'definition')} of {total} in {plural(len(paths), 'file')} of {code_files}: "
                     f"the most used by other files, within {budget} tokens. Raise budget, or map a folder with path.]")
    else:
        lines.append(f"[All {what}.]")
    lines += folder.skipped_note()
    if note:
        lines.append(f"[{printable(note)}.]")
    return result("\n".join(lines), {"path": folder.shown, "files": files, "definitions": total, "shown": len(chosen),
                                     "code_files": code_files, "truncated": len(chosen) < total,
                                     "skipped": folder.skipped, "skipped_files": folder.skipped_files, "index": state})


"""find_references: where an identifier is used, from the syntax tree, so not in comments or strings.

In Python the uses are then sorted by what Python's scopes say of them (pyscopes.py, in the parse
worker): a use that reaches the definition asked for is `scoped`, one that only types could tell is
`name`, and one that cannot (a local or a parameter of that name, a keyword argument, another class's
member) is left out and counted. A qualified query (`Session.get`, `sessions.get`) is first resolved to
its definitions in the workspace (the outline of the files that may define the name), so that an
import of another module's `get` is told apart. Other languages' uses are all `name` from the syntax
tree; with `--precise`, a language server's (Python's, TypeScript's for TypeScript and JavaScript) are
`exact`, each definition asked of the server of its file's language.

ripgrep names the files where the word occurs; each is parsed and only identifier nodes whose text
is the name count (one native search a file). A Python file is scanned instead (pyscan.py: its
comments and strings found by one regex, some 5x cheaper than the parse), unless the scan says only
the tree can tell. A use on a definition's own line, first on that line,
is the definition itself and is marked so. The uses found in a file are kept in the outline cache
under the file's (path, size, mtime) and the name: asked again, a file that has not changed is not
read nor parsed, and the call costs the rg and a look-up.

Parsing the candidates on two threads was measured and does not help: ast-grep-py holds the GIL while
it parses (48 files: 754 ms on one thread, 719 ms on two; a Python loop beside a parse ran at a
fifth of its speed), so they are parsed one after the other.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from functools import lru_cache, partial
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from ...primitives import ToolError, inside
from .. import safe_open
from ..lsp.installed import backend
from ..lsp.servers import NoFiles, NotReady
from ..text import cut_line, place, plural, printable, result
from . import precise
from .jsscopes import ANYWHERE
from .names import word_regex
from .parsers import POOL, Failed, Starved, symbols_from
from .prefilter import defining_lines
from .pyscan import python_uses
from .pyscopes import CONSTRUCTORS, LABELS, NAME, SCOPED, Reading, module_path, path_ends, readings
from .source import (
    CACHE,
    Folder,
    Reference,
    Source,
    cached_outline,
    check_parsable,
    file_key,
    known_language,
    outline_of,
    parse_failed,
    read_source,
    source_from,
)
from .symbols import LANGUAGES, Symbol, language_for

if TYPE_CHECKING:
    from ...context import Context
    from ...primitives import ToolResult
    from ..roots import Roots

MAX_LINE_CHARS = 2000
"""A longer line is shown as a window of this many characters around the use."""
QUERY = re.compile(r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*")
"""A name, or one qualified with dots (`Session.get`), as the tools that take a symbol's name accept it."""
NAME_LABEL = LABELS[NAME]
_NAME_START = re.compile(r"[^\W\d]\w*")
JS_LANGUAGES = frozenset({"javascript", "typescript", "tsx"})
"""The languages jsscopes.py reads scopes of."""
Targets = tuple[tuple[str, "str | None", int, bool], ...]
"""JavaScript and TypeScript definitions asked about (js_targets): file, the class it is a member of, line, and
whether it is the file's default export."""
EXACT = "exact"
"""The label of a use a language server found (`--precise`): decided by types, not only scopes."""
T = TypeVar("T")
def _parsed_positions(source: Source, name: str, check: Callable[[], None] | None,
                      ) -> tuple[list[tuple[int, int]], list[Symbol] | None]:
    """(line, column), 0-based, of the identifier nodes whose text is `name`, found in a parse worker, and
    the file's outline made from the same parse when it is not cached and the language has no line shapes
    that tell definitions (then the outline always does: _uses); None when not made or no use was found."""
    check_parsable(source)
    outlined = defining_lines(source.language, "") is None and CACHE.get(source.key) is None
    try:
        answer = POOL.ask({"op": "positions", "text": source.text, "language": source.language, "name": name,
                           "outline": outlined}, check)
    except Failed as err:
        raise parse_failed(source, err) from None
    symbols = symbols_from(answer["outline"]) if answer["outline"] is not None else None
    if symbols is not None:
        CACHE.put(source.key, symbols)
    return [(line, column) for line, column in answer["positions"]], symbols


def _scanned_positions(text: str, offsets: list[int]) -> list[tuple[int, int]]:
    """(line, column), 0-based, of offsets in `text` (in order)."""
    out = []
    line = 0
    line_start = 0
    last = 0
    for offset in offsets:
        newlines = text.count("\n", last, offset)
        if newlines:
            line += newlines
            line_start = text.rfind("\n", last, offset) + 1
        last = offset
        out.append((line, offset - line_start))
    return out


def _uses(source: Source, name: str, positions: list[tuple[int, int]], symbols: list[Symbol] | None,
          check: Callable[[], None] | None) -> tuple[Reference, ...]:
    """The uses at `positions`, in source order, each marked when it is a definition: from the line
    where that is certain (prefilter.defining_lines), else from the outline (`symbols` when the worker
    made it with the positions), and only where a use is on a line that may define the name. Each line is looked at once,
    however many uses it holds (a long line must not cost its length once a use)."""
    if not positions:
        return ()
    lines = source.text.split("\n")
    numbers = dict.fromkeys(line for line, _ in positions)
    shapes = defining_lines(source.language, rf"\b{re.escape(name)}\b")
    definitions: set[int] = set()
    if shapes is None:
        outlined = True
    else:
        defines, may_define = shapes
        definitions = {line + 1 for line in numbers if defines.search(lines[line])}
        outlined = any(may_define.search(lines[line]) for line in numbers)
    if outlined:
        outline = symbols if symbols is not None else outline_of(source, check)
        definitions |= {symbol.def_line for top in outline for symbol in top.walk() if symbol.name == name}
    marked: set[int] = set()
    decided: list[tuple[int, int, bool, str]] = []
    for line, column in positions:
        definition = line + 1 in definitions and line + 1 not in marked
        if definition:
            marked.add(line + 1)
        decided.append((line, column, definition, NAME_LABEL))
    return _shown(lines, decided)


def _shown(lines: list[str], uses: list[tuple[int, int, bool, str]]) -> tuple[Reference, ...]:
    """The uses (0-based line and column, definition, label) with their lines' text, each line made once."""
    out: list[Reference] = []
    shown: dict[int, tuple[str, int]] = {}
    for line, column, definition, label in uses:
        held = shown.get(line)
        if held is None:
            text = lines[line].rstrip("\r") if line < len(lines) else ""
            stripped = text.lstrip()
            held = shown[line] = (stripped.rstrip(), len(text) - len(stripped))
        text, indent = held
        out.append((line + 1, column + 1, cut_line(text, MAX_LINE_CHARS, max(0, column - indent)), definition, label))
    return tuple(out)


def _scoped(source: Source, name: str, chosen: list[Reading], check: Callable[[], None] | None,
            ) -> tuple[tuple[Reference, ...], int] | None:
    """The uses of `name` that may reach one of `chosen`, labelled, and how many were ruled out; None when
    the file does not parse as Python, or its parse failed (then its uses are found by name). CPython's own
    parser reads it, in the parse worker: lines longer than tree-sitter is given are no trouble to it."""
    try:
        answer = POOL.ask({"op": "scopes", "text": source.text, "name": name, "shown": source.shown,
                           "readings": sent(tuple(chosen))[0]}, check)
    except Starved:
        raise  # the machine was too busy to answer in time: a skipped file, not an answer to keep
    except Failed:
        return None  # the worker failed on this text (and will again): by name, as for text that does not parse
    if answer is None:
        return None
    lines = source.text.split("\n")
    return _shown(lines, [(line, column, definition, label) for line, column, label, definition in answer["uses"]]), \
        answer["excluded"]


def _js_scoped(source: Source, name: str, targets: Targets, check: Callable[[], None] | None,
               ) -> tuple[tuple[Reference, ...], int] | None:
    """The uses of `name` in a JavaScript or TypeScript file that may reach one of `targets`, labelled, and how many
    were ruled out (jsscopes.py, in the parse worker); None when the worker failed on the text (then by name)."""
    check_parsable(source)
    try:
        answer = POOL.ask({"op": "js_scopes", "text": source.text, "language": source.language, "name": name,
                           "shown": source.shown, "targets": [list(target) for target in targets]}, check)
    except Starved:
        raise  # the machine was too busy to answer in time: a skipped file, not an answer to keep
    except Failed:
        return None
    lines = source.text.split("\n")
    return _shown(lines, [(line, column, definition, label) for line, column, label, definition in answer["uses"]]), \
        answer["excluded"]


def file_references(roots: Roots, real: str, shown: str, name: str, scan: bool = True, bound: int | None = None,
                    check: Callable[[], None] | None = None, chosen: list[Reading] | None = None,
                    targets: Targets | None = None) -> tuple[tuple[Reference, ...], bool, int]:
    """The uses of `name` in one file, at most `bound` of them, whether that is all of them, and how many
    uses the scopes ruled out: from the cache when the file has not changed since they were all found
    (the file is still opened through safe_open, so confinement is checked every time); else, in Python
    with `chosen` readings, from its scopes; in JavaScript and TypeScript with `targets` (js_targets), from
    theirs; else, in Python, from pyscan's scan when it can tell (`scan`), or from the tree. Only a complete
    list is cached; `check` is called now and then."""
    language = known_language(real, shown)
    scoped = chosen is not None and language == "python"
    js = bool(targets) and language in JS_LANGUAGES
    key = f"{name}\0{sent(tuple(chosen))[1]}" if scoped and chosen is not None else \
        f"{name}\0js\0{_targets_key(targets)}" if js and targets else name
    fd, info = safe_open.open_file(roots, real, shown)
    try:
        version = file_key(real, info)
        found = CACHE.references(version, key) if scan else None
        if found is not None:
            complete = bound is None or len(found) <= bound
            return (found if bound is None else found[:bound]), complete, CACHE.left_out(version, key)
        source = source_from(fd, info, real, shown, language)
    finally:
        os.close(fd)
    if scoped and chosen is not None and name not in CONSTRUCTORS and "__all__" not in source.text \
            and python_uses(source.text, name, 1, check) == []:
        if scan:  # the name is in comments and strings only (pyscan's one regex pass): nothing to parse
            CACHE.put_references(source.key, key, ())
        return (), True, 0
    decided = _scoped(source, name, chosen, check) if scoped and chosen is not None else \
        _js_scoped(source, name, targets, check) if js and targets else None
    if decided is not None:
        found, excluded = decided
        if scan:
            CACHE.put_references(source.key, key, found, excluded)
        return (found if bound is None else found[:bound]), bound is None or len(found) <= bound, excluded
    offsets = python_uses(source.text, name, None if bound is None else bound + 1, check) \
        if scan and source.language == "python" else None
    if offsets is not None:
        complete = bound is None or len(offsets) <= bound
        found = _uses(source, name, _scanned_positions(source.text, offsets[:bound]), None, check)
    else:
        positions, symbols = _parsed_positions(source, name, check)
        complete = bound is None or len(positions) <= bound
        found = _uses(source, name, positions[:bound], symbols, check)
    if scan and complete:
        CACHE.put_references(source.key, key, found)
    return found, complete, 0


def with_parents(symbols: list[Symbol]) -> list[tuple[Symbol, tuple[Symbol, ...]]]:
    """Every symbol of an outline with the symbols it is nested in, outermost first (without recursion)."""
    out: list[tuple[Symbol, tuple[Symbol, ...]]] = []
    stack: list[tuple[Symbol, tuple[Symbol, ...]]] = [(symbol, ()) for symbol in reversed(symbols)]
    while stack:
        symbol, outer = stack.pop()
        out.append((symbol, outer))
        stack.extend((child, (*outer, symbol)) for child in reversed(symbol.children))
    return out


def python_definitions(ctx: Context, roots: Roots, folder: Folder, parts: tuple[str, ...],
                       ) -> Iterator[tuple[str, Symbol, tuple[Symbol, ...]]]:
    """The Python definitions under `folder` whose module path, enclosing symbols and name end with `parts`
    (`Session.get`, `api.get`), read from the outline of the files that may define the name: each with its
    file and the symbols it is nested in, outermost first."""
    for shown, symbol, outer, _ in code_definitions(ctx, roots, folder, parts, frozenset({"python"})):
        yield shown, symbol, outer


def code_definitions(ctx: Context, roots: Roots, folder: Folder, parts: tuple[str, ...], languages: frozenset[str],
                     ) -> Iterator[tuple[str, Symbol, tuple[Symbol, ...], str]]:
    """The definitions in files of `languages` under `folder` whose module path (`_module_of`), enclosing
    symbols and name end with `parts`, as python_definitions finds them, each with its file's language."""
    word = parts[-1]
    names = folder.definition_candidates(ctx, word_regex(word), word)
    outlined = partial(cached_outline, roots, check=ctx.check_cancelled)
    for shown, symbols in folder.parsed(ctx, names, "candidate file", outlined, code_only=True,
                                        doing="finding the definitions among"):
        language = language_for(shown)
        if language not in languages:
            continue
        module = _module_of(shown, language)
        for symbol, outer in with_parents(symbols):
            # (C++ names a method defined outside its class by the class: `void Bignum::Square()` is Bignum.Square)
            written = tuple(symbol.qualified_name.split(".")) if language in C_LANGUAGES \
                else (*(item.name for item in outer), word)
            if symbol.name == word and path_ends((*module, *written), parts):
                yield shown, symbol, outer, language


C_LANGUAGES = frozenset({"c", "cpp"})
"""C and C++: a definition's qualified name holds what its name is written with (`void Bignum::Square()` is
Bignum.Square), and a macro's use may be a use of what its expansion names."""


def _module_of(shown: str, language: str) -> tuple[str, ...]:
    """A file's module path as a qualified query names it: Python's dotted module (pyscopes.module_path); in
    another language the file's path without its extension, a folder's `index` file named by the folder."""
    if language == "python":
        return module_path(shown)
    parts = [part for part in shown.replace("\\", "/").split("/") if part not in ("", ".")]
    if parts:
        parts[-1] = parts[-1].split(".", 1)[0]
        if parts[-1] == "index" and len(parts) > 1:
            parts.pop()
    return tuple(parts)


def resolve(ctx: Context, roots: Roots, path: str, query: str) -> tuple[list[Reading], list[dict[str, Any]]]:
    """What a query means: for a qualified one (`Session.get`, `api.get`), its Python definitions under
    `path` whose module path, outer classes and name end with the query's words (read from the outline of
    the files that may define the name), and the readings made of them; when none is found, or for a name
    alone, the readings of the query's words (pyscopes.readings)."""
    parts = tuple(query.split("."))
    if len(parts) == 1:
        return readings(query), []
    folder = Folder(roots, path)
    exact: list[Reading] = []
    definitions: list[dict[str, Any]] = []
    for shown, symbol, outer in python_definitions(ctx, roots, folder, parts):
        if any(item.kind != "class" for item in outer):
            continue  # a function's own definition: not reached from outside it
        reading = Reading(module_path(shown), outer[-1].name if outer else None, tuple(item.name for item in outer[:-1]),
                          True)
        if reading not in exact:
            exact.append(reading)
        definitions.append({"path": shown, "line": symbol.def_line, "qualified_name": symbol.qualified_name,
                            "kind": symbol.kind})
    classes = {reading.cls for reading in exact if reading.cls}
    if classes:
        derived = _derived(ctx, roots, folder, classes)
        exact = [replace(reading, derived=derived) if reading.cls else reading for reading in exact]
    return (exact or readings(query)), definitions


_CLASS_HEADER = re.compile(r"class\s+([A-Za-z_]\w*)\s*\((.*)\)\s*:", re.DOTALL)
_BASE_WORD = re.compile(r"[A-Za-z_][\w.]*")


def _derived(ctx: Context, roots: Roots, folder: Folder, classes: set[str]) -> frozenset[str] | None:
    """The names of the classes that derive from `classes` (by name: the last word of each base, so
    `base.Session` is Session), directly or not, as the class statements of the Python files under the
    first root and `folder` say; None when they could not all be read."""
    headers: list[str] = []
    for searched in {Folder(roots, ".").real: Folder(roots, "."), folder.real: folder}.values():
        found, complete = searched.matches(ctx, r"class\s+[A-Za-z_]\w*\s*\([^:]*\)\s*:", "python")
        if not complete:
            return None
        headers += found
    derived_from: dict[str, set[str]] = {}  # a base's name -> the classes that name it
    for header in headers:
        parsed = _CLASS_HEADER.match(header)
        if parsed is None:
            return None  # a header rg printed but that does not read as one: not every class is known
        for word in _BASE_WORD.findall(parsed[2]):
            derived_from.setdefault(word.rsplit(".", 1)[-1], set()).add(parsed[1])
    derived: set[str] = set()
    todo = list(classes)
    while todo:
        for name in derived_from.get(todo.pop(), ()):
            if name not in derived:
                derived.add(name)
                todo.append(name)
    return frozenset(derived)


@lru_cache(maxsize=16)
def sent(chosen: tuple[Reading, ...]) -> tuple[list[list[Any]], str]:
    """A query's readings as the parse worker takes them, and a short key for them in the per-file cache:
    made once a query, not once a file (the derived classes can be many)."""
    form = [reading.json() for reading in chosen]
    return form, hashlib.blake2b(json.dumps(form).encode(), digest_size=16).hexdigest()


class Ahead(Generic[T]):
    """The work on the files to come (find_references' uses, diagnostics' findings), asked of the parse workers
    a few files ahead, in parallel (a parse runs in a worker process, so two run at once on two cores), and
    taken in order. `work` gets a check to call now and then, which stops it once the call no longer needs it
    (its limit was reached)."""

    def __init__(self, work: Callable[[str, str, Callable[[], None]], T], files: list[tuple[str, str]],
                 check: Callable[[], None]) -> None:
        self._work = work
        self._files = iter(files)
        self._pending: deque[tuple[str, Future[T]]] = deque()
        self._check = check
        self._stopped = False
        self._threads = ThreadPoolExecutor(max_workers=POOL.size, thread_name_prefix="references") if files else None

    def _checked(self) -> None:
        if self._stopped:
            raise _NotNeeded
        self._check()

    def take(self, real: str) -> T:
        """The uses in `real`: one of the files, in their order (files before it are not needed)."""
        assert self._threads is not None
        while True:
            while len(self._pending) < POOL.size:
                upcoming = next(self._files, None)
                if upcoming is None:
                    break
                self._pending.append((upcoming[0], self._threads.submit(self._work, *upcoming, self._checked)))
            if not self._pending:
                raise LookupError(real)
            name, future = self._pending.popleft()
            if name == real:
                return future.result()
            future.cancel()

    def __enter__(self) -> Ahead[T]:
        return self

    def __exit__(self, *exc: object) -> None:
        self._stopped = True
        if self._threads is not None:
            self._threads.shutdown(wait=True, cancel_futures=True)


class _NotNeeded(Exception):
    """Work ahead that the call stopped needing."""


_REACHED_THROUGH: dict[str, frozenset[str] | None] = {"python": frozenset({"class"}), "c": None, "cpp": None}
"""The kinds of enclosing definitions through which code outside can reach a member, by language (in Python only
a class's; in TypeScript and JavaScript an interface's, a namespace's and an enum's too: `_OUTER_KINDS`; in C and
C++ any: a namespace's, a struct's, a class's or a union's members are all reached through it by `::` or `.`,
and clangd answers for whatever is asked)."""
_OUTER_KINDS = frozenset({"class", "interface", "module", "enum"})
_DEFINING = {"python": r"\b(?:def|class)\s+({word})\b|(?<![\w.])({word})\b",
             "*": r"\b(?:function\*?|class|interface|type|enum|namespace|module|get|set|async|static)\s+({word})(?![\w$])"
                  r"|(?<![\w$])({word})(?![\w$])"}
"""Where on its definition's line a name is defined (the first match's group), by language."""


def js_targets(ctx: Context, roots: Roots, query: str) -> tuple[Targets, list[dict[str, Any]]] | None:
    """The JavaScript and TypeScript definitions of `query` in the roots that code outside them can reach (at module
    level, or a member of a class, interface or enum at module level), as jsscopes takes them ([file, owner or None,
    line, default export]) and as find_references lists them; None when one is inside a namespace, whose scoping jsscopes does not
    follow (then the uses are found by name)."""
    word = query.rsplit(".", 1)[-1]
    targets: list[tuple[str, str | None, int, bool]] = []
    definitions: list[dict[str, Any]] = []
    for root in roots.paths:
        for shown, symbol, outer, _ in code_definitions(ctx, roots, Folder(roots, root), tuple(query.split(".")),
                                                        JS_LANGUAGES):
            if any(item.kind == "module" for item in outer):
                return None
            if len(outer) > 1 or any(item.kind not in _OUTER_KINDS for item in outer) or symbol.name != word:
                continue
            owner = outer[-1].name if outer else None
            if not outer and "." in symbol.qualified_name:  # assigned: `Foo.prototype.bar = ...`, `exports.bar = ...`
                qualifier = symbol.qualified_name.rsplit(".", 1)[0]
                owner = None if qualifier in ("exports", "module.exports") else qualifier.rsplit(".", 1)[-1]
            target = (shown, owner, symbol.def_line, owner is None and _default_export(roots, shown, word))
            if target not in targets:
                targets.append(target)
                definitions.append({"path": shown, "line": symbol.def_line, "qualified_name": symbol.qualified_name,
                                    "kind": symbol.kind})
    return tuple(targets), definitions


_DEFAULT_EXPORT = r"^\s*(?:export\s+default\s+(?:async\s+)?(?:(?:abstract\s+)?class|function\*?)?\s*{word}\b|" \
                  r"export\s*=\s*{word}\s*;?\s*$|(?:export\s+default|module\.exports\s*=)\s*{word}\s*;?\s*$)"
"""A line that makes `word` its module's default export (what a default import or `require` of the module binds)."""


def _default_export(roots: Roots, shown: str, word: str) -> bool:
    """Whether the file makes the definition of `word` its default export."""
    try:
        text = read_source(roots, roots.shown_path(shown), shown).text
    except ToolError:
        return False
    return re.search(_DEFAULT_EXPORT.format(word=re.escape(word)), text, re.MULTILINE) is not None


@lru_cache(maxsize=16)
def _targets_key(targets: Targets) -> str:
    """A short key for a query's targets in the per-file cache."""
    return hashlib.blake2b(json.dumps(targets).encode(), digest_size=16).hexdigest()


def definition_places(ctx: Context, roots: Roots, query: str, backends: tuple[str, ...] = ("python",),
                      ) -> tuple[list[precise.Place], list[dict[str, Any]]]:
    """The definitions of `query` (a name, or one qualified with its module or class) in the roots, in the files
    of the languages the language server `backends` answer for, that code outside them can reach (at module
    level or in a class, not in a function), as positions for a language server, and as find_references lists
    them (with the backend of each)."""
    word = query.rsplit(".", 1)[-1]
    languages = frozenset(language for language in LANGUAGES if backend(language) in backends)
    places: list[precise.Place] = []
    definitions: list[dict[str, Any]] = []
    for root in roots.paths:
        for shown, symbol, outer, language in code_definitions(ctx, roots, Folder(roots, root), tuple(query.split(".")),
                                                               languages):
            reached = _REACHED_THROUGH.get(language, _OUTER_KINDS)
            if reached is not None and any(item.kind not in reached for item in outer):
                continue
            real = roots.shown_path(shown)
            lines = read_source(roots, real, shown, language).lines()
            line = lines[symbol.def_line - 1] if symbol.def_line <= len(lines) else ""
            found = re.search(_DEFINING.get(language, _DEFINING["*"]).format(word=re.escape(word)), line)
            if found is None:
                continue
            place = precise.Place(real, symbol.def_line - 1, precise.utf16_column(line, found.start(found.lastindex or 1)))
            if place not in places:
                places.append(place)
                definitions.append({"path": shown, "line": symbol.def_line, "qualified_name": symbol.qualified_name,
                                    "kind": symbol.kind, "backend": backend(language)})
    return places, definitions


def _exact_references(ctx: Context, roots: Roots, query: str, folder: Folder,
                      ) -> tuple[tuple[list[dict[str, Any]], list[dict[str, Any]], str] | None, str | None]:
    """The uses under `folder` of the definitions of `query`, as the language servers of their languages find
    them (each labelled `exact`), the definitions, and the servers' names (None when the roots define no such
    symbol in a language with a server, or no server could answer: the syntax tree answers); and a note for the
    servers that cannot answer now (precise.NotReady's)."""
    ready: dict[str, str] = {}
    notes: dict[str, str] = {}
    for language in precise.offered():  # each server asked first: started if need be, NotReady before any work
        try:
            ready[language] = precise.server_name(roots, language)
        except NoFiles:
            continue  # (no file of its language when it looked: none of its definitions either)
        except NotReady as err:
            notes[language] = err.note
    if not ready:  # (none can answer: no work, as before any server was asked)
        return None, "; ".join(notes.values()) or None
    places, definitions = definition_places(ctx, roots, query, tuple(ready) + tuple(notes))
    defined = {item["backend"] for item in definitions}
    found: set[precise.Place] = set()
    answered: list[dict[str, Any]] = []
    names: list[str] = []
    deadline = time.monotonic() + precise.REQUEST_TIMEOUT  # (every server's questions together)
    for language in ready:
        mine = [place for place, item in zip(places, definitions, strict=True) if item["backend"] == language]
        if not mine:
            continue
        try:
            found |= precise.references(roots, language, mine, ctx.check_cancelled, deadline)
        except NotReady as err:
            notes[language] = err.note
            continue
        names.append(ready[language])
        answered += [item for item in definitions if item["backend"] == language]
    # A server that could not answer is said where the query has definitions of its language.
    note = "; ".join(text for language, text in notes.items() if language in defined) or None
    if not names:
        return None, note
    word = query.rsplit(".", 1)[-1]
    by_file: dict[str, list[precise.Place]] = {}
    for item in found:
        if inside(item.real, folder.real):
            by_file.setdefault(item.real, []).append(item)
    uses: list[dict[str, Any]] = []
    for real in sorted(by_file):
        shown = roots.display(real)
        try:
            lines = read_source(roots, real, shown).lines()
        except ToolError:
            continue  # gone or unreadable since the server read it
        decided = []
        macros = language_for(real) in C_LANGUAGES
        for item in sorted(by_file[real], key=lambda item: (item.line, item.units)):
            line = lines[item.line] if item.line < len(lines) else ""
            column = precise.column_of(line, item.units)
            # The name, or a class's where a call of it constructs (a use of its __init__), or in C and C++ a macro's
            # whose expansion uses it (BROTLI_ALLOC(m, float, n) calls BrotliAllocate); anything else: the file
            # changed since the server read it.
            if line[column:column + len(word)] == word or ((word in CONSTRUCTORS or macros) and _NAME_START.match(line, column)):
                decided.append((item.line, column, item in places, EXACT))
        uses += [{"path": shown, "line": number, "column": column, "text": text, "definition": definition,
                  "precision": label} for number, column, text, definition, label in _shown(lines, decided)]
    shown_definitions = [{key: value for key, value in item.items() if key != "backend"} for item in answered]
    return (uses, shown_definitions, " and ".join(names)), note


def find_references(ctx: Context, roots: Roots, name: str, path: str, limit: int, *, scan: bool = True,
                    scopes: bool = True) -> ToolResult:
    """Uses of `name` (an identifier, or one qualified with dots: `Session.get`) in the files that mention it,
    the uses Python's scopes tie to its definition first; `scan` off (for the tests and the bench that compare
    the two) parses every file and leaves the cache alone, `scopes` off finds every use by name alone."""
    query = name.strip().replace("::", ".")
    if not QUERY.fullmatch(query):
        raise ToolError("name must be an identifier (such as parse_args) or one qualified with dots (such as "
                        f"Session.get, or module.function), not '{printable(name)}'")
    word = query.rsplit(".", 1)[-1]
    folder = Folder(roots, path)
    if not folder.is_dir:
        known_language(folder.real, folder.shown)  # a file of another language has no uses in code: say so
    note = None
    exact = None
    if scopes and precise.enabled():
        exact, note = _exact_references(ctx, roots, query, folder)
    chosen, definitions = resolve(ctx, roots, path, query) if scopes else (None, [])
    constructed = {reading.cls for reading in chosen or () if reading.cls} if word in CONSTRUCTORS else set()
    names = folder.candidates(ctx, "|".join(word_regex(item) for item in sorted({word, *constructed})))
    decided: dict[str, list[dict[str, Any]]] = {EXACT: [], LABELS[SCOPED]: [], NAME_LABEL: []}
    excluded = 0
    truncated = False
    places = [folder.file(item) if folder.is_dir else (folder.real, folder.shown) for item in names] if chosen is not None else []
    targets: Targets | None = None
    if any(language_for(place[0]) in JS_LANGUAGES for place in places):
        found_targets = js_targets(ctx, roots, query)
        if found_targets is not None:
            # A bare name means any definition of it: one the outline does not list (a field set in a constructor, an
            # object literal's method, a package's) as well, for which only what is bound locally is ruled out.
            targets = found_targets[0] + (((folder.shown, ANYWHERE, 0, False),) if "." not in query or not found_targets[0] else ())
            definitions += found_targets[1] if "." in query else []
    python = [place for place in places if language_for(place[0]) == "python"]
    with Ahead(lambda real, shown, check: file_references(roots, real, shown, word, scan, None, check, chosen),
                python, ctx.check_cancelled) as ahead:

        def uses_in(real: str, shown: str) -> tuple[tuple[Reference, ...], bool, int]:
            if chosen is not None and language_for(real) == "python":
                return ahead.take(real)
            wanted = limit + 1 - sum(map(len, decided.values()))
            return file_references(roots, real, shown, word, scan, max(wanted, 0), ctx.check_cancelled, chosen, targets)

        for shown, (uses, complete, left_out) in folder.parsed(ctx, names, "candidate file", uses_in, code_only=True):
            excluded += left_out
            truncated = truncated or not complete
            for number, column, text, definition, label in uses:
                decided[label].append({"path": shown, "line": number, "column": column, "text": text,
                                       "definition": definition, "precision": label})
            if len(decided[LABELS[SCOPED]]) > limit or (chosen is None and len(decided[NAME_LABEL]) > limit):
                truncated = True
                break
    server = None
    if exact is not None:
        # The server's uses first. In a file it found uses in, what only the syntax tree found is by name only; a
        # file it found none in may be one it leaves out (a hidden folder, the project's `exclude`): the scopes'
        # uses there stay scoped.
        decided[EXACT], definitions, server = exact
        known = {(item["path"], item["line"], item["column"]) for item in decided[EXACT]}
        answered = {item["path"] for item in decided[EXACT]}
        rest = [item for item in decided[LABELS[SCOPED]] + decided[NAME_LABEL]
                if (item["path"], item["line"], item["column"]) not in known]
        decided[LABELS[SCOPED]] = [item for item in rest if item["precision"] == LABELS[SCOPED]
                                   and item["path"] not in answered]
        decided[NAME_LABEL] = [{**item, "precision": NAME_LABEL} for item in rest
                               if item["precision"] == NAME_LABEL or item["path"] in answered]
    every = decided[EXACT] + decided[LABELS[SCOPED]] + decided[NAME_LABEL]
    truncated = truncated or len(every) > limit
    found = every[:limit]
    files = {item["path"] for item in found}
    ctx.report_progress(len(names), len(names), f"done: {plural(len(found), 'reference')}")
    out: list[str] = []
    by_name = 0
    tied = decided[EXACT] or decided[LABELS[SCOPED]]
    for item in found:
        if item["precision"] == NAME_LABEL and chosen is not None and not by_name:
            out.append(f"[Where only the name matches: {server} does not tie these to {printable(query)} (what they "
                       "are reached through has no type it knows, or the file is not in the project it read); look at "
                       "each:]" if server else
                       f"[Where only the name matches: these may be uses of {printable(query)}, or of another "
                       f"{printable(word)} (types would tell):]" if tied else
                       f"[Where only the name matches (types would tell which {printable(word)} each one is):]")
        by_name += item["precision"] == NAME_LABEL
        out.append(f"{printable(item['path'])}:{item['line']}:{item['column']}:{' [definition]' if item['definition'] else ''} "
                   f"{printable(item['text'])}")
    if not found:
        out.append(f"No uses of '{printable(query)}' in code under {place(folder.shown)} "
                   f"({plural(len(names), 'file')} {'mentions' if len(names) == 1 else 'mention'} the word in text, "
                   f"comments or strings only{', or in uses bound to something else' if excluded else ''}).")
    elif truncated:
        out.append(f"[Showing the first {plural(len(found), 'reference')}; there are more. Narrow with path, or raise limit.]")
    else:
        scoped = sum(item["precision"] == LABELS[SCOPED] for item in found)
        how = (f" ({len(found) - by_name - scoped} exact{f', {scoped} scoped' if scoped else ''}, {by_name} by name only)"
               if server else f" ({scoped} scoped, {by_name} by name only)") if chosen is not None else ""
        out.append(f"[{plural(len(found), 'reference')} in {plural(len(files), 'file')}{how}.]")
    if server is not None:
        out.append(f"[Exact: {server}'s references of " + ", ".join(
            f"{printable(item['qualified_name'])} ({printable(item['path'])}:{item['line']})" for item in definitions[:5])
            + (" …" if len(definitions) > 5 else "") + ".]")
    elif chosen is not None and "." in query and not definitions:
        out.append(f"[No definition of {printable(query)} under {place(folder.shown)}: its uses were read from "
                   "the words of the name alone.]")
    if excluded:
        out.append(f"[{'At least ' if truncated else ''}{plural(excluded, 'other use')} of the name left out: bound to "
                   "something else (a local, a parameter, "
                   "a keyword argument, another class's or module's name, a builtin).]")
    out += folder.skipped_note()
    if note is not None:
        out.append(f"[Not exact: {note}; these uses come from the syntax tree.]")
    return result("\n".join(out), {"name": query, "references": found, "file_count": len(files), "truncated": truncated,
                                    "excluded": excluded, "definitions": definitions, "skipped": folder.skipped,
                                    "skipped_files": folder.skipped_files, "language_server": server,
                                    "language_server_note": note})

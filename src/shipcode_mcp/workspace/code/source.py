"""Where the code tools get their text: files opened as read_file opens them, candidates found by
ripgrep, and outlines kept in a bounded cache keyed by each file's version (path, size, times, inode).

A file where a name does not occur as a word cannot define or use it, so every cross-file question
starts with one `rg --files-with-matches` (parallel, native, honouring the ignore rules like every
other tool) and parses only the files it names.
"""

from __future__ import annotations

import os
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Generator, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, TypeVar

from ...primitives import ToolError
from .. import process, safe_open
from ..listing import MAX_LISTING_BYTES, RG_WALK_FLAGS, GlobFilter, rg_executable, walk, walk_names, walk_readable
from ..roots import join_display
from ..text import cut_line, is_binary, plural, printable, size_text
from .parsers import Failed, outline
from .prefilter import definition_test
from .symbols import _EXTENSIONS, _NAMES, Symbol, language_for

if TYPE_CHECKING:
    from ...context import Context
    from ..roots import Roots

MAX_SOURCE_BYTES = 512 * 1024
"""A larger file is not read nor parsed (generated code, data): the tools say it was skipped. It bounds
what one request sends a parse worker (parsers.py); how long the parse may run is that worker's deadline
(512 KiB of real code parse in some 0.05 s, but error recovery at its worst runs for minutes: 80 KB of
`(\\` as Lua took 30 s)."""
MAX_PARSE_LINE = 32 * 1024
"""A file with a longer line (minified or generated code) is not parsed: the tools say it was skipped."""
MAX_SKIPPED_NAMED = 20
"""A search names at most this many of the files it skipped (and counts the others)."""
MAX_REASON_CHARS = 200
CACHE_SYMBOLS = 500_000
"""The cache holds at most about this many symbols and references (some 150 MB at worst)."""
RG_TIMEOUT = 120.0
AMONG_CHUNK = 1000
"""Files named on one rg command line (Folder.candidates and definition_candidates `among` them)."""
LINE_COLUMNS = 400
"""rg shows a longer matching line as `[Omitted long line...]` (kept: it might hold a definition)."""
MATCHES_LIMIT = 16 * 1024 * 1024
"""Folder.matches reads at most this much of rg's output."""
LINES_LIMIT = 64 * 1024 * 1024
"""Past this much output of matching lines, every file that mentions the name is a candidate."""


FileKey = tuple[str, int, int, int, int]
"""A version of a file: its real path, size, mtime and ctime (ns) and inode. The ctime moves on every write, even
one that puts the old mtime back (a restore, `touch -r`), and cannot be set."""


def file_key(real: str, info: os.stat_result) -> FileKey:
    return (real, info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino)


class Source:
    """One file's text, its language and how the tools show its path."""

    __slots__ = ("_lines", "key", "language", "real", "shown", "text")

    def __init__(self, real: str, shown: str, language: str, text: str, key: FileKey) -> None:
        self.real, self.shown, self.language, self.text, self.key = real, shown, language, text, key
        self._lines: list[str] | None = None

    def lines(self) -> list[str]:
        """The text split at each line feed, once (a caller that looks at many lines must not split it each time)."""
        if self._lines is None:
            self._lines = self.text.split("\n")
        return self._lines


class Skipped(ToolError):
    """A file the code tools do not parse (binary, too large, a language without rules); `reason` says why
    without naming the file, for the list of a search's skipped files."""

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


FILE_FAILURES = (ToolError, RecursionError, RuntimeError, ValueError)
"""What one file's read, parse or outline may raise: a search over many counts the file as skipped
(Cancelled is none of these)."""


def known_language(real: str, shown: str) -> str:
    """The language of a file by its name; Skipped if the code tools do not know it."""
    language = language_for(real)
    if language is None:
        raise Skipped(f"{printable(shown)} is not in a language the code tools know (by its name); "
                      f"they know {', '.join(sorted(set(_EXTENSIONS.values())))}", "not a language the code tools know")
    return language


def read_source(roots: Roots, real: str, shown: str, language: str | None = None) -> Source:
    """The text of a workspace file, opened through safe_open like read_file's (confined, no links)."""
    language = language or known_language(real, shown)
    fd, info = safe_open.open_file(roots, real, shown)
    try:
        return source_from(fd, info, real, shown, language)
    finally:
        os.close(fd)


def check_parsable(source: Source) -> None:
    """Skipped if a line of a file read with read_source is over MAX_PARSE_LINE."""
    longest = max(map(len, source.text.split("\n")))
    if longest > MAX_PARSE_LINE:
        raise Skipped(f"{printable(source.shown)} has a line of {longest} characters (minified or generated code?); "
                      f"the code tools do not parse a file with a line over {MAX_PARSE_LINE}",
                      f"a line of {longest} characters, over {MAX_PARSE_LINE}")


def parse_failed(source: Source, err: ToolError) -> Skipped:
    """A worker's failure on this file (parsers.Failed), said with its name (and without, as the reason)."""
    return Skipped(f"{printable(source.shown)} {err}", str(err))


CPP_HEADER = re.compile(r"^[ \t]*(?:namespace(?:[ \t]+[\w:]+)?[ \t]*(?:\{|$)|template[ \t]*<"
                        r"|(?:public|private|protected)[ \t]*:|class(?:[ \t]+\w+)+[ \t]*(?:[:{]|$)|using[ \t]+namespace\b)",
                        re.MULTILINE)
"""What only C++ writes at the start of a line (a namespace, a template, a class, access specifiers): a `.h` file
holding it is read as C++ (a C++ project's headers are `.h` as often as not; C's grammar reads their classes and
namespaces as functions)."""


def source_from(fd: int, info: os.stat_result, real: str, shown: str, language: str) -> Source:
    """The Source of a file opened already (through safe_open), read from `fd`."""
    if info.st_size > MAX_SOURCE_BYTES:
        raise Skipped(f"{printable(shown)} is too large to parse ({size_text(info.st_size)}; "
                      f"the limit is {size_text(MAX_SOURCE_BYTES)})",
                      f"too large, {size_text(info.st_size)}, over {size_text(MAX_SOURCE_BYTES)}")
    data = _read_all(fd, info.st_size)
    if is_binary(data):
        raise Skipped(f"{printable(shown)} is a binary file", "binary")
    text = data.decode("utf-8", "replace")
    return Source(real, shown, text_language(real, language, text), text, file_key(real, info))


def text_language(real: str, language: str, text: str) -> str:
    """The language of the file `real` as its name says (`language`) and its `text` tells: a C header holding C++
    is C++."""
    return "cpp" if language == "c" and real.endswith(".h") and CPP_HEADER.search(text) else language


def _read_all(fd: int, size: int) -> bytes:
    parts = []
    left = MAX_SOURCE_BYTES + 1
    while left > 0:
        chunk = os.read(fd, min(left, max(size, 1 << 16)))
        if not chunk:
            break
        parts.append(chunk)
        left -= len(chunk)
    data = b"".join(parts)
    if len(data) > MAX_SOURCE_BYTES:
        message = f"grew past {size_text(MAX_SOURCE_BYTES)} while it was read"
        raise Skipped(f"file {message}", message)
    return data


Reference = tuple[int, int, str, bool, str]
"""One use of a name in a file: line, column (1-based), the line's text, whether it is a definition, and
how it was decided (pyscopes.LABELS: "scoped" from the scopes, "name" from the name alone)."""


class _Entry:
    """What is known of one version of a file: its outline, and the uses of the names looked up in it."""

    __slots__ = ("key", "left_out", "references", "size", "symbols")

    def __init__(self, key: FileKey) -> None:
        self.key = key
        self.symbols: list[Symbol] | None = None
        self.references: dict[str, tuple[Reference, ...]] = {}
        self.left_out: dict[str, int] = {}  # uses of the name a query's scopes ruled out
        self.size = 1


class OutlineCache:
    """Outlines, and the references of each name looked up, by FileKey (path, size, times, inode): least
    recently used first out, bounded in units (a symbol or a reference is one unit, a name looked up one
    more). A file that changed has a new key: everything known of its old version goes at once."""

    def __init__(self, limit: int = CACHE_SYMBOLS) -> None:
        self.limit = limit
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        self._size = 0
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, key: FileKey) -> list[Symbol] | None:
        with self._lock:
            entry = self._entries.get(key[0])
            if entry is None or entry.key != key or entry.symbols is None:
                self.misses += 1
                return None
            self._entries.move_to_end(key[0])
            self.hits += 1
            return entry.symbols

    def put(self, key: FileKey, symbols: list[Symbol]) -> None:
        size = sum(1 for top in symbols for _ in top.walk())
        with self._lock:
            if size + 1 > self.limit:  # never an entry bigger than the whole bound
                return
            entry = self._entry(key)
            if entry.symbols is None and entry.size + size <= self.limit:
                entry.symbols = symbols
                self._grow(entry, size)

    def references(self, key: FileKey, name: str) -> tuple[Reference, ...] | None:
        """The uses of `name` found in this version of the file before, None if it was not looked up."""
        with self._lock:
            entry = self._entries.get(key[0])
            found = entry.references.get(name) if entry is not None and entry.key == key else None
            if found is None:
                self.misses += 1
                return None
            self._entries.move_to_end(key[0])
            self.hits += 1
            return found

    def left_out(self, key: FileKey, name: str) -> int:
        """How many uses the query `name` (as put_references was given it) ruled out in this version of the file."""
        with self._lock:
            entry = self._entries.get(key[0])
            return entry.left_out.get(name, 0) if entry is not None and entry.key == key else 0

    def put_references(self, key: FileKey, name: str, found: tuple[Reference, ...], left_out: int = 0) -> None:
        with self._lock:
            if 2 + len(found) > self.limit:  # never an entry bigger than the whole bound
                return
            entry = self._entry(key)
            if name not in entry.references and entry.size + 1 + len(found) <= self.limit:
                entry.references[name] = found
                if left_out:
                    entry.left_out[name] = left_out
                self._grow(entry, 1 + len(found))

    def _entry(self, key: FileKey) -> _Entry:
        """The entry of this version of the file, made (and an older version's dropped) if need be."""
        entry = self._entries.get(key[0])
        if entry is None or entry.key != key:
            if entry is not None:
                self._size -= entry.size
            entry = self._entries[key[0]] = _Entry(key)
            self._size += entry.size
        self._entries.move_to_end(key[0])
        return entry

    def _grow(self, entry: _Entry, size: int) -> None:
        """Count `size` more units for `entry` (at most the bound, the callers check), and drop the least
        recently used other entries until the whole fits."""
        entry.size += size
        self._size += size
        while self._size > self.limit and len(self._entries) > 1:
            _, dropped = self._entries.popitem(last=False)
            self._size -= dropped.size

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._size = 0


CACHE = OutlineCache()


def outline_of(source: Source, check: Callable[[], None] | None = None) -> list[Symbol]:
    """The outline of a file read with read_source, from the cache when the file has not changed
    (`check`: the request's cancellation, while a worker parses)."""
    symbols = CACHE.get(source.key)
    if symbols is None:
        symbols = _outlined(source, check)
        CACHE.put(source.key, symbols)
    return symbols


def fresh_outline(source: Source, check: Callable[[], None] | None) -> list[Symbol]:
    """The outline of a text not (or not yet) in a file: made, not cached."""
    return _outlined(source, check)


def _outlined(source: Source, check: Callable[[], None] | None) -> list[Symbol]:
    """The outline of a file, made in a parse worker (parsers.py); Skipped when the parse or the outline
    fails there (the worker crashed or ran out of time, ast-grep's errors, code nested too deep)."""
    check_parsable(source)
    try:
        return outline(source.text, source.language, check)
    except Failed as err:
        raise parse_failed(source, err) from None


def cached_outline(roots: Roots, real: str, shown: str, check: Callable[[], None] | None = None) -> list[Symbol]:
    """A file's outline; a cached one is used without reading the file when its size and mtime match
    (the file is still opened through safe_open, so confinement is checked every time; it is opened
    once, and read from that descriptor on a miss)."""
    language = known_language(real, shown)
    fd, info = safe_open.open_file(roots, real, shown)
    try:
        symbols = CACHE.get(file_key(real, info))
        if symbols is not None:
            return symbols
        source = source_from(fd, info, real, shown, language)  # counted as one miss, not looked up again
    finally:
        os.close(fd)

    symbols = _outlined(source, check)
    CACHE.put(source.key, symbols)
    return symbols


# -- the files to look at -------------------------------------------------------------------------------
def code_globs(language: str | None = None) -> list[str]:
    """rg globs for the files of `language` (of every outlined language when None)."""
    globs = [f"*{ext}" for ext, lang in _EXTENSIONS.items() if language in (None, lang)]
    globs += [name for name, lang in _NAMES.items() if language in (None, lang)]
    return globs


T = TypeVar("T")


class Folder:
    """A folder or a file to look in: resolved, opened (confined), shown as the other tools show it;
    ToolError (Not found) for a path that does not exist."""

    def __init__(self, roots: Roots, path: str) -> None:
        self.roots = roots
        self.real = roots.resolve(path)
        self.shown = roots.display(self.real)
        self.is_dir = os.path.isdir(self.real)
        self.skipped = 0  # files `parsed` could not parse
        self.skipped_files: list[dict[str, str]] = []  # the first MAX_SKIPPED_NAMED of them, and why
        if not self.is_dir:  # as outline and read_file say it (safe_open would, on opening it)
            if not os.path.lexists(self.real):
                raise ToolError(f"Not found: {printable(self.shown)}")
            if not os.path.isfile(self.real):
                raise ToolError(f"{printable(self.shown)} is neither a folder nor a regular file")

    def file(self, name: str) -> tuple[str, str]:
        """(real, shown) of a file named relative to this folder."""
        return os.path.join(self.real, name), join_display(self.shown, name)

    def each(self, ctx: Context, names: list[str] | OrderedNames, noun: str,
             doing: str = "parsing") -> Iterator[tuple[str, str]]:
        """(real, shown) of each of `names` (from files or candidates) in turn, as its file is parsed:
        progress says "`doing` N `noun`s" (N once known), and a cancelled call stops before the next file."""
        for index, relative in enumerate(names):
            total = len(names) if isinstance(names, list) else names.total
            ctx.report_progress(index, total, f"{doing} {plural(total, noun)}" if total is not None else f"{doing} {noun}s")
            ctx.check_cancelled()  # after the progress: a client may cancel on seeing it
            yield self.file(relative) if self.is_dir else (self.real, self.shown)

    def parsed(self, ctx: Context, names: list[str] | OrderedNames, noun: str, parse: Callable[[str, str], T], *,
               doing: str = "parsing", code_only: bool = False) -> Iterator[tuple[str, T]]:
        """(shown, parse(real, shown)) of each of `names`, as `each` gives them (`code_only`: of the files of a
        known language). A file that cannot be parsed (FILE_FAILURES: over the caps, vanished, unreadable,
        failed) is counted in `skipped`, never fatal for a search of many."""
        for real, shown in self.each(ctx, names, noun, doing):
            if code_only and language_for(real) is None:
                continue
            try:
                value = parse(real, shown)
            except FILE_FAILURES as err:
                self.skipped += 1
                if len(self.skipped_files) < MAX_SKIPPED_NAMED:
                    self.skipped_files.append({"path": shown, "reason": skip_reason(err, shown)})
                continue
            yield shown, value

    def skipped_note(self) -> list[str]:
        """The line that says how many files `parsed` skipped, which (the first MAX_SKIPPED_NAMED) and why;
        none when it skipped none."""
        if not self.skipped:
            return []
        named = "; ".join(f"{printable(item['path'])} ({printable(item['reason'])})" for item in self.skipped_files)
        more = self.skipped - len(self.skipped_files)
        return [f"[{plural(self.skipped, 'file')} skipped: {named}{f'; and {more} more' if more else ''}.]"]

    @contextmanager
    def _opened(self, language: str | None) -> Iterator[tuple[int, str, list[str], list[str]]]:
        """For a walk or an rg over the folder: its descriptor, open while in the block, the working folder
        for the child (through the descriptor), the rg flags narrowing it to the code files of `language`
        (of every outlined language when None), and the paths the child may read."""
        fd = safe_open.open_dir(self.roots, self.real, self.shown)
        try:
            narrow = GlobFilter(code_globs(language))
            with narrow as flags:
                yield fd, safe_open.proc_path(fd, self.real), flags, [*walk_readable(self.roots.paths), *narrow.files]
        finally:
            os.close(fd)

    def files(self, ctx: Context, language: str | None = None) -> list[str]:
        """The code files under the folder, relative and sorted (the walk list_files does)."""
        if not self.is_dir:
            return [""]
        with self._opened(language) as (fd, cwd, flags, readable):
            return walk(ctx, cwd, flags, readable=readable, pass_fds=(fd,))

    def candidates(self, ctx: Context, regex: str, language: str | None = None, *,
                   among: list[str] | None = None) -> list[str]:
        """The code files under the folder with a match of `regex` (rg syntax), relative and sorted; with `among`,
        only those of these files (relative to the folder)."""
        if not self.is_dir:
            return [""]
        if among is not None and len(among) > AMONG_CHUNK:
            return sorted(name for start in range(0, len(among), AMONG_CHUNK)
                          for name in self.candidates(ctx, regex, language, among=among[start:start + AMONG_CHUNK]))
        with self._opened(language) as (fd, cwd, flags, readable):
            command = [rg_executable(), "--files-with-matches", "--null", *RG_WALK_FLAGS, *flags,
                       "--case-sensitive", f"--regexp={regex}", "--", *(among if among is not None else ["./"])]
            done = process.run(ctx, command, cwd=cwd, readable=readable, pass_fds=(fd,),
                               limit=64 * 1024 * 1024, timeout=RG_TIMEOUT, what="search")
        return walk_names(done.returncode, done.stdout, done.stderr)

    def in_order(self, ctx: Context, regex: str | None, language: str | None = None) -> OrderedNames:
        """The code files under the folder with a match of `regex` (every code file for None), in rg's path
        order, each as soon as it is known: for a search that may stop long before the last (see
        OrderedNames)."""
        return OrderedNames(self, ctx, regex, language)

    def matches(self, ctx: Context, regex: str, language: str, limit: int = MATCHES_LIMIT) -> tuple[list[str], bool]:
        """The text of each match of `regex` (rg syntax, across lines) in the code files of `language` under
        the folder, and whether that is all of them (the output stops at `limit` bytes)."""
        if not self.is_dir:
            return [], True
        with self._opened(language) as (fd, cwd, flags, readable):
            command = [rg_executable(), "--only-matching", "--no-filename", "--no-line-number", "--null-data",
                       "--multiline", *RG_WALK_FLAGS, *flags, "--case-sensitive",
                       f"--regexp={regex}", "--", "./"]
            done = process.run(ctx, command, cwd=cwd, readable=readable, pass_fds=(fd,), limit=limit,
                               timeout=RG_TIMEOUT, what="search")
        if done.returncode not in (0, 1, 2) or (done.returncode == 2 and not done.stdout):
            walk_names(done.returncode, b"", done.stderr)  # raises the listing's error
        found = [item.decode("utf-8", "replace") for item in done.stdout.split(b"\0") if item]
        return (found[:-1] if done.truncated else found), not done.truncated

    def definition_candidates(self, ctx: Context, regex: str, word: str, *, among: list[str] | None = None) -> list[str]:
        """The code files under the folder that may define `word` (a name or a glob; `regex` is its
        word_regex, for rg): those with a match of `regex` on a line of the language's definition shape
        (prefilter.py), or with any match where the language has no shape. One rg prints the matching
        lines; a file is kept on its first line of that shape. Relative and sorted; with `among`, only those of
        these files (relative to the folder: the code index's, which it could not outline)."""
        if not self.is_dir:
            return [""]
        if among is not None and len(among) > AMONG_CHUNK:
            return sorted(name for start in range(0, len(among), AMONG_CHUNK)
                          for name in self.definition_candidates(ctx, regex, word, among=among[start:start + AMONG_CHUNK]))
        with self._opened(None) as (fd, cwd, flags, readable):
            command = [rg_executable(), "--with-filename", "--no-heading", "--no-line-number", "--null",
                       f"--max-columns={LINE_COLUMNS}", *RG_WALK_FLAGS, *flags, "--case-sensitive",
                       f"--regexp={regex}", "--", *(among if among is not None else ["./"])]
            done = process.run(ctx, command, cwd=cwd, readable=readable, pass_fds=(fd,),
                               limit=LINES_LIMIT, timeout=RG_TIMEOUT, what="search")
        if done.truncated:  # too many lines to look at: every file that mentions the word
            return self.candidates(ctx, regex, among=among)
        if done.returncode not in (0, 1, 2) or (done.returncode == 2 and not done.stdout):
            walk_names(done.returncode, b"", done.stderr)  # raises the listing's error
        data = done.stdout
        kept: list[str] = []
        tests: dict[str | None, Callable[[str], bool] | None] = {}
        current = last = ""
        test: Callable[[str], bool] | None = None
        position = 0
        size = len(data)
        while position < size:  # records are `name NUL line NL`, a file's lines together
            nul = data.find(b"\0", position)
            if nul < 0:
                break
            end = data.find(b"\n", nul)
            if end < 0:
                end = size
            name = data[position:nul].decode("utf-8", "surrogateescape")
            position = end + 1
            if name == last:
                continue  # kept already
            if name != current:
                current = name
                language = language_for(name)
                test = tests[language] if language in tests else tests.setdefault(language, definition_test(language, word))
            if test is None or test(data[nul + 1:end].decode("utf-8", "replace")):
                kept.append(name)
                last = name
        if kept and kept[0].startswith("./"):
            kept = [name[2:] for name in kept]
        kept.sort()
        return kept


def skip_reason(err: BaseException, shown: str) -> str:
    """Why a file was skipped, without its name: a Skipped says it; another failure's message, the name
    taken off its start or end (`Permission denied: a.py`, `a.py is a FIFO, ...`), or its kind."""
    if isinstance(err, Skipped):
        return err.reason
    if isinstance(err, RecursionError):
        return "nested too deeply to parse"
    message = str(err).splitlines()[0] if str(err) else type(err).__name__
    name = printable(shown)
    if isinstance(err, ToolError):
        message = message.removesuffix(f": {name}").removeprefix(f"{name} ")
    else:
        message = f"parse failed, {type(err).__name__}: {message}"
    return cut_line(message, MAX_REASON_CHARS)


RACE_NAMES = 64
"""OrderedNames starts its sorted rg once the unsorted one has found more names than this: fewer are as
quick to take from the whole list, which comes soon."""


def path_key(name: str) -> list[bytes]:
    """Where a relative name sorts in rg's --sort=path order: by path component, bytewise."""
    return name.encode("utf-8", "surrogateescape").split(b"/")


class OrderedNames:
    """A folder's code files (those with a match of a regex, or all of them), in rg's --sort=path order, each
    given as soon as it is known, for a search that stops at its limit.

    rg lists on every core only unsorted, and sorted only on one, where it can be stopped after the first
    names. So an unsorted rg lists them all in a thread; once it has found more than RACE_NAMES, a sorted,
    line-buffered rg starts beside it and its names are given as they come. Whichever ends first gives the
    rest: the unsorted one's whole list, sorted, from after the last name given (the sorted one is then
    stopped); or the sorted one to its end. The names are the same either way, in the same order; a search
    that stops early stops both. `total` is the number of names once the whole list is known (for
    progress), else None. The sorted rg starts only if a child slot is free at once (Child(wait=False)),
    and a sorted rg that fails leaves the rest to the unsorted one.
    """

    def __init__(self, folder: Folder, ctx: Context, regex: str | None, language: str | None) -> None:
        self._folder = folder
        self._ctx = ctx
        self._regex = regex
        self._language = language
        self.total: int | None = None
        self.given = 0  # names given so far
        self._found: list[str] = []  # the unsorted rg's names so far
        self._changed = threading.Condition()
        self._done = False  # the unsorted rg ended (its list complete, unless `_error`)
        self._error: BaseException | None = None
        self._unsorted: process.Child | None = None
        self._sorted: process.Child | None = None
        self._stopped = False  # the iteration ended: no child is to start or go on

    def _command(self, flags: list[str]) -> list[str]:
        what = (["--files"] if self._regex is None
                else ["--files-with-matches", "--case-sensitive", f"--regexp={self._regex}"])
        return [rg_executable(), "--null", *RG_WALK_FLAGS, *flags, *what]

    def _list(self, command: list[str], cwd: str, fd: int, readable: list[str]) -> None:
        """The unsorted rg, in a thread: its names into `_found` as they come; at its end, the sorted rg is
        stopped (the rest of the names is known)."""
        out = bytearray()
        try:
            with process.Child(self._ctx, [*command, "--", "./"], cwd=cwd, readable=readable, pass_fds=(fd,),
                               timeout=RG_TIMEOUT, what="search") as child:
                with self._changed:
                    if self._stopped:
                        return
                    self._unsorted = child
                listed = 0
                for chunk in child.chunks():
                    out += chunk
                    listed += len(chunk)
                    if listed > MAX_LISTING_BYTES:  # as the listing of the other tools is bounded
                        raise ToolError("There are too many files to list here; pass a narrower path or a pattern")
                    end = out.rfind(b"\0")
                    if end >= 0:
                        names = walk_names(0, bytes(out[:end + 1]), "")
                        del out[:end + 1]
                        with self._changed:
                            self._found.extend(names)
                            self._changed.notify_all()
                code = child.finish(False)
                stderr = child.stderr
            # rg exits 2 on a partial error (an unreadable folder): what it listed stands, as in walk_names
            if code not in (0, 1, 2) or (code == 2 and not self._found):
                walk_names(code, bytes(out), stderr)  # raises where the listing failed
        except BaseException as err:  # given to the iteration, which raises it where it needs the list
            self._error = err
        finally:
            with self._changed:
                self._done = True
                racing = self._sorted if self._error is None else None
                self._changed.notify_all()
            if racing is not None:
                racing.kill()

    def __iter__(self) -> Iterator[str]:
        for name in self._names():
            self.given += 1
            yield name

    def _names(self) -> Iterator[str]:
        if not self._folder.is_dir:
            self.total = 1
            yield ""
            return
        with self._folder._opened(self._language) as (fd, cwd, flags, readable):
            command = self._command(flags)
            lister = threading.Thread(target=self._list, args=(command, cwd, fd, readable),
                                      name="shipcode-mcp-names", daemon=True)
            lister.start()
            try:
                given = yield from self._race(command, cwd, fd, readable)
                if given is None:
                    return  # the sorted rg gave every name
                with self._changed:
                    while not self._done:
                        self._changed.wait(0.05)
                        self._ctx.check_cancelled()
                if self._error is not None:
                    error, self._error = self._error, None  # (held, it would hold this frame, and the list, in a cycle)
                    raise error
                names = sorted(self._found, key=path_key)
                self.total = len(names)
                yield from names[_after(names, given) if given else 0:]
            finally:
                with self._changed:
                    self._stopped = True
                    children = [child for child in (self._unsorted, self._sorted) if child is not None]
                for child in children:
                    child.kill()
                lister.join()

    def _race(self, command: list[str], cwd: str, fd: int, readable: list[str]) -> Generator[str, None, str | None]:
        """The sorted rg's names as they come, once the unsorted rg has found more than RACE_NAMES (none if the
        unsorted one ends first). Returns None when it gave every name, else the last name it gave ("" for
        none): the rest is the unsorted rg's to give."""
        with self._changed:
            while not self._done and len(self._found) <= RACE_NAMES:
                self._changed.wait(0.05)
                self._ctx.check_cancelled()
            if self._done:
                return ""
        last = ""
        try:
            with process.Child(self._ctx, [*command, "--sort=path", "--line-buffered", "--", "./"], cwd=cwd,
                               readable=readable, pass_fds=(fd,), timeout=RG_TIMEOUT, what="search", wait=False) as child:
                with self._changed:
                    if self._done:
                        return last  # the unsorted rg ended meanwhile: it could not stop this one
                    self._sorted = child
                out = bytearray()
                for chunk in child.chunks():
                    out += chunk
                    end = out.rfind(b"\0")
                    if end >= 0:
                        names = out[:end].decode("utf-8", "surrogateescape").split("\0")
                        del out[:end + 1]
                        for name in names:
                            last = name.removeprefix("./")
                            yield last
                code = child.wait()
        except ToolError:  # busy, or it could not run: the unsorted rg gives the rest
            return last
        return None if code >= 0 else last  # (stopped by a signal: by the unsorted rg's end, or a limit)


def _after(names: list[str], given: str) -> int:
    """Where in `names` (sorted by path_key) the names after `given` start."""
    import bisect  # (only a race that the unsorted listing finished needs it)

    return bisect.bisect_right(names, path_key(given), key=path_key)

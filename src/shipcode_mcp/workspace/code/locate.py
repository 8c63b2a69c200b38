"""locate: from a task as a person writes it (an issue, a stack trace, an error message, a question) to the regions
of code that matter, ranked, with their code within a token budget. Entirely local: the code index, the files, rg.

How a region is ranked (each step's part is in its `reasons`):
1. Evidence, exact and first. A stack trace's frames (Python's `File "x.py", line 3, in f`, JavaScript's
   `at f (x.js:3:7)`, any `path.ext:line`) and the paths the query names are matched to the workspace's files by
   their last path parts; the region holding a frame's line ranks first, the rest of a named file after it. A name
   written as code (in backticks, `snake_case`, `camelCase`, `Dotted.name`, `call()`) that a file defines puts
   that definition next. A quoted string or an exception's message that a file holds puts the file forward.
2. Words. The query's words and the identifiers' parts (`progressBar`, `progress_bar`: progress, bar) are matched,
   lightly stemmed, by BM25: first to each file (its path, the names it defines, the identifiers it uses, from the
   index or the same reading of the files), then, in the best files, to each region (a function or method, a
   class's own lines, the module's lines outside any definition) by its whole text, comments and strings included.
   A word many files hold weighs little; a region's own name matching weighs double.
3. Structure. The definitions the best regions use, in files of the workspace, come after them (what a fix
   often touches next).
A region's score is its words' score plus half its file's, each scaled to the best, plus its evidence.
"""

from __future__ import annotations

import bisect
import copy
import json
import math
import os
import re
import threading
from collections import Counter, OrderedDict
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from ...primitives import ToolError
from .. import budget as budgets
from ..text import place, plural, printable, result
from ..tools import MAX_MAP_SCANNED
from .index import Changes, Derived, FileFacts, IndexedFolder, Print, Unavailable, indexed_folder, scanned_facts
from .source import FILE_FAILURES, Folder, Skipped, read_source

if TYPE_CHECKING:
    from ...context import Context
    from ...primitives import ToolResult
    from ..roots import Roots

MAX_QUERY = 20_000
"""Characters of a query read (a long issue with its trace); more is refused."""
CANDIDATE_FILES = 40
"""The best files by words and evidence whose regions are ranked."""
MAX_REGIONS = 50
"""Regions listed in structuredContent (the text shows what the budget holds)."""
MAX_EVIDENCE = 20
"""Frames and paths of a query looked for at most: of a longer trace, its first and last ten frames (Python's
deepest frames come last, JavaScript's first)."""
MAX_FRAMES_READ = 200
"""Frames a query is read for at most (a 20 000-character trace holds fewer)."""
MAX_SHOWN = 120
"""Characters of a path, name or string of the query that a reason or the evidence repeats at most."""
MAX_REASONS = 4
"""Reasons a region lists at most (the strongest first)."""
MAX_SHOWN_LINES = 60
"""Lines of one region shown at most (the rest is said, its range given)."""
MODULE_CHUNK = 40
"""The module's lines outside any definition are regions of at most this many lines."""
MIN_RECOUNT = 200
"""Files read again since a corpus was counted past which it is counted anew (else file by file), or a quarter of
the folder's files if more."""
_SLACK = 160
"""Bytes kept for the note that comes after the regions (how many more were ranked)."""
STOP = frozenset(
    "a about above after again against all also am an and any are as at be because been before being below between "
    "both but by can cannot could did do does doing done down during each either else even ever every few for from "
    "further had has have having he her here hers him his how however i if in into is it its itself just let like "
    "may me might more most much must my no nor not now of off on once only or other our out over own please same "
    "seems she should since so some still such than that the their them then there these they this those though "
    "through thus to too under until up upon us use used using very via was way we well were what when where which "
    "while who whom why will with within without would yet you your issue bug fix fixed error errors problem "
    "expected actual instead wrong work works working happen happens example case get got make makes new want "
    "see seem seen time doesn isn wasn don didn won can't cant ll ve re".split())
"""English words that say nothing of where code is (and the words every bug report has)."""
MAX_IDENTIFIER = 64
"""An identifier's first characters that its terms are made of (a longer one is generated, or an attack on memory)."""
_IDENTIFIER = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")
_PARTS = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
_FRAMES = (
    re.compile(r'File "(?P<path>[^"\n]{1,1000})", line (?P<line>\d{1,9})(?:, in (?P<name>[\w<>.]{1,200}))?'),
    re.compile(r"\bat (?:(?P<name>[\w$.<>\[\]]{1,200}(?: [\w$.<>\[\]]{1,200}){0,3}) \()?(?:file://)?"
               r"(?P<path>[^\s():]{1,1000}):(?P<line>\d{1,9})(?::\d{1,9})?\)?"),
    re.compile(r"(?<![\w.@+/-])(?P<path>(?:[\w.@+-]{1,255}/){0,32}[\w@+-]{1,255}\.[A-Za-z][A-Za-z0-9]{0,5})"
               r":(?P<line>\d{1,9})\b"),
)
"""Stack trace frames and compiler messages: Python's, JavaScript's, and any `path.ext:line`."""
_PATH = re.compile(r"(?<![\w/.@+-])(?:[\w.@+-]{1,255}/){0,32}[\w@+-]{1,255}\.[A-Za-z][A-Za-z0-9]{0,5}(?![\w/])")
_CODE = re.compile(r"`([^`\n]{1,200})`")
_QUOTED = re.compile(r"\"([^\"\n]{8,200})\"|'([^'\n]{8,200})'|^\w*(?:Error|Exception|Warning|Panic)\w*: (.{8,200})$",
                     re.M)


def stem(word: str) -> str:
    """A word without its commonest English endings (plurals, -ing, -ed), so that query and code meet."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 5 and word.endswith("ing"):
        return word[:-3]
    if len(word) > 4 and word.endswith("ed") and not word.endswith("eed"):
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def terms(text: str) -> list[str]:
    """The terms of a text: each identifier's parts (camelCase and snake_case split), lower-cased and stemmed, and
    the whole identifier too where it has several parts; English words that say nothing left out."""
    found: list[str] = []
    for identifier in _IDENTIFIER.findall(text):
        found += _identifier_terms(identifier[:MAX_IDENTIFIER])
    return found


@lru_cache(maxsize=1 << 18)
def _identifier_terms(identifier: str) -> tuple[str, ...]:
    """One identifier's terms (terms' unit, kept: a repository names the same few thousand things again and again)."""
    parts = [part.lower() for part in _PARTS.findall(identifier)]
    found = [stem(part) for part in parts if len(part) > 1 and part not in STOP]
    if len(parts) > 1:
        found.append(identifier.lower().strip("_$"))
    return tuple(found)


class Query:
    """What a query says: its terms, and its exact evidence (frames, paths, code names, strings)."""

    def __init__(self, text: str) -> None:
        self.frames: list[tuple[str, int, str | None]] = []
        seen: set[tuple[str, int]] = set()
        for pattern in _FRAMES:
            for match in pattern.finditer(text):
                if len(self.frames) >= MAX_FRAMES_READ:  # (each is compared with those before it)
                    break
                key = (match["path"], int(match["line"]))
                if key not in seen and not any(key[0].endswith(path) or path.endswith(key[0]) for path, line, _ in
                                               self.frames if line == key[1]):
                    seen.add(key)
                    self.frames.append((match["path"], int(match["line"]), match.groupdict().get("name")))
        if len(self.frames) > MAX_EVIDENCE:
            self.frames = self.frames[:MAX_EVIDENCE // 2] + self.frames[-(MAX_EVIDENCE // 2):]
        self.paths = sorted({match.group(0) for match in _PATH.finditer(text)} - {path for path, _, _ in self.frames})
        code = [match.group(1) for match in _CODE.finditer(text)]
        code += [word for word in _IDENTIFIER.findall(text) if _code_like(word)]
        names = [part for item in code for part in re.split(r"[.:#/]+|\(\)?", item) if _IDENTIFIER.fullmatch(part)]
        names += [name for _, _, name in self.frames if name and _IDENTIFIER.fullmatch(name)]
        self.names = sorted({name for name in names if len(name) > 2 and name.lower() not in STOP})
        framed = {path for path, _, _ in self.frames}
        self.strings = sorted({string for match in _QUOTED.finditer(text)
                               if (string := next(group for group in match.groups() if group)) not in framed})
        self.terms = Counter(terms(text))


def _code_like(word: str) -> bool:
    """Whether a word of prose is written as code: snake_case, camelCase or PascalCase with an inner capital."""
    return ("_" in word.strip("_") or bool(re.search(r"[a-z][A-Z]", word))) and len(word) > 3


class Corpus:
    """The words of each file of a folder (its path, the names it defines, the identifiers it uses) and how many
    files hold each: what the files are ranked by (BM25). Brought up to date from the index file by file
    (`Corpus.of`): after a write, the files the index read again are counted again, not every file."""

    def __init__(self, facts: dict[str, FileFacts], check: Callable[[], None], prints: dict[str, Print] | None = None) -> None:
        self.facts = facts
        self.prints = prints or {}
        """Each file's print in the index when its facts were read (empty for a corpus read from the files)."""
        self.words: dict[str, Counter[str]] = {}
        self.lengths: dict[str, int] = {}
        self.defines: dict[str, list[str]] = {}  # a name: the files that define it (once a definition), in order
        self.by_file_name: dict[str, list[str]] = {}  # a file name (the last part of a path): the files of that name
        self.documents = Counter[str]()
        self._length = 0
        for index, name in enumerate(sorted(facts)):
            if index % 256 == 0:
                check()
            value = facts[name]
            if isinstance(value, str):
                continue
            self._count_in(name, value)
            for row in value[0]:
                self.defines.setdefault(row[1], []).append(name)
            self.by_file_name.setdefault(_file_name(name), []).append(name)
        self.average = self._length / max(1, len(self.words))

    def _count_in(self, name: str, value: tuple[list[Sequence[Any]], dict[str, int]]) -> None:
        """A file's words (from its path, the names it defines and those it uses) counted in."""
        outline, uses = value
        words = Counter[str]()
        for word in terms(name.replace(os.sep, " ").replace(".", " ")):
            words[word] += 3
        for row in outline:
            for word in terms(row[1]):
                words[word] += 2
        for used, count in uses.items():
            for word in terms(used):
                words[word] += min(count, 4)
        self.words[name] = words
        self.lengths[name] = length = sum(words.values())
        self._length += length
        self.documents.update(words.keys())

    @classmethod
    def of(cls, indexed: IndexedFolder, check: Callable[[], None], previous: Corpus | None) -> Corpus:
        """The folder's corpus from the index: `previous` (of an older stamp) brought up to date with the files the
        index read again since, or made anew when a quarter of them or more were (or there is none)."""
        if previous is None:
            changes = indexed.changed_since({})
        else:
            changes = indexed.changed_since(previous.prints, whole_past=max(MIN_RECOUNT, len(previous.prints) // 4))
        if previous is None or changes.whole:
            return cls(changes.facts, check, changes.prints)
        return previous._updated(changes, check)

    def _updated(self, changes: Changes, check: Callable[[], None]) -> Corpus:
        """A copy of this corpus with the files changed and gone counted out and the changed counted in again; this
        one is left as it is (a call may be reading it), and each list is made anew once."""
        corpus = copy.copy(self)
        corpus.facts, corpus.prints = dict(self.facts), changes.prints
        corpus.words, corpus.lengths, corpus.documents = dict(self.words), dict(self.lengths), Counter(self.documents)
        leaving: tuple[dict[str, set[str]], dict[str, set[str]]] = ({}, {})  # by defined name, by file name
        arriving: tuple[dict[str, list[str]], dict[str, list[str]]] = ({}, {})
        for index, name in enumerate([*changes.gone, *changes.facts]):
            if index % 256 == 0:
                check()
            value = corpus.facts.pop(name, None)
            words = corpus.words.pop(name, None)
            if words is None or value is None or isinstance(value, str):
                continue
            corpus._length -= corpus.lengths.pop(name)
            corpus.documents.subtract(words.keys())
            for word in words:
                if corpus.documents[word] <= 0:
                    del corpus.documents[word]
            for row in value[0]:
                leaving[0].setdefault(row[1], set()).add(name)
            leaving[1].setdefault(_file_name(name), set()).add(name)
        for index, name in enumerate(sorted(changes.facts)):
            if index % 256 == 0:
                check()
            value = corpus.facts[name] = changes.facts[name]
            if isinstance(value, str):
                continue
            corpus._count_in(name, value)
            for row in value[0]:
                arriving[0].setdefault(row[1], []).append(name)
            arriving[1].setdefault(_file_name(name), []).append(name)
        corpus.defines = _merged(self.defines, leaving[0], arriving[0])
        corpus.by_file_name = _merged(self.by_file_name, leaving[1], arriving[1])
        # (the files in name order, as a corpus made anew has them: ties rank alike)
        corpus.words = {name: corpus.words[name] for name in sorted(corpus.words)}
        corpus.average = corpus._length / max(1, len(corpus.words))
        return corpus


def _file_name(path: str) -> str:
    return path.rsplit("/", 1)[-1]


def _merged(lists: dict[str, list[str]], leaving: dict[str, set[str]], arriving: dict[str, list[str]]) -> dict[str, list[str]]:
    """`lists` (each in order) with the files `leaving` taken out of the lists of their keys and those `arriving`
    put in, in order: the lists of those keys new, the others shared."""
    merged = dict(lists)
    for key in leaving.keys() | arriving.keys():
        out = leaving.get(key, set())
        files = [file for file in lists.get(key, ()) if file not in out]
        if key in arriving:
            files = sorted(files + arriving[key])
        if files:
            merged[key] = files
        else:
            merged.pop(key, None)
    return merged


def _idf(query: Counter[str], documents: Counter[str], total: int) -> list[tuple[str, float]]:
    """Each of the query's terms that some document holds, with its BM25 weight among `total` documents."""
    return [(term, math.log(1 + (total - held + 0.5) / (held + 0.5))) for term in query if (held := documents.get(term, 0))]


def _bm25(weights: list[tuple[str, float]], words: Counter[str], length: int, average: float) -> float:
    """BM25 (k1 1.2, b 0.75) of a document for the query's terms (`_idf`)."""
    score = 0.0
    norm = 1.2 * (0.25 + 0.75 * length / max(average, 1.0))
    for term, idf in weights:
        count = words.get(term)
        if count:
            score += idf * count * 2.2 / (count + norm)
    return score


def _matched(weights: list[tuple[str, float]], words: Counter[str], length: int, average: float) -> list[str]:
    """The query's terms a document holds, the one that adds most to its score first."""
    norm = 1.2 * (0.25 + 0.75 * length / max(average, 1.0))
    parts = [(idf * count * 2.2 / (count + norm), term) for term, idf in weights if (count := words.get(term))]
    return [term for _, term in sorted(parts, reverse=True)]


_CORPORA: Derived[Corpus] = Derived(Corpus.of)
"""Each indexed folder's words, kept while the index is unchanged: a second query reads nothing again."""


class Region:
    """A span of a file's lines ranked as one: a definition's own lines, or module lines outside any."""

    __slots__ = ("end", "evidence", "file", "kind", "name", "reasons", "score", "start", "words")

    def __init__(self, file: str, start: int, end: int, name: str, kind: str) -> None:
        self.file, self.start, self.end, self.name, self.kind = file, start, end, name, kind
        self.score, self.evidence, self.words = 0.0, 0.0, 0.0
        self.reasons: list[str] = []

    def item(self, shown: str) -> dict[str, Any]:
        return {"path": shown, "start_line": self.start, "end_line": self.end, "symbol": self.name[:MAX_SHOWN],
                "kind": self.kind,
                "score": round(self.score, 3), "reasons": self.reasons}


def regions_of(file: str, outline: Sequence[Sequence[Any]], lines: int) -> list[Region]:
    """A file cut into regions: each function or method whole (with what it nests), each other definition's own
    lines before its first member, and the lines outside every definition in chunks of MODULE_CHUNK."""
    regions: list[Region] = []
    rows = [row for row in outline if row[4] >= 1 and row[5] >= row[4]]
    function_end = 0  # the last line of the function region taken last: what it nests is its own
    for index, row in enumerate(rows):
        _, name, qualified, kind, start, end = row[:6]
        if start <= function_end:
            continue
        if kind in ("function", "method", "constructor"):
            regions.append(Region(file, start, end, qualified or name, kind))
            function_end = end
            continue
        following = rows[index + 1][4] if index + 1 < len(rows) else end + 1  # (rows are in source order)
        own_end = following - 1 if start < following <= end else end
        regions.append(Region(file, start, max(start, own_end), qualified or name, kind))
    covered = sorted((row[4], row[5]) for row in rows if row[0] < 0)  # (the top-level definitions)
    line = 1
    for start, end in [*covered, (lines + 1, lines + 1)]:
        while line < start:
            stop = min(start - 1, line + MODULE_CHUNK - 1)
            regions.append(Region(file, line, stop, "", "module"))
            line = stop + 1
        line = max(line, end + 1)
    return regions


def locate(ctx: Context, roots: Roots, query: str, budget: int, path: str) -> ToolResult:
    """The regions of code under `path` that matter to `query`, best first, within `budget` tokens (see the
    module's doc)."""
    if not query.strip():
        raise ToolError("query is empty: give the task, the issue, the error or the stack trace")
    if len(query) > MAX_QUERY:
        raise ToolError(f"query is {len(query)} characters; at most {MAX_QUERY} are read (give the issue's text and "
                        "the trace's last frames)")
    folder = Folder(roots, path)
    if not folder.is_dir:
        raise ToolError(f"{place(folder.shown)} is a file: locate searches a folder (read_file or outline reads a file)")
    asked = Query(query)
    corpus, state, note = _corpus(ctx, roots, folder)
    holding = _Holders(ctx, folder, asked.strings[:5])  # (rg reads the files while the words are counted)
    try:
        weights = _idf(asked.terms, corpus.documents, max(1, len(corpus.words)))
        file_scores: dict[str, float] = {}
        lengths, average = corpus.lengths, corpus.average
        for name, words in corpus.words.items() if weights else ():
            score = _bm25(weights, words, lengths[name], average)
            if score > 0:
                file_scores[name] = score
    except BaseException:
        holding.join()  # (no search left running past the call)
        raise
    evidence = _file_evidence(corpus, asked, holding.result())
    best = max(file_scores.values(), default=1.0) or 1.0
    ranked = sorted(set(file_scores) | set(evidence),
                    key=lambda name: (-(file_scores.get(name, 0.0) / best + sum(evidence.get(name, {}).values())), name))
    regions, texts = _ranked_regions(ctx, roots, folder, corpus, asked, ranked[:CANDIDATE_FILES],
                                     {name: file_scores.get(name, 0.0) / best for name in ranked}, evidence)
    return _render(folder, asked, regions, texts, budget, state, note, len(corpus.words))


def _corpus(ctx: Context, roots: Roots, folder: Folder) -> tuple[Corpus, str, str]:
    """The folder's corpus, from the index (fresh), else read from its files (at most MAX_MAP_SCANNED)."""
    try:
        try:
            indexed: IndexedFolder = indexed_folder(ctx, roots, folder)
        except Unavailable as why:
            if not why.damaged:
                raise
            indexed = indexed_folder(ctx, roots, folder)
        return _CORPORA.get(indexed, ctx.check_cancelled), "fresh", ""
    except Unavailable as why:
        names = folder.files(ctx)
        if len(names) > MAX_MAP_SCANNED:
            raise ToolError(f"locate reads at most {MAX_MAP_SCANNED} files without the code index, and "
                            f"{place(folder.shown)} holds {len(names)} code files ({why or 'no code index'}). "
                            "Narrow it with path, or call again once the index is built.") from None
        facts: dict[str, FileFacts] = {}
        for start in range(0, len(names), 64):
            ctx.report_progress(start, len(names), f"reading {plural(len(names), 'code file')}")
            for name, value in scanned_facts(roots, folder, names[start:start + 64], ctx.check_cancelled):
                if value is not None:
                    facts[name] = value
        return Corpus(facts, ctx.check_cancelled), ("building" if why.building else "off"), str(why)


_LIBRARY = re.compile(r"(?:^|/)(?:site-packages|dist-packages|node_modules|lib/python\d[\d.]*|<frozen [^>]*>)(?:/|$)|^<")
"""A frame's path in a library or the interpreter: not the workspace's code, whatever its file is called."""
_SUFFIX_PARTS = 8
"""A path's last parts that are matched at most (a deeper one says no more, and costs more)."""


def _suffix_files(corpus: Corpus, path: str) -> tuple[list[str], bool]:
    """The files whose path ends with the most parts of `path` (a frame's absolute path from another machine's
    checkout, a path relative to another folder), at most five, and whether more than the file name matched (a
    file name alone is weak evidence for a deeper path); none for a library's or the interpreter's path."""
    normal = path.replace("\\", "/")
    parts = [part for part in normal.split("/") if part not in ("", ".")][-_SUFFIX_PARTS:]
    if not parts or _LIBRARY.search(normal):
        return [], False
    named = corpus.by_file_name.get(parts[-1], [])
    for depth in range(len(parts), 0, -1):
        tail = "/".join(parts[-depth:])
        best = [name for name in named if name == tail or name.endswith("/" + tail)]
        if best:
            return sorted(best)[:5], depth > 1 or len(parts) == 1
    return [], False


class _Holders:
    """The files that hold each of a query's quoted strings (an rg each), found by a thread of their own: the
    children read the files while the caller counts words (some 150 ms of rg on 10 000 files, as long as the
    counting)."""

    def __init__(self, ctx: Context, folder: Folder, strings: list[str]) -> None:
        self._found: dict[str, list[str]] = {}
        self._failed: BaseException | None = None
        self._thread: threading.Thread | None = None
        if strings:
            self._thread = threading.Thread(target=self._find, args=(ctx, folder, strings), name="locate strings",
                                            daemon=True)
            self._thread.start()

    def _find(self, ctx: Context, folder: Folder, strings: list[str]) -> None:
        try:
            for string in strings:
                ctx.check_cancelled()
                try:
                    self._found[string] = folder.candidates(ctx, re.escape(string))
                except ToolError:
                    continue
        except BaseException as failure:  # (Cancelled, or a failure to say in the caller's thread)
            self._failed = failure

    def join(self) -> None:
        if self._thread is not None:
            self._thread.join()

    def result(self) -> dict[str, list[str]]:
        """Each string's holders, once found; the search's failure (a cancel) raised here."""
        self.join()
        if self._failed is not None:
            raise self._failed
        return self._found


def _file_evidence(corpus: Corpus, asked: Query, holders: dict[str, list[str]]) -> dict[str, dict[str, float]]:
    """Each file's exact evidence, by kind: a frame or a path the query names (2), a name written as code that it
    defines (1), a quoted string it holds (1, `holders`)."""
    evidence: dict[str, dict[str, float]] = {}
    for frame_path, _, _ in asked.frames:
        files, deep = _suffix_files(corpus, frame_path)
        for name in files:
            evidence.setdefault(name, {})[f"in the trace: {printable(frame_path[-MAX_SHOWN:])}"] = 2.0 if deep else 0.5
    for named in asked.paths[:MAX_EVIDENCE]:
        files, deep = _suffix_files(corpus, named)
        for name in files:
            evidence.setdefault(name, {})[f"named: {printable(named[-MAX_SHOWN:])}"] = 2.0 if deep else 0.5
    for code_name in asked.names:
        for name in corpus.defines.get(code_name, [])[:8]:
            evidence.setdefault(name, {})[f"defines `{code_name[:MAX_SHOWN]}`"] = 1.0
    for string in asked.strings[:5]:
        for name in holders.get(string, [])[:8]:
            evidence.setdefault(name, {})[f"holds \"{printable(string[:40])}\""] = 1.0
    return evidence


_KEPT_FILES = 256
"""Files whose regions' words are kept (a file's by its key: another version is another file)."""


class FileRegions:
    """A file's regions (start, end, symbol, kind, words) as `_file_regions` made them, with what ranking them asks
    of each query, made once: each region's length, each term's regions (so that a query reads only the regions that
    hold its terms), and each short name's first region (what a use of that name reaches)."""

    __slots__ = ("by_name", "lengths", "postings", "regions", "total")

    def __init__(self, regions: list[tuple[int, int, str, str, Counter[str]]]) -> None:
        self.regions = regions
        self.lengths = [sum(words.values()) for *_, words in regions]
        self.total = sum(self.lengths)
        self.postings: dict[str, list[int]] = {}
        self.by_name: dict[str, int] = {}
        for number, (_, _, symbol, _, words) in enumerate(regions):
            for word in words:
                self.postings.setdefault(word, []).append(number)
            if symbol:
                self.by_name.setdefault(symbol.rsplit(".", 1)[-1], number)


_kept_files: OrderedDict[Any, FileRegions] = OrderedDict()
_kept_lock = threading.Lock()


def _file_regions(key: Any, name: str, outline: Sequence[Sequence[Any]], lines: list[str]) -> FileRegions:
    """A file's regions (start, end, symbol, kind) with their words, blank lines at their ends left out, empty ones
    dropped; kept for the last _KEPT_FILES files read (the next query about them splits nothing again)."""
    key = (key, tuple((row[4], row[5]) for row in outline))  # (the outline read with that version of the file)
    with _kept_lock:
        kept = _kept_files.get(key)
        if kept is not None:
            _kept_files.move_to_end(key)
            return kept
    made = []
    for region in regions_of(name, outline, len(lines)):
        start, end = region.start, min(region.end, len(lines))  # (the file may have changed since its outline)
        if start > end:
            continue
        while start < end and not lines[start - 1].strip():
            start += 1
        while end > start and not lines[end - 1].strip():
            end -= 1
        if not lines[start - 1].strip():
            continue
        words = Counter(terms("\n".join(lines[start - 1:end])))
        for word in _identifier_terms(region.name.rsplit(".", 1)[-1]) if region.name else ():
            words[word] += 2
        if words:
            made.append((start, end, region.name, region.kind, words))
    regions = FileRegions(made)
    with _kept_lock:
        _kept_files[key] = regions
        while len(_kept_files) > _KEPT_FILES:
            _kept_files.popitem(last=False)
    return regions


def _ranked_regions(ctx: Context, roots: Roots, folder: Folder, corpus: Corpus, asked: Query, names: list[str],
                    file_scores: dict[str, float], evidence: dict[str, dict[str, float]],
                    ) -> tuple[list[Region], dict[str, list[str]]]:
    """The regions of the candidate files that words, evidence or a use put there, scored (see the module's doc),
    best first, and the files' lines. Only those regions are made: a region the query's terms miss, in a file it
    names no evidence of, is scored only if one of the best regions uses it (of thousands in large files, most)."""
    texts: dict[str, list[str]] = {}
    files: list[tuple[str, FileRegions]] = []
    for name in names:
        ctx.check_cancelled()
        value = corpus.facts.get(name)
        if value is None or isinstance(value, str):
            continue
        real, shown = folder.file(name)
        try:
            source = read_source(roots, real, shown)
        except (Skipped, *FILE_FAILURES):
            continue
        texts[name] = source.lines()
        made = _file_regions(source.key, name, value[0], texts[name])
        if made.regions:
            files.append((name, made))
    count = sum(len(made.regions) for _, made in files)
    if not count:
        return [], texts
    average = sum(made.total for _, made in files) / count
    documents = Counter[str]()
    for term in asked.terms:
        documents[term] = sum(len(made.postings.get(term, ())) for _, made in files)
    weights = _idf(asked.terms, documents, count)
    scored: list[tuple[str, FileRegions, dict[int, float]]] = []
    best = 0.0
    for name, made in files:
        scores: dict[int, float] = {}
        for term, _ in weights:
            for number in made.postings.get(term, ()):
                scores[number] = 0.0
        for number in scores:  # (each region's terms summed in the query's order: the score _bm25 gives)
            scores[number] = _bm25(weights, made.regions[number][4], made.lengths[number], average)
        best = max(best, max(scores.values(), default=0.0))
        scored.append((name, made, scores))
    best = best or 1.0
    # (a frame's files once: each _suffix_files looks at every file's name)
    frames = [(path, line, *_suffix_files(corpus, path)) for path, line, _ in asked.frames]
    regions: list[Region] = []
    matched: dict[int, tuple[Counter[str], int]] = {}  # a region with words: its words and length
    listed: dict[tuple[str, int], Region] = {}  # each region made, by its file and its number there
    for name, made, scores in scored:
        held = evidence.get(name, {})
        prior = _prior(name, asked)
        whole = any(reason.startswith(("in the trace", "named")) for reason in held)  # (every region has a reason)
        strings = [(string, lines) for string in asked.strings[:5] if f"holds \"{printable(string[:40])}\"" in held
                   and (lines := [number for number, line in enumerate(texts[name], 1) if string[:40] in line])]
        for number, (start, end, symbol, _, words) in enumerate(made.regions):
            short = symbol.rsplit(".", 1)[-1]
            held_here = [string for string, lines in strings if _within(lines, start, end)]
            if not (number in scores or whole or held_here or (short and short in asked.names)):
                continue  # (no reason: made only if a best region uses it, in _follow_uses)
            region = _region(name, made, number, scores.get(number, 0.0) / best, file_scores)
            region.words = scores.get(number, 0.0)
            if region.words > 0:
                region.reasons.append(_WORDS)
                matched[id(region)] = (words, made.lengths[number])
            lead: list[str] = []  # the evidence, strongest first, before the words
            for frame_path, line, frame_files, deep in frames:
                if name in frame_files and start <= line <= end:
                    region.evidence += 4.0 if deep else 1.0
                    lead.append(f"trace frame {printable(frame_path[-MAX_SHOWN:])}:{line}")
            if short and short in asked.names:
                region.evidence += 2.0
                lead.append(f"defines `{printable(short[:MAX_SHOWN])}`")
            for string in held_here:
                reason = f"holds \"{printable(string[:40])}\""
                region.evidence += held[reason]
                lead.append(reason)
            for reason, weight in held.items():
                if reason.startswith(("in the trace", "named")):
                    region.evidence += weight / 4
                    region.reasons.append(reason)
            region.reasons[:0] = lead
            del region.reasons[MAX_REASONS:]
            region.score = (region.score + region.evidence) * prior
            if region.reasons:
                regions.append(region)
                listed[(name, number)] = region
    regions.sort(key=lambda region: (-region.score, region.file, region.start))
    _follow_uses(regions, listed, texts, corpus, dict((name, made) for name, made, _ in scored), file_scores, asked)
    for region in regions[:MAX_REGIONS]:  # (the words said only of the regions listed: of thousands, a few)
        if _WORDS in region.reasons:
            words, length = matched[id(region)]
            region.reasons[region.reasons.index(_WORDS)] = "words: " + ", ".join(_matched(weights, words, length,
                                                                                          average)[:6])
    return regions, texts


def _within(lines: list[int], start: int, end: int) -> bool:
    """Whether one of `lines` (sorted) is within start..end."""
    at = bisect.bisect_left(lines, start)
    return at < len(lines) and lines[at] <= end


_WORDS = "words"
"""The place of a region's words among its reasons until they are said (`_matched`), for the regions listed."""


def _region(name: str, made: FileRegions, number: int, words: float, file_scores: dict[str, float]) -> Region:
    """The region `number` of a file, scored by its words (scaled to the best) and its file (half), before its
    evidence and its file's prior."""
    start, end, symbol, kind, _ = made.regions[number]
    region = Region(name, start, end, symbol, kind)
    region.score = words + 0.5 * file_scores.get(name, 0.0)
    return region


_TESTS = re.compile(r"(?:^|/)(?:tests?|__tests__|spec|testing)/|(?:^|/)test_[^/]*$|_test\.\w+$|\.(?:test|spec)\.\w+$|"
                    r"(?:^|/)conftest\.py$")
_ASIDE = re.compile(r"(?:^|/)(?:examples?|docs?|benchmarks?|bench|samples?|scripts)/")


def _prior(file: str, asked: Query) -> float:
    """How much a file's regions keep: a test's half and an example's, a doc's or a benchmark's seven tenths,
    unless the query speaks of tests or examples (a task is most often about the code they exercise)."""
    if _TESTS.search(file):
        return 1.0 if {"test", "tests", "testing"} & set(asked.terms) else 0.5
    if _ASIDE.search(file):
        return 1.0 if {"example", "doc", "benchmark", "bench", "sample", "script"} & set(asked.terms) else 0.7
    return 1.0


def _follow_uses(regions: list[Region], listed: dict[tuple[str, int], Region], texts: dict[str, list[str]],
                 corpus: Corpus, files: dict[str, FileRegions], file_scores: dict[str, float], asked: Query) -> None:
    """The structure step: the definitions the five best regions use (names defined in one to three files; of a name
    defined twice in a file, the first), each raised by a fifth of the best region's score that uses it, made if
    nothing else put it there (`listed`: each region made, by file and number; two may begin on one line, as in
    `a = b = 1`); `regions` re-sorted."""
    raised: set[int] = set()
    for best in regions[:5]:
        used = set(_IDENTIFIER.findall("\n".join(texts[best.file][best.start - 1:best.end])))
        for name in sorted(used):
            defining = corpus.defines.get(name, [])
            if not 0 < len(defining) <= 3 or name == best.name.rsplit(".", 1)[-1]:
                continue
            for file in defining:
                made = files.get(file)
                number = made.by_name.get(name) if made is not None else None
                if made is None or number is None:
                    continue
                target = listed.get((file, number))
                if target is None:
                    target = listed[(file, number)] = _region(file, made, number, 0.0, file_scores)
                    target.score *= _prior(file, asked)
                    regions.append(target)
                if id(target) not in raised and target is not best:
                    raised.add(id(target))
                    target.score += 0.2 * best.score
                    target.reasons.append(f"used by {best.name[:MAX_SHOWN] or 'the module'}")
    regions.sort(key=lambda region: (-region.score, region.file, region.start))


def _render(folder: Folder, asked: Query, regions: list[Region], texts: dict[str, list[str]], budget: int,
            state: str, note: str, files: int) -> ToolResult:
    """The regions' code, best first, whole lines, while the budget holds; the best MAX_REGIONS as data."""
    limit = budget * budgets.BYTES_PER_TOKEN - _SLACK
    listed = regions[:MAX_REGIONS]
    items = [region.item(folder.file(region.file)[1]) for region in listed]
    data: dict[str, Any] = {"terms": [term for term, _ in asked.terms.most_common(20)],
                            "evidence": {"frames": [{"path": path[-MAX_SHOWN:], "line": line}
                                                    for path, line, _ in asked.frames],
                                         "paths": [path[-MAX_SHOWN:] for path in asked.paths[:MAX_EVIDENCE]],
                                         "names": [name[:MAX_SHOWN] for name in asked.names[:MAX_EVIDENCE]],
                                         "strings": [string[:MAX_SHOWN] for string in asked.strings[:5]]},
                            "regions": items, "shown": 0, "files_ranked": files, "index": state, "truncated": False}
    while len(items) > 1 and _size(json.dumps(data, ensure_ascii=False, separators=(",", ":"))) * 3 > limit:
        items.pop()
        listed.pop()
    head = (f"{plural(len(regions), 'region')} ranked in {plural(files, 'code file')}, best first"
            f"{' (' + note + ')' if note else ''}:")
    spent = _size(head) + _size(json.dumps(data, ensure_ascii=False, separators=(",", ":"))) + 1
    out = [head]
    shown = 0
    for region, item in zip(listed, items, strict=True):
        header = (f"\n== {printable(item['path'])}:{region.start}-{region.end}"
                  f"{'  ' + printable(region.name[:MAX_SHOWN]) if region.name else ''}  "
                  f"({printable('; '.join(region.reasons[:3]))})")
        body = _body(texts[region.file], region, limit - spent - _size(header) - 1)
        if body is None:  # (not one line of it fits: a shorter region after it may)
            continue
        piece = header + "\n" + body
        spent += _size(piece) + 1
        out.append(piece)
        shown += 1
    data["shown"] = shown
    data["truncated"] = shown < len(regions)
    if shown < len(regions):
        out.append(f"\n[{plural(len(regions) - shown, 'more region')} ranked, not shown for the budget; "
                   f"structuredContent lists the best {len(listed)}]")
    made = result("\n".join(out), data)
    while budgets.tokens(made) > budget and shown > 0:  # (the estimate was short: the last region goes)
        out.pop(-2 if data["truncated"] else -1)
        data["shown"] = shown = shown - 1
        data["truncated"] = True
        made = result("\n".join(out), data)
    return made


def _size(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def _body(lines: list[str], region: Region, room: int) -> str | None:
    """The region's lines numbered, at most MAX_SHOWN_LINES, whole lines within `room` bytes (a note says what is
    left out); None if not one line fits."""
    shown: list[str] = []
    used = 0
    last = min(region.end, region.start + MAX_SHOWN_LINES - 1)
    for number in range(region.start, last + 1):
        line = f"{number:>6}: {printable(lines[number - 1] if number <= len(lines) else '')}"
        if used + _size(line) + 1 + 60 > room:
            break
        shown.append(line)
        used += _size(line) + 1
    if not shown:
        return None
    end = region.start + len(shown) - 1
    if end < region.end:
        shown.append(f"        [… lines {end + 1}-{region.end} not shown]")
    return "\n".join(shown)

"""search_code: ripgrep's `--json` output, read as it streams, bounded, with progress and cancellation.

rg walks with the same flags as the listing (so search and list_files agree on which files exist).
The answer is always the first `limit` matches in path order (rg's `--sort=path` order: by path
component, bytewise), so the same question always gets the same answer. But rg searches with a single
thread when it sorts, so a search runs in up to two phases:

1. rg unsorted, on every core. rg writes all messages of one file together, so the output is taken
   a file at a time and only the files holding the first `limit` matches in path order are kept
   (`_Smallest`); the others are only counted. They are put in order at the end.
2. Unsorted, rg cannot stop once `limit` matches are found. Once the first phase has seen more than
   `limit` matches (the answer will be cut), the sorted search, which stops right after `limit`, starts
   beside it (`_SortedRace`, line-buffered so that it is read as it finds): whichever ends first answers,
   the same matches either way. A pattern spread over the tree is answered by the sorted search after a
   small part of it (a frequent word in 100 000 files: 363 -> 44 ms; 1 000 matches: 318 -> 183 ms); at
   worst, a few more matches than `limit`, the race slows the unsorted search by some 12 %. A
   pattern so frequent that the first phase sees more than FALLBACK_MATCHES matches stops it: the sorted
   search answers alone (started then, if it could not race for want of a free child slot).

With a progress token, a quick walk first counts the files, and a thread reports how far rg is (see
`_Progress`). Cancelling kills rg at once, in either phase.
"""

from __future__ import annotations

import base64
import bisect
import functools
import json
import os
import re
import threading
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from ..primitives import ToolError
from . import process, safe_open
from .listing import RG_WALK_FLAGS, GlobFilter, rg_executable, walk, walk_readable
from .roots import join_display
from .text import SNIFF_BYTES, cut_line, is_binary, place, plural, printable, result, size_text

if TYPE_CHECKING:
    from ..context import Context
    from ..primitives import ToolResult
    from .roots import Roots

MAX_LINE_CHARS = 500
"""A longer matching line is shown as a window of this many characters around the match."""
PROGRESS_INTERVAL = 0.1
"""At most this often (seconds) a progress notification goes out."""
SEARCH_TIMEOUT = 120.0
"""Each phase's deadline."""
FALLBACK_MATCHES = 5000
"""The unsorted search gives way to the sorted one once it has seen more matches than this (well above
the largest `limit`, 2000). Reading on would cost more than searching again: rg prints every match of
a frequent pattern, while the sorted search stops after `limit` of them."""
RACE = True
"""Whether the sorted search races the unsorted one once the answer is known to be cut (`_SortedRace`)."""
COMPACT_BYTES = 16 * 1024
"""A match or context message longer than this is reduced at once to what the answer shows (a window
of the line), so that kept files cost little; the longest are cut as they are read (MAX_LINE_BYTES)."""
SIZE_SAMPLE = 1000
"""Progress estimates the bytes to search from the sizes of about this many of the files."""
_IO_STATS = os.path.exists("/proc/self/io")  # Linux: a process's bytes read, for progress


class _Collector:
    """The lines to report: matches up to `limit`, their context, and whether more matches exist."""

    def __init__(self, limit: int, context: int, display: Callable[[bytes], str]) -> None:
        self.limit = limit
        self.context = context
        self.display = display
        self.lines: list[dict[str, Any]] = []
        self.matches = 0
        self.files: set[str] = set()
        self.truncated = False
        self._last_match: tuple[str, int] | None = None
        self.last_path: bytes | None = None  # the last match's path as rg wrote it

    def fresh(self) -> _Collector:
        """An empty collector for the same question."""
        return _Collector(self.limit, self.context, self.display)

    @property
    def full(self) -> bool:
        return self.matches >= self.limit

    def add(self, kind: str, data: dict[str, Any]) -> bool:
        """Take one rg message (in path order); False once nothing more is wanted."""
        if kind not in ("match", "context"):
            return True
        path = self.display(_raw(data.get("path", {})))
        number = data.get("line_number") or 0
        if self.full:
            # Only the trailing context of the last match still belongs; any other match means "more".
            if kind == "match" or self._last_match is None or path != self._last_match[0]:
                self.truncated = kind == "match" or self.truncated
                return kind != "match"
            if not self._last_match[1] < number <= self._last_match[1] + self.context:
                return True  # before-context of a match that is not shown
        if kind == "match":
            self.matches += 1
            self.files.add(path)
            self._last_match = (path, number)
            self.last_path = _raw(data.get("path", {}))
        shown = data.get("shown")
        text = shown if isinstance(shown, str) else _shown(data)
        self.lines.append({"path": path, "line": number, "text": text, "match": kind == "match"})
        return True


def _shown(data: dict[str, Any], whole: bool = True) -> str:
    """The line of a match or context message as shown: a window around the first match if it is long.
    Not `whole`: only the line's head was read."""
    raw = _raw(data.get("lines", {}))
    submatches = data.get("submatches") or []
    start = submatches[0].get("start", 0) if submatches else 0
    focus = len(raw[:start].decode("utf-8", "ignore")) if start <= len(raw) else 0
    text = _line_text(data)
    return cut_line(text, MAX_LINE_CHARS, focus, None if whole else f"longer than {size_text(len(raw))}")


_CUT_HEAD = re.compile(rb'\{"type":"(match|context)","data":\{"path":(\{"(?:text|bytes)":"[^"\\]*(?:\\.[^"\\]*)*"\}),'
                       rb'"lines":\{"(text|bytes)":"')
_STRING = re.compile(rb'[^"\\]*(?:\\.[^"\\]*)*')
_NUMBER = re.compile(rb',"line_number":(\d+),"absolute_offset":\d+,"submatches":\[(?:\{"match":\{"(?:text|bytes)":'
                     rb'"[^"\\]*(?:\\.[^"\\]*)*"\},"start":(\d+))?')


def _compact(line: bytes) -> bytes:
    """A long match or context message as a short one holding what the answer shows (`shown`), so the
    answer costs the same whatever the line's length; a line cut as it was read (a CutLine) is rebuilt
    from its head (type, path, the start of the line) and tail (line number, first match)."""
    if not isinstance(line, process.CutLine):
        message = _message(line)
        if message is None or message[0] not in ("match", "context"):
            return line
        kind, data = message
        shown = _shown(data)
    else:
        head = _CUT_HEAD.match(line)
        if head is None:
            return b""  # not a line of a file (those are short): nothing to rebuild
        kind, encoding = head.group(1).decode(), head.group(3).decode()
        text, whole = _string_head(line[head.end():], encoding)
        data = {"path": json.loads(head.group(2)), "lines": {encoding: text}}
        numbers = list(_NUMBER.finditer(line.tail))
        if numbers:
            data["line_number"] = int(numbers[-1].group(1))
            if numbers[-1].group(2) is not None:
                data["submatches"] = [{"start": int(numbers[-1].group(2))}]
        shown = _shown(data, whole)
    small = {"path": data.get("path", {}), "line_number": data.get("line_number"), "shown": shown}
    return json.dumps({"type": kind, "data": small}, separators=(",", ":")).encode()


def _string_head(body: bytes, encoding: str) -> tuple[str, bool]:
    """What was kept of a JSON string value, and whether that is all of it (else it was cut at a byte
    count, maybe inside a character or an escape)."""
    value = _STRING.match(body)
    kept = value.group() if value is not None else b""
    whole = len(kept) < len(body)  # the closing quote was kept
    if encoding == "bytes":
        return kept[: len(kept) // 4 * 4].decode("ascii", "replace"), whole
    text = kept.decode("utf-8", "ignore")
    for end in range(len(text), max(-1, len(text) - 12), -1):  # an escape such as \u00e9 may be cut
        try:
            decoded: str = json.loads(f'"{text[:end]}"')
        except ValueError:
            continue
        if not decoded or not "\ud800" <= decoded[-1] <= "\udbff":  # half a surrogate pair cannot be encoded
            return decoded, whole
    return "", whole


def _raw(value: dict[str, Any]) -> bytes:
    """rg's {"text": ...}, or {"bytes": base64} for what is not UTF-8, as bytes."""
    if "text" in value:
        return str(value["text"]).encode("utf-8", "surrogateescape")
    return base64.b64decode(value.get("bytes", ""))


def _text(value: dict[str, Any]) -> str:
    return str(value["text"]) if "text" in value else _raw(value).decode("utf-8", "replace")


def _line_text(data: dict[str, Any]) -> str:
    return _text(data.get("lines", {})).rstrip("\n").rstrip("\r")


def _message(line: bytes) -> tuple[str, dict[str, Any]] | None:
    """One line of rg's output as (type, data); None if it is not a message."""
    try:
        message = json.loads(line)
    except ValueError:
        return None
    if not isinstance(message, dict):
        return None
    data = message.get("data")
    return str(message.get("type")), data if isinstance(data, dict) else {}


_TYPE = b'{"type":"'


def _kind(line: bytes) -> bytes:
    """A message's type without parsing the whole line: rg writes the type first."""
    if line.startswith(_TYPE):
        return line[len(_TYPE):line.find(b'"', len(_TYPE))]
    message = _message(line)
    return message[0].encode() if message is not None else b""


def _strip_dot(raw: bytes) -> bytes:
    return raw[2:] if raw.startswith(b"./") else raw


def _path_key(raw: bytes) -> list[bytes]:
    """Where a path sorts in rg --sort=path order: by path components, bytewise (a/x before a.txt)."""
    return _strip_dot(raw).split(b"/")


class _Smallest:
    """From rg's unsorted output, the files holding the first `limit` matches in path order.

    Each file's messages come together, from "begin" to "end". Kept files stay sorted by path; once
    they hold `limit` matches, a file that sorts after all of them cannot be among the first and is
    only counted, and the last kept file goes as soon as the others hold `limit` matches without it.
    A kept file's lines stay unparsed until they are known to be needed.
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.keys: list[list[bytes]] = []
        self.groups: list[tuple[int, list[bytes]]] = []  # with keys: (matches, match and context lines)
        self.kept = 0  # matches in the kept files
        self.matches = 0  # matches seen
        self.files = 0  # files rg has finished with
        self._key: list[bytes] = []
        self._lines: list[bytes] | None = None  # the current file's lines, if it may be kept
        self._count = 0  # the current file's matches

    def take(self, line: bytes) -> None:
        kind = _kind(line)
        if kind == b"match":
            self.matches += 1
            self._count += 1
        if kind in (b"match", b"context"):
            if self._lines is not None:
                self._lines.append(line)
        elif kind == b"begin":
            message = _message(line)
            self._key = _path_key(_raw(message[1].get("path", {}))) if message is not None else []
            self._count = 0
            self._lines = [] if self.kept < self.limit or self._key < self.keys[-1] else None
        elif kind == b"end":
            self.files += 1
            if self._lines is not None and self._count:
                self._keep(self._key, self._count, self._lines)
            self._lines = None

    def _keep(self, key: list[bytes], count: int, lines: list[bytes]) -> None:
        at = bisect.bisect(self.keys, key)
        self.keys.insert(at, key)
        self.groups.insert(at, (count, lines))
        self.kept += count
        while self.kept - self.groups[-1][0] >= self.limit:
            self.kept -= self.groups.pop()[0]
            self.keys.pop()

    def messages(self) -> Iterator[tuple[str, dict[str, Any]]]:
        """The kept files' messages, in path order: what the sorted search would have printed first."""
        for _, lines in self.groups:
            for line in lines:
                message = _message(line)
                if message is not None:
                    yield message


class _Progress:
    """How far the search is, in files, sent from a thread at most every PROGRESS_INTERVAL seconds.

    A thread, because rg prints nothing for files without matches, so a search for a rare pattern
    would otherwise report nothing for a long time. Two measures, the larger wins: the files known to
    be done (files rg finished; for the sorted search, the place in the sorted list of the file it is
    in), and, on Linux, the bytes rg has read against the estimated size of all the files. rg has
    searched every file only when it exits, so progress stays below the total until `finish`.
    """

    def __init__(self, ctx: Context, names: list[str], size: int | None) -> None:
        self.ctx = ctx
        self.names = names
        self.total = len(names)
        self.size = size
        self.done = 0
        self.matches = 0  # for the message; at most `limit`, as in the result
        self.pid: int | None = None  # the running rg
        self._stop = threading.Event()
        ctx.report_progress(0, self.total, f"searching {plural(self.total, 'file')}")
        self._thread = threading.Thread(target=self._run, name="shipcode-mcp-progress", daemon=True)
        self._thread.start()

    @functools.cached_property
    def _keys(self) -> list[list[bytes]]:
        """The files in rg --sort=path order; only the sorted search needs them."""
        return sorted(_path_key(name.encode("utf-8", "surrogateescape")) for name in self.names)

    def place(self, raw: bytes) -> int:
        """How many files of the sorted list come up to and including this one."""
        return bisect.bisect_right(self._keys, _path_key(raw))

    def _run(self) -> None:
        while not self._stop.wait(PROGRESS_INTERVAL):
            value = min(max(self.done, self._read()), self.total - 1)
            if value > 0:  # the context drops values that do not rise
                self.ctx.report_progress(value, self.total, f"{plural(self.matches, 'match')} so far")

    def _read(self) -> int:
        """The files' worth of bytes rg has read so far (its rchar in /proc); 0 when unknown."""
        pid = self.pid
        if not self.size or pid is None:
            return 0
        try:
            with open(f"/proc/{pid}/io", "rb") as stats:
                for line in stats:
                    if line.startswith(b"rchar:"):
                        return self.total * int(line.split()[1]) // self.size
        except (OSError, ValueError):
            pass
        return 0

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def finish(self, matches: int) -> None:
        self.stop()
        self.ctx.report_progress(self.total, self.total, f"done: {plural(matches, 'match')}")


def _estimate_size(fd: int, names: list[str]) -> int | None:
    """The total size of the files under the folder `fd`, from a sample of them; None without /proc."""
    if not _IO_STATS or not names:
        return None
    sizes = []
    for name in names[::max(1, len(names) // SIZE_SAMPLE)]:
        try:
            sizes.append(os.stat(name, dir_fd=fd, follow_symlinks=False).st_size)
        except OSError:
            pass
    return sum(sizes) * len(names) // len(sizes) if sizes else None


def search_code(ctx: Context, roots: Roots, pattern: str, path: str, glob: str | None, ignore_case: bool,
                fixed_strings: bool, context: int, limit: int) -> ToolResult:
    if "\x00" in pattern or (glob and "\x00" in glob):
        raise ToolError("pattern and glob cannot contain NUL characters")
    real = roots.resolve(path)
    shown = roots.display(real)
    options = ["--ignore-case" if ignore_case else "--case-sensitive"]
    if fixed_strings:
        options.append("--fixed-strings")
    if context:
        options.append(f"--context={context}")
    is_dir = os.path.isdir(real)
    if is_dir:
        fd = safe_open.open_dir(roots, real, shown)
        cwd, target = safe_open.proc_path(fd, real), "./"
    else:
        fd, _ = safe_open.open_file(roots, real, shown)
        cwd, target = roots.root_of(real) or real, safe_open.proc_path(fd, real)

    def display(raw: bytes) -> str:
        return join_display(shown, _strip_dot(raw).decode("utf-8", "surrogateescape")) if is_dir else shown

    collector = _Collector(limit, context, display)
    progress = None
    try:
        if not is_dir and is_binary(os.pread(fd, SNIFF_BYTES, 0)):
            raise ToolError(f"{shown} is a binary file; search_code searches text")
        glob_filter = GlobFilter([glob] if glob else [])
        with glob_filter as narrow:
            readable = [*walk_readable(roots.paths), *glob_filter.files]
            if ctx.progress_token is not None:
                names = walk(ctx, cwd, narrow, readable=readable, pass_fds=(fd,)) if is_dir else [shown]
                progress = _Progress(ctx, names, _estimate_size(fd, names) if is_dir else None)
            command = [rg_executable(), "--json", *RG_WALK_FLAGS, *narrow, *options, f"--regexp={pattern}"]
            collector, problems = _search(ctx, command, ["--", target], cwd, fd, readable, collector, progress)
        if progress is not None:
            progress.finish(collector.matches)
    finally:
        if progress is not None:
            progress.stop()
        os.close(fd)
    return _render(pattern, shown, collector, context, problems)


def _search(ctx: Context, command: list[str], target: list[str], cwd: str, fd: int, readable: list[str],
            collector: _Collector, progress: _Progress | None) -> tuple[_Collector, bool]:
    """The first matches in path order, in parallel if it pays (see the module's docstring): the collector
    that holds them (`collector`, or the sorted race's own) and whether some files before the answer's end
    could not be searched (the same whichever search answered: `_problems`)."""
    kept = _Smallest(collector.limit)
    sorted_command = [*command, "--sort=path", "--line-buffered", *target]
    race: _SortedRace | None = None
    unsorted: list[process.Child] = []

    def take_unsorted(line: bytes) -> bool:
        nonlocal race
        kept.take(line)
        if progress is not None:
            progress.done, progress.matches = kept.files, min(kept.matches, collector.limit)
        if race is None and RACE and kept.matches > collector.limit and unsorted:
            race = _SortedRace(ctx, sorted_command, cwd, fd, readable, collector.fresh(), unsorted[0].kill)
        return kept.matches <= FALLBACK_MATCHES

    failed: ToolError | None = None  # the unsorted search's, once it had seen more than `limit` matches
    try:
        code, stderr = _drive(ctx, [*command, *target], cwd, fd, readable, progress, take_unsorted, unsorted.append)
    except ToolError as err:
        if kept.matches <= collector.limit:
            if race is not None:
                race.stop()
            raise
        # A FIFO, a deadline: perhaps in a file after the answer's end, which the sorted search never reaches.
        failed, code, stderr = err, 0, ""
    except BaseException:
        if race is not None:
            race.stop()
        raise
    answered = kept.matches <= FALLBACK_MATCHES and failed is None  # the unsorted search saw all it needed
    if race is not None:
        if answered and not race.won():
            race.stop()
        else:
            race.wait()  # it answers (or fails, and the sorted search runs again below)
        if race.won():
            return race.collector, race.problems
    if answered:
        for kind, data in kept.messages():
            if not collector.add(kind, data):
                break
        collector.truncated = collector.truncated or kept.matches > collector.matches
        return collector, _problems(code, stderr, collector)
    ctx.check_cancelled()

    def take_sorted(line: bytes) -> bool:
        message = _message(line)
        if message is None:
            return True
        kind, data = message
        if kind == "begin" and progress is not None:
            progress.done = progress.place(_raw(data.get("path", {})))
        more = collector.add(kind, data)
        if progress is not None:
            progress.matches = max(progress.matches, collector.matches)
        return more

    code, stderr = _drive(ctx, sorted_command, cwd, fd, readable, progress, take_sorted)
    return collector, _problems(code, stderr, collector)


_ERROR_PATH = re.compile(r"^rg: (\./[^\n]*?): ", re.MULTILINE)
"""The path of one of rg's complaints about a file or folder it could not read (`rg: ./x: Permission denied`)."""


def _problems(code: int, stderr: str, collector: _Collector) -> bool:
    """Whether a file or folder that sorts before the answer's end could not be searched: any, when the answer
    holds every match; else only those up to the file of its last match (what comes after it was never needed,
    and the sorted search, stopped there, never reads it). A complaint whose path cannot be read counts."""
    complaints = [line for line in stderr.splitlines() if line.startswith("rg: ")]
    if not collector.truncated or collector.last_path is None:
        return code == 2 or bool(complaints)
    end = _path_key(collector.last_path)
    for line in complaints:
        found = _ERROR_PATH.match(line)
        if found is None or _path_key(found.group(1).encode("utf-8", "surrogateescape")) <= end:
            return True
    return False


class _SortedRace:
    """The sorted search, started beside the unsorted one once that has seen more than `limit` matches (the
    answer will be cut at `limit`): rg sorting by path stops right after `limit` of them, which for a pattern
    spread over the tree comes long before the unsorted search has read every file. Whichever ends first
    answers; both give the same first `limit` matches in path order. It starts only if a child slot is free
    at once (the unsorted search holds one: waiting for a second could wait on every other search doing the
    same), else the unsorted search goes on alone as before."""

    def __init__(self, ctx: Context, command: list[str], cwd: str, fd: int, readable: list[str],
                 collector: _Collector, on_answer: Callable[[], None]) -> None:
        self.collector = collector
        self.problems = False
        self._ctx = ctx
        self._on_answer = on_answer
        self._child: process.Child | None = None
        self._stopped = threading.Event()
        self._answered = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(command, cwd, fd, readable),
                                        name="shipcode-mcp-sorted-search", daemon=True)
        self._thread.start()

    def _take(self, line: bytes) -> bool:
        message = _message(line)
        return self._stopped.is_set() is False and (message is None or self.collector.add(*message))

    def _started(self, child: process.Child) -> None:
        self._child = child
        if self._stopped.is_set():
            child.kill()

    def _run(self, command: list[str], cwd: str, fd: int, readable: list[str]) -> None:
        try:
            code, stderr = _drive(self._ctx, command, cwd, fd, readable, None, self._take, self._started, wait=False)
        except BaseException:  # busy, cancelled or failed: the unsorted search answers, or says why
            return
        if not self._stopped.is_set():
            self.problems = _problems(code, stderr, self.collector)
            self._answered.set()
            self._on_answer()  # the unsorted search stops at once: its answer would be the same

    def won(self) -> bool:
        """Whether this search answered (then the unsorted one was stopped, or ended meanwhile)."""
        if not self._answered.is_set():
            return False
        self._thread.join()
        return True

    def wait(self) -> None:
        """The unsorted search cannot answer (it gave way, or failed past the limit): wait for this one's end."""
        self._thread.join()

    def stop(self) -> None:
        """The unsorted search answered first: stop this one and wait for its thread."""
        self._stopped.set()
        child = self._child
        if child is not None:
            child.kill()
        self._thread.join()


def _drive(ctx: Context, command: list[str], cwd: str, fd: int, readable: list[str], progress: _Progress | None,
           take: Callable[[bytes], bool], started: Callable[[process.Child], None] | None = None, *,
           wait: bool = True) -> tuple[int, str]:
    """Run rg, giving `take` each line it prints until it returns False (rg is then killed); returns its exit
    status and what it said on stderr (see `_problems`). `started` gets the child as soon as it runs; without
    `wait`, rg starts only if a child slot is free at once (else process.Busy)."""
    saw_output = False
    with process.Child(ctx, command, cwd=cwd, readable=readable, pass_fds=(fd,), timeout=SEARCH_TIMEOUT, what="search",
                       wait=wait) as child:
        if started is not None:
            started(child)
        if progress is not None:
            progress.pid = child.proc.pid
        try:
            for line in child.lines():
                saw_output = True
                if len(line) > COMPACT_BYTES or isinstance(line, process.CutLine):
                    line = _compact(line)
                if not take(line):
                    break
        finally:
            if progress is not None:
                progress.pid = None  # before the pid is reaped and can be reused
        child.kill()
        code = child.wait()
        stderr = child.stderr
        stopped = child.stopped(code)
    if stopped is not None:
        raise ToolError(stopped)
    if code == 2 and not saw_output:
        raise ToolError(_rg_error(stderr))
    return code, stderr


def _rg_error(stderr: str) -> str:
    """rg's complaint about the pattern, without its advice about flags this tool does not have."""
    advice = re.compile(r"--[a-z]|pcre2", re.IGNORECASE)
    lines = [line.removeprefix("rg: ") for line in stderr.strip().splitlines() if not advice.search(line)]
    message = "\n".join(lines[:20]) or "ripgrep failed"
    return f"The search failed: {message}"


def _render(pattern: str, shown: str, collector: _Collector, context: int, problems: bool) -> ToolResult:
    out: list[str] = []
    previous: tuple[str, int] | None = None
    for entry in collector.lines:
        if context and previous is not None and (entry["path"] != previous[0] or entry["line"] != previous[1] + 1):
            out.append("--")
        mark = ":" if entry["match"] else "-"
        out.append(f"{printable(entry['path'])}{mark}{entry['line']}{mark}{entry['text']}")
        previous = (entry["path"], entry["line"])
    found = f"{plural(collector.matches, 'match')} in {plural(len(collector.files), 'file')}"
    if not collector.matches:
        out.append(f"No matches for '{printable(pattern)}' in {place(shown)}.")
    elif collector.truncated:
        out.append(f"[Showing the first {found}; there are more. Narrow the search with path or glob, or raise limit.]")
    else:
        out.append(f"[{found[0].upper()}{found[1:]}.]")
    if problems:
        out.append("[Some files could not be read and were skipped.]")
    data = {
        "pattern": pattern,
        "path": shown,
        "lines": collector.lines,
        "match_count": collector.matches,
        "file_count": len(collector.files),
        "truncated": collector.truncated,
    }
    return result("\n".join(out), data)

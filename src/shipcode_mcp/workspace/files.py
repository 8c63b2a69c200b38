"""Looking at the workspace: list_files (ripgrep's walk) and read_file (numbered lines, in pages).

Both answer in bounded pieces and say how to get the next one, so a model never receives a
megabyte it did not ask for, and never has to guess whether it saw everything.
"""

from __future__ import annotations

import hashlib
import os
from bisect import bisect_right
from itertools import accumulate, repeat
from operator import add
from typing import TYPE_CHECKING

from ..primitives import ToolError
from . import safe_open
from .listing import GlobFilter, walk, walk_readable
from .roots import join_display
from .text import is_binary, place, plural, printable, result, size_text

if TYPE_CHECKING:
    from ..context import Context
    from ..primitives import ToolResult
    from .roots import Roots

READ_BYTES = 256 * 1024
"""read_file returns at most this much text per call; the rest is a call with the next offset away."""
MAX_LINE_CHARS = 2000
"""Longer lines (minified code, data) are cut to this many characters and marked."""
MAX_SCAN_BYTES = 64 * 1024 * 1024
"""read_file looks at most this far into a file, to find a far offset."""
MAX_HASHED_BYTES = 16 * 1024 * 1024
"""read_file gives the SHA-256 of a file up to this size (writes.MAX_WRITE_BYTES, the most the edit tools edit),
read to its end: what an edit's expected_sha256 compares with."""


def list_files(ctx: Context, roots: Roots, path: str, pattern: str | None, limit: int) -> ToolResult:
    real = roots.resolve(path)
    shown = roots.display(real)
    if os.path.isfile(real):
        raise ToolError(f"{printable(shown)} is a file, not a folder; read it with read_file")
    fd = safe_open.open_dir(roots, real, shown)
    try:
        narrow = GlobFilter([pattern] if pattern else [])
        with narrow as flags:
            names = walk(ctx, safe_open.proc_path(fd, real), flags, readable=[*walk_readable(roots.paths), *narrow.files],
                         pass_fds=(fd,))
    finally:
        os.close(fd)
    files = [join_display(shown, name) for name in names[:limit]]
    truncated = len(names) > limit
    lines = [printable(name) for name in files]
    what = f"under {place(shown)}" + (f" matching {printable(pattern)}" if pattern else "")
    if not names:
        lines.append(f"No files {what}.")
    elif truncated:
        lines.append(f"[Showing the first {limit} of {len(names)} files {what}. "
                     "Pass a deeper path or a pattern to narrow the list, or raise limit.]")
    return result("\n".join(lines), {"path": shown, "files": files, "total": len(names), "truncated": truncated})


_KEEP = MAX_LINE_CHARS * 4
"""Bytes kept of a line (UTF-8: at most 4 a character); the rest of a longer line is only counted."""
COUNT_AHEAD = 1024 * 1024
"""After its page, read_file counts the rest of the file's lines only when at most this much of it is left:
a page costs what lies before it plus a bounded amount, never a scan of the whole file."""
_CHUNK = 256 * 1024
_BLOCK = 4096


def read_file(ctx: Context, roots: Roots, path: str, offset: int, limit: int) -> ToolResult:
    real = roots.resolve(path)
    shown = roots.display(real)
    if os.path.isdir(real):
        raise ToolError(f"{printable(shown)} is a folder; use list_files to see what it holds")
    fd, info = safe_open.open_file(roots, real, shown)
    try:
        chunks = _Chunks(ctx, fd, shown, info.st_size)
        page = _read_page(chunks, offset, limit)
    finally:
        os.close(fd)
    if page.beyond:
        raise ToolError(f"offset {offset} is beyond the first {size_text(MAX_SCAN_BYTES)} of {printable(shown)} "
                        f"({size_text(info.st_size)}), which is as far as read_file reads; search_code can still search it")
    if page.total is not None and offset > max(page.total, 1):
        raise ToolError(f"offset {offset} is past the end of {printable(shown)}, which has {plural(page.total, 'line')}")
    return _render(shown, info.st_size, page, chunks.sha256())


class _Chunks:
    """The file's bytes in large chunks, at most MAX_SCAN_BYTES of them; a binary file refused on the first.
    A file the edit tools can edit (up to MAX_HASHED_BYTES) is hashed as it is read."""

    __slots__ = ("ctx", "digest", "eof", "fd", "last", "seen", "shown", "size")

    def __init__(self, ctx: Context, fd: int, shown: str, size: int) -> None:
        self.ctx, self.fd, self.shown, self.size = ctx, fd, shown, size
        self.digest = hashlib.sha256() if size <= MAX_HASHED_BYTES else None
        self.seen = 0
        self.eof = False  # the end of the file was read (not merely the scan limit)
        self.last = b"\n"  # the last byte read

    def next(self) -> bytes | None:
        """The next chunk; None at the end of the file or at the scan limit (`eof` tells which)."""
        if self.eof:
            return None
        if self.seen >= MAX_SCAN_BYTES:
            self.eof = os.read(self.fd, 1) == b""
            return None
        chunk = os.read(self.fd, min(_CHUNK, MAX_SCAN_BYTES - self.seen))
        if not chunk:
            self.eof = True
            return None
        if self.seen == 0 and is_binary(chunk):
            raise ToolError(f"{printable(self.shown)} is a binary file ({size_text(self.size)}); read_file shows text only")
        self.seen += len(chunk)
        self.last = chunk[-1:]
        if self.digest is not None:
            self.digest.update(chunk)
        self.ctx.check_cancelled()
        return chunk

    def sha256(self) -> str | None:
        """The whole file's SHA-256 (hex) once it was read to its end; None when it was not, or is too large."""
        if not self.eof or self.digest is None or self.seen > MAX_HASHED_BYTES:
            return None
        return self.digest.hexdigest()

    def open_end(self) -> int:
        """At the end of the file: 1 when its last line has no newline (it still counts), else 0."""
        return 1 if self.last != b"\n" else 0


class _Page:
    """The lines of one read_file call (each cut to _KEEP bytes), and what is known of the rest."""

    __slots__ = ("beyond", "first", "lines", "long", "total", "used", "widest")

    def __init__(self, first: int) -> None:
        self.first = first
        self.lines: list[bytes] = []
        self.long: dict[int, int] = {}  # line number -> its full length in bytes, for lines kept cut
        self.used = 0  # bytes of text taken, against READ_BYTES
        self.total: int | None = None  # the file's lines, when it was read to its end
        self.beyond = False  # the page starts past MAX_SCAN_BYTES
        self.widest = 0  # the longest line taken, in bytes (as kept): at least its length in characters

    @property
    def end(self) -> int:
        return self.first + len(self.lines) - 1

    def take(self, lines: list[bytes]) -> bool:
        """Add whole lines (without their newline) while the byte budget lasts; False once it ran out.

        Lengths, sums and one bisect: a page of short lines costs no Python code per line."""
        sizes = list(map(len, lines))
        widest = max(sizes)
        if widest > self.widest:
            self.widest = min(widest, _KEEP)
        if widest > _KEEP:  # rare: lines kept cut, their full length remembered
            number = self.first + len(self.lines)
            for index in [index for index, size in enumerate(sizes) if size > _KEEP]:
                self.long[number + index] = sizes[index]
                lines[index] = lines[index][:_KEEP]
                sizes[index] = _KEEP
        # A line fits while the text so far plus the line stays within READ_BYTES (newlines included).
        if self.used + sum(sizes) + len(sizes) <= READ_BYTES + 1:
            self.lines.extend(lines)
            self.used += sum(sizes) + len(sizes)
            return True
        ends = list(accumulate((size + 1 for size in sizes), initial=self.used))[1:]
        fits = bisect_right(ends, READ_BYTES + 1) or (0 if self.lines else 1)  # a page holds at least one line
        self.lines.extend(lines[:fits])
        if fits:
            self.used = ends[fits - 1]
        return False


def _nth_newline(data: bytes, count: int) -> int:
    """The index of the `count`-th newline (1-based) of `data`, which holds at least that many: blocks
    counted in bulk, then a few finds in the last one."""
    start = 0
    while True:
        found = data.count(b"\n", start, start + _BLOCK)
        if found >= count:
            break
        count -= found
        start += _BLOCK
    at = start - 1
    for _ in range(count):
        at = data.find(b"\n", at + 1)
    return at


def _read_page(chunks: _Chunks, offset: int, limit: int) -> _Page:
    """Skip `offset - 1` lines by counting newlines chunk by chunk, split the page's lines off in bulk, then
    count the lines left only when few bytes are (COUNT_AHEAD)."""
    page = _Page(offset)
    data: bytes | None = b""
    skip = offset - 1
    while skip:
        data = chunks.next()
        if data is None:
            if chunks.eof:
                page.total = offset - 1 - skip + chunks.open_end()
            else:
                page.beyond = True
            return page
        found = data.count(b"\n")
        if found < skip:
            skip -= found
            continue
        data = data[_nth_newline(data, skip) + 1:]
        skip = 0
    head: list[bytes] = []  # the kept start of a line begun in an earlier chunk
    head_size = 0  # and its length so far
    while True:
        if data is None:
            data = chunks.next()
            if data is None:
                if not chunks.eof:
                    page.beyond = not page.lines
                    return page  # the rest lies past the scan limit: not counted
                if head_size:  # the last line, without a newline: one more line than the page if it did not fit
                    before = len(page.lines)
                    page.take([_joined(page, head, head_size, b"")])
                    page.total = page.end + (len(page.lines) == before)
                else:
                    page.total = page.end
                return page
        # At most as many splits as lines are wanted: the last piece is the rest, or a line going on.
        pieces = data.split(b"\n", limit - len(page.lines))
        lines = pieces[:-1]
        if lines:
            if head_size:
                lines[0] = _joined(page, head, head_size, lines[0])
                head, head_size = [], 0
            before = len(page.lines)
            if not page.take(lines) or len(page.lines) == limit:
                after = len(lines) - (len(page.lines) - before) + pieces[-1].count(b"\n")
                page.total = _count_rest(chunks, page.end + after)
                return page
        tail = pieces[-1]
        if tail:
            if head_size < _KEEP:
                head.append(tail[:_KEEP - head_size])
            head_size += len(tail)
        data = None


def _joined(page: _Page, head: list[bytes], size: int, end: bytes) -> bytes:
    """A line that spans chunks, from its kept head and the piece that ends it; a long one is kept cut."""
    size += len(end)
    line = b"".join(head) + end[:_KEEP]
    if size > _KEEP:
        page.long[page.first + len(page.lines)] = size
        line = line[:_KEEP]
    return line


def _count_rest(chunks: _Chunks, total: int) -> int | None:
    """The file's line count, given `total` lines up to what was read, if the rest is at most COUNT_AHEAD
    bytes; None (not counted) otherwise."""
    if chunks.size - chunks.seen > COUNT_AHEAD:
        return None
    budget = COUNT_AHEAD
    while (data := chunks.next()) is not None:
        total += data.count(b"\n")
        budget -= len(data)
        if budget < 0:
            return None
    return total + chunks.open_end() if chunks.eof else None


def _whole_chars(raw: bytes) -> bytes:
    """A line kept cut, without the incomplete UTF-8 character the cut may have left at its end."""
    for back in range(1, min(4, len(raw)) + 1):
        byte = raw[-back]
        if byte < 0x80:
            return raw
        if byte >= 0xC0:  # the lead byte of the last character: how long it should be
            return raw[:-back] if (2 if byte < 0xE0 else 3 if byte < 0xF0 else 4) > back else raw
    return raw


_NUMBERED = 20_000
"""The line numbers whose `cat -n` prefix is kept made (a page of the first lines is the common read)."""
_prefixes: list[str] = []


def _numbers(first: int, end: int) -> list[str]:
    """The prefixes of lines first to end - 1: the number right-aligned in six columns (more when it needs
    them, for the whole page alike), then a tab."""
    global _prefixes
    width = max(6, len(str(end)))
    if width > 6 or end > _NUMBERED + 1:
        return list(map("{}\t".format, map(str.rjust, map(str, range(first, end)), repeat(width))))
    made = _prefixes
    if len(made) < end:  # grown in one go and swapped in whole: a thread reading the old list is not disturbed
        made = made + [f"{number:>6}\t" for number in range(len(made), min(_NUMBERED + 1, max(end, 2 * len(made))))]
        _prefixes = made
    return made[first:end]


def _render(shown: str, size: int, page: _Page, sha256: str | None) -> ToolResult:
    """Decode, cut and number the page in bulk; only lines to cut are looked at one by one."""
    lines = page.lines
    first, end, total = page.first, page.end, page.total
    long = {number: full for number, full in page.long.items() if first <= number <= end}
    for number in long:
        lines[number - first] = _whole_chars(lines[number - first])
    raw = b"\n".join(lines)
    joined = raw.decode("utf-8", "replace")
    if "\r" in joined:  # \r\n line ends: a line's last \r goes
        joined = (joined + "\n").replace("\r\n", "\n")[:-1]
    texts = joined.split("\n") if lines else []
    invalid = "\ufffd" in joined and joined.count("\ufffd") > raw.count("\ufffd".encode())
    cut = 0
    if long or (page.widest > MAX_LINE_CHARS and max(map(len, texts)) > MAX_LINE_CHARS):
        for index in [index for index, line in enumerate(texts) if len(line) > MAX_LINE_CHARS or first + index in long]:
            line = texts[index]
            full = long.get(first + index) or len(lines[index].removesuffix(b"\r"))
            texts[index] = line[:MAX_LINE_CHARS] + f"… [line cut: {size_text(full)} in all]"
            cut += 1
        joined = "\n".join(texts)
    numbered = "\n".join(map(add, _numbers(first, end + 1), texts))
    more = total is None or end < total
    next_offset = end + 1 if more and (lines or total is None) else None
    notes: list[str] = []
    if not lines and total == 0:
        notes.append(f"({printable(shown)} is empty)")
    if next_offset is not None:
        if total is not None:
            notes.append(f"[Lines {first}-{end} of {total} in {printable(shown)}. "
                         f"Call read_file with offset={next_offset} to read on.]")
        else:
            notes.append(f"[Lines {first}-{end} of {printable(shown)} ({size_text(size)}), which goes on; lines past "
                         f"this page were not counted. Call read_file with offset={next_offset} to read on.]")
    if cut:
        notes.append(f"[{plural(cut, 'line')} longer than {MAX_LINE_CHARS} characters cut; "
                     "search_code finds text inside them.]")
    if invalid:
        notes.append("[Not valid UTF-8: undecodable bytes are shown as \ufffd.]")
    text = "\n".join([numbered, *notes]) if lines else "\n".join(notes)
    data = {
        "path": shown,
        "text": joined,
        "start_line": first,
        "end_line": end,
        "total_lines": total,
        "next_offset": next_offset,
        "size": size,
        "sha256": sha256,
    }
    return result(text, data)

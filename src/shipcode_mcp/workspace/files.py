"""Looking at the workspace: list_files (ripgrep's walk) and read_file (numbered lines, in pages).

Both answer in bounded pieces and say how to get the next one, so a model never receives a
megabyte it did not ask for, and never has to guess whether it saw everything.
"""

from __future__ import annotations

import codecs
import os
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
"""read_file looks at most this far into a file, to count its lines or to find a far offset."""
_CHUNK = 1 << 16


def list_files(ctx: Context, roots: Roots, path: str = ".", pattern: str | None = None,
               limit: int = 1000) -> ToolResult:
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


class _Page:
    """The lines of one read_file call, gathered while the file streams past."""

    def __init__(self, first: int, count: int) -> None:
        self.first = first
        self.last = first + count - 1  # the last line asked for
        self.lines: list[bytes] = []
        self.long: dict[int, int] = {}  # line number -> its full length in bytes, for lines kept cut
        self.used = 0
        self.full = False  # the byte budget ran out before `last`
        self._partial: list[bytes] = []
        self._partial_size = 0

    @property
    def next_number(self) -> int:
        return self.first + len(self.lines)

    @property
    def done(self) -> bool:
        return self.full or self.next_number > self.last

    def feed(self, number: int, piece: bytes, ends: bool) -> None:
        """`piece` is (part of) line `number`; `ends` when the line's newline followed it."""
        if number != self.next_number or self.done:
            return
        keep = MAX_LINE_CHARS * 4 - self._partial_size  # UTF-8: at most 4 bytes a character
        if keep > 0:
            self._partial.append(piece[:keep])
        self._partial_size += len(piece)
        if ends:
            self.finish_line(number)

    def finish_line(self, number: int) -> None:
        line = b"".join(self._partial)
        if self._partial_size > len(line):
            self.long[number] = self._partial_size
        self._partial, self._partial_size = [], 0
        if self.lines and self.used + len(line) > READ_BYTES:
            self.full = True
            return
        self.lines.append(line)
        self.used += len(line) + 1

    def has_partial(self) -> bool:
        return bool(self._partial) or self._partial_size > 0


def read_file(ctx: Context, roots: Roots, path: str, offset: int = 1, limit: int = 2000) -> ToolResult:
    real = roots.resolve(path)
    shown = roots.display(real)
    if os.path.isdir(real):
        raise ToolError(f"{printable(shown)} is a folder; use list_files to see what it holds")
    fd, info = safe_open.open_file(roots, real, shown)
    try:
        page, total, complete = _read_page(ctx, fd, shown, info.st_size, offset, limit)
    finally:
        os.close(fd)
    if offset > max(total, 1) and complete:
        raise ToolError(f"offset {offset} is past the end of {printable(shown)}, which has {plural(total, 'line')}")
    if not page.lines and not complete:
        raise ToolError(f"offset {offset} is beyond the first {size_text(MAX_SCAN_BYTES)} of {printable(shown)} "
                        f"({size_text(info.st_size)}), which is as far as read_file reads; search_code can still search it")
    return _render(shown, info.st_size, page, total if complete else None)


def _read_page(ctx: Context, fd: int, shown: str, size: int, offset: int, limit: int) -> tuple[_Page, int, bool]:
    """Stream the file once: keep the asked-for lines, count all lines (within MAX_SCAN_BYTES).

    Returns the page, the number of lines seen, and whether the whole file was seen.
    """
    page = _Page(offset, limit)
    number = 1  # the line the next byte belongs to
    seen = 0
    last_byte = b"\n"
    while seen < MAX_SCAN_BYTES:
        chunk = os.read(fd, min(_CHUNK, MAX_SCAN_BYTES - seen))
        if not chunk:
            break
        if seen == 0 and is_binary(chunk):
            raise ToolError(f"{printable(shown)} is a binary file ({size_text(size)}); read_file shows text only")
        seen += len(chunk)
        last_byte = chunk[-1:]
        if page.done:
            number += chunk.count(b"\n")  # only counting now: no need to split
        else:
            pieces = chunk.split(b"\n")
            for index, piece in enumerate(pieces):
                ends = index < len(pieces) - 1
                page.feed(number, piece, ends)
                if ends:
                    number += 1
        ctx.check_cancelled()
    complete = seen < MAX_SCAN_BYTES or os.read(fd, 1) == b""
    if complete and last_byte != b"\n":  # a last line without a newline still counts
        if page.has_partial():
            page.finish_line(number)
        return page, number, True
    return page, number - 1, complete


def _render(shown: str, size: int, page: _Page, total: int | None) -> ToolResult:
    width = max(6, len(str(page.first + len(page.lines))))
    numbered: list[str] = []
    texts: list[str] = []
    invalid = False
    cut = 0
    for index, raw in enumerate(page.lines):
        number = page.first + index
        if raw.endswith(b"\r"):
            raw = raw[:-1]
        # A line kept cut may end inside a character: the incremental decoder leaves that part out.
        line = codecs.getincrementaldecoder("utf-8")("replace").decode(raw, final=number not in page.long)
        invalid = invalid or ("\ufffd" in line and "\ufffd".encode() not in raw)
        if number in page.long or len(line) > MAX_LINE_CHARS:
            cut += 1
            line = line[:MAX_LINE_CHARS] + f"… [line cut: {size_text(page.long.get(number, len(raw)))} in all]"
        texts.append(line)
        numbered.append(f"{number:>{width}}\t{line}")
    end = page.first + len(page.lines) - 1
    more = total is None or end < total
    next_offset = end + 1 if more and (page.lines or total is None) else None
    notes: list[str] = []
    if not page.lines and total == 0:
        notes.append(f"({printable(shown)} is empty)")
    if next_offset is not None:
        of = f"of {total}" if total is not None else (
            f"of a file larger than {size_text(MAX_SCAN_BYTES)}, which is as far as read_file reads")
        notes.append(f"[Lines {page.first}-{end} {of} in {printable(shown)}. Call read_file with offset={next_offset} to read on.]")
    if cut:
        notes.append(f"[{plural(cut, 'line')} longer than {MAX_LINE_CHARS} characters cut; "
                     "search_code finds text inside them.]")
    if invalid:
        notes.append("[Not valid UTF-8: undecodable bytes are shown as \ufffd.]")
    text = "\n".join(numbered + notes)
    data = {
        "path": shown,
        "text": "\n".join(texts),
        "start_line": page.first,
        "end_line": end,
        "total_lines": total,
        "next_offset": next_offset,
        "size": size,
    }
    return result(text, data)


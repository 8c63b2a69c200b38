"""Changing the workspace (only with --allow-write): write_file and edit_file, atomic, with a diff.

A write never lands outside the roots and never leaves a half-written file: the new content goes
to a temporary file in the same folder, reached through folder descriptors opened without
following links, and is renamed over the target (a rename replaces a symlink, it never follows
one). An existing file keeps its mode (and its owner, where we may set it). `.git` folders are
not written: a hook or a config there would run code.
"""

from __future__ import annotations

import os
import stat

from ..primitives import ToolError
from . import safe_open
from .text import is_binary, plural, result, size_text

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..context import RequestContext
    from ..primitives import ToolResult
    from .roots import Roots

MAX_EDIT_BYTES = 16 * 1024 * 1024
"""edit_file works on text files up to this size."""
MAX_DIFF_INPUT = 1024 * 1024
"""Above this size (either side), the diff is summarised rather than computed."""
MAX_DIFF_CHARS = 100_000
"""The returned diff is cut after this many characters."""


def write_file(ctx: RequestContext, roots: Roots, path: str, content: str) -> ToolResult:
    real, shown = _target(roots, path, "write_file")
    data = _encode(content)
    parent, name = safe_open.open_parent(roots, real, shown, create=True)
    try:
        before = safe_open.lstat_in(parent, name, shown)
        old: bytes | None = None
        if before is not None:
            fd, before = safe_open.open_in(roots, parent, name, shown)
            try:
                old = _read_all(fd, before.st_size, MAX_DIFF_INPUT)
            finally:
                os.close(fd)
        safe_open.verify(roots, parent)
        _replace(parent, name, shown, data, before)
    finally:
        os.close(parent)
    created = before is None
    diff = _write_diff(not created, old, data, shown)
    done = f"{'Created' if created else 'Wrote'} {shown} ({size_text(len(data))})"
    text = f"{done}.\n{diff}".rstrip("\n") if diff or created else f"{done}; the content is unchanged."
    return result(text, {"path": shown, "created": created, "size": len(data), "diff": diff})


def edit_file(ctx: RequestContext, roots: Roots, path: str, old_text: str, new_text: str,
              replace_all: bool = False) -> ToolResult:
    real, shown = _target(roots, path, "edit_file")
    if old_text == new_text:
        raise ToolError("old_text and new_text are the same: there is nothing to change")
    parent, name = safe_open.open_parent(roots, real, shown)
    try:
        fd, before = safe_open.open_in(roots, parent, name, shown)
        try:
            raw = _read_all(fd, before.st_size, MAX_EDIT_BYTES)
        finally:
            os.close(fd)
        if raw is None:
            raise ToolError(f"{shown} is {size_text(before.st_size)}; edit_file edits files up to {size_text(MAX_EDIT_BYTES)}")
        text = _decode(raw, shown)
        old, new, count = _occurrences(text, old_text, new_text, shown, replace_all)
        updated = text.replace(old, new) if replace_all else text.replace(old, new, 1)
        data = _encode(updated)
        safe_open.verify(roots, parent)
        _replace(parent, name, shown, data, before)
    finally:
        os.close(parent)
    diff = _write_diff(True, raw if len(raw) <= MAX_DIFF_INPUT else None, data, shown)
    replaced = plural(count, "occurrence")
    return result(f"Replaced {replaced} in {shown}.\n{diff}".rstrip("\n"), {"path": shown, "replacements": count, "diff": diff})


def _target(roots: Roots, path: str, tool: str) -> tuple[str, str]:
    real = roots.resolve(path)
    shown = roots.display(real)
    root = roots.root_of(real) or real
    parts = real[len(root):].split(os.sep)
    if any(part.lower() == ".git" for part in parts):
        raise ToolError(f"Refused: {tool} does not write inside .git folders ({shown})")
    if os.path.isdir(real):
        raise ToolError(f"{shown} is a folder; {tool} writes files")
    return real, shown


def _encode(content: str) -> bytes:
    try:
        return content.encode("utf-8")
    except UnicodeEncodeError:
        raise ToolError("The text contains unpaired surrogate characters and cannot be written as UTF-8") from None


def _decode(raw: bytes, shown: str) -> str:
    if is_binary(raw):
        raise ToolError(f"{shown} is a binary file; edit_file edits text only")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ToolError(f"{shown} is not valid UTF-8; edit_file edits UTF-8 text only (write_file can replace it whole)") from None


def _read_all(fd: int, size: int, limit: int) -> bytes | None:
    """The whole file, or None when it is larger than `limit`."""
    if size > limit:
        return None
    parts: list[bytes] = []
    total = 0
    while chunk := os.read(fd, 1 << 16):
        parts.append(chunk)
        total += len(chunk)
        if total > limit:  # it grew meanwhile
            return None
    return b"".join(parts)


def _occurrences(text: str, old: str, new: str, shown: str, replace_all: bool) -> tuple[str, str, int]:
    """The exact text to replace (adapted to CRLF files), its replacement, and how often it occurs."""
    count = text.count(old)
    if count == 0 and "\r\n" in text and "\n" in old and "\r\n" not in old:
        old, new = old.replace("\n", "\r\n"), new.replace("\n", "\r\n")
        count = text.count(old)
    if count == 0:
        raise ToolError(f"old_text was not found in {shown}. It must match the file exactly, whitespace and "
                        f"indentation included; read the file again and copy the text.{_near_misses(text, old)}")
    if count > 1 and not replace_all:
        lines = _line_numbers(text, old)
        raise ToolError(f"old_text occurs {count} times in {shown} (at lines {lines}). Include more of the "
                        "surrounding lines to make it unique, or set replace_all to replace every occurrence.")
    return old, new, count


def _line_numbers(text: str, needle: str, most: int = 10) -> str:
    found: list[str] = []
    start = text.find(needle)
    while start >= 0 and len(found) < most:
        found.append(str(text.count("\n", 0, start) + 1))
        start = text.find(needle, start + len(needle))
    return ", ".join(found) + (", …" if start >= 0 else "")


def _near_misses(text: str, old: str) -> str:
    """Where the first line of `old_text` occurs with different whitespace, to help the next try."""
    first = next((line.strip() for line in old.splitlines() if line.strip()), "")
    if not first:
        return ""
    numbers = [str(n) for n, line in enumerate(text.splitlines(), 1) if first in line][:5]
    if not numbers:
        return ""
    return f" Its first line, ignoring surrounding whitespace, appears at line(s) {', '.join(numbers)}."


def _replace(parent: int, name: str, shown: str, data: bytes, before: os.stat_result | None) -> None:
    """Atomically make `name` in folder `parent` hold `data`: a temporary file, then a rename."""
    import secrets

    temp = f".{name[:200]}.{secrets.token_hex(6)}.tmp"
    mode = stat.S_IMODE(before.st_mode) if before is not None else 0o666
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(temp, flags, mode, dir_fd=parent)
    except OSError as err:
        raise safe_open.os_error(err, shown) from None
    try:
        try:
            if before is not None:
                os.fchmod(fd, mode)  # the umask applied at creation; an existing file keeps its exact mode
                _keep_owner(fd, before)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
        if before is not None:
            now = safe_open.lstat_in(parent, name, shown)
            if now is None or (now.st_ino, now.st_size, now.st_mtime_ns) != (before.st_ino, before.st_size, before.st_mtime_ns):
                raise ToolError(f"{shown} changed while it was being written; nothing was written. Read it again and retry")
        os.replace(temp, name, src_dir_fd=parent, dst_dir_fd=parent)
    except BaseException as err:
        try:
            os.unlink(temp, dir_fd=parent)
        except OSError:
            pass
        if isinstance(err, OSError):
            raise safe_open.os_error(err, shown) from None
        raise
    try:
        os.fsync(parent)  # the rename itself survives a crash
    except OSError:
        pass


def _keep_owner(fd: int, before: os.stat_result) -> None:
    if hasattr(os, "fchown") and (before.st_uid, before.st_gid) != (os.geteuid(), os.getegid()):
        try:
            os.fchown(fd, before.st_uid, before.st_gid)
        except PermissionError:
            pass  # only root may give a file away; the content is what matters


def _write_diff(existed: bool, old: bytes | None, new: bytes, shown: str) -> str:
    if (existed and old is None) or len(new) > MAX_DIFF_INPUT:
        return f"(no diff: {shown} is larger than {size_text(MAX_DIFF_INPUT)})\n"
    before = old.decode("utf-8", "replace") if old is not None else ""
    return unified_diff(before, new.decode("utf-8", "replace"), shown, created=not existed)


def unified_diff(old: str, new: str, shown: str, *, created: bool) -> str:
    """A git-style unified diff of `shown` ('' when nothing changed), cut after MAX_DIFF_CHARS."""
    import difflib

    from_name = "/dev/null" if created else _prefixed("a", shown)
    out: list[str] = []
    size = 0
    for line in difflib.unified_diff(_lines(old), _lines(new), from_name, _prefixed("b", shown), n=3):
        if not line.endswith("\n"):
            line += "\n\\ No newline at end of file\n"
        out.append(line)
        size += len(line)
        if size > MAX_DIFF_CHARS:
            out.append(f"[diff cut after {MAX_DIFF_CHARS} characters]\n")
            break
    return "".join(out)


def _prefixed(side: str, shown: str) -> str:
    return f"{side}{shown}" if shown.startswith("/") else f"{side}/{shown}"


def _lines(text: str) -> list[str]:
    """Lines with their newlines; only '\\n' ends a line (unlike str.splitlines)."""
    lines = [line + "\n" for line in text.split("\n")]
    lines[-1] = lines[-1][:-1]
    return lines if lines[-1] else lines[:-1]

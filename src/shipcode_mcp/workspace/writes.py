"""Changing the workspace (only with --allow-write): write_file and edit_file, atomic, with a diff.

A write never lands outside the roots and never leaves a half-written file: the new content goes
to a temporary file in the same folder, reached through folder descriptors opened without
following links, and is renamed over the target (a rename replaces a symlink, it never follows
one). Where the filesystem offers O_TMPFILE the temporary file has no name until it is complete,
and then only for the instant before the rename; elsewhere it has a name for the whole write. Such
names are only ours, and a later write to the same folder removes those a killed writer left.

A write must not plant code that git would run later: nothing is written inside `.git` (in any
case or spelling a filesystem treats alike), nor inside, nor so as to complete, a folder git would
take for a repository (`HEAD` with `objects/` and `refs/`, or `HEAD` with `commondir`: git's own
test); its config could name a pager or a hook that the user's next git command runs.

A replaced file keeps its mode and its owner: one its owner may not write (no owner write bit), or
one whose owner or group this server could not give back, is refused rather than silently changed.
Every result is bounded: neither tool leaves a file larger than MAX_WRITE_BYTES.
"""

from __future__ import annotations

import difflib
import errno
import fcntl
import hashlib
import os
import re
import secrets
import stat
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from ..primitives import ToolError
from . import linediff, safe_open
from .text import is_binary, place, plural, printable, result, size_text, split_lines
from .tools import code_available

if TYPE_CHECKING:
    from ..context import Context
    from ..primitives import ToolResult
    from .roots import Roots

MAX_WRITE_BYTES = 16 * 1024 * 1024
"""The largest file either tool leaves behind (UTF-8 bytes): write_file's content, edit_file's result."""
MAX_DIFF_INPUT = 1024 * 1024
"""Above this size (either side), the diff is summarised rather than computed."""
MAX_DIFF_CHARS = 100_000
"""The returned diff is cut after this many characters."""
DIFFING = threading.Semaphore(1)
"""One large diff computed at a time: a diff is pure Python, so threads computing several at once gain nothing
under the GIL but contention. 32 at once held pings up to 1.5 s (p99) and each diff got a 32nd of its time
budget (linediff.DIFF_SECONDS); one at a time, pings stay under 50 ms (p99) and every diff has its whole budget."""
QUICK_DIFF_AREA = 100_000
"""A diff whose changed area (the product of the line counts left once `_shared_ends` are set aside) is at
most this is computed at once, without waiting for DIFFING (milliseconds, whatever the file's size: most
edits change a few lines of it)."""
DIFF_WAIT = 10.0
"""Seconds a large diff waits for DIFFING, then the write answers without it: queued behind others' large
diffs (each up to linediff.DIFF_SECONDS), an answer would wait for all of them."""
DIFFLIB_LINES = 1_000_000
"""Texts whose line counts multiply to at most this are diffed by difflib (quadratic at worst: some 0.1 s
here); larger ones by linediff, in O(n log n) steps and a budget."""
STALE_TEMP_SECONDS = 300
"""A temporary file of ours untouched for this long belongs to a writer that died: a later write there
removes it. A folder is looked through at most once in this time: a large folder is slow to look through."""
LOCK_WAIT_SECONDS = 30.0
"""How long a write waits for another write under the same root to finish."""

USE_TMPFILE = hasattr(os, "O_TMPFILE") and os.path.isdir("/proc/self/fd")
"""Write through an unnamed O_TMPFILE, linked under a name only once complete (Linux)."""
_TEMP_NAME = re.compile(r"\.shipcode-[0-9a-f]{16}\.tmp")
"""Our temporary names, and only ours: what the clean-up may remove."""
_swept: dict[tuple[int, int], float] = {}
"""Folders (device, inode) looked through for stale temporary files, and when."""

_IGNORED = dict.fromkeys([0x200C, 0x200D, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x206A, 0x2070), 0xFEFF])
"""Code points HFS+ ignores in names (git's is_hfs_dotgit list): '.g\u200cit' is '.git' there."""
_SIGNATURE = ("HEAD", "objects", "refs", "commondir")
"""The entries git's is_git_directory looks for (commondir stands in for objects and refs)."""


def write_file(ctx: Context, roots: Roots, path: str, content: str, dry_run: bool, allow_syntax_errors: bool,
               expected_sha256: str | None) -> ToolResult:
    real, shown = target(roots, path, "write_file")
    data = encode(content)
    if len(data) > MAX_WRITE_BYTES:
        raise ToolError(f"The content is {size_text(len(data))} as UTF-8; write_file writes files up to "
                        f"{size_text(MAX_WRITE_BYTES)} (and edit_file leaves none larger)")
    with _guarded(ctx, roots, real, shown, "write_file"):
        before: os.stat_result | None = None
        old: bytes | None = None
        if not dry_run or os.path.isdir(os.path.dirname(real)):  # a dry run makes no folder
            parent, name = safe_open.open_parent(roots, real, shown, create=not dry_run)
            try:
                before = safe_open.lstat_in(parent, name, shown)
                if before is not None:
                    old, before = read_in(roots, parent, name, shown,
                                          MAX_WRITE_BYTES if expected_sha256 is not None else MAX_DIFF_INPUT)
                if expected_sha256 is not None:
                    check_version(old if before is not None else None, before, expected_sha256, shown, "write_file")
                    if old is not None and len(old) > MAX_DIFF_INPUT:
                        old = None  # compared whole; too large to diff
                if not allow_syntax_errors:
                    refuse_syntax_errors(ctx, real, shown, None if old is None else old.decode("utf-8", "replace"),
                                         content, "write_file")
                if not dry_run:
                    safe_open.verify(roots, parent)
                    replace(parent, name, shown, data, before, "write_file")
            finally:
                os.close(parent)
        else:
            if expected_sha256 is not None:
                check_version(None, None, expected_sha256, shown, "write_file")
            if not allow_syntax_errors:
                refuse_syntax_errors(ctx, real, shown, None, content, "write_file")
    created = before is None
    diff = write_diff(ctx, not created, old, data, shown)
    if dry_run:
        done = f"Dry run: would {'create' if created else 'write'} {printable(shown)} ({size_text(len(data))}); nothing was written"
    else:
        done = f"{'Created' if created else 'Wrote'} {printable(shown)} ({size_text(len(data))})"
    text = f"{done}.\n{diff}".rstrip("\n") if diff or created else f"{done}; the content is unchanged."
    edited = [(real, shown, None if old is None else old.decode("utf-8", "replace"), content)] \
        if (created or old is not None) and diff else []  # (an old text too large to diff: not checked)
    return checked_result(ctx, roots, text, {"path": shown, "created": created, "size": len(data), "diff": diff}, edited)


def edit_file(ctx: Context, roots: Roots, path: str, old_text: str | None, new_text: str | None, replace_all: bool,
              edits: list[dict[str, Any]] | None, dry_run: bool, allow_syntax_errors: bool,
              expected_sha256: str | None) -> ToolResult:
    named = target(roots, path, "edit_file")[1]
    steps = _steps(old_text, new_text, replace_all, edits)
    count = 0

    def edited(text: str, size: int) -> str:
        nonlocal count
        updated, count = _edited(text, size, steps, named)
        return updated

    shown, diff, change = rewrite(ctx, roots, path, "edit_file", edited, dry_run, allow_syntax_errors, expected_sha256)
    replaced = plural(count, "occurrence") + (f" in {len(steps)} edits" if len(steps) > 1 else "")
    done = f"Dry run: would replace {replaced} in {printable(shown)}; nothing was written" if dry_run else \
        f"Replaced {replaced} in {printable(shown)}"
    return checked_result(ctx, roots, f"{done}.\n{diff}".rstrip("\n"), {"path": shown, "replacements": count, "diff": diff},
                          change)


SHOWN_DIAGNOSTICS = 20
"""New diagnostics a write's text lists at most (structuredContent has them all)."""


def checked_result(ctx: Context, roots: Roots, text: str, structured: dict[str, Any],
                   edited: list[tuple[str, str, str | None, str]]) -> ToolResult:
    """A write's result, with the language server's new diagnostics of the edited files (`new_diagnostics`:
    with --precise, where it is ready; it is never waited for). `edited` is (real, shown, text before or None
    for a new file, text after) of each file changed."""
    found: list[dict[str, Any]] = []
    note = None
    if edited and code_available():
        from .code import precise  # the language servers: only with the code tools, on a write of code

        if precise.enabled():
            try:
                found, note = precise.new_diagnostics(roots, edited, ctx.check_cancelled)
            except ToolError as err:  # (the write is done: its result says so, whatever the server did)
                note = str(err)
    lines = [text]
    if found:
        errors = sum(item["severity"] == "error" for item in found)
        lines.append(f"[New from the language server: {plural(errors, 'error')}, {plural(len(found) - errors, 'warning')} "
                     "in the edited files:]")
        lines += [f"  {printable(item['path'])}:{item['line']}:{item['column']}: {item['severity']} [{item['code']}] "
                  f"{printable(item['message'])}" for item in found[:SHOWN_DIAGNOSTICS]]
        if len(found) > SHOWN_DIAGNOSTICS:
            lines.append(f"  [… {len(found) - SHOWN_DIAGNOSTICS} more in structuredContent]")
    if note is not None:
        lines.append(f"[Type checks: {note}.]")
    return result("\n".join(lines), {**structured, "new_diagnostics": found})


def rewrite(ctx: Context, roots: Roots, path: str, tool: str, change: Callable[[str, int], str], dry_run: bool,
            allow_syntax_errors: bool, expected_sha256: str | None = None,
            ) -> tuple[str, str, list[tuple[str, str, str | None, str]]]:
    """Change an existing text file: `change` makes the new text from the old (and its size in bytes) or
    raises ToolError, under the root's write lock; the syntax check, then (unless `dry_run`) the atomic
    replace. The file as shown, the diff, and the file as `checked_result` takes it (none if unchanged).
    With `expected_sha256`, the file must be that version."""
    real, shown = target(roots, path, tool)
    with _guarded(ctx, roots, real, shown, tool):
        parent, name = safe_open.open_parent(roots, real, shown)
        try:
            raw, before = read_in(roots, parent, name, shown, MAX_WRITE_BYTES)
            if raw is None:
                raise ToolError(f"{printable(shown)} is {size_text(before.st_size)}; {tool} edits files up to "
                                f"{size_text(MAX_WRITE_BYTES)}")
            if expected_sha256 is not None:
                check_version(raw, before, expected_sha256, shown, tool)
            text = decode(raw, shown, tool)
            updated = change(text, len(raw))
            data = encode(updated)
            if len(data) > MAX_WRITE_BYTES:
                raise ToolError(f"Refused: the change would make {printable(shown)} {size_text(len(data))}; {tool} "
                                f"leaves files of at most {size_text(MAX_WRITE_BYTES)}. Nothing was written.")
            if not allow_syntax_errors:
                refuse_syntax_errors(ctx, real, shown, text, updated, tool)
            if not dry_run and data != raw:  # (a change to the same text writes nothing)
                safe_open.verify(roots, parent)
                replace(parent, name, shown, data, before, tool)
        finally:
            os.close(parent)
    return shown, write_diff(ctx, True, raw if len(raw) <= MAX_DIFF_INPUT else None, data, shown), \
        [(real, shown, text, updated)] if data != raw else []


def check_version(raw: bytes | None, before: os.stat_result | None, expected: str, shown: str, tool: str) -> None:
    """Refuse a write to a file that is not the version the caller read (`expected`: the SHA-256 read_file
    gave, in hex): another client, or the user, changed it since. Read under the root's write lock, so no
    write of ours comes between this check and the write; `before` None: there is no such file."""
    if before is None:
        raise ToolError(f"Refused: {printable(shown)} does not exist, so it is not the version expected_sha256 names "
                        f"(it was deleted or moved since it was read); nothing was written")
    if raw is None:
        raise ToolError(f"Refused: {printable(shown)} is {size_text(before.st_size)}, too large to compare with "
                        f"expected_sha256 (at most {size_text(MAX_WRITE_BYTES)}); nothing was written")
    now = hashlib.sha256(raw).hexdigest()
    if now != expected.lower():
        raise ToolError(f"Refused: {printable(shown)} changed since it was read (its sha256 is now {now}, not "
                        f"{expected.lower()}); read it again and redo the change on what it holds now. Nothing was "
                        f"written by {tool}.")


def _steps(old_text: str | None, new_text: str | None, replace_all: bool,
           edits: list[dict[str, Any]] | None) -> list[tuple[str, str, bool]]:
    """The edits asked: one (old_text, new_text) or the list `edits`, never both; each changes something."""
    if edits is not None:
        if old_text is not None or new_text is not None:
            raise ToolError("Give either old_text and new_text (one edit) or edits (several), not both")
        if not edits:
            raise ToolError("edits is empty: there is nothing to change")
        steps = [(edit["old_text"], edit["new_text"], bool(edit.get("replace_all"))) for edit in edits]
    elif old_text is None or new_text is None:
        raise ToolError("edit_file needs old_text and new_text (one edit), or edits (several)")
    else:
        steps = [(old_text, new_text, replace_all)]
    for number, (old, new, _) in enumerate(steps, 1):
        if old == new:
            where = f"edit {number}: " if len(steps) > 1 else ""
            raise ToolError(f"{where}old_text and new_text are the same: there is nothing to change")
    return steps


def _edited(text: str, size: int, steps: list[tuple[str, str, bool]], shown: str) -> tuple[str, int]:
    """The text after each edit in turn (each sees the ones before), and the occurrences replaced; a ToolError
    naming the edit that does not apply, and then nothing is written."""
    total = 0
    for number, (old_text, new_text, replace_all) in enumerate(steps, 1):
        try:
            old, new, count = _occurrences(text, old_text, new_text, shown, replace_all)
            _check_result_size(size, encode(old), encode(new), count, shown)
        except ToolError as err:
            if len(steps) == 1:
                raise
            raise ToolError(f"Edit {number} of {len(steps)}: {err} Nothing was written (the edits apply all or none; "
                            "each one sees the text the edits before it left)") from None
        text = text.replace(old, new) if replace_all else text.replace(old, new, 1)
        size += count * (len(encode(new)) - len(encode(old)))
        total += count
    return text, total


def refuse_syntax_errors(ctx: Context, real: str, shown: str, old: str | None, new: str, tool: str) -> None:
    """Refuse a write that adds syntax errors to a file of a language the code tools read (code/guard.py),
    when they are installed (the `code` extra); the file is left as it is."""

    if not code_available():
        return
    from .code.guard import SHOWN_ERRORS, added_syntax_errors  # the parse worker: only where there is code

    errors = added_syntax_errors(real, old, new, ctx.check_cancelled)
    if isinstance(errors, str) or not errors:
        return
    listed = "\n".join(f"  {printable(shown)}:{line}:{column}: {printable(message)}"
                       for line, column, message in errors[:SHOWN_ERRORS])
    more = f"\n  ... and {len(errors) - SHOWN_ERRORS} more" if len(errors) > SHOWN_ERRORS else ""
    raise ToolError(f"Refused: {tool} would leave {printable(shown)} with syntax errors it did not have; nothing was "
                    f"written:\n{listed}{more}\nCorrect the change, or pass allow_syntax_errors: true to write it as it is.")


def _check_result_size(size: int, old: bytes, new: bytes, count: int, shown: str) -> None:
    """Refuse, before building it, an edit whose result would exceed MAX_WRITE_BYTES (replace_all can multiply)."""
    after = size + count * (len(new) - len(old))
    if after > MAX_WRITE_BYTES:
        raise ToolError(f"Refused: replacing {plural(count, 'occurrence')} would make {printable(shown)} "
                        f"{size_text(after)}; edit_file leaves files of at most {size_text(MAX_WRITE_BYTES)} "
                        "(the limit of write_file too). Nothing was written.")


def entry(roots: Roots, given: str, tool: str) -> tuple[str, str]:
    """The path `given` names, a symbolic link being itself (Roots.entry), and how to show it; never a root,
    never inside `.git`."""
    real = roots.entry(given)
    shown = roots.display(real)
    root = roots.root_of(real)
    if real in roots.paths or root is None:
        raise ToolError(f"Refused: {printable(shown)} is a workspace root; {tool} works inside the roots")
    inner = next((path for path in roots.paths if path.startswith(real + os.sep)), None)
    if inner is not None:
        raise ToolError(f"Refused: {printable(shown)} holds the workspace root {printable(roots.display(inner))}; "
                        f"{tool} works inside the roots")
    if any(is_dotgit(part) for part in real[len(root):].split(os.sep)):
        raise ToolError(f"Refused: {tool} does not touch .git folders ({printable(shown)})")
    return real, shown


def target(roots: Roots, path: str, tool: str) -> tuple[str, str]:
    real = roots.resolve(path)
    shown = roots.display(real)
    root = roots.root_of(real) or real
    parts = real[len(root):].split(os.sep)
    if any(is_dotgit(part) for part in parts):
        raise ToolError(f"Refused: {tool} does not write inside .git folders ({printable(shown)})")
    if os.path.isdir(real):
        raise ToolError(f"{printable(shown)} is a folder; {tool} writes files")
    return real, shown


def _plain(name: str) -> str:
    """`name` as a case-insensitive filesystem (NTFS, HFS+) would compare it."""
    return name.translate(_IGNORED).lower()


def is_dotgit(name: str) -> bool:
    """`.git` in any case, and the spellings NTFS and HFS+ take for it ('.git.', '.git ', 'git~1', '.g\u200cit')."""
    plain = _plain(name)
    return plain.rstrip(" .") == ".git" or plain == "git~1"


def _signature_name(name: str) -> str | None:
    """Which of git's repository entries `name` is (or would be on a case-insensitive filesystem)."""
    plain = _plain(name)
    return next((entry for entry in _SIGNATURE if entry.lower() == plain), None)


@contextmanager
def _guarded(ctx: Context, roots: Roots, real: str, shown: str, tool: str) -> Iterator[None]:
    """Hold the root's write lock, and refuse a write that would plant a git repository, for the whole write."""
    root = roots.root_of(real) or real  # `real` was resolved inside a root by target
    with root_lock(ctx, roots, root, shown) as fd:
        refuse_planting(roots, fd, root, [real], tool)
        yield


@contextmanager
def root_lock(ctx: Context, roots: Roots, root: str, shown: str) -> Iterator[int]:
    """Hold the write lock of `root` (flock on the root folder, so also between server processes serving the
    same root), and give its descriptor. Under it, a check and the write it allows are one step: two
    concurrent writes, one making `objects/` and the other `refs/` next to a `HEAD`, cannot each see the
    other's half missing."""
    try:
        fd = os.open(root, safe_open.DIR_FLAGS)
    except OSError as err:
        raise safe_open.os_error(err, shown) from None
    try:
        deadline = time.monotonic() + LOCK_WAIT_SECONDS
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise ToolError(f"Another write under {place(roots.display(root))} has not finished after "
                                    f"{LOCK_WAIT_SECONDS:.0f} s; nothing was written. Retry later") from None
                ctx.check_cancelled()
                time.sleep(0.01)
        yield fd
    finally:
        os.close(fd)  # releases the lock


def refuse_planting(roots: Roots, root_fd: int, root: str, reals: list[str], tool: str) -> None:
    """Refuse writing the files `reals` (all under `root`, written together) when a folder on the way to one
    is a git repository, or would be one once they are all written."""
    paths = [[part for part in real[len(root):].split(os.sep) if part] for real in reals]
    added: dict[tuple[str, ...], set[str]] = {}
    for parts in paths:
        for depth, name in enumerate(parts):
            signature = _signature_name(name)
            if signature is not None:
                added.setdefault(tuple(parts[:depth]), set()).add(signature)
    for parts in paths:
        _refuse_planting(roots, root_fd, root, parts, tool, added)


def _refuse_planting(roots: Roots, root_fd: int, root: str, parts: list[str], tool: str,
                     added: dict[tuple[str, ...], set[str]] | None = None) -> None:
    """Refuse when a folder on the way to the target is a git repository, or would be one after the write
    (`added`: the repository entries each folder gains from the files written with it, by folder parts).

    A folder the write creates holds only what the write adds to it: with one file, one entry, and git
    needs two.
    """
    fd: int | None = root_fd
    try:
        for depth, name in enumerate(parts):
            present = {entry for entry in _SIGNATURE if fd is not None and _exists(fd, entry)}
            gained = set(added.get(tuple(parts[:depth]), ())) if added is not None else set()
            signature = _signature_name(name)
            if signature is not None:
                gained.add(signature)
            if _is_repository(present | gained):
                folder = place(roots.display(os.path.join(root, *parts[:depth])))
                if _is_repository(present):
                    raise ToolError(f"Refused: git takes {folder} for a repository (it holds HEAD with objects/ and "
                                    f"refs/, or with commondir), and {tool} does not write inside one: its config "
                                    "could name programs git would run")
                raise ToolError(f"Refused: writing {printable(name)} would make {folder} a git repository (HEAD with "
                                "objects/ and refs/, or with commondir, is what git takes for one), whose config could "
                                f"name programs the next git command there runs; {tool} does not plant repositories")
            if depth == len(parts) - 1 or (fd is None and added is None):
                return
            below: int | None = None
            if fd is not None:
                try:
                    below = os.open(name, safe_open.DIR_FLAGS, dir_fd=fd)
                except OSError:
                    below = None  # missing (made by the write) or not a plain folder (the write itself refuses it)
            if fd is not None and fd != root_fd:
                os.close(fd)
            fd = below
    finally:
        if fd is not None and fd != root_fd:
            os.close(fd)


def is_repository_listing(names: list[str]) -> bool:
    """Whether a folder holding these entries is one git takes for a repository (names compared as a
    case-insensitive filesystem compares them)."""
    return _is_repository({signature for name in names if (signature := _signature_name(name)) is not None})


def _is_repository(entries: set[str]) -> bool:
    return "HEAD" in entries and ({"objects", "refs"} <= entries or "commondir" in entries)


def _exists(fd: int, name: str) -> bool:
    try:
        os.stat(name, dir_fd=fd, follow_symlinks=False)
    except OSError:
        return False
    return True


def encode(content: str) -> bytes:
    try:
        return content.encode("utf-8")
    except UnicodeEncodeError:
        raise ToolError("The text contains unpaired surrogate characters and cannot be written as UTF-8") from None


def decode(raw: bytes, shown: str, tool: str = "edit_file") -> str:
    if is_binary(raw):
        raise ToolError(f"{printable(shown)} is a binary file; {tool} edits text only")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ToolError(f"{printable(shown)} is not valid UTF-8; {tool} edits UTF-8 text only "
                        "(write_file can replace it whole)") from None


def read_in(roots: Roots, parent: int, name: str, shown: str, limit: int) -> tuple[bytes | None, os.stat_result]:
    """The regular file `name` of folder `parent` (safe_open.open_in: no link followed) read whole, None when it
    is larger than `limit`, and its stat."""
    fd, info = safe_open.open_in(roots, parent, name, shown)
    try:
        return read_all(fd, info.st_size, limit), info
    finally:
        os.close(fd)


def read_all(fd: int, size: int, limit: int) -> bytes | None:
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
        raise ToolError(f"old_text was not found in {printable(shown)}. It must match the file exactly, whitespace and "
                        f"indentation included; read the file again and copy the text.{_near_misses(text, old)}")
    if count > 1 and not replace_all:
        lines = _line_numbers(text, old)
        raise ToolError(f"old_text occurs {count} times in {printable(shown)} (at lines {lines}). Include more of the "
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


def replace(parent: int, name: str, shown: str, data: bytes, before: os.stat_result | None, tool: str,
            mode: int | None = None, exclusive: bool = False) -> None:
    """Atomically make `name` in folder `parent` hold `data`: a complete temporary file, then a rename. It
    keeps the mode of the file it replaces unless `mode` is given (a new file's mode is `mode` less the umask).
    `exclusive`: the file is new, and whatever appears at its name meanwhile is kept (a link, not a rename)."""
    if before is not None:
        refuse_foreign(before, shown, tool)
    _remove_stale_temps(parent)
    if mode is None:
        mode = stat.S_IMODE(before.st_mode) if before is not None else 0o666
    fd, temp = _open_temp(parent, shown, mode)
    try:
        try:
            if before is not None:
                _keep_owner(fd, before, shown, tool)  # first: a chown clears the set-user-ID and set-group-ID bits
                os.fchmod(fd, mode)  # the umask applied at creation; an existing file keeps its exact mode
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
            if before is not None:
                now = safe_open.lstat_in(parent, name, shown)
                if now is None or (now.st_ino, now.st_size, now.st_mtime_ns) != (
                        before.st_ino, before.st_size, before.st_mtime_ns):
                    raise ToolError(f"{printable(shown)} changed while it was being written; nothing was written. "
                                    "Read it again and retry")
            if temp is None:
                temp = _link_temp(fd, parent)
        finally:
            os.close(fd)
        if exclusive:
            try:
                os.link(temp, name, src_dir_fd=parent, dst_dir_fd=parent, follow_symlinks=False)
            except FileExistsError:
                raise ToolError(f"{printable(shown)} appeared while it was being written; it was left as it is. "
                                "Read it and retry") from None
            os.unlink(temp, dir_fd=parent)
        else:
            os.replace(temp, name, src_dir_fd=parent, dst_dir_fd=parent)
    except BaseException as err:
        if temp is not None:
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


def refuse_foreign(before: os.stat_result, shown: str, tool: str) -> None:
    """Refuse to replace what its owner could not change in place: a read-only file, or another user's file
    whose owner we could not give back (only root can); replacing either would silently defeat the owner."""
    mode = stat.S_IMODE(before.st_mode)
    if not mode & stat.S_IWUSR:
        raise ToolError(f"Refused: {printable(shown)} is read-only (mode {mode:04o}: not even its owner may write "
                        f"it), and {tool} does not replace such a file. Make it writable first if it should change.")
    euid = os.geteuid()
    if before.st_uid != euid and euid != 0:
        raise ToolError(f"Refused: {printable(shown)} belongs to another user (uid {before.st_uid}); replacing it would "
                        f"make it this server's (uid {euid}), so {tool} does not write it.")


def _keep_owner(fd: int, before: os.stat_result, shown: str, tool: str) -> None:
    """Give the new file the old one's owner and group, or refuse the write."""
    uid = before.st_uid if before.st_uid != os.geteuid() else -1
    gid = before.st_gid if before.st_gid != os.getegid() else -1
    if uid == -1 and gid == -1:
        return
    try:
        os.fchown(fd, uid, gid)
    except OSError as err:
        if err.errno not in (errno.EPERM, errno.EINVAL):
            raise
        owner = f"owner (uid {before.st_uid})" if uid != -1 else f"group (gid {before.st_gid})"
        raise ToolError(f"Refused: {printable(shown)} could not keep its {owner} if replaced, so {tool} does not "
                        "write it.") from None


def _open_temp(parent: int, shown: str, mode: int) -> tuple[int, str | None]:
    """A new file to write in folder `parent`, and its name (None: unnamed, O_TMPFILE, until `_link_temp`)."""
    if USE_TMPFILE:
        try:
            return os.open(".", os.O_TMPFILE | os.O_WRONLY | safe_open.CLOEXEC, mode, dir_fd=parent), None
        except OSError as err:
            if err.errno not in (errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL, errno.ENOENT):
                raise safe_open.os_error(err, shown) from None
            # this filesystem has no O_TMPFILE: a named file, which a later write cleans up if we die
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | safe_open.NOFOLLOW | safe_open.CLOEXEC
    for _ in range(3):
        temp = _temp_name()
        try:
            return os.open(temp, flags, mode, dir_fd=parent), temp
        except FileExistsError:
            continue
        except OSError as err:
            raise safe_open.os_error(err, shown) from None
    raise ToolError(f"Could not create a temporary file next to {printable(shown)}")


def _link_temp(fd: int, parent: int) -> str:
    """Give the complete O_TMPFILE file `fd` a temporary name in `parent` (to rename over the target)."""
    for _ in range(3):
        temp = _temp_name()
        try:
            os.link(safe_open.proc_path(fd, ""), temp, dst_dir_fd=parent, follow_symlinks=True)  # linkat AT_SYMLINK_FOLLOW
            return temp
        except FileExistsError:
            continue
    raise OSError(errno.EEXIST, "no free temporary name")


def _temp_name() -> str:
    return f".shipcode-{secrets.token_hex(8)}.tmp"


def _remove_stale_temps(parent: int) -> None:
    """Remove our temporary files that a killed writer left in `parent`, at most once every STALE_TEMP_SECONDS
    a folder: looking through a folder of 50 000 entries on every write would slow every write down."""
    now = time.time()
    oldest = now - STALE_TEMP_SECONDS
    try:
        info = os.fstat(parent)
        folder = (info.st_dev, info.st_ino)
        if _swept.get(folder, 0.0) > oldest:
            return
        if len(_swept) > 4096:
            for key in [key for key, when in _swept.items() if when <= oldest]:
                del _swept[key]
        _swept[folder] = now
        with os.scandir(parent) as entries:
            stale = [entry.name for entry in entries if _TEMP_NAME.fullmatch(entry.name)
                     and entry.is_file(follow_symlinks=False) and entry.stat(follow_symlinks=False).st_mtime < oldest]
        for name in stale:
            os.unlink(name, dir_fd=parent)
    except OSError:
        pass  # a clean-up: never a reason to fail the write


def write_diff(ctx: Context, existed: bool, old: bytes | None, new: bytes, shown: str, *, deleted: bool = False) -> str:
    """The diff of a write (`deleted`: the file is removed), computed at once when small, else one at a time."""
    if (existed and old is None) or len(new) > MAX_DIFF_INPUT:
        return f"(no diff: {printable(shown)} is larger than {size_text(MAX_DIFF_INPUT)})\n"
    before = split_lines(old.decode("utf-8", "replace")) if old is not None else []
    after = split_lines(new.decode("utf-8", "replace"))
    ends = _shared_ends(before, after)
    if (len(before) - sum(ends)) * (len(after) - sum(ends)) <= QUICK_DIFF_AREA:
        return _unified(before, after, shown, created=not existed, ends=ends, deleted=deleted)
    waited = time.monotonic() + DIFF_WAIT
    while not DIFFING.acquire(timeout=0.05):  # the write is done: a cancelled call need not wait for its diff
        if ctx.cancelled or time.monotonic() > waited:
            why = "the call was cancelled" if ctx.cancelled else "the server is computing other large diffs"
            return f"(no diff: {why}; git_diff or read_file shows what changed in {printable(shown)})\n"
    try:
        return _unified(before, after, shown, created=not existed, ends=ends, deleted=deleted)
    finally:
        DIFFING.release()


def _shared_ends(before: list[str], after: list[str]) -> tuple[int, int]:
    """How many lines the two share at their start, then at their end (the two never overlap)."""
    shortest = min(len(before), len(after))
    start = 0
    while start < shortest and before[start] == after[start]:
        start += 1
    end = 0
    while end < shortest - start and before[-1 - end] == after[-1 - end]:
        end += 1
    return start, end


def unified_diff(old: str, new: str, shown: str, *, created: bool) -> str:
    """A git-style unified diff of `shown` ('' when nothing changed), cut after MAX_DIFF_CHARS."""
    return _unified(split_lines(old), split_lines(new), shown, created=created)


def _unified(before: list[str], after: list[str], shown: str, *, created: bool,
             ends: tuple[int, int] | None = None, deleted: bool = False) -> str:
    """The diff of the part that changed and CONTEXT lines around it (a line changed in a long file costs
    the comparison of its ends, not a diff of the whole), its hunks numbered as in the whole file; `ends`:
    `_shared_ends` of the two, when the caller has them already."""
    from_name = "/dev/null" if created else _prefixed("a", shown)
    to_name = "/dev/null" if deleted else _prefixed("b", shown)
    start, end = ends if ends is not None else _shared_ends(before, after)
    skip, tail = max(0, start - CONTEXT), max(0, end - CONTEXT)
    before, after = before[skip:len(before) - tail], after[skip:len(after) - tail]
    out: list[str] = []
    size = 0
    cut = False
    if len(before) * len(after) <= DIFFLIB_LINES:
        lines: Iterable[str] = difflib.unified_diff(before, after, from_name, to_name, n=CONTEXT)
    else:
        lines, cut = linediff.unified(before, after, from_name, to_name, CONTEXT)
    if skip:
        lines = (_HUNK.sub(lambda hunk: _shifted(hunk, skip), line, count=1) if line.startswith("@@") else line
                 for line in lines)
    for line in lines:
        if not line.endswith("\n"):
            line += "\n\\ No newline at end of file\n"
        out.append(line)
        size += len(line)
        if size > MAX_DIFF_CHARS:
            out.append(f"[diff cut after {MAX_DIFF_CHARS} characters]\n")
            break
    if cut:
        out.append("[diff not minimal: past its time budget, some unchanged lines are shown removed and added]\n")
    return "".join(out)


CONTEXT = 3
"""Unchanged lines shown around each change, as git shows them."""
_HUNK = re.compile(r"^@@ -(\d+)((?:,\d+)?) \+(\d+)((?:,\d+)?) @@")


def _shifted(hunk: re.Match[str], skip: int) -> str:
    """A hunk header of the window numbered as in the whole file (`skip` lines before the window)."""
    return f"@@ -{int(hunk[1]) + skip}{hunk[2]} +{int(hunk[3]) + skip}{hunk[4]} @@"


def _prefixed(side: str, shown: str) -> str:
    """The ---/+++ name of a diff header, masked: a name with a line break must not forge a diff line."""
    return f"{side}{printable(shown)}" if shown.startswith("/") else f"{side}/{printable(shown)}"


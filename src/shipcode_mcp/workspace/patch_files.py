"""apply_patch (only with --allow-write): one call changes several files, all or nothing.

The patch (patch_text.py reads both formats) is applied in memory first, file by file in its order, each
step seeing the ones before it (a file patched twice, a file moved then changed). Only when every file
applies is anything written, under the write lock of every root concerned (taken in one order, so two
patches cannot wait on each other). Each file is then replaced as write_file replaces one (a complete
temporary file renamed over it; its mode and owner kept), so a server killed midway leaves each file
whole, old or new. A write that fails midway (a file changed under us, a full disk) puts back the files
already written. The confinement of write_file holds for every path of the patch: inside the roots, never
inside `.git`, never planting a repository.
"""

from __future__ import annotations

import os
import stat
from contextlib import ExitStack
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..primitives import ToolError
from . import safe_open
from .binary_patch import BinaryPatchError, apply_binary, blob_id
from .hunk_placing import apply
from .patch_text import FilePatch, PatchError, parse
from .text import plural, printable, size_text
from .writes import (
    MAX_DIFF_CHARS,
    MAX_WRITE_BYTES,
    checked_result,
    decode,
    encode,
    entry,
    read_in,
    refuse_planting,
    refuse_syntax_errors,
    replace,
    root_lock,
    target,
    write_diff,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..context import Context
    from ..primitives import ToolResult
    from .roots import Roots

TOOL = "apply_patch"
MAX_PATCH_FILES = 10_000
"""A patch changes at most this many files."""
MAX_HELD_BYTES = 256 * 1024 * 1024
"""The files a patch reads and makes are held in memory until it is written: at most this much in all."""


@dataclass
class _File:
    """One file the patch touches: what it held when read (None: absent) and what it is to hold."""

    real: str
    shown: str
    before: bytes | None
    info: os.stat_result | None
    text: str | None
    mode: int | None = None
    inherit: int | None = None
    source: str | None = None
    binary: bytes | None = None
    """What the file is to hold when it is not UTF-8 text (a binary patch's result, or a binary file as read)."""
    origin: bytes | None = None
    """A moved or copied file: what its source held (what it was, for the checks after the change)."""

    @property
    def kept(self) -> bool:
        """Whether the file is there after the patch (with text, or binary content)."""
        return self.text is not None or self.binary is not None

    @property
    def data(self) -> bytes:
        """What the file is to hold, as bytes."""
        return self.binary if self.binary is not None else encode(self.text or "")


def apply_patch(ctx: Context, roots: Roots, patch: str, dry_run: bool, allow_syntax_errors: bool) -> ToolResult:
    try:
        changes = parse(patch)
    except PatchError as err:
        raise ToolError(f"Nothing was written: the patch cannot be read: {err}") from None
    if len(changes) > MAX_PATCH_FILES:
        raise ToolError(f"The patch changes {len(changes)} files; apply_patch applies at most {MAX_PATCH_FILES} "
                        "at once. Split it.")
    paths = [(change, _resolved(roots, change.old_path), _resolved(roots, change.new_path)) for change in changes]
    concerned = sorted({roots.root_of(real) or real for _, old, new in paths for real in (old, new) if real})
    with ExitStack() as locks:
        held = {root: locks.enter_context(root_lock(ctx, roots, root, roots.display(root))) for root in concerned}
        try:
            files = _applied(ctx, roots, paths)
        except ToolError as err:
            raise ToolError(f"Nothing was written: {err}") from None
        changed = [file for file in files.values() if _changes(file)]
        for root, fd in held.items():
            refuse_planting(roots, fd, root, [file.real for file in changed if file.kept
                                              and roots.root_of(file.real) == root], TOOL)
        if not allow_syntax_errors:
            for file in changed:
                if file.text is not None:
                    refuse_syntax_errors(ctx, file.real, file.shown, _old_text(file), file.text, TOOL)
        diff = _diffs(ctx, changed)
        if not dry_run:
            _write_all(ctx, roots, changed)
    listed = [_listed(file) for file in changed]
    summary = "\n".join(f"{item['action']} " + (f"{printable(item['from'])} -> " if item["from"] else "")
                        + printable(item["path"]) for item in listed)
    if not changed:
        head = "The patch changes nothing: every file already holds what it makes."
    elif dry_run:
        head = f"Dry run: the patch applies and would change {plural(len(changed), 'file')}; nothing was written."
    else:
        head = f"Applied the patch: {plural(len(changed), 'file')} changed."
    text = "\n".join(part for part in (head, summary, diff.rstrip("\n")) if part)
    return checked_result(ctx, roots, text, {"files": listed, "diff": diff, "dry_run": dry_run}, _edited(changed))


def rewrite_files(ctx: Context, roots: Roots, changes: dict[str, Callable[[str], str]], tool: str, dry_run: bool,
                  allow_syntax_errors: bool) -> tuple[list[dict[str, Any]], str, list[tuple[str, str, str | None, str]]]:
    """Change several existing text files at once, all or nothing, as apply_patch writes (rename_symbol's
    writer): under the write lock of every root concerned, each file is read and `changes[real]` makes its new
    text from the old (or raises ToolError); then the syntax check, and unless `dry_run` every file written, or,
    if one fails, none. The files changed as the result lists them, their diff, and the files as
    writes.checked_result takes them."""
    concerned = sorted({roots.root_of(real) or real for real in changes})
    with ExitStack() as locks:
        for root in concerned:
            locks.enter_context(root_lock(ctx, roots, root, roots.display(root)))
        files = []
        held = 0
        for real, change in changes.items():
            ctx.check_cancelled()
            file = _read(roots, real, tool)
            if not file.kept:
                raise ToolError(f"{printable(file.shown)} no longer exists; nothing was written")
            if file.text is None:  # not text: decode says why, as every write says it
                file.text = decode(file.before or b"", file.shown, tool)
            held += 2 * len(file.before or b"")
            if held > MAX_HELD_BYTES:
                raise ToolError(f"{tool} would change more than {size_text(MAX_HELD_BYTES // 2)} of files at once; "
                                "nothing was written")
            file.text = change(file.text)
            files.append(file)
        changed = [file for file in files if _changes(file)]
        if not allow_syntax_errors:
            for file in changed:
                refuse_syntax_errors(ctx, file.real, file.shown, _old_text(file), file.text or "", tool)
        diff = _diffs(ctx, changed)
        if not dry_run:
            _write_all(ctx, roots, changed)
    return [_listed(file) for file in changed], diff, _edited(changed)


def _edited(files: list[_File]) -> list[tuple[str, str, str | None, str]]:
    """The files changed and kept (not deleted), as writes.checked_result takes them."""
    return [(file.real, file.shown, _old_text(file) if file.origin is None else file.origin.decode("utf-8", "replace"),
             file.text) for file in files if file.text is not None]


def _resolved(roots: Roots, path: str | None) -> str | None:
    """The file a patch names: a symbolic link is refused (git apply would change the link, not what it
    points to; move_path and delete_path act on a link itself), and so is a folder."""
    if path is None:
        return None
    real, shown = entry(roots, path, TOOL)
    if os.path.islink(real):
        raise ToolError(f"{printable(shown)} is a symbolic link; apply_patch changes regular files (move_path or "
                        "delete_path act on the link itself)")
    return target(roots, real, TOOL)[0]


def _applied(ctx: Context, roots: Roots, paths: list[tuple[FilePatch, str | None, str | None]]) -> dict[str, _File]:
    """Every file the patch touches, read once, with the text the patch leaves in it; ToolError naming the
    file and the hunk when one does not apply."""
    files: dict[str, _File] = {}
    held = 0

    def current(real: str) -> _File:
        nonlocal held
        file = files.get(real)
        if file is None:
            file = files[real] = _read(roots, real)
            held += 2 * len(file.before or b"")
            if held > MAX_HELD_BYTES:
                raise ToolError(f"The patch touches more than {size_text(MAX_HELD_BYTES)} of files; apply it in "
                                "parts.")
        return file

    for change, old_real, new_real in paths:
        ctx.check_cancelled()
        where = f"{change.shown} (line {change.line} of the patch)"
        source = current(old_real) if old_real is not None else None
        if source is not None and not source.kept:
            raise ToolError(f"{where}: {printable(source.shown)} does not exist, so the patch cannot "
                            f"{'delete' if new_real is None else 'change'} it.")
        dest = current(new_real) if new_real is not None else None
        moved = dest is not None and source is not None and dest.real != source.real
        if dest is not None and dest.kept and (source is None or moved):
            raise ToolError(f"{where}: {printable(dest.shown)} already exists; the patch "
                            f"{'creates' if source is None else 'moves a file onto'} it (change the existing file "
                            "instead, or delete it first)")
        if change.binary is not None:
            _apply_binary(change, source, dest, moved, where)
            continue
        if source is not None and source.text is None:
            raise ToolError(f"{where}: {printable(source.shown)} is not UTF-8 text, so a text patch cannot change it "
                            "(a binary file's change is a git diff --binary patch)")
        preimage = source.text if source is not None else None
        if moved and source is not None and not change.codex and source.before is not None:
            preimage = _old_text(source)  # a git rename or copy reads the file as it was: no order among its parts
            if not change.copy and source.text != preimage:
                raise ToolError(f"{where}: the patch changes {printable(source.shown)} and also renames it; a rename "
                                "reads the file as it was (as git apply does), so that change would be lost: put "
                                "it in the rename's hunks")
        try:
            text = apply(change, preimage, ctx.check_cancelled)
        except PatchError as err:
            raise ToolError(str(err)) from None
        if dest is None:
            assert source is not None
            if not change.codex and text:
                raise ToolError(f"{where}: the patch deletes {printable(source.shown)} but "
                                f"{'its hunks do not remove all of it' if change.hunks else 'holds none of its lines'} "
                                "(the file differs from what the patch expects; git apply refuses it too)")
            source.text = source.binary = None
            continue
        if len(encode(text)) > MAX_WRITE_BYTES:
            raise ToolError(f"{where}: the patch would make {printable(dest.shown)} larger than "
                            f"{size_text(MAX_WRITE_BYTES)}.")
        held += len(text)
        if moved and source is not None:
            dest.source, dest.origin = source.shown, source.before
            if source.info is not None and dest.info is None:
                dest.inherit = stat.S_IMODE(source.info.st_mode)  # a moved or copied file keeps its mode
            if not change.copy:
                source.text = source.binary = None
        dest.text, dest.binary = text, None
        if change.mode is not None:
            dest.mode = change.mode
    return files


def _apply_binary(change: FilePatch, source: _File | None, dest: _File | None, moved: bool, where: str) -> None:
    """A binary patch's change (binary_patch.py): the file it was made from, checked by its object id, made
    into the one its object id names; or deleted, when it is that file."""
    assert change.binary is not None
    before = source.before if source is not None else None
    old_id, new_id = change.ids or (None, None)
    try:
        made = apply_binary(change.binary, old_id, new_id, before, change.shown)
    except BinaryPatchError as err:
        raise ToolError(f"{where}: {err}") from None
    if dest is None:
        assert source is not None
        if made:
            raise ToolError(f"{where}: the patch deletes {printable(source.shown)} but leaves {len(made)} bytes in it")
        source.text = source.binary = None
        return
    if moved and source is not None:
        dest.source, dest.origin = source.shown, source.before
        if source.info is not None and dest.info is None:
            dest.inherit = stat.S_IMODE(source.info.st_mode)
        if not change.copy:
            source.text = source.binary = None
    # Text made by a binary patch (a file git was told is binary) is text: its diff shown, its syntax checked.
    dest.text, dest.binary = (made.decode("utf-8"), None) if _is_text(made) else (None, made)
    if change.mode is not None:
        dest.mode = change.mode


def _read(roots: Roots, real: str, tool: str = TOOL) -> _File:
    """The file as it is now (absent when nothing is at that path or on the way to it)."""
    shown = roots.display(real)
    if not os.path.lexists(real):
        return _File(real, shown, None, None, None)
    parent, name = safe_open.open_parent(roots, real, shown)
    try:
        raw, info = read_in(roots, parent, name, shown, MAX_WRITE_BYTES)
    finally:
        os.close(parent)
    if raw is None:
        raise ToolError(f"{printable(shown)} is larger than {size_text(MAX_WRITE_BYTES)}; {tool} changes files up "
                        "to that size.")
    try:
        return _File(real, shown, raw, info, decode(raw, shown, tool))
    except ToolError:  # not text: only a binary patch changes it (`_applied`, `rewrite_files` say so)
        return _File(real, shown, raw, info, None, binary=raw)


def _old_text(file: _File) -> str | None:
    """What the file held before the patch, as text (None: it did not exist)."""
    return None if file.before is None else file.before.decode("utf-8", "replace")


def _changes(file: _File) -> bool:
    """Whether the patch leaves the file other than it found it (its content, its presence or its mode)."""
    if not file.kept:
        return file.before is not None
    if file.before is None:
        return True
    return file.data != file.before or _new_mode(file) != stat.S_IMODE(file.info.st_mode if file.info else 0)


def _new_mode(file: _File) -> int | None:
    """The mode the file gets: the patch's executable bit applied to its mode now (a new file: the patch's)."""
    if file.info is None:
        if file.mode is not None:
            return 0o777 if file.mode == 0o755 else 0o666
        return file.inherit
    mode = stat.S_IMODE(file.info.st_mode)
    if file.mode == 0o755:
        return mode | (mode & 0o444) >> 2
    if file.mode == 0o644:
        return mode & ~0o111
    return mode


def _listed(file: _File) -> dict[str, Any]:
    """How the result lists a file: A added, M modified, D deleted, R moved (`from` its old path)."""
    if not file.kept:
        action = "D"
    elif file.source is not None:
        action = "R"
    else:
        action = "A" if file.before is None else "M"
    return {"path": file.shown, "action": action, "from": file.source if action == "R" else None}


def _diffs(ctx: Context, files: list[_File]) -> str:
    """The diff of each file in turn, until MAX_DIFF_CHARS in all (a 10 000-file patch would say megabytes)."""
    parts: list[str] = []
    size = 0
    for done, file in enumerate(files):
        if size > MAX_DIFF_CHARS:
            parts.append(f"[diff cut after {plural(done, 'file')} of {len(files)}; git_diff or read_file shows the rest]\n")
            break
        part = _diff(ctx, file)
        parts.append(part)
        size += len(part)
    return "".join(parts)


def _diff(ctx: Context, file: _File) -> str:
    if file.binary is not None or (file.text is None and file.before is not None and not _is_text(file.before)):
        before = "no file" if file.before is None else f"{size_text(len(file.before))}, {blob_id(file.before)[:12]}"
        after = f"{size_text(len(file.binary))}, {blob_id(file.binary)[:12]}" if file.binary is not None else "deleted"
        return f"Binary file {printable(file.shown)}: {before} -> {after}\n"
    new = file.data if file.kept else b""
    return write_diff(ctx, file.before is not None, file.before, new, file.shown, deleted=not file.kept)


def _is_text(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _write_all(ctx: Context, roots: Roots, files: list[_File]) -> None:
    """Write each file (deletions last, so that a move's new file exists before its old one goes); on a
    failure, put back those already written and raise."""
    done: list[_File] = []
    order = [file for file in files if file.kept] + [file for file in files if not file.kept]
    ctx.check_cancelled()  # the last moment a cancellation stops the patch whole
    for file in order:
        try:
            _write(roots, file)
        except BaseException as err:
            failed = _undo(roots, done)
            note = (" The files already written were put back." if not failed else
                    f" Putting back the files already written failed for {', '.join(map(printable, failed))}: check them.")
            if isinstance(err, ToolError):
                raise ToolError(f"{err} (while applying the patch to {printable(file.shown)}).{note}") from None
            raise
        done.append(file)


def _write(roots: Roots, file: _File) -> None:
    parent, name = safe_open.open_parent(roots, file.real, file.shown, create=file.kept)
    try:
        now = safe_open.lstat_in(parent, name, file.shown)
        if not _same(now, file.info):
            raise ToolError(f"{printable(file.shown)} changed while the patch was being applied; read it again and "
                            "retry")
        safe_open.verify(roots, parent)
        if not file.kept:
            try:
                os.unlink(name, dir_fd=parent)
            except OSError as err:
                raise safe_open.os_error(err, file.shown) from None
            _prune(roots, os.path.dirname(file.real))
        else:
            replace(parent, name, file.shown, file.data, file.info, TOOL, _new_mode(file),
                    exclusive=file.info is None)
    finally:
        os.close(parent)


def _prune(roots: Roots, folder: str) -> None:
    """Remove the folders a deletion left empty, as git apply does, up to (never including) their root."""
    root = roots.root_of(folder)
    while root is not None and folder not in roots.paths and folder.startswith(root + os.sep):
        try:
            parent, name = safe_open.open_parent(roots, folder, roots.display(folder))
        except ToolError:
            return
        try:
            os.rmdir(name, dir_fd=parent)
        except OSError:
            return  # not empty (or not ours to remove): the folders above are not empty either
        finally:
            os.close(parent)
        folder = os.path.dirname(folder)


def _same(now: os.stat_result | None, then: os.stat_result | None) -> bool:
    if now is None or then is None:
        return now is None and then is None
    return (now.st_ino, now.st_size, now.st_mtime_ns) == (then.st_ino, then.st_size, then.st_mtime_ns)


def _undo(roots: Roots, done: list[_File]) -> list[str]:
    """Put back what `done` held before the patch; the files it could not put back."""
    failed: list[str] = []
    for file in reversed(done):
        try:
            parent, name = safe_open.open_parent(roots, file.real, file.shown, create=True)
            try:
                now = safe_open.lstat_in(parent, name, file.shown)
                if file.before is None:
                    if now is not None:
                        os.unlink(name, dir_fd=parent)
                else:
                    replace(parent, name, file.shown, file.before, now, TOOL,
                            stat.S_IMODE(file.info.st_mode) if file.info is not None else None)
            finally:
                os.close(parent)
        except (OSError, ToolError):
            failed.append(file.shown)
    return failed

"""create_directory, move_path and delete_path (only with --allow-write): the file operations an agent
needs beside editing, held to the rules of every write.

A path names the entry itself: a symbolic link is moved or deleted, never what it points to (its folder
is resolved inside the roots, its last component is taken as written). Nothing is done to a workspace
root, nor inside a `.git` folder, nor to a folder holding one (a nested repository is not deleted or
moved wholesale), and no folder or name is created that would complete a git repository. Each tool
holds the write lock of the root concerned (both roots for a move between two), works through folder
descriptors opened without following links, and takes `dry_run`.

A move never replaces an existing path unless `overwrite` is set, and then only a file by a file (the
kernel's RENAME_NOREPLACE makes the refusal atomic where it exists). A deletion of a folder is asked
for with `recursive`; it removes at most MAX_DELETE_ENTRIES entries, deepest first, unlinking links
rather than following them.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from contextlib import ExitStack
from typing import TYPE_CHECKING

from ..primitives import ToolError
from . import safe_open
from .text import plural, printable, result
from .writes import entry, is_dotgit, is_repository_listing, refuse_foreign, refuse_planting, root_lock

if TYPE_CHECKING:
    from ..context import Context
    from ..primitives import ToolResult
    from .roots import Roots

MAX_DELETE_ENTRIES = 100_000
"""delete_path removes at most this many files and folders in one call."""
RENAME_NOREPLACE = 1


def create_directory(ctx: Context, roots: Roots, path: str, dry_run: bool) -> ToolResult:
    real, shown = entry(roots, path, "create_directory")
    root = roots.root_of(real) or real
    with root_lock(ctx, roots, root, shown) as root_fd:
        refuse_planting(roots, root_fd, root, [real], "create_directory")
        existing = _lstat(roots, real, shown)
        if existing is not None and not stat.S_ISDIR(existing.st_mode):
            kind = "a file" if stat.S_ISREG(existing.st_mode) else safe_open.kind_of(existing.st_mode)
            raise ToolError(f"{printable(shown)} exists and is {kind}, not a folder")
        if existing is None and not dry_run:
            parent, name = safe_open.open_parent(roots, real, shown, create=True)
            try:
                safe_open.verify(roots, parent)
                os.mkdir(name, 0o777, dir_fd=parent)
            except FileExistsError:
                pass  # made meanwhile by someone else: what was asked is there
            except OSError as err:
                raise safe_open.os_error(err, shown) from None
            finally:
                os.close(parent)
    if existing is not None:
        text = f"{printable(shown)} already exists; nothing to do."
    elif dry_run:
        text = f"Dry run: would create the folder {printable(shown)} (and the folders above it that are missing); nothing was made."
    else:
        text = f"Created the folder {printable(shown)}."
    return result(text, {"path": shown, "created": existing is None, "dry_run": dry_run})


def move_path(ctx: Context, roots: Roots, source: str, destination: str, overwrite: bool, dry_run: bool) -> ToolResult:
    src, src_shown = entry(roots, source, "move_path")
    dst, dst_shown = entry(roots, destination, "move_path")
    if dst == src:
        raise ToolError(f"{printable(src_shown)} and {printable(dst_shown)} are the same path: nothing to move")
    if dst.startswith(src + os.sep):
        raise ToolError(f"Refused: {printable(dst_shown)} is inside {printable(src_shown)}; a folder cannot move into itself")
    concerned = sorted({roots.root_of(src) or src, roots.root_of(dst) or dst})
    with ExitStack() as locks:
        held = {root: locks.enter_context(root_lock(ctx, roots, root, roots.display(root))) for root in concerned}
        dst_root = roots.root_of(dst) or dst
        refuse_planting(roots, held[dst_root], dst_root, [dst], "move_path")
        moved = _lstat(roots, src, src_shown)
        if moved is None:
            raise ToolError(f"Not found: {printable(src_shown)}")
        src_root = roots.root_of(src) or src
        refuse_planting(roots, held[src_root], src_root, [src], "move_path")  # nothing leaves a repository
        is_folder = stat.S_ISDIR(moved.st_mode)
        if is_folder:
            _refuse_repositories(ctx, roots, src, src_shown, "move_path", count=False)
        there = _lstat(roots, dst, dst_shown)
        if there is not None:
            if not overwrite:
                raise ToolError(f"{printable(dst_shown)} already exists; move_path does not replace it unless "
                                "overwrite is true")
            if (there.st_dev, there.st_ino) == (moved.st_dev, moved.st_ino):
                raise ToolError(f"{printable(src_shown)} and {printable(dst_shown)} are the same file (hard links); "
                                "nothing to move")
            if not stat.S_ISREG(moved.st_mode) or not stat.S_ISREG(there.st_mode):
                raise ToolError(f"Refused: {printable(dst_shown)} exists and overwrite replaces only a file by a file "
                                "(delete_path removes a folder or a link first)")
            refuse_foreign(there, dst_shown, "move_path")
        if not dry_run:
            _rename(roots, src, src_shown, dst, dst_shown, replace=there is not None)
    what = "folder" if is_folder else "link" if stat.S_ISLNK(moved.st_mode) else "file"
    done = (f"Dry run: would move the {what} {printable(src_shown)} to {printable(dst_shown)}; nothing was moved."
            if dry_run else f"Moved the {what} {printable(src_shown)} to {printable(dst_shown)}.")
    if there is not None:
        done += f" {'It would replace' if dry_run else 'It replaced'} the file that was there."
    return result(done, {"source": src_shown, "destination": dst_shown, "kind": what, "replaced": there is not None,
                         "dry_run": dry_run})


def delete_path(ctx: Context, roots: Roots, path: str, recursive: bool, dry_run: bool) -> ToolResult:
    real, shown = entry(roots, path, "delete_path")
    root = roots.root_of(real) or real
    with root_lock(ctx, roots, root, shown) as root_fd:
        info = _lstat(roots, real, shown)
        if info is None:
            raise ToolError(f"Not found: {printable(shown)}")
        refuse_planting(roots, root_fd, root, [real], "delete_path")  # nothing inside a repository goes
        is_folder = stat.S_ISDIR(info.st_mode)
        if not is_folder:
            files, folders = 1, 0
        else:
            files, folders = _refuse_repositories(ctx, roots, real, shown, "delete_path", count=True)
            if files + folders > 1 and not recursive:
                raise ToolError(f"{printable(shown)} is a folder holding {plural(files + folders - 1, 'item')}; "
                                "delete_path deletes a folder and what it holds only when recursive is true")
        if not dry_run:
            _delete(ctx, roots, real, shown, is_folder)
    counted = ", ".join(part for part in (plural(files, "file") if files else "", plural(folders, "folder")
                                         if folders else "") if part)
    text = (f"Dry run: would delete {printable(shown)} ({counted}); nothing was deleted." if dry_run
            else f"Deleted {printable(shown)} ({counted}).")
    return result(text, {"path": shown, "files": files, "folders": folders, "dry_run": dry_run})


# -- the parts --------------------------------------------------------------------------------------------
def _lstat(roots: Roots, real: str, shown: str) -> os.stat_result | None:
    """The entry itself (a link not followed), None when it or a folder on its way is missing."""
    try:
        parent, name = safe_open.open_parent(roots, real, shown)
    except ToolError:
        if not os.path.lexists(os.path.dirname(real)):
            return None
        raise
    try:
        return safe_open.lstat_in(parent, name, shown)
    finally:
        os.close(parent)


def _refuse_repositories(ctx: Context, roots: Roots, real: str, shown: str, tool: str, count: bool) -> tuple[int, int]:
    """Walk the folder (links not followed) before anything is done to it: refuse when it holds a `.git` or a
    folder git takes for a repository anywhere, a folder it cannot list (what it holds is unknown), or a
    mount of another filesystem; with `count`, the files (links and special files included) and folders
    in it, the folder itself included, refusing past MAX_DELETE_ENTRIES."""
    fd = safe_open.open_dir(roots, real, shown)
    files, folders = 0, 1

    def unlisted(err: OSError) -> None:
        where = printable(roots.display(os.path.normpath(os.path.join(real, err.filename or ""))))
        raise ToolError(f"Refused: {printable(shown)} holds a folder that cannot be listed ({where}: "
                        f"{err.strerror}); {tool} does not act on what it cannot see")

    mounted = _mount_at_or_under(real)
    if mounted is not None:
        os.close(fd)
        raise ToolError(f"Refused: {printable(roots.display(mounted) if roots.root_of(mounted) else mounted)} is a "
                        f"mount point at or inside {printable(shown)}; {tool} does not act across mounts")
    try:
        device = os.fstat(fd).st_dev
        for top, dirs, names, dir_fd in os.fwalk(".", dir_fd=fd, follow_symlinks=False, onerror=unlisted):
            ctx.check_cancelled()
            here = os.path.normpath(os.path.join(real, top))
            if os.fstat(dir_fd).st_dev != device:
                raise ToolError(f"Refused: {printable(roots.display(here))} is another filesystem mounted inside "
                                f"{printable(shown)}; {tool} stays on one filesystem")
            for name in dirs + names:
                if is_dotgit(name):
                    raise ToolError(f"Refused: {printable(shown)} holds a git repository "
                                    f"({printable(roots.display(os.path.join(here, name)))}); {tool} does not touch "
                                    ".git folders, so not a folder holding one either")
            if is_repository_listing(dirs + names):
                raise ToolError(f"Refused: {printable(roots.display(here))} is a git repository (HEAD beside objects/ "
                                f"and refs/); {tool} does not touch one")
            links = sum(stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode) for name in dirs)
            folders += len(dirs) - links
            files += len(names) + links
            if count and files + folders > MAX_DELETE_ENTRIES:
                raise ToolError(f"Refused: {printable(shown)} holds more than {MAX_DELETE_ENTRIES} entries; "
                                "delete_path deletes at most that many in one call (delete its parts)")
    finally:
        os.close(fd)
    return files, folders


def _mount_at_or_under(real: str) -> str | None:
    """A mount point at `real` or inside it, from the kernel's table (/proc/self/mountinfo): a bind mount of
    the same filesystem has the same device number, so the walk's comparison of devices cannot see it."""
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="surrogateescape") as table:
            for line in table:
                fields = line.split(" ")
                if len(fields) > 4:
                    point = re.sub(r"\\([0-7]{3})", lambda escape: chr(int(escape[1], 8)), fields[4])
                    if point == real or point.startswith(real + os.sep):
                        return point
    except OSError:
        return None  # no table (not Linux): the device comparison of the walk is what there is
    return None


def _rename(roots: Roots, src: str, src_shown: str, dst: str, dst_shown: str, replace: bool) -> None:
    """Rename through the folders' descriptors (the destination's folders made as needed); without
    `replace`, atomically refused when something is there by then."""
    src_parent, src_name = safe_open.open_parent(roots, src, src_shown)
    try:
        dst_parent, dst_name = safe_open.open_parent(roots, dst, dst_shown, create=True)
        try:
            safe_open.verify(roots, src_parent)
            safe_open.verify(roots, dst_parent)
            if replace:
                os.rename(src_name, dst_name, src_dir_fd=src_parent, dst_dir_fd=dst_parent)
            else:
                _rename_noreplace(src_parent, src_name, dst_parent, dst_name)
        except OSError as err:
            if err.errno == errno.EEXIST or err.errno == errno.ENOTEMPTY:
                raise ToolError(f"{printable(dst_shown)} appeared meanwhile; nothing was moved") from None
            raise safe_open.os_error(err, src_shown) from None
        finally:
            os.close(dst_parent)
    finally:
        os.close(src_parent)


def _rename_noreplace(src_fd: int, src: str, dst_fd: int, dst: str) -> None:
    """renameat2(RENAME_NOREPLACE) where the kernel and the filesystem have it; else a check just before a
    plain rename (the root's write lock keeps this server's own writes out of the gap)."""
    import ctypes  # only for a move

    libc = ctypes.CDLL(None, use_errno=True)
    renameat2 = getattr(libc, "renameat2", None)
    if renameat2 is not None:
        if renameat2(src_fd, os.fsencode(src), dst_fd, os.fsencode(dst), RENAME_NOREPLACE) == 0:
            return
        code = ctypes.get_errno()
        if code not in (errno.ENOSYS, errno.EINVAL):
            raise OSError(code, os.strerror(code))
    try:
        os.stat(dst, dir_fd=dst_fd, follow_symlinks=False)
    except FileNotFoundError:
        os.rename(src, dst, src_dir_fd=src_fd, dst_dir_fd=dst_fd)
        return
    raise OSError(errno.EEXIST, os.strerror(errno.EEXIST))


def _delete(ctx: Context, roots: Roots, real: str, shown: str, is_folder: bool) -> None:
    """Remove the entry: a file or link unlinked, a folder emptied deepest first (links unlinked, never
    followed), then removed."""
    parent, name = safe_open.open_parent(roots, real, shown)
    try:
        safe_open.verify(roots, parent)
        if not is_folder:
            os.unlink(name, dir_fd=parent)
            return
        fd = os.open(name, safe_open.DIR_FLAGS, dir_fd=parent)
        try:
            for _, dirs, names, dir_fd in os.fwalk(".", dir_fd=fd, topdown=False, follow_symlinks=False):
                ctx.check_cancelled()
                for entry in names:
                    os.unlink(entry, dir_fd=dir_fd)
                for entry in dirs:
                    if stat.S_ISLNK(os.stat(entry, dir_fd=dir_fd, follow_symlinks=False).st_mode):
                        os.unlink(entry, dir_fd=dir_fd)
                    else:
                        os.rmdir(entry, dir_fd=dir_fd)
        finally:
            os.close(fd)
        os.rmdir(name, dir_fd=parent)
    except OSError as err:
        if not is_folder:
            raise safe_open.os_error(err, shown) from None
        raise ToolError(f"Deleting {printable(shown)} stopped: {safe_open.os_error(err, shown)}; what was deleted "
                        "before it is gone") from None
    finally:
        os.close(parent)

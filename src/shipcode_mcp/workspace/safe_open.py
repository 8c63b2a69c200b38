"""Opening what `Roots.resolve` returned without ever following a symlink: closes the swap race.

`resolve` answers "where does this path lead now"; by the time we open it, a folder on the way
could have been replaced by a symlink to somewhere else. So we walk down from the root one
component at a time with O_NOFOLLOW (each component of a resolved path is a real folder, so a
link met on the way means the tree changed under us and the path is refused), and on Linux we
check the opened descriptor's own path as well. Special files are refused before they are opened
and opening never blocks (O_NONBLOCK), so a FIFO or a device cannot hang the server.
"""

from __future__ import annotations

import errno
import os
import stat

from ..primitives import ToolError
from .roots import OutsideRoots, Roots
from .text import printable

NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
CLOEXEC = getattr(os, "O_CLOEXEC", 0)
DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | NOFOLLOW | CLOEXEC
"""For a folder on the way: never through a link."""
READ_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
"""For reading a file: never blocks on open and never acquires a controlling terminal."""

_PROC_FD = "/proc/self/fd"
_HAS_PROC = os.path.isdir(_PROC_FD)

_KINDS = (
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISLNK, "a symbolic link"),
)


def kind_of(mode: int) -> str:
    """What a non-regular file is, in words, for messages."""
    if stat.S_ISDIR(mode):
        return "a folder"
    return next((words for test, words in _KINDS if test(mode)), "not a regular file")


def os_error(err: OSError, shown: str) -> ToolError:
    """A message about `shown` (a display path, masked here) that never repeats the absolute path the OS named."""
    code = err.errno
    shown = printable(shown)
    if code == errno.ENOENT:
        return ToolError(f"Not found: {shown}")
    if code in (errno.EACCES, errno.EPERM):
        return ToolError(f"Permission denied: {shown}")
    if code == errno.ELOOP:
        return ToolError(f"Refused: {shown} changed while it was being opened (a symbolic link appeared on the way)")
    if code == errno.ENOTDIR:
        return ToolError(f"Not found: {shown} (a part of the path is not a folder)")
    if code == errno.EISDIR:
        return ToolError(f"{shown} is a folder")
    if code == errno.ENAMETOOLONG:
        return ToolError(f"Invalid path: {shown} is too long")
    if code == errno.EEXIST:
        return ToolError(f"{shown} already exists")
    return ToolError(f"Cannot access {shown}: {os.strerror(code) if code else err.__class__.__name__}")


def _parts(roots: Roots, real: str) -> tuple[str, list[str]]:
    root = roots.root_of(real)
    if root is None:
        raise OutsideRoots(reason="it is not inside the workspace roots")
    rest = real[len(root):].strip(os.sep)
    return root, rest.split(os.sep) if rest else []


def open_parent(roots: Roots, real: str, shown: str, *, create: bool = False) -> tuple[int, str]:
    """A descriptor of the folder holding `real` and the last component's name.

    With `create`, missing folders on the way are made (inside the root, since every one is made
    relative to a descriptor of the one above it). The root itself has no parent to give: refused.
    """
    root, parts = _parts(roots, real)
    if not parts:
        raise ToolError(f"{printable(shown)} is a workspace root folder")
    fd = _open_root(root, shown)
    for name in parts[:-1]:
        fd = _step(fd, name, shown, create)  # closes the folder above, even when it fails
    return fd, parts[-1]


def _open_root(root: str, shown: str) -> int:
    try:
        return os.open(root, DIR_FLAGS)
    except OSError as err:
        raise os_error(err, shown) from None


def _step(fd: int, name: str, shown: str, create: bool) -> int:
    """Descend from folder `fd` into `name`, making it first if asked and missing; `fd` is closed."""
    try:
        try:
            return os.open(name, DIR_FLAGS, dir_fd=fd)
        except FileNotFoundError:
            if not create:
                raise
            try:
                os.mkdir(name, 0o777, dir_fd=fd)
            except FileExistsError:
                pass  # made by someone else meanwhile: open whatever is there, still without following
            return os.open(name, DIR_FLAGS, dir_fd=fd)
    except OSError as err:
        if err.errno == errno.ENOTDIR and _is_link(fd, name):  # O_DIRECTORY|O_NOFOLLOW on a link: ENOTDIR
            err = OSError(errno.ELOOP, "symbolic link")
        raise os_error(err, shown) from None
    finally:
        os.close(fd)


def _is_link(fd: int, name: str) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def open_dir(roots: Roots, real: str, shown: str) -> int:
    """A descriptor of the folder `real` (a root or any folder inside one)."""
    root, parts = _parts(roots, real)
    fd = _open_root(root, shown)
    for name in parts:
        fd = _step(fd, name, shown, False)  # closes the folder above, even when it fails
    try:
        verify(roots, fd)
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_file(roots: Roots, real: str, shown: str, flags: int = READ_FLAGS) -> tuple[int, os.stat_result]:
    """A descriptor of the regular file `real` and its stat; folders and special files are refused."""
    parent, name = open_parent(roots, real, shown)
    try:
        return open_in(roots, parent, name, shown, flags)
    finally:
        os.close(parent)


def small_text(roots: Roots, real: str, limit: int, errors: str = "strict") -> str | None:
    """The text of the regular file `real` of the roots, opened as open_file opens one, if it is at most `limit`
    bytes of UTF-8 (`errors`: as bytes.decode takes them); None where it cannot be read so. For what reads a
    workspace file whole without a tool's error to give (a language server's documents, clangd's database)."""
    try:
        fd, info = open_file(roots, real, real)
    except (ToolError, OSError):
        return None
    with os.fdopen(fd, "rb") as file:
        if not stat.S_ISREG(info.st_mode) or info.st_size > limit:
            return None
        try:
            data = file.read(info.st_size + 1)  # (not limit + 1: read() allocates what it is asked for)
            return data.decode("utf-8", errors) if len(data) <= limit else None
        except (OSError, UnicodeDecodeError):
            return None


def lstat_in(parent: int, name: str, shown: str) -> os.stat_result | None:
    """The entry `name` of folder `parent` (a link is not followed), None if there is none."""
    try:
        return os.stat(name, dir_fd=parent, follow_symlinks=False)
    except FileNotFoundError:
        return None
    except OSError as err:
        raise os_error(err, shown) from None


def open_in(roots: Roots, parent: int, name: str, shown: str, flags: int = READ_FLAGS) -> tuple[int, os.stat_result]:
    """Open the regular file `name` in folder `parent` without following a link; anything else is refused."""
    before = lstat_in(parent, name, shown)  # a FIFO or a device is refused without ever being opened
    if before is None:
        raise ToolError(f"Not found: {printable(shown)}")
    if not stat.S_ISREG(before.st_mode):
        raise ToolError(f"{printable(shown)} is {kind_of(before.st_mode)}, not a regular file")
    try:
        fd = os.open(name, flags | NOFOLLOW | CLOEXEC, dir_fd=parent)
    except OSError as err:
        raise os_error(err, shown) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):  # swapped between the lstat and the open
            raise ToolError(f"{printable(shown)} is {kind_of(info.st_mode)}, not a regular file")
        verify(roots, fd)
    except BaseException:
        os.close(fd)
        raise
    return fd, info


def verify(roots: Roots, fd: int) -> None:
    """Check where the open descriptor really is (Linux): the last line of defence against a swap."""
    if not _HAS_PROC:
        return
    try:
        where = os.readlink(f"{_PROC_FD}/{fd}")
    except OSError:
        return
    if roots.root_of(where) is None:
        raise OutsideRoots(reason="it is not inside the workspace roots")


def proc_path(fd: int, real: str) -> str:
    """A path naming exactly the open file or folder `fd`, for a child process (its cwd or an argument).

    On Linux that is /proc/self/fd/N (pass `fd` in `pass_fds`), so a folder or file swapped for a
    symlink after we opened it changes nothing; elsewhere, the resolved path.
    """
    return f"{_PROC_FD}/{fd}" if _HAS_PROC else real


def content_mark(roots: Roots, real: str) -> str:
    """A file as a fingerprint holds it (--confirm-writes: what a call acts on): its content's SHA-256 in hex,
    read through `open_file` (no link followed on the way), or what it is instead (absent, a link and where it
    points, another kind, unreadable)."""
    import hashlib  # off the start-up budget: only with --confirm-writes

    try:
        info = os.lstat(real)
    except OSError:
        return "absent"
    if stat.S_ISLNK(info.st_mode):
        return "link:" + os.readlink(real)
    if not stat.S_ISREG(info.st_mode):
        return f"mode:{info.st_mode}"
    try:
        fd, _ = open_file(roots, real, roots.display(real))
    except ToolError as err:
        return f"unreadable:{err}"
    digest = hashlib.sha256()
    try:
        while chunk := os.read(fd, 1 << 20):
            digest.update(chunk)
    finally:
        os.close(fd)
    return digest.hexdigest()

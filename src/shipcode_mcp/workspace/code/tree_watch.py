"""The folders of one root under inotify, read in the call that needs them: what changed since the last look.

The kernel queues an inotify event in the system call that made the change, so a look that drains the queue sees
every change finished before it (no thread, no debounce, nothing delivered late). The code index
(index.py) uses it to skip the walk and the stat of every file when nothing changed, and to read again only the
files written since; anything that could change the listing (a file or folder made, deleted or moved, an ignore
file touched, the queue overflowed, a watched folder gone) asks for a walk instead.

Standard library only (inotify through ctypes, Linux): where it is missing or its limits are reached, `TreeWatch.of`
gives None and the index walks before each answer. Folders are watched one by one, never following links
(IN_DONT_FOLLOW): those that hold a file of the walk, their parents up to the root, and their direct sub-folders
(so a file made in a folder that held none is seen). A file made two folders below one that held no file of the
walk at all is only seen at the next walk.
"""

from __future__ import annotations

import ctypes
import errno
import os
import struct
from collections.abc import Iterable

IN_MODIFY, IN_ATTRIB, IN_CLOSE_WRITE = 0x2, 0x4, 0x8
IN_MOVED_FROM, IN_MOVED_TO, IN_CREATE, IN_DELETE = 0x40, 0x80, 0x100, 0x200
IN_DELETE_SELF, IN_MOVE_SELF, IN_UNMOUNT, IN_Q_OVERFLOW, IN_IGNORED = 0x400, 0x800, 0x2000, 0x4000, 0x8000
IN_ONLYDIR, IN_DONT_FOLLOW, IN_EXCL_UNLINK, IN_ISDIR = 0x01000000, 0x02000000, 0x04000000, 0x40000000
IN_NONBLOCK, IN_CLOEXEC = os.O_NONBLOCK, os.O_CLOEXEC

WRITES = IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE
LISTING = IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE | IN_DELETE_SELF | IN_MOVE_SELF
MASK = WRITES | LISTING | IN_ONLYDIR | IN_DONT_FOLLOW | IN_EXCL_UNLINK
WALK_AGAIN = LISTING | IN_UNMOUNT | IN_Q_OVERFLOW | IN_IGNORED
MAX_FOLDERS = 50_000
"""A root with more folders to watch is walked before each answer instead (inotify watches are a per-user limit)."""
IGNORE_FILES = frozenset({".gitignore", ".ignore", ".rgignore"})
"""Files whose change may change the walk's listing (ripgrep's ignore files in the watched folders)."""

_EVENT = struct.Struct("iIII")
_libc: ctypes.CDLL | None = None


def _inotify() -> ctypes.CDLL | None:
    global _libc
    if _libc is None:
        try:
            _libc = ctypes.CDLL(None, use_errno=True)
            _libc.inotify_init1.argtypes = [ctypes.c_int]
            _libc.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
        except (OSError, AttributeError):
            return None
    return _libc


def folders_of(names: Iterable[str]) -> set[str]:
    """The folders (relative, "" for the root) that hold a file of `names`, and their parents."""
    found = {""}
    for name in names:
        folder = name.rpartition("/")[0]
        while folder and folder not in found:
            found.add(folder)
            folder = folder.rpartition("/")[0]
    return found


class Changes:
    """What a look found: files written (relative paths) and whether the listing may have changed."""

    def __init__(self) -> None:
        self.written: set[str] = set()
        self.walk_again = False


class TreeWatch:
    """inotify watches on a root's folders; `look` drains what happened since the last look."""

    def __init__(self, root: str, fd: int, folders: dict[int, str]) -> None:
        self._root = root
        self._fd = fd
        self._folders = folders  # watch descriptor -> folder relative to the root

    @classmethod
    def of(cls, root: str, names: Iterable[str]) -> TreeWatch | None:
        """Watches on the folders of the walk's `names` (files relative to `root`) and their direct sub-folders;
        None where inotify is missing or the folders are too many."""
        libc = _inotify()
        if libc is None:
            return None
        folders = folders_of(names)
        for folder in list(folders):
            try:
                with os.scandir(os.path.join(root, folder)) as entries:
                    folders.update(f"{folder}/{entry.name}" if folder else entry.name for entry in entries
                                   if entry.name != ".git" and entry.is_dir(follow_symlinks=False))
            except OSError:
                continue
        if len(folders) > MAX_FOLDERS:
            return None
        fd = libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
        if fd < 0:
            return None
        watched: dict[int, str] = {}
        for folder in folders:
            wd = libc.inotify_add_watch(fd, os.fsencode(os.path.join(root, folder)), MASK)
            if wd < 0:
                if ctypes.get_errno() in (errno.ENOENT, errno.ENOTDIR, errno.EACCES):
                    continue  # gone or not a folder since the walk: the next look walks again anyway
                os.close(fd)  # ENOSPC (the watch limit), ENOMEM: no watch at all
                return None
            watched[wd] = folder
        return cls(root, fd, watched)

    def look(self) -> Changes:
        """Every event queued since the last look: the files written, or that the listing must be made again."""
        changes = Changes()
        while True:
            try:
                data = os.read(self._fd, 65536)
            except BlockingIOError:
                return changes
            except OSError:
                changes.walk_again = True
                return changes
            position = 0
            while position + _EVENT.size <= len(data):
                wd, mask, _, size = _EVENT.unpack_from(data, position)
                raw = data[position + _EVENT.size:position + _EVENT.size + size].rstrip(b"\0")
                position += _EVENT.size + size
                name = os.fsdecode(raw)
                if mask & WALK_AGAIN or mask & IN_ISDIR or name in IGNORE_FILES:
                    changes.walk_again = True
                    continue
                folder = self._folders.get(wd)
                if folder is None:
                    changes.walk_again = True
                elif name:
                    changes.written.add(f"{folder}/{name}" if folder else name)

    def written_since(self, ns: int) -> bool:
        """Whether a watched folder's entries changed at or after `ns` (time.time_ns()): made or deleted files the
        walk before the watch may have missed (a folder that cannot be looked at counts as changed)."""
        for folder in self._folders.values():
            try:
                if os.stat(os.path.join(self._root, folder), follow_symlinks=False).st_mtime_ns >= ns:
                    return True
            except OSError:
                return True
        return False

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

"""The folders of one root under inotify, read in the call that needs them: what changed since the last look.

The kernel queues an inotify event in the system call that made the change, so a look that drains the queue sees
every change finished before it (no thread, no debounce, nothing delivered late). The code index
(index.py) uses it to skip the walk and the stat of every file when nothing changed, and to read again only the
files written since; anything that could change the listing (a file or folder made, deleted or moved, an ignore
file touched, the queue overflowed, a watched folder gone) asks for a walk instead.

Standard library only (inotify through ctypes, Linux): where it is missing or its limits are reached (more than
MAX_FOLDERS folders), `TreeWatch.of` gives None and the index walks before each answer. Every folder under the
root is watched, one by one, never following links (IN_DONT_FOLLOW), `.git` left out but for `.git/info` (git's
exclude file), and the root's parents for their ignore files (ripgrep reads those too). What no folder tells
(git's global excludes file, a write through a hard link from outside) is the index's to look at (index.py).
"""

from __future__ import annotations

import ctypes
import errno
import os
import struct

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
IGNORE_FILES = frozenset({".gitignore", ".ignore", ".rgignore", "exclude"})
"""Files whose change may change the walk's listing (ripgrep's ignore files; git's .git/info/exclude)."""

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


def _every_folder(root: str) -> list[str] | None:
    """Every folder under `root` (relative, "" for the root; links not followed, `.git` left out but for `.git/info`),
    None past MAX_FOLDERS."""
    found = [""]
    index = 0
    while index < len(found):
        folder = found[index]
        index += 1
        try:
            with os.scandir(os.path.join(root, folder)) as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False) and (entry.name != ".git" or not folder):
                        if entry.name == ".git":
                            found.append(".git/info")  # git's exclude file; nothing else of .git
                            continue
                        found.append(f"{folder}/{entry.name}" if folder else entry.name)
        except OSError:
            continue
        if len(found) > MAX_FOLDERS:
            return None
    return found


class Changes:
    """What a look found: files written (relative paths) and whether the listing may have changed."""

    def __init__(self) -> None:
        self.written: set[str] = set()
        self.walk_again = False


class TreeWatch:
    """inotify watches on a root's folders; `look` drains what happened since the last look."""

    def __init__(self, root: str, fd: int, folders: dict[int, str], above: set[int]) -> None:
        self._root = root
        self._fd = fd
        self._above = above  # the root's parents: only their ignore files are news
        self._folders = folders  # watch descriptor -> folder relative to the root

    @classmethod
    def of(cls, root: str) -> TreeWatch | None:
        """Watches on every folder under `root` (links not followed, `.git` left out but for its `info`, where
        git's exclude file is), and on the root's parents for their ignore files; None where inotify is missing
        or the folders are more than MAX_FOLDERS."""
        libc = _inotify()
        if libc is None:
            return None
        folders = _every_folder(root)
        if folders is None:
            return None
        fd = libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
        if fd < 0:
            return None
        watched: dict[int, str] = {}
        above: set[int] = set()
        parents = []
        parent = os.path.dirname(root)
        while parent != os.path.dirname(parent):
            parents.append(parent)
            parent = os.path.dirname(parent)
        parents.append(parent)
        for folder, outside in [(folder, False) for folder in folders] + [(parent, True) for parent in parents]:
            path = folder if outside else os.path.join(root, folder)
            wd = libc.inotify_add_watch(fd, os.fsencode(path), MASK)
            if wd < 0:
                if ctypes.get_errno() in (errno.ENOENT, errno.ENOTDIR, errno.EACCES):
                    continue  # gone or not a folder since the walk: the next look walks again anyway
                os.close(fd)  # ENOSPC (the watch limit), ENOMEM: no watch at all
                return None
            if outside:
                above.add(wd)
            else:
                watched[wd] = folder
        return cls(root, fd, watched, above)

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
                if wd in self._above:
                    changes.walk_again |= not name or name in IGNORE_FILES  # an ignore file, or the parent itself
                    continue
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

"""The walk of a repository's git folders before git runs: every entry looked at without following links,
the folders git reads walked (a link that leads outside, a FIFO or a device refuses the repository), the
alternate object stores read; and what it found, kept by folder (`_scanned`) and by whole tree (`_trees`)
while nothing changed. Judged by `repo.Repo`, which refuses the repository on what this finds."""

from __future__ import annotations

import errno
import os
import re
import stat
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from ...primitives import ToolError
from .. import safe_open
from ..text import printable

if TYPE_CHECKING:
    pass


_GIT_FOLDERS = frozenset(("objects", "refs", "logs", "info", "modules", "worktrees",
                          "rebase-merge", "rebase-apply", "sequencer", "remotes", "branches", "reftable"))
"""The folders of a git folder that git reads for the tools' commands: the folders of _GIT_PATHS, those
`git status` reads (the state of a rebase, cherry-pick or revert; a remote defined by a file), and the
ref store of git 2.45+. The check walks these; every other entry is looked at, never into."""
MAX_GIT_ENTRIES = 500_000
"""The git folders are walked entry by entry (a microsecond each); more than this is refused, not walked."""
RACY_NS = 2_000_000_000
"""A file changed less than this long ago may change again within the same timestamp: not trusted to a cache."""


LEADS_OUT = "a symbolic link that leads there"


def walked(path: str, git_dir: str) -> bool:
    """Whether `scan` looked at `path` (normalised): an entry of the git folder, or anything in a folder it walks."""
    base = git_dir.rstrip("/") + "/"
    if not path.startswith(base) or len(path) == len(base):
        return False
    first, _, rest = path[len(base):].partition("/")
    return not rest or first in _GIT_FOLDERS


class Found:
    """What a walk of the git folders found that needs a closer look, and how many entries it may still see."""

    __slots__ = ("alternates", "budget", "submodules")

    def __init__(self) -> None:
        self.alternates: list[str] = []
        self.submodules: list[str] = []
        self.budget = MAX_GIT_ENTRIES


_GIT, _NEST, _ALL = 0, 1, 2
"""What a folder met by `scan` is: a git folder (only its entries and the folders git reads in it are
looked at), a folder that holds git folders (modules/, worktrees/: each one below holding a HEAD is one),
or a folder git reads all of."""


def scan(top: str, allowed: Callable[[str], bool], found: Found, *, store: bool) -> tuple[str, str | None] | None:
    """Look, without following links, at the entries git reads under the git folder (or, `store`, the object
    store) `top`, and at what each link leads to: the first entry that is a link leading where `allowed` says
    no, a FIFO, socket or device, or a link to one, as (path, what it is); (top, None) when more entries than
    the budget allows. A link to a folder that stays inside is followed (that folder is looked at too, once).
    In a git folder (the top, and each one under modules/ or worktrees/) every entry is looked at, but only
    the folders git reads (_GIT_FOLDERS) are entered: not hooks (none runs), lfs, annex or rr-cache, which
    can hold a link to a shared folder elsewhere, or more entries than anything git reads. The
    `info/alternates` files of object stores (by their real path) and the submodules' git folders (those
    under modules/ holding a config) are added to `found`.

    When every folder of the last walk of `top` is as it was (`_trees`), its findings are used as a whole."""
    tree = _trees.get((top, store))
    if tree is not None and tree.unchanged(top):
        found.budget -= tree.entries
        if found.budget < 0:
            return top, None
        found.alternates.extend(tree.alternates)
        found.submodules.extend(tree.submodules)
        return None
    budget, alternates_before, submodules_before = found.budget, len(found.alternates), len(found.submodules)
    names: list[str] = []  # the folders walked, from top, and their marks: the tree, if each could be remembered
    marks: list[tuple[int, ...]] = []
    whole = True
    pending = [(top, "", _ALL if store else _GIT)]  # (real folder, its path from top as git names it: links kept, kind)
    visited = {top}
    while pending:
        folder, logical, kind = pending.pop()
        key = (folder, logical, kind, store)
        mark = _folder_mark(folder)  # before reading it: a change while it is read shows next time
        if mark is None or not (folder == top or folder.startswith(top + "/")):
            whole = False
        elif whole:
            names.append(folder[len(top) + 1:] or ".")
            marks.append(mark)
        seen = _scanned.get(key)
        if seen is not None and mark is not None and seen[0] == mark:  # as it was: its findings again
            found.budget -= seen[1]
            if found.budget < 0:
                return top, None
            pending.extend(seen[2])
            found.alternates.extend(seen[3])
            found.submodules.extend([folder] * seen[4])
            continue
        try:
            entries = list(os.scandir(folder))
        except (FileNotFoundError, NotADirectoryError):
            whole = False
            continue  # gone, or a file (a .git file git will say it cannot read): nothing below to look at
        except OSError as err:
            return folder, f"a folder that cannot be read ({os.strerror(err.errno) if err.errno else err})"
        found.budget -= len(entries)
        if found.budget < 0:
            return top, None
        if kind == _NEST and any(entry.name == "HEAD" for entry in entries):
            kind = _GIT  # a submodule's or a linked worktree's own git folder
        entered: list[tuple[str, str, int]] = []
        alternates, submodules, linked = len(found.alternates), len(found.submodules), False
        for entry in entries:  # the kind comes with the entry (d_type): a syscall only for links and oddities
            if entry.is_file(follow_symlinks=False):
                if entry.name == "alternates":
                    _alternates_file(entry.path, f"{logical}/{entry.name}", store, found.alternates)
                elif entry.name == "config" and not store and logical.startswith("modules/"):
                    found.submodules.append(folder)
                continue
            name = f"{logical}/{entry.name}" if logical else entry.name
            inner = kind if kind != _GIT else _NEST if entry.name in ("modules", "worktrees") else (
                _ALL if entry.name in _GIT_FOLDERS else None)
            if entry.is_dir(follow_symlinks=False):
                if inner is not None:
                    pending.append((entry.path, name, inner))
                    entered.append((entry.path, name, inner))
                continue
            linked = True  # where a link leads can change without this folder changing: never remembered
            if not entry.is_symlink():
                return entry.path, safe_open.kind_of(entry.stat(follow_symlinks=False).st_mode)
            try:
                if inner is None and entry.is_dir():
                    continue  # a link to a folder git never enters (a shared hooks folder), wherever it leads
            except OSError:
                continue
            real = os.path.realpath(entry.path)
            if not allowed(real):
                return entry.path, LEADS_OUT
            try:
                mode = os.stat(real).st_mode
            except OSError:
                continue  # a dangling link: git finds nothing there either
            if stat.S_ISDIR(mode):
                if inner is not None and real not in visited:
                    visited.add(real)
                    pending.append((real, name, inner))
            elif not stat.S_ISREG(mode):
                return entry.path, f"a symbolic link to {safe_open.kind_of(mode)}"
            elif entry.name == "alternates":
                _alternates_file(real, name, store, found.alternates)
        if mark is not None and not linked:
            if len(_scanned) >= MAX_SCANNED:
                _scanned.clear()
            _scanned[key] = (mark, len(entries), entered, found.alternates[alternates:],
                             len(found.submodules) - submodules)
        else:
            whole = False
    if whole:
        _remember_tree((top, store), _Tree(names, marks, budget - found.budget, found.alternates[alternates_before:],
                                           found.submodules[submodules_before:]))
    return None


MAX_SCANNED = 200_000
"""Folders of git folders whose findings `_scanned` keeps."""
_scanned: dict[tuple[str, str, int, bool], tuple[tuple[int, ...], int, list[tuple[str, str, int]], list[str], int]] = {}
"""What `scan` found in a folder holding no link (its entries: how many, the folders to enter, alternates
files, a submodule's config), by folder, with the folder's identity and times (`_folder_mark`). Entries
are added, removed, renamed or replaced (a file by a FIFO or a link) only through the folder, which
changes its modification and change times (the change time cannot be set back), so while those are the
same its entries are: the folder's findings are used again without reading it. Where a link leads can
change without its folder changing, so a folder holding a link is read on every call."""


class _Tree:
    """A walk of a git folder (or object store) that met no link and no folder changed too recently: every
    folder it read (relative to the top, "." for the top) with its mark, and what the walk found. While each
    folder's mark is the same, each folder's entries are (see `_scanned`), so the walk would go through the
    same folders and find the same: `unchanged` checks them all in one pass, a stat each and no other work."""

    __slots__ = ("alternates", "entries", "marks", "names", "newest", "submodules")

    def __init__(self, names: list[str], marks: list[tuple[int, ...]], entries: int, alternates: list[str],
                 submodules: list[str]) -> None:
        self.names, self.marks, self.entries = names, marks, entries
        self.alternates, self.submodules = alternates, submodules
        self.newest = max(max(mark[3], mark[4]) for mark in marks)

    def unchanged(self, top: str) -> bool:
        """Whether every folder is as it was, and none changed too recently to tell (as `_folder_mark`). The
        folders are looked up from the top, opened now without following a link (as a path from / would be:
        each folder on the way is one of those checked)."""
        if time.time_ns() - self.newest < RACY_NS:
            return False
        try:
            fd = os.open(top, safe_open.DIR_FLAGS)
        except OSError:
            return False
        try:
            look = os.stat
            return [(info.st_dev, info.st_ino, info.st_mode, info.st_mtime_ns, info.st_ctime_ns)
                    for info in [look(name, dir_fd=fd, follow_symlinks=False) for name in self.names]] == self.marks
        except OSError:
            return False
        finally:
            os.close(fd)


MAX_TREES = 64
"""Walks of git folders that `_trees` keeps (besides MAX_SCANNED folders in all)."""
_trees: dict[tuple[str, bool], _Tree] = {}
"""The last walk of a git folder or object store (by top, and whether a store), when it can be checked again in
one pass (`_Tree`)."""
_trees_lock = threading.Lock()


def _remember_tree(key: tuple[str, bool], tree: _Tree) -> None:
    if len(tree.names) > MAX_SCANNED:
        return
    with _trees_lock:
        _trees.pop(key, None)
        while _trees and (len(_trees) >= MAX_TREES
                          or sum(len(kept.names) for kept in _trees.values()) + len(tree.names) > MAX_SCANNED):
            _trees.pop(next(iter(_trees)))
        _trees[key] = tree


def _folder_mark(folder: str) -> tuple[int, ...] | None:
    """A folder's identity and times; None when it changed too recently to be told from a change to come,
    or cannot be looked at."""
    try:
        info = os.stat(folder, follow_symlinks=False)
    except OSError:
        return None
    if time.time_ns() - max(info.st_mtime_ns, info.st_ctime_ns) < RACY_NS:
        return None
    return (info.st_dev, info.st_ino, info.st_mode, info.st_mtime_ns, info.st_ctime_ns)


def _alternates_file(path: str, name: str, store: bool, alternates: list[str]) -> None:
    """Add `path` to `alternates` if its name in the scanned folder is that of an object store's list of
    alternates (a submodule's too: modules/NAME/objects/info/alternates)."""
    name = name.lstrip("/")
    wanted = "info/alternates" if store else "objects/info/alternates"
    if name == wanted or (not store and name.endswith(f"/{wanted}")):
        alternates.append(os.path.realpath(path))


def read_alternates(file: str, shown: str) -> list[str]:
    """The object stores an `info/alternates` file lists, as git reads it: a path a line ("#" comments and
    empty lines skipped, C-quoted when it starts with '"'), relative ones from the store holding the file."""
    base = os.path.dirname(os.path.dirname(file))
    try:
        data = read_regular(file, 1024 * 1024 + 1)
    except NotRegular as err:
        raise ToolError(f"Refused: cannot read {printable(shown)}: it is {err.what}") from None
    if data is None:
        return []  # gone meanwhile: git finds no store there either
    if len(data) > 1024 * 1024:
        raise ToolError(f"Refused: {printable(shown)} is too large to check")
    stores = []
    for raw in data.split(b"\n"):
        if not raw or raw.startswith(b"#"):
            continue
        line = _unquote(raw) if raw.startswith(b'"') else raw
        if line is None:
            raise ToolError(f"Refused: {printable(shown)} holds a line that cannot be read")
        stores.append(os.path.join(base, os.fsdecode(line)))
    return stores


_C_ESCAPES = {ord(k): v for k, v in {"a": 7, "b": 8, "f": 12, "n": 10, "r": 13, "t": 9, "v": 11, "\\": 92, '"': 34}.items()}


def _unquote(quoted: bytes) -> bytes | None:
    """A C-quoted name as git writes one ("a\\tb\\303\\251"), or None when it is not one."""
    out = bytearray()
    at = 1
    while at < len(quoted):
        char = quoted[at]
        if char == ord('"'):
            return bytes(out) if at == len(quoted) - 1 else None
        if char != ord("\\"):
            out.append(char)
            at += 1
            continue
        code = quoted[at + 1:at + 2]
        if code and code[0] in _C_ESCAPES:
            out.append(_C_ESCAPES[code[0]])
            at += 2
        elif re.fullmatch(rb"[0-3][0-7][0-7]", quoted[at + 1:at + 4]):
            out.append(int(quoted[at + 1:at + 4], 8))
            at += 4
        else:
            return None
    return None


class NotRegular(Exception):
    """A file git reads that is not a regular file (`mode`, None when it could not be opened at all), or
    cannot be read: `what` it is, in words."""

    def __init__(self, path: str, what: str, mode: int | None) -> None:
        super().__init__(path, what)
        self.path, self.what, self.mode = path, what, mode


def read_regular(path: str, limit: int) -> bytes | None:
    """The first `limit` bytes of the regular file `path`; None if there is nothing there; else NotRegular.

    Opened without following a link and without blocking, then read only if fstat says it is a regular
    file: a plain open() of a FIFO waits for a writer forever (and an isfile check before it is a race)."""
    try:
        fd = os.open(path, safe_open.READ_FLAGS | safe_open.NOFOLLOW | safe_open.CLOEXEC)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise NotRegular(path, "a symbolic link", stat.S_IFLNK) from None
        why = os.strerror(err.errno) if err.errno else str(err)
        raise NotRegular(path, f"a file that cannot be read ({why})", None) from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegular(path, safe_open.kind_of(mode), mode)
        chunks: list[bytes] = []
        left = limit
        while left > 0:
            chunk = os.read(fd, left)
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)

"""Which files the workspace shows: ripgrep's walk, so .gitignore/.ignore rules are exactly rg's.

Shared by the tools (list_files, search_code) and the resources, so that they always agree.
`.git/` is hidden, hidden dotfiles are shown, symlinks are not followed (a link that points
outside a root must not become a way out) and are left out of listings. rg runs in the kernel
sandbox (sandbox.py), which lets it read only beneath the roots (and the ignore files above them):
a folder swapped for a symlink to the outside while rg walks leads it nowhere it can read.
"""

from __future__ import annotations

import os
import shutil
import stat
import sys
import sysconfig
import tempfile
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..primitives import ToolError
from .process import run

if TYPE_CHECKING:
    from ..context import Context

# Flags every ripgrep walk uses, so that listing and search see the same files.
RG_WALK_FLAGS = ("--hidden", "--no-require-git", "--glob", "!.git", "--no-config")

_rg_path: str | None = None


def rg_executable() -> str:
    """The `rg` of this environment's scripts folder (the ripgrep wheel), else the one on PATH."""
    global _rg_path
    if _rg_path is None:
        name = "rg.exe" if sys.platform == "win32" else "rg"
        candidates = [os.path.join(os.path.dirname(sys.executable), name)]
        scripts = sysconfig.get_path("scripts")
        if scripts:
            candidates.append(os.path.join(scripts, name))
        found = next((c for c in candidates if os.path.isfile(c) and os.access(c, os.X_OK)), None) or shutil.which("rg")
        if found is None:
            raise ToolError("ripgrep (rg) is not installed; install the 'ripgrep' package")
        _rg_path = found
    return _rg_path


MAX_LISTING_BYTES = 64 * 1024 * 1024
"""More file names than this (about a million) is not a listing anyone can use."""


def walk_command(flags: Sequence[str] = (), threads: int | None = None) -> list[str]:
    """The rg command that lists the files of its working directory: the one walk all features share."""
    return [rg_executable(), "--files", "--null", *RG_WALK_FLAGS, f"--threads={threads or _walk_threads()}", *flags]


def _walk_threads() -> int:
    """rg's own choice (one thread a core, at most 12), but never fewer than 4.

    A walk without a search waits on the kernel (getdents, stat), not on a core: on a 2-core machine,
    4 threads list 20 000 files about 10% faster than 2 (bench/run.py's workspace figures).
    """
    return max(4, min(os.cpu_count() or 1, 12))


SMALL_WALK = 15_000
"""A folder whose last walk listed fewer files is walked with one rg thread: starting and joining a pool
costs more than it saves there (1 000 files: 4.5 ms with one thread, 6.5 ms with four, 8 ms for plain
`rg --files`; 10 000: 21 ms against 23 ms; under load on 2 cores)."""
_last_sizes: dict[tuple[int, int], int] = {}  # (st_dev, st_ino) of a walked folder -> files its last walk listed


def _folder_key(cwd: str) -> tuple[int, int] | None:
    try:
        info = os.stat(cwd)
    except OSError:
        return None
    return info.st_dev, info.st_ino


def walk_threads(cwd: str) -> int:
    """rg threads for a walk of `cwd`: one if its last walk found it small, else `_walk_threads()`."""
    return _threads_for(_folder_key(cwd))


def _threads_for(key: tuple[int, int] | None) -> int:
    size = _last_sizes.get(key) if key is not None else None
    return 1 if size is not None and size < SMALL_WALK else _walk_threads()


def _remember(key: tuple[int, int] | None, files: int) -> None:
    if key is not None:
        if len(_last_sizes) >= 1024 and key not in _last_sizes:
            _last_sizes.clear()  # a bound, not a cache policy: a forgotten folder is only walked with the pool
        _last_sizes[key] = files


class GlobFilter:
    """Narrows a walk (or a search) to files matching globs, under the ignore rules rather than over them.

    rg's --glob overrides .gitignore (a glob of '*.log' would bring ignored logs back), so the globs
    become rg's lowest-precedence ignore file instead: everything but matching files is ignored, and
    .gitignore and .ignore keep the last word. A glob starting with '!' excludes what it matches. Use
    as a context manager; it gives the rg flags to add.
    """

    def __init__(self, globs: Sequence[str]) -> None:
        for glob in globs:
            if any(c in glob for c in "\n\r\0"):
                raise ToolError("A glob cannot contain line breaks or NUL characters")
        keep = [_rule(glob) for glob in globs if not glob.startswith("!")]
        drop = [_rule(glob[1:]) for glob in globs if glob.startswith("!")]
        lines = (["*", "!*/", *(f"!{rule}" for rule in keep)] if keep else []) + drop
        self.rules = "".join(f"{line}\n" for line in lines)
        self._file: Any = None
        self.files: list[str] = []
        """The file rg must be allowed to read (its sandbox), while the filter is entered."""

    def __enter__(self) -> list[str]:
        if not self.rules:
            return []
        self._file = tempfile.NamedTemporaryFile("w", prefix="shipcode-glob-", suffix=".ignore", encoding="utf-8",
                                                 errors="surrogateescape")
        self._file.write(self.rules)
        self._file.flush()
        self.files = [self._file.name]
        return [f"--ignore-file={self._file.name}"]

    def __exit__(self, *exc: object) -> None:
        if self._file is not None:
            self._file.close()


def _rule(glob: str) -> str:
    """A glob as a gitignore line: a leading '#' or '!' and trailing spaces would mean something else."""
    if glob.startswith(("#", "!")):
        glob = "\\" + glob
    stripped = glob.rstrip(" ")
    return stripped + "\\ " * (len(glob) - len(stripped))


IGNORE_FILES = (".gitignore", ".ignore", ".rgignore")
_RG_RULES = (*IGNORE_FILES, os.path.join(".git", "info", "exclude"))
"""The files whose rules rg follows, in each folder above a root."""


def walk_readable(roots: Sequence[str], names: Sequence[str] = _RG_RULES) -> list[str]:
    """What rg may read when it walks or searches the roots: the roots themselves, and the ignore files of
    the folders above them, whose rules decide what is listed too (a root inside a larger repository
    must not list that repository's ignored node_modules). Only regular files there, never a link, nor a
    path through one. `names` are the files looked for in each folder (git wants its attributes too)."""
    readable = list(roots)
    seen: set[str] = set()
    for root in roots:
        folder = os.path.dirname(root.rstrip(os.sep))
        while folder not in seen:
            seen.add(folder)
            for name in names:
                path = os.path.join(folder, name)
                try:
                    if stat.S_ISREG(os.lstat(path).st_mode) and (os.sep not in name or not _through_link(folder, name)):
                        readable.append(path)
                except OSError:
                    pass
            up = os.path.dirname(folder)
            if up == folder:
                break
            folder = up
    return readable


def _through_link(folder: str, name: str) -> bool:
    """Whether a path below `folder` passes through a symbolic link on its way."""
    parts = name.split(os.sep)
    return any(os.path.islink(os.path.join(folder, *parts[:count])) for count in range(1, len(parts)))


def walk(ctx: Context | None, cwd: str, flags: Sequence[str] = (), *, readable: Sequence[str],
         pass_fds: Sequence[int] = ()) -> list[str]:
    """The walk as a child of a request (cancellable), in the sandbox: the sorted files under `cwd`.
    `readable` is what rg may read (walk_readable of the roots, and a GlobFilter's files)."""
    key = _folder_key(cwd)
    done = run(ctx, walk_command(flags, _threads_for(key)), cwd=cwd, readable=readable, pass_fds=pass_fds,
               limit=MAX_LISTING_BYTES, what="listing")
    if done.truncated:
        raise ToolError("There are too many files to list here; pass a narrower path or a pattern")
    names = walk_names(done.returncode, done.stdout, done.stderr)
    if not flags:  # a narrowed walk (globs) says nothing of the folder's size
        _remember(key, len(names))
    return names


def walk_names(returncode: int, stdout: bytes, stderr: bytes | str) -> list[str]:
    """The sorted names a walk printed (relative, '/'-separated); ToolError if it failed outright."""
    # rg exits 1 when it found no file, 2 on partial errors (an unreadable folder): keep what it listed.
    if returncode not in (0, 1, 2) or (returncode == 2 and not stdout):
        text = stderr.decode("utf-8", "replace") if isinstance(stderr, bytes) else stderr
        message = text.strip().splitlines()
        raise ToolError(f"listing failed: {message[-1] if message else 'rg exited with ' + str(returncode)}")
    names = stdout.decode("utf-8", "surrogateescape").split("\0")
    if names[-1] == "":
        names.pop()  # every name ends with a NUL
    if names and names[0].startswith("./"):
        # rg writes "./" before every name or before none (it depends on how the folder was given):
        # looking at each of 20 000 names would cost more than the sort.
        names = [name[2:] for name in names]
    names.sort()
    return names


def list_files(directory: str, globs: Sequence[str] = ()) -> list[str]:
    """Files under `directory` (a resolved path), relative to it, '/'-separated, sorted.

    `globs` are gitignore-syntax globs (e.g. "**/*.py", "!*.min.js"); ignore rules apply on top of them.
    Not a request's child: it cannot be cancelled (it has the deadline of every child).
    """
    narrow = GlobFilter(globs)
    with narrow as flags:
        return walk(None, directory, flags, readable=[*walk_readable([directory]), *narrow.files])

"""Which files the workspace shows: ripgrep's walk, so .gitignore/.ignore rules are exactly rg's.

Shared by the tools (list_files, search_code) and the resources, so that they always agree.
`.git/` is hidden, hidden dotfiles are shown, symlinks are not followed (a link that points
outside a root must not become a way out) and are left out of listings.
"""

from __future__ import annotations

import os
import sys

from ..primitives import ToolError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

# Flags every ripgrep walk uses, so that listing and search see the same files.
RG_WALK_FLAGS = ("--hidden", "--no-require-git", "--glob", "!.git", "--no-config")

_rg_path: str | None = None


def rg_executable() -> str:
    """The `rg` of this environment's scripts folder (the ripgrep wheel), else the one on PATH."""
    global _rg_path
    if _rg_path is None:
        import shutil
        import sysconfig

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


def walk_command(globs: Sequence[str] = ()) -> list[str]:
    """The rg command that lists the files of its working directory: the one walk all features share.

    Globs go as `--glob=G`, one argument each, so a glob can never be read as an option.
    """
    return [rg_executable(), "--files", "--null", *RG_WALK_FLAGS, *(f"--glob={glob}" for glob in globs)]


def walk_names(returncode: int, stdout: bytes, stderr: bytes | str) -> list[str]:
    """The sorted names a walk printed (relative, '/'-separated); ToolError if it failed outright."""
    # rg exits 1 when it found no file, 2 on partial errors (an unreadable folder): keep what it listed.
    if returncode not in (0, 1, 2) or (returncode == 2 and not stdout):
        text = stderr.decode("utf-8", "replace") if isinstance(stderr, bytes) else stderr
        message = text.strip().splitlines()
        raise ToolError(f"listing failed: {message[-1] if message else 'rg exited with ' + str(returncode)}")
    names = [
        name[2:] if name.startswith("./") else name
        for name in stdout.decode("utf-8", "surrogateescape").split("\0")
        if name
    ]
    names.sort()
    return names


def list_files(directory: str, globs: Sequence[str] = ()) -> list[str]:
    """Files under `directory` (a resolved path), relative to it, '/'-separated, sorted.

    `globs` are ripgrep globs (gitignore syntax, e.g. "**/*.py"); ignore rules apply on top of them.
    """
    import subprocess

    done = subprocess.run(walk_command(globs), cwd=directory, stdin=subprocess.DEVNULL, capture_output=True, check=False)
    return walk_names(done.returncode, done.stdout, done.stderr)

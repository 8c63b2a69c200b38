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


def list_files(directory: str, globs: Sequence[str] = ()) -> list[str]:
    """Files under `directory` (a resolved path), relative to it, '/'-separated, sorted.

    `globs` are ripgrep globs (gitignore syntax, e.g. "**/*.py"); ignore rules apply on top of them.
    """
    import subprocess

    command = [rg_executable(), "--files", "--null", *RG_WALK_FLAGS]
    for glob in globs:
        command += ["--glob", glob]
    done = subprocess.run(command, cwd=directory, stdin=subprocess.DEVNULL, capture_output=True, check=False)
    # rg exits 1 when it found no file, 2 on partial errors (an unreadable folder): keep what it listed.
    if done.returncode not in (0, 1, 2) or (done.returncode == 2 and not done.stdout):
        message = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise ToolError(f"listing failed: {message[-1] if message else 'rg exited with ' + str(done.returncode)}")
    names = [
        name[2:] if name.startswith("./") else name
        for name in done.stdout.decode("utf-8", "surrogateescape").split("\0")
        if name
    ]
    names.sort()
    return names

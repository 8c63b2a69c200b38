"""Hostile git repositories for the attack suite, built the way an untrusted tarball would deliver them.

Each attack has a secret (random, in files outside the roots) that must never reach the model, or a
canary (a file a configured program would write) that must never appear. `workspace_support.git_run`
runs the real git as a user would in a shell, so that a test first proves its attack works without
shipcode-mcp.
"""

from __future__ import annotations

import itertools
import json
import os
import secrets
import signal
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import pytest

from shipcode_mcp.primitives import ToolError
from shipcode_mcp.workspace.git import repo as git_repo
from shipcode_mcp.workspace.process import Child
from shipcode_mcp.workspace.roots import Roots
from shipcode_mcp.workspace.tools import run as run_tool
from support import family, wait_for
from workspace_support import Tools, context, git, git_env


class Outside:
    """A folder outside the roots: a secret file, and a git repository whose file, commit message and
    author name hold the secret."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.secret = f"SECRET-{secrets.token_hex(12)}"
        path.mkdir(parents=True)
        self.secret_file = path / "secret.txt"
        self.secret_file.write_text(f"{self.secret} first line\n{self.secret} second line\n")
        self.repo = path / "private"
        self.repo.mkdir()
        git(self.repo, "init", "-q", "-b", "main")
        (self.repo / "private.txt").write_text(f"{self.secret} in a file\n")
        git(self.repo, "add", "private.txt")
        git(self.repo, "commit", "-qm", f"Private work {self.secret}")
        self.commit = git(self.repo, "rev-parse", "HEAD").strip()
        self.git_dir = self.repo / ".git"


class Canary:
    """An executable script that appends a line to `path` when run (and passes its input through, as
    a filter would): any program a hostile repository names is this script."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / "canary"
        self.script = folder / "evil.sh"
        self.script.write_text(f"#!/bin/sh\necho \"ran $0 $*\" >> '{self.path}'\ncat\n")
        self.script.chmod(0o755)
        self.command = folder / "evil-command.sh"
        """The same, for a program that is not a filter (it ends at once instead of passing input through)."""
        self.command.write_text(f"#!/bin/sh\necho \"ran $0 $*\" >> '{self.path}'\nexit 1\n")
        self.command.chmod(0o755)

    def ran(self) -> bool:
        return self.path.exists()

    def reset(self) -> None:
        self.path.unlink(missing_ok=True)


_times = itertools.count()


def stale(worktree: Path) -> None:
    """Give every work tree file old timestamps, different from any given before, as extracting a
    tarball does: the stat data in git's index no longer matches, so git must read the files again
    (running their filters) and would refresh and rewrite the index."""
    when = 946684800 - 3600 * next(_times)  # 2000-01-01, then an hour earlier each time
    for folder, folders, files in os.walk(worktree):
        folders[:] = [name for name in folders if name != ".git"]
        for name in files:
            if name != ".git":
                os.utime(os.path.join(folder, name), (when, when), follow_symlinks=False)


def index_state(git_dir: Path) -> tuple[int, int, int, bytes]:
    """The index file's inode, size, modification time and content: to prove git did not rewrite it."""
    index = git_dir / "index"
    info = os.stat(index)
    return info.st_ino, info.st_size, info.st_mtime_ns, index.read_bytes()


ALL_TOOLS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("git_status", {}), ("git_log", {}), ("git_diff", {}), ("git_diff", {"staged": True}),
    ("git_show", {"ref": "HEAD"}), ("git_show", {"ref": "HEAD", "path": "README.md"}),
)
"""One call of every git tool (and both sides of git_diff)."""


def everything(result: dict[str, Any]) -> str:
    """The whole of a tool result as the model could read it (text and structuredContent)."""
    return json.dumps(result, ensure_ascii=False)


@contextmanager
def sandbox_off() -> Iterator[None]:
    """Children started meanwhile (in this process) run without the kernel sandbox: what is left is
    shipcode-mcp's own confinement of git, which must hold alone."""
    try:
        from shipcode_mcp.workspace import sandbox
    except ImportError:  # no sandbox in this build
        yield
        return
    was = sandbox._disabled
    sandbox.set_enabled(False)
    try:
        yield
    finally:
        sandbox._disabled = was


def direct(root: Path, name: str, arguments: dict[str, Any] | None = None) -> tuple[bool, str]:
    """A git tool called in this process, without the kernel sandbox: (is_error, text and structuredContent)."""
    with sandbox_off():
        try:
            outcome = run_tool(name, context(), Roots([str(root)]), **(arguments or {}))
        except ToolError as err:
            return True, str(err)
    return False, everything(outcome.to_dict())


def refused(root: Path, expected: str, secret: str) -> None:
    """Every git tool answers isError with a message holding `expected`, and nothing holds `secret`: through
    the server (with the kernel sandbox where the machine has one), then in this process with the sandbox
    off (shipcode-mcp's own confinement of git, alone)."""
    with Tools(root) as tools:
        for name, arguments in ALL_TOOLS:
            result = tools.call(name, arguments, error=True)
            assert expected in result["content"][0]["text"], (name, result)
            assert secret not in everything(result), (name, result)
    for name, arguments in ALL_TOOLS:
        failed, text = direct(root, name, arguments)
        assert failed and expected in text, (name, text)
        assert secret not in text, (name, text)


def waits_on_a_fifo(cwd: Path, *argv: str) -> None:
    """Plain `argv` (in git_run's environment) hangs: one of its processes waits in the kernel for the other
    end of a named pipe. Read from /proc as it happens, rather than from a timeout; then it is killed."""
    proc = subprocess.Popen(argv, cwd=cwd, env=git_env(), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)

    def waiting() -> bool:
        assert proc.poll() is None, f"{argv} ended: it did not wait on a named pipe"
        return any(_wchan(pid) in ("wait_for_partner", "fifo_open") for pid in family(proc.pid))

    try:
        wait_for(waiting, 30, f"{argv} to wait on a named pipe")
    finally:
        with suppress(ProcessLookupError):  # ended by itself
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def _wchan(pid: int) -> str:
    """Where in the kernel `pid` sleeps."""
    try:
        return Path(f"/proc/{pid}/wchan").read_text()
    except OSError:
        return ""


def count_runs(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The git subcommands run from now on (the real `run` and `Child`, counted on the way)."""
    git_repo._git_exec_path()  # found once per process: not a run of the calls counted
    started: list[str] = []
    real = git_repo.run
    skip = len(git_repo._SAFE_CONFIG) + 1

    def counted(ctx: Any, argv: list[str], **options: Any) -> Any:
        started.append(argv[skip])
        return real(ctx, argv, **options)

    class Counted(Child):
        def __init__(self, ctx: Any, argv: list[str], **options: Any) -> None:
            started.append(argv[skip])
            super().__init__(ctx, argv, **options)

    monkeypatch.setattr(git_repo, "run", counted)
    monkeypatch.setattr(git_repo, "Child", Counted)
    return started

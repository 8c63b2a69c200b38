"""command_sandbox: the options as the command line gives them, the environment a command gets, and the view bubblewrap
is asked for (what tests/workspace/test_run_command.py holds to, seen from inside a real sandbox)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from shipcode_mcp.primitives import ToolError
from shipcode_mcp.workspace.command_sandbox import Jail, RunOptions, Scan, environment, tmp_folder


def test_options_hold_real_folders_and_the_named_variables(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "tools").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "tools")
    monkeypatch.setenv("FROM_SERVER", "yes")
    monkeypatch.delenv("NOT_SET", raising=False)
    options = RunOptions.of([str(tmp_path / "link")], ["FROM_SERVER", "NOT_SET", "FIXED=a=b"], network=False,
                            max_timeout=60, writable=False, memory=1 << 30, processes=10)
    assert options.readable == (str(tmp_path / "tools"),)
    assert options.env == {"FROM_SERVER": "yes", "FIXED": "a=b"}
    with pytest.raises(ValueError, match="not a folder"):
        RunOptions.of([str(tmp_path / "missing")], [], network=False, max_timeout=60, writable=False, memory=1,
                      processes=1)
    for bad in ("1X", "A-B", "", "=v"):
        with pytest.raises(ValueError, match="--run-env takes NAME"):
            RunOptions.of([], [bad], network=False, max_timeout=60, writable=False, memory=1, processes=1)


def test_the_environment_is_built_from_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "s3cret")
    env = environment(RunOptions(env={"CI": "1", "PATH": "/opt/bin:/usr/bin"}), "/tmp", ["CI=0", "EMPTY="])
    assert env == {"PATH": "/opt/bin:/usr/bin", "HOME": "/tmp/home", "TMPDIR": "/tmp",
                   "LANG": os.environ.get("LANG") or "C.UTF-8", "CI": "0", "EMPTY": ""}
    with pytest.raises(ToolError, match="NAME=VALUE"):
        environment(RunOptions(), "/tmp", ["NOEQUALS"])
    with pytest.raises(ToolError, match="NUL"):
        environment(RunOptions(), "/tmp", ["A=\x00"])


def test_every_git_folder_of_a_writable_root_is_bound_read_only(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / ".git" / "hooks").mkdir(parents=True)
    (root / "vendor" / "dep" / ".git").mkdir(parents=True)
    (root / "work").mkdir()
    (root / "work" / ".git").write_text("gitdir: ../.git/worktrees/work\n")  # a worktree's .git file
    (root / "store").mkdir()
    (root / "linked").mkdir()
    (root / "linked" / ".git").symlink_to(root / "store")  # a link into the root: where it leads is bound
    (root / "away").mkdir()
    (root / "away" / ".GIT").symlink_to(tmp_path)  # a link out of the roots: nothing there to bind
    (root / "meta" / "sub.git" / "objects").mkdir(parents=True)  # git init --separate-git-dir=meta/sub.git sub
    (root / "meta" / "sub.git" / "refs").mkdir()
    (root / "meta" / "sub.git" / "HEAD").write_text("ref: refs/heads/main\n")
    (root / "sub").mkdir()
    (root / "sub" / ".git").write_text(f"gitdir: {root / 'meta' / 'sub.git'}\n")
    (root / "bare.git" / "objects").mkdir(parents=True)  # git init --bare bare.git
    (root / "bare.git" / "refs").mkdir()
    (root / "bare.git" / "HEAD").write_text("ref: refs/heads/main\n")
    scan = Scan([str(root)], writable=True)
    assert sorted(scan.gits) == sorted(str(path) for path in (
        root / ".git", root / "vendor" / "dep" / ".git", root / "work" / ".git", root / "store",
        root / "meta" / "sub.git", root / "sub" / ".git", root / "bare.git"))
    assert Scan([str(root)], writable=False).gits == set()  # read-only roots need no such mounts
    jail = Jail(RunOptions(writable=True), [str(root)], str(root), str(tmp_path / "scratch"), {"A": "1"}, scan)
    jail.open()
    arguments = jail.arguments()
    jail.close()
    assert arguments[0] == "--clearenv" and "--unshare-net" in arguments
    binds = [(arguments[i], arguments[i + 2]) for i, word in enumerate(arguments) if word in ("--bind-fd", "--ro-bind-fd")]
    assert binds[0] == ("--bind-fd", str(root)) and ("--ro-bind-fd", str(root / ".git")) in binds
    assert sorted(binds[1:]) == sorted(("--ro-bind-fd", path) for path in scan.gits)
    setenv = arguments.index("--setenv")
    assert arguments[setenv:setenv + 3] == ["--setenv", "A", "1"]
    assert arguments[arguments.index("--chdir") + 1] == str(root)
    jail = Jail(RunOptions(network=True), [str(root)], str(root), str(tmp_path / "scratch"), {},
                Scan([str(root)], writable=False))
    jail.open()
    read_only = jail.arguments()
    jail.close()
    assert "--unshare-net" not in read_only and "--bind-fd" not in read_only
    assert read_only[read_only.index(str(root)) - 2] == "--ro-bind-fd" and str(root / ".git") not in read_only


def test_the_scratch_folder_shows_as_tmp_unless_a_root_holds_tmp() -> None:
    assert tmp_folder(["/work/project", "/tmp/a"], "/var/tmp/shipcode-run-1") == "/tmp"
    assert tmp_folder(["/tmp"], "/var/tmp/shipcode-run-1") == "/var/tmp/shipcode-run-1"
    assert tmp_folder(["/"], "/var/tmp/shipcode-run-1") == "/var/tmp/shipcode-run-1"

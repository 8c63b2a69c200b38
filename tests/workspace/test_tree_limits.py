"""tree_limits: a command's cgroups made, joined between fork and exec, and removed; and the per-process limits where
no cgroup can be made."""

from __future__ import annotations

import os
import resource
import subprocess
from pathlib import Path

import pytest

from shipcode_mcp.workspace import tree_limits
from shipcode_mcp.workspace.tree_limits import TreeLimits


def test_a_process_joins_the_cgroups_between_fork_and_exec_and_they_go_when_closed() -> None:
    limits = TreeLimits(memory=256 << 20, processes=32)
    if not limits.folders:
        limits.close()
        pytest.skip("no cgroup can be made here")
    try:
        child = subprocess.Popen(["sleep", "30"], preexec_fn=limits.join)
        for controller, folder in limits.folders.items():
            with open(os.path.join(folder, "cgroup.procs"), encoding="ascii") as procs:
                assert str(child.pid) in procs.read().split(), controller
            if controller in ("pids", ""):
                assert Path(folder, "pids.max").read_text().strip() == "32"
        assert limits.reached() == []
        folders = list(limits.folders.values())
    finally:
        limits.close()  # kills what is left in them, then removes them
    assert child.wait(timeout=10) < 0
    assert not any(os.path.exists(folder) for folder in folders)


def test_without_a_cgroup_each_process_is_held_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "mountinfo").write_text("")  # a machine whose cgroups the server cannot find
    monkeypatch.setattr(tree_limits, "MOUNTS", str(tmp_path / "mountinfo"))
    limits = TreeLimits(memory=256 << 20, processes=32)
    assert limits.folders == {} and not limits.bounds_memory and not limits.bounds_processes
    kinds = dict(limits.rlimits(cpu_seconds=7))
    assert kinds[resource.RLIMIT_DATA] == 256 << 20 and kinds[resource.RLIMIT_CPU] == 7
    assert kinds[resource.RLIMIT_CORE] == 0 and kinds[resource.RLIMIT_FSIZE] == tree_limits.FILE_SIZE
    assert (resource.RLIMIT_NPROC in kinds) is (os.geteuid() != 0)  # root is exempt from it: the gap is said
    gaps = tree_limits.missing(256 << 20)
    assert gaps[0].startswith("a bound on the memory of a command's whole tree") and "256 MiB" in gaps[0]
    assert gaps[1].startswith("a bound on the number of a command's processes")

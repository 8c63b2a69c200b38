"""Attack test: the memory of all children together, not only of each.

A 50 MB .gitignore makes every `git status` hold hundreds of MB; each child's own limit (4 GiB of address
space for git) bounds it alone, and four calls at once took four times as much (6.95 GiB in the issue;
16 GiB possible). Shown first with the budget lifted (four gits at once), then held: no more gits run at
once than the budget's share allows, and the children's memory together follows.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from shipcode_mcp.workspace import process, sandbox, spawner
from shipcode_mcp.workspace.git import commands as git
from shipcode_mcp.workspace.roots import Roots
from support import TreeSampler, family, tree_rss
from workspace_support import context, make_repo

CALLS = 4


class ChildSampler(TreeSampler):
    """The most children the fork server ran at once, and their highest resident size together."""

    def __init__(self, pid: int) -> None:
        super().__init__(pid)
        self.most = 0

    def _run(self) -> None:
        while not self._stop.is_set():
            children = family(self.pid)[1:]
            self.most = max(self.most, len(children))
            self.peak = max(self.peak, sum(tree_rss(pid) for pid in children))
            self._stop.wait(0.01)


def _at_once(roots: Roots, calls: int) -> ChildSampler:
    server = spawner.fork_server()
    server.warm()
    assert server._process is not None
    errors: list[BaseException] = []

    def status() -> None:
        try:
            git.git_status(context(), roots)
        except BaseException as err:  # reported below
            errors.append(err)

    sampler = ChildSampler(server._process.pid)
    with sampler:
        threads = [threading.Thread(target=status) for _ in range(calls)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
    assert not errors, errors
    return sampler


@pytest.fixture
def heavy(tmp_path: Path) -> Roots:
    repo = make_repo(tmp_path / "repo")
    with open(repo / ".gitignore", "w") as ignore:
        ignore.writelines(f"pattern{number}x\n" for number in range(5_000_000))  # 50 MB
    return Roots([str(repo)])


def test_children_together_stay_within_the_memory_budget(heavy: Roots, monkeypatch: pytest.MonkeyPatch) -> None:
    if not spawner.usable():
        pytest.skip("children are counted among the fork server's")
    assert process.MEMORY_BUDGET < CALLS * sandbox.GIT_LIMITS.address_space  # four gits do not fit at once
    one = _at_once(heavy, 1).peak
    assert one > 100 * 1024 * 1024, one  # each git holds hundreds of MB
    for _ in range(3):  # lifted: the four gits run at once (they overlap for seconds; retried if the machine is slow)
        monkeypatch.setattr(process.memory, "total", 1 << 50)
        lifted = _at_once(heavy, CALLS)
        if lifted.most == CALLS:
            break
    assert lifted.most == CALLS and lifted.peak > 2.5 * one, (lifted.most, lifted.peak, one)
    monkeypatch.setattr(process.memory, "total", process.MEMORY_BUDGET)
    held = _at_once(heavy, CALLS)
    share = process.MEMORY_BUDGET // sandbox.GIT_LIMITS.address_space
    assert held.most <= share and held.peak < (share + 0.5) * one, (held.most, held.peak, one)
    assert process.memory.reserved == 0  # every reservation given back
    assert os.path.exists(heavy.first)

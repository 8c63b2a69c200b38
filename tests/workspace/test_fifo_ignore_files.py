"""Attack tests: a FIFO named like a file rg and git read in every folder (.gitignore, .ignore, .gitattributes).

rg and git open it as a file of rules and wait in the kernel for a writer: each call held one of the
MAX_CHILDREN slots until its deadline (30 to 120 s), and a clean root's call was refused after 60 s. Each
attack is first shown with plain rg or git (it waits on the pipe), then the tools answer at once.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest
from attack_support import waits_on_a_fifo

from shipcode_mcp.primitives import ToolError
from shipcode_mcp.workspace import process
from shipcode_mcp.workspace.listing import rg_executable
from shipcode_mcp.workspace.roots import Roots
from shipcode_mcp.workspace.tools import run as run_tool
from workspace_support import Tools, context, make_repo

QUICK = 15.0
"""Well under every child deadline (30 s for git, 60 s for a listing, 120 s for a search), even on a loaded machine."""


@pytest.fixture(params=[".gitignore", ".ignore"])
def trapped(tmp_path: Path, request: pytest.FixtureRequest) -> tuple[Path, str]:
    """A repository with a FIFO named like a file of rules two folders down (too deep to look for before
    rg or git starts)."""
    repo = make_repo(tmp_path / "trapped")
    (repo / "deep" / "er").mkdir(parents=True)
    (repo / "deep" / "er" / "file.txt").write_text("x\n")
    os.mkfifo(repo / "deep" / "er" / request.param)
    return repo, request.param


READ_BY = {".gitignore": ("rg", "git"), ".ignore": ("rg",)}
CALLS = {"rg": (("list_files", {}), ("search_code", {"pattern": "x"})), "git": (("git_status", {}),)}


def test_a_fifo_ignore_file_deep_in_a_tree_stops_the_child_at_once(trapped: tuple[Path, str]) -> None:
    repo, fifo = trapped
    for program in READ_BY[fifo]:  # the attack works on plain rg and git
        waits_on_a_fifo(repo, *([rg_executable(), "--files", "--threads=1"] if program == "rg" else ["git", "status"]))
    with Tools(repo) as tools:
        for name, arguments in (call for program in READ_BY[fifo] for call in CALLS[program]):
            started = time.monotonic()
            message = tools.error(name, arguments)
            assert "named pipe (FIFO)" in message, (name, message)
            assert time.monotonic() - started < QUICK, name
        os.unlink(repo / "deep" / "er" / fifo)
        assert "file.txt" in tools.text("list_files", {"path": "deep/er"})


def test_a_blocked_root_does_not_starve_another(trapped: tuple[Path, str], tmp_path: Path) -> None:
    repo, fifo = trapped
    if "rg" not in READ_BY[fifo]:
        pytest.skip("list_files runs rg, which does not read this file")
    clean = tmp_path / "clean"
    clean.mkdir()
    (clean / "a.txt").write_text("a\n")
    roots = Roots([str(repo), str(clean)])
    outcomes: list[str] = []

    def blocked() -> None:
        try:
            run_tool("list_files", context(), roots, path=str(repo))
            outcomes.append("answered")
        except ToolError as err:
            outcomes.append(str(err))

    threads = [threading.Thread(target=blocked) for _ in range(2 * process.MAX_CHILDREN)]
    for thread in threads:
        thread.start()
    started = time.monotonic()
    listed = run_tool("list_files", context(), roots, path=str(clean))
    assert time.monotonic() - started < QUICK
    assert "a.txt" in listed.to_dict()["content"][0]["text"]
    for thread in threads:
        thread.join(60)
    assert len(outcomes) == len(threads) and all("named pipe (FIFO)" in outcome for outcome in outcomes), outcomes

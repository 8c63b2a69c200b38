"""OrderedNames (source.py): a folder's code files with a match, in rg's path order, each as soon as it is
known. The unsorted rg lists them all while a sorted one races it; whichever ends first gives the rest, and
the names are the same either way. Checked against rg's own sorted listing on a tree whose path order is
not string order, in every way the race can go; a search that stops early leaves no rg running."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from shipcode_mcp.primitives import ToolError
from shipcode_mcp.workspace import process
from shipcode_mcp.workspace.code import source
from shipcode_mcp.workspace.code.source import Folder, OrderedNames, path_key
from shipcode_mcp.workspace.listing import rg_executable
from shipcode_mcp.workspace.roots import Roots
from shipcode_mcp.workspace.tools import run as run_tool
from support import REPO, family, wait_for
from workspace_support import context


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """300 Python files, most with `needle`, under names whose path order differs from string order (a.py and
    a/x.py, a-b/ and a/, a.b/), with an ignored folder and a hidden file rg leaves out."""
    root = tmp_path_factory.mktemp("ordered")
    for number in range(300):
        folder = root / ("a", "a-b", "a.b", "b", "a/deep")[number % 5]
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"m{number:03d}.py").write_text("needle = 1\n" if number % 7 else "other = 2\n")
    (root / "a.py").write_text("needle\n")
    (root / ".gitignore").write_text("ignored/\n")
    (root / "ignored").mkdir()
    (root / "ignored" / "n.py").write_text("needle\n")
    (root / ".hidden.py").write_text("needle\n")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    return root


def _expected(root: Path) -> list[str]:
    """rg's own listing of the files with `needle`, sorted by path as rg sorts."""
    done = subprocess.run([rg_executable(), "--files-with-matches", "--sort=path", "-g", "*.py", "needle"], cwd=root,
                          capture_output=True, check=True, text=True)
    return done.stdout.splitlines()


def _names(root: Path, regex: str | None = "needle") -> OrderedNames:
    return Folder(Roots([str(root)]), str(root)).in_order(context(), regex, "python")


def test_every_name_in_path_order_however_the_race_goes(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    expected = _expected(tree)
    assert len(expected) > 200 and "a/deep/m004.py" in expected and "ignored/n.py" not in expected
    assert expected != sorted(expected)  # path order is not string order here
    for race_after in (10_000, 64, 0):  # no race (the unsorted list ends first), the usual start, at once
        monkeypatch.setattr(source, "RACE_NAMES", race_after)
        names = _names(tree)
        assert list(names) == expected, race_after
        assert names.given == len(expected)
    # The race, made certain: the sorted rg starts at once (RACE_NAMES -1) and the unsorted one is held back
    # until it runs. (1) held until the iteration ends: the sorted rg gives every name, in order.
    monkeypatch.setattr(source, "RACE_NAMES", -1)
    real_list = OrderedNames._list

    def held(until: str) -> Any:
        def listing(self: OrderedNames, *arguments: Any) -> None:
            wait_for(lambda: getattr(self, until), 30, until)
            real_list(self, *arguments)
        return listing

    monkeypatch.setattr(OrderedNames, "_list", held("_stopped"))
    names = _names(tree)
    assert list(names) == expected and names.total is None  # (no total: the unsorted list was never needed)
    # (2) held until the sorted rg runs, which stops after 40 names (as the unsorted one's end stops it): the
    # unsorted list gives the rest, from the name after the last one given.
    monkeypatch.setattr(OrderedNames, "_list", held("_sorted"))
    real_race = OrderedNames._race
    stopped_after = [0]

    def stopped(self: OrderedNames, *arguments: Any) -> Any:
        race = real_race(self, *arguments)
        for given in range(1, 41):
            yield next(race)
            stopped_after[0] = given
        race.close()
        return names_given[-1]

    names_given: list[str] = []
    monkeypatch.setattr(OrderedNames, "_race", stopped)
    names = _names(tree)
    for name in names:
        names_given.append(name)
    assert names_given == expected and names.total == len(expected) and stopped_after[0] == 40
    monkeypatch.setattr(OrderedNames, "_race", real_race)
    monkeypatch.setattr(OrderedNames, "_list", real_list)
    # No slot free for the sorted rg: the unsorted list gives everything.
    monkeypatch.setattr(process, "_slots", threading.BoundedSemaphore(1))
    assert list(_names(tree)) == expected
    # Every code file (no regex), as rg --files lists them.
    monkeypatch.setattr(process, "_slots", threading.BoundedSemaphore(process.MAX_CHILDREN))
    every = subprocess.run([rg_executable(), "--files", "--sort=path", "-g", "*.py"], cwd=tree, capture_output=True,
                           check=True, text=True).stdout.splitlines()
    assert list(_names(tree, None)) == every


def test_a_search_that_stops_early_leaves_no_rg_running(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(source, "RACE_NAMES", 0)
    for stop_after in (1, 5, 100):
        names = iter(_names(tree))
        first = [next(names) for _ in range(stop_after)]
        assert first == _expected(tree)[:stop_after]
        names.close()  # type: ignore[attr-defined]  # a generator: what a for loop's break does
        assert not _rg_running()  # both were killed and reaped before close() returned


def _rg_running() -> list[int]:
    """This process's descendants that are rg (the fork server starts them)."""
    running = []
    for pid in family(os.getpid())[1:]:
        try:
            if Path(f"/proc/{pid}/comm").read_text().strip() == "rg":
                running.append(pid)
        except OSError:
            pass  # gone meanwhile
    return running


def test_path_keys_sort_as_rg_sorts() -> None:
    names = ["a.py", "a/x.py", "a-b/y.py", "a.b/z.py", "ab.py", "a/b/c.py"]
    assert sorted(names, key=path_key) == ["a/b/c.py", "a/x.py", "a-b/y.py", "a.b/z.py", "a.py", "ab.py"]


def test_search_structure_answers_the_same_raced_or_not(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """search_structure's first `limit` matches, in path order, whichever way the names came."""
    answers: list[Any] = []
    for race_after in (10_000, 0):
        monkeypatch.setattr(source, "RACE_NAMES", race_after)
        for limit in (1, 30, 500):
            found = run_tool("search_structure", context(), Roots([str(tree)]), pattern="needle = $V",
                             language="python", limit=limit).to_dict()
            answers.append(found)
    assert answers[:3] == answers[3:]
    paths = [match["path"] for match in answers[1]["structuredContent"]["matches"]]
    assert paths == [name for name in _expected(tree) if name not in ("a.py", ".hidden.py")][:30]  # (`needle` alone)


def test_the_unsorted_listing_is_bounded(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """As every listing is (MAX_LISTING_BYTES): past it, the names are refused, not held."""
    monkeypatch.setattr(source, "RACE_NAMES", 10_000)
    monkeypatch.setattr(source, "MAX_LISTING_BYTES", 500)
    with pytest.raises(ToolError, match="too many files"):
        list(_names(tree))


def test_a_partly_unreadable_tree_still_answers(tmp_path: Path) -> None:
    """rg exits 2 when a folder cannot be read but lists the rest: those names stand, raced or not (they failed
    the whole search when the unsorted listing gave them). Run without the power to read any file (dropped with
    setpriv as root)."""
    script = tmp_path / "check.py"
    script.write_text(UNREADABLE_CHECK)
    command = [sys.executable, str(script), str(tmp_path / "tree")]
    if os.geteuid() == 0:
        command = ["setpriv", "--inh-caps=-dac_override,-dac_read_search",
                   "--bounding-set=-dac_override,-dac_read_search", *command]
    paths = os.pathsep.join([str(REPO / "src"), str(REPO / "tests"), str(REPO / "tests" / "workspace")])
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONPATH": paths})
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.split() == ["5", "5"], done.stdout


UNREADABLE_CHECK = """
import os, sys
from pathlib import Path
from shipcode_mcp.workspace.code import source
from shipcode_mcp.workspace.roots import Roots
from shipcode_mcp.workspace.tools import run
from workspace_support import context

tree = Path(sys.argv[1])
tree.mkdir()
for number in range(5):
    (tree / f"m{number}.py").write_text("needle = 1\\n")
(tree / "zz_locked").mkdir()
(tree / "zz_locked" / "x.py").write_text("needle = 2\\n")
(tree / "zz_locked").chmod(0)
assert not os.access(tree / "zz_locked", os.R_OK), "still readable"
for race_after in (10_000, -1):
    source.RACE_NAMES = race_after
    found = run("search_structure", context(), Roots([str(tree)]), pattern="needle = $V", language="python")
    print(len(found.to_dict()["structuredContent"]["matches"]))
"""

"""The sandbox-cost benchmark's smoke run: a small repository, 2 rounds, so bench/sandbox_cost.py never rots.

Nothing here asserts a timing (the counts are tiny and the machine is shared); it asserts that every
figure, with the sandbox and without, was measured in every round, that the "with" side really ran
sandboxed, and that the answer checks reject a wrong answer.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from support import bench_smoke, load_script

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "bench" / "sandbox_cost.py"


def driver() -> ModuleType:
    return load_script(SCRIPT, "bench_sandbox_cost")


@pytest.fixture(scope="module")
def smoke(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], str]:
    from shipcode_mcp.workspace import sandbox

    reason = sandbox.unavailable_reason()
    if reason is not None:
        pytest.skip(f"no kernel sandbox to measure here: {reason}")
    folder = tmp_path_factory.mktemp("sandbox-cost")
    return bench_smoke(SCRIPT, folder, 60)


def test_every_figure_is_measured_with_and_without_the_sandbox(smoke: tuple[dict[str, Any], str]) -> None:
    report, printed = smoke
    figures = report["figures"]
    rounds = report["config"]["rounds"]
    assert rounds >= 2
    for key in ("git_status on", "git_status off", "search_code on", "search_code off", "git status", "rg",
                "server git_status on", "server git_status off", "server search_code on", "server search_code off",
                "child on", "child off", "git --version", "git --version, preexec_fn"):
        assert len(figures["samples"][key]) == rounds, key
        assert figures["median"][key] > 0, key
    assert set(figures["pairs"]) == {"git_status, in-process", "search_code, in-process", "git_status via the server",
                                     "search_code via the server", "one child doing nothing"}
    for what, pair in figures["pairs"].items():
        assert pair["ratio"] == pytest.approx(pair["on"] / pair["off"]), what
        assert what in printed  # the table shows it
    assert figures["versions"]["landlock_abi"] > 0  # the "on" side ran under Landlock
    assert figures["children_per_call"]["search_code"] == ["rg"]
    assert figures["children_per_call"]["git_status"] and set(figures["children_per_call"]["git_status"]) == {"git"}
    assert figures["confinement_build"]["git"] > 0 and figures["confinement_build"]["rg"] > 0
    assert isinstance(figures["preexec_fn_cost"], float) and "a preexec_fn alone" in printed


def test_the_first_call_is_measured_with_and_without_the_sandbox(smoke: tuple[dict[str, Any], str]) -> None:
    report, printed = smoke
    first = report["figures"]["first_call"]
    assert first["tools"] == ["git_status", "search_code", "server git_status", "server search_code"]
    for tool in first["tools"]:
        for name in ("first_on", "first_off", "later_on", "later_off"):
            assert first[tool][name] > 0, (tool, name)
    for tool in ("git_status", "search_code"):
        # Only the sandboxed process loads the Landlock binding: the difference measured is its loading.
        assert first["landlockpy_loaded"][f"{tool} on"] is True
        assert first["landlockpy_loaded"][f"{tool} off"] is False
    assert first["import_landlockpy"] > 0
    assert "import landlockpy alone" in printed


def test_the_checks_reject_wrong_answers(tmp_path: Path) -> None:
    bench = driver()
    workspace = bench.Workspace(tmp_path, 0, ["a.py", "b/c.py"])
    good = {"repositories": [{"files": [{"path": "b/c.py"}, {"path": "a.py"}], "truncated": False}]}
    bench.same_status(good, workspace)
    for files, truncated in (([{"path": "a.py"}], False), ([{"path": "a.py"}, {"path": "b/c.py"}, {"path": "d"}], False),
                             ([{"path": "a.py"}, {"path": "b/c.py"}], True)):
        with pytest.raises(bench.BenchError):
            bench.same_status({"repositories": [{"files": files, "truncated": truncated}]}, workspace)
    porcelain = (b"1 .M N... 100644 100644 100644 0123 0123 a.py\n? b/c.py\n"
                 b"1 .D N... 100644 100644 000000 4567 4567 with space.py\n")
    assert bench.porcelain_paths(porcelain) == ["a.py", "b/c.py", "with space.py"]

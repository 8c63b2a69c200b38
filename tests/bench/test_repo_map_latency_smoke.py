"""repo_map's benchmark, smoke run: 1 000 files, 2 rounds, so that bench/repo_map_latency.py never rots.

Nothing here asserts a timing (the counts are tiny and the machine is shared); it asserts that the run exits 0
(every map kept its budget and the index's maps were the scan's), that every phase was measured, and that the
checks reject a map over its budget or different from the scan's.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest

from support import REPO, bench_smoke, load_script

SCRIPT = REPO / "bench" / "repo_map_latency.py"


def driver() -> ModuleType:
    return load_script(SCRIPT, "bench_repo_map_latency")


@pytest.fixture(scope="module")
def smoke(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], str]:
    folder = tmp_path_factory.mktemp("repo-map-latency")
    return bench_smoke(SCRIPT, folder, 150)


@pytest.mark.one_python
def test_every_phase_ran_and_every_map_held(smoke: tuple[dict[str, Any], str]) -> None:
    report, printed = smoke
    assert report["errors"] == [] and report["failures"] == []
    rounds = report["settings"]["rounds"]
    budgets = [str(budget) for budget in driver().BUDGETS]
    figures = report["sizes"]["1000"]
    assert figures["build"]["ready"] > 0 and figures["definitions"] > figures["shown"][budgets[-1]] > 0
    for key in ("index", "scan"):
        assert all(len(figures["times"][key][budget]) == 2 for budget in budgets)  # p50, p95
        assert all(figures["first_call"][key][budget] > 0 for budget in budgets)
    assert all(figures["tokens"][budget] <= int(budget) for budget in budgets)
    # each server and budget: the first call and every round
    assert report["maps"] == 2 * len(budgets) * (1 + rounds)
    assert "index p50 / p95" in printed and "0 failed checks" in printed


def test_the_checks_reject_a_map_over_its_budget_or_unlike_the_scans() -> None:
    bench = driver()
    checks = bench.Checks(lambda message: None)
    symbol = {"qualified_name": "f", "kind": "function", "line": 1, "end_line": 2, "def_line": 1, "signature": "def f()",
              "used_by": 1}
    data: dict[str, Any] = {"path": ".", "files": [{"path": "a.py", "used_by": 1, "symbols": [symbol]}], "definitions": 1,
            "shown": 1,
            "code_files": 1, "truncated": False, "skipped": 0, "skipped_files": [], "index": "fresh"}
    result: dict[str, Any] = {"content": [{"type": "text", "text": "a.py\n     1: def f()"}], "structuredContent": data}
    checks.map(result, 1000, "fresh", "a map")
    assert checks.failures == []
    checks.map(result, 50, "fresh", "a map over its budget")
    checks.map(result, 1000, "off", "a map from the wrong side")
    other = {**result, "structuredContent": {**data, "files": [{**data["files"][0], "used_by": 2}]}}
    checks.same(result, other, "two maps")
    assert len(checks.failures) == 3
    more = {**data["files"][0], "path": "b.py", "symbols": [symbol, {**symbol, "qualified_name": "g"},
                                                            {**symbol, "qualified_name": "h"}]}
    checks.same(result, {**result, "structuredContent": {**data, "files": [data["files"][0], more]}}, "three more")
    assert len(checks.failures) == 4
    checks.same(result, {**result, "structuredContent": {**data, "files": [data["files"][0], {**more, "symbols": [symbol]}]}},
                "one more")
    assert len(checks.failures) == 4

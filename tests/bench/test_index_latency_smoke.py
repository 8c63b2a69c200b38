"""The code-index benchmark's smoke run: 1 000 files, 2 rounds, so that bench/index_latency.py never rots.

Nothing here asserts a timing (the counts are tiny and the machine is shared); it asserts that the run exits 0
(so every answer of the index was the scan's), that every phase was measured, and that the checks reject
wrong answers.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest

from support import REPO, bench_smoke, load_script

SCRIPT = REPO / "bench" / "index_latency.py"


def driver() -> ModuleType:
    return load_script(SCRIPT, "bench_index_latency")


@pytest.fixture(scope="module")
def smoke(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], str]:
    folder = tmp_path_factory.mktemp("index-latency")
    return bench_smoke(SCRIPT, folder, 100)


@pytest.mark.one_python
def test_every_phase_ran_and_the_index_agreed_with_the_scan(smoke: tuple[dict[str, Any], str]) -> None:
    report, printed = smoke
    assert report["errors"] == [] and report["mismatches"] == []
    rounds = report["settings"]["rounds"]
    assert list(report["sizes"]) == ["1000"]
    figures = report["sizes"]["1000"]
    build = figures["build"]
    assert build["how"] == "background" and build["ready"] >= build["first_call"] > 0
    assert build["workers"] >= 1 and build["files_per_second"] > 0 and build["database_bytes"] > 0
    queries = figures["lookups"]["queries"]
    assert [query["name"] for query in queries.values()] == [query.name for query in driver().QUERIES]
    for query in queries.values():
        assert query["answers"] > 0 and not query["truncated"]
        assert all(len(samples) == rounds for samples in query["samples"].values())
    update = figures["update"]
    assert len(update["samples"]["index"]) == len(update["samples"]["scan"]) == rounds
    assert all(figures["memory"][key]["peak_rss"] > 0 for key in ("index", "scan"))
    # each query: a first call and every round; the build's first answer and first fresh one; the updates; the restore
    assert report["compared"] == len(queries) * (1 + rounds) + 2 + rounds + 1
    for heading in ("index ready after", "index ÷ rg", "update: first find_symbol of a new def"):
        assert heading in printed


def test_the_checks_reject_wrong_answers() -> None:
    bench = driver()
    item = {"name": "f", "qualified_name": "A.f", "kind": "method", "path": "a.py", "line": 3, "end_line": 5,
            "def_line": 3, "signature": "def f(self)"}
    other = {**item, "path": "b.py"}
    answer = {"symbols": [item, other], "truncated": False}
    assert bench.answer_difference(answer, {"symbols": [item, other], "truncated": False}) == ""
    for wrong in ({"symbols": [item], "truncated": False}, {"symbols": [other, item], "truncated": False},
                  {"symbols": [item, {**other, "end_line": 6}], "truncated": False},
                  {"symbols": [item, other], "truncated": True}, {"truncated": False}):
        assert bench.answer_difference(answer, wrong)
    assert bench.rg_pattern("get_*") == r"get_\w*" and bench.rg_pattern("Popen.communicate") == "communicate"
    found = bench.rg_lines(b"a.py:3:    def f(self):\nb.py:9:f()\n")
    assert found == {("a.py", 3), ("b.py", 9)}
    assert bench.outside_rg([item], found) == [] and bench.outside_rg([other], found) == [("b.py", 3)]


def test_a_tree_has_exactly_its_size_and_every_needed_file() -> None:
    bench = driver()
    files = sorted({*bench.NEEDED, *(f"m{i:03d}.py" for i in range(300))})
    for size in (len(bench.NEEDED), 100, len(files), 2 * len(files) + 40):
        plan = bench.plan_tree(files, size)
        assert len(plan) == len(set(plan)) == size
        assert {("c000", name) for name in bench.NEEDED} <= set(plan)
        last = plan[-1][0]
        assert {(last, name) for name in bench.NEEDED} <= set(plan)

"""The code-intelligence benchmark's smoke run: a slice of CPython's library, one round, so that
bench/code_intel.py never rots.

Nothing here asserts a timing (the counts are tiny and the machine is shared); it asserts that every
phase ran, that every figure was measured, and that the answer checks reject wrong answers.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from support import REPO, bench_smoke, load_script

SCRIPT = REPO / "bench" / "code_intel.py"


def driver() -> ModuleType:
    return load_script(SCRIPT, "bench_code_intel")


@pytest.fixture(scope="module")
def smoke(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], str]:
    folder = tmp_path_factory.mktemp("code-intel")
    return bench_smoke(SCRIPT, folder, 120)


@pytest.mark.one_python
def test_every_phase_ran_and_was_checked(smoke: tuple[dict[str, Any], str]) -> None:
    report, printed = smoke
    assert report["errors"] == []
    accuracy = report["accuracy"]
    assert accuracy["files"] > 20 and accuracy["expected"] > 100 and accuracy["matched"] > 0
    outline = report["outline"]
    assert outline["lines"] == 10_000 and outline["top_level_symbols"] > 50
    assert all(len(outline["samples"][key]) == 1 for key in ("uncached", "cached", "parse"))
    lookups = report["lookups"]
    assert {figures["tool"] for figures in lookups.values()} == {"find_symbol", "find_references"}
    for figures in lookups.values():
        assert figures["answers"] > 0 and figures["rg_lines"] >= figures["answers"]
        assert figures["cold"] > 0 and figures["warm"] > 0 and figures["rg"] > 0
    prefilter = report["prefilter"]  # the same definitions with and without it (else an error), fewer parses
    assert prefilter and all(figures["parsed"] <= figures["parsed_unfiltered"] for figures in prefilter.values())
    scan = report["scan"]  # the same uses from Python's scan as from a parse (else an error)
    assert scan and all(figures["references"] >= 0 and figures["scan"] > 0 for figures in scan.values())
    economy = report["economy"]
    assert [task["kind"] for task in economy["tasks"]] == [task.kind for task in driver().TASKS]
    assert all(task["ours"] > 0 and task["grep"] > 0 and task["whole"] >= task["grep"] for task in economy["tasks"])
    targets = {check["target"] for check in report["targets"]}
    assert any("precision" in target for target in targets) and any("token economy" in target for target in targets)
    for heading in ("accuracy, Python outlines against ast", "outline of a 10,000-line file", "navigation task"):
        assert heading in printed
    if shutil.which("ctags"):
        assert report["ctags"] and "ctags agreement" in printed
        for figures in report["ctags"].values():
            assert figures["files"] > 0 and figures["ctags_found"] <= figures["ctags"]


def test_the_checks_reject_wrong_answers(tmp_path: Path) -> None:
    bench = driver()
    expected = {("a.py", 3), ("b/c.py", 10)}
    symbols = [{"path": "a.py", "line": 3, "kind": "function"}, {"path": "b/c.py", "line": 10, "kind": "class"}]
    bench.same_definitions(symbols, expected, "x")
    for wrong in (symbols[:1], [*symbols, {"path": "d.py", "line": 1, "kind": "method"}],
                  [symbols[0], {"path": "b/c.py", "line": 11, "kind": "class"}]):
        with pytest.raises(bench.BenchError):
            bench.same_definitions(wrong, expected, "x")
    bench.same_definitions([*symbols, {"path": "d.py", "line": 1, "kind": "variable"}], expected, "x")  # not a definition
    rg = bench.rg_lines(b"a.py:3:def x():\nb/c.py:12:    x()\n")
    assert rg == {("a.py", 3), ("b/c.py", 12)}
    bench.within_rg([{"path": "a.py", "line": 3}], rg, "x")
    for wrong in ([], [{"path": "a.py", "line": 4}]):
        with pytest.raises(bench.BenchError):
            bench.within_rg(wrong, rg, "x")
    ours, theirs = bench.Tag("f", "function", 2, 1, 9), bench.Tag("f", "function", 3, 3, 3)
    assert bench.matches(ours, theirs) and not bench.matches(bench.Tag("g", "function", 2, 1, 9), theirs)
    assert not bench.matches(bench.Tag("f", "function", 5, 5, 9), theirs)
    found, lost = bench.found_in([theirs, bench.Tag("h", "class", 20, 20, 20)], [ours], wanted_is_ours=False)
    assert (found, [tag.name for tag in lost]) == ([theirs], ["h"])
    (tmp_path / "min.js").write_text("x" * 2000 + "\n")
    (tmp_path / "ok.js").write_text("function f() {}\n" * 10)
    assert bench.minified(tmp_path / "min.js") and not bench.minified(tmp_path / "ok.js")

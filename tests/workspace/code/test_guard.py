"""The syntax check of every write (code/guard.py) on real third-party Python code (bench/guard_accuracy.py: the
sdists of requests, click and attrs, pinned by hash), CPython's parser as the truth: a harmless change is never
refused, a change that breaks the file always is."""

from __future__ import annotations

from typing import Any

import pytest

from support import PEER_CACHE, REPO, fetched_corpora, load_script

pytest.importorskip("ast_grep_py")


@pytest.fixture(scope="module")
def reports() -> list[dict[str, Any]]:
    bench = load_script(REPO / "bench" / "guard_accuracy.py", "bench_guard_accuracy")
    names = ("requests", "click", "attrs")
    roots = fetched_corpora(bench, *names)
    assert all(root.is_dir() for root in roots)
    return [bench.measure(bench.CORPORA[name], PEER_CACHE) for name in names]


def test_harmless_changes_pass_and_breaking_ones_are_refused(reports: list[dict[str, Any]]) -> None:
    """Measured: 0 of 36 / 32 / 38 harmless changes refused; 263 / 247 / 220 breaking changes, all refused."""
    for report in reports:
        assert report["files"] > 10 and report["breaking"] > 150 and report["harmless"] > 20, report
        assert report["false_refusals"] == 0, report["examples"]["refused"]
        assert report["detection"] >= 0.98, report["examples"]["missed"]

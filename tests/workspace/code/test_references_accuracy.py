"""find_references against a real language server on a real third-party project (bench/references_precision.py).

basedpyright's references of every top-level function and class and every method of requests 2.32.3 (its
sdist from PyPI, pinned by hash) are the truth; find_references is asked each symbol as an agent names it.
The bench reports the figures for three projects; this holds the one corpus to what it measured, so that
a change to the scope rules that loses precision or recall fails here.
"""

from __future__ import annotations

from typing import Any

import pytest

from support import PEER_CACHE, REPO, fetched_corpora, load_script

pytestmark = pytest.mark.one_python  # (a measurement on real code: conftest.py)


@pytest.fixture(scope="module")
def report() -> dict[str, Any]:
    bench = load_script(REPO / "bench" / "references_precision.py", "bench_references_precision")
    corpus = bench.CORPORA["requests"]
    [root] = fetched_corpora(bench, "requests")
    assert (root / "requests" / "sessions.py").is_file()
    measured: dict[str, Any] = bench.measure(corpus, PEER_CACHE)
    return measured


@pytest.mark.timeout(600)
def test_scoped_uses_are_the_language_servers_references(report: dict[str, Any]) -> None:
    assert report["symbols"] > 250  # every def, class and method, not a sample
    scoped = report["modes"]["scoped only"]
    assert scoped["precision"] >= 0.98 and scoped["recall"] >= 0.97, scoped  # measured: 0.999, 0.997


@pytest.mark.timeout(600)
def test_every_use_returned_keeps_the_recall_at_much_better_precision_than_a_name_search(report: dict[str, Any]) -> None:
    every, plain = report["modes"]["scopes, every use"], report["modes"]["by name"]
    assert every["recall"] >= 0.99, every  # measured: 1.000
    assert every["precision"] >= 1.8 * plain["precision"], (every, plain)  # measured: 0.829 against 0.437
    shared_every, shared_plain = report["shared"]["scopes, every use"], report["shared"]["by name"]
    assert shared_every["precision"] >= 3 * shared_plain["precision"], (shared_every, shared_plain)  # names defined twice


@pytest.mark.timeout(600)
def test_with_precise_every_use_is_the_language_servers(report: dict[str, Any]) -> None:
    """--precise: the server's own basedpyright (in its sandbox, spoken to by our client, asked at the definitions
    our outline finds) against basedpyright run apart through pygls."""
    exact = report["modes"]["exact only"]
    assert exact["precision"] >= 0.99 and exact["recall"] >= 0.99, exact  # measured: 1.000, 1.000
    assert report["modes"]["precise, every use"]["recall"] >= 0.99

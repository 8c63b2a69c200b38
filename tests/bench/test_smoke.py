"""The benchmark's smoke run: tiny counts, our echo server and the floor, so bench/run.py never rots.

Nothing here asserts a timing (CI machines are noisy and the counts are tiny); it asserts that every
phase ran for every server and that every response was checked, and that the checks do reject bad
responses.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from shipcode_bench import driver as run  # bench/ is on sys.path (tests/bench/conftest.py)
from shipcode_bench.driver import Config, percentile

from support import bench_smoke

REPO = Path(__file__).resolve().parents[2]
RUN = REPO / "bench" / "run.py"


@pytest.fixture(scope="module")
def smoke(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    folder = tmp_path_factory.mktemp("bench")
    report, printed = bench_smoke(RUN, folder, 120)
    assert "| ping throughput, pipelined" in printed  # the table was printed
    return report


@pytest.mark.parametrize("key", ["floor", "shipcode-echo"])
def test_every_phase_ran_and_every_response_was_checked(smoke: dict[str, Any], key: str) -> None:
    server = smoke["servers"][key]
    assert server["errors"] == []
    rounds = smoke["config"]["repetitions"]
    era = {"era legacy tools/call", "era modern tools/call", "era ping", "era server/discover"}  # our server speaks both eras
    assert set(server["sent"]) == {"initialize", "warm-up", "latency", "ping", "tools/call", "shutdown"} | (
        era if key == "shipcode-echo" else set())
    assert server["checked"] == server["sent"]
    assert server["sent"]["ping"] == rounds * smoke["config"]["pings"]
    for metric in ("cold_start", "ping_rps", "ping_cpu", "call_rps", "call_cpu", "latency_p50", "latency_p99",
                   "rss_rest", "rss_peak", "shutdown_answered", "shutdown_exit", "shutdown_time"):
        assert len(server["samples"][metric]) >= rounds, metric
        assert server["median"][metric] >= 0, metric


def test_ratios_and_targets_come_from_the_same_run(smoke: dict[str, Any]) -> None:
    ours, floor = smoke["servers"]["shipcode-echo"], smoke["servers"]["floor"]
    assert ours["ratio_to_floor"]["ping_rps"] == pytest.approx(ours["median"]["ping_rps"] / floor["median"]["ping_rps"])
    assert smoke["servers"]["python"]["median"]["cold_start"] > 0
    measured = {check["target"] for check in smoke["targets"] if check["measured"] is not None}
    assert "ping throughput >= 0.7x floor" in measured and "shutdown: 10 of 10 answered" in measured
    assert smoke["seconds"] > 0  # how long the whole run took, for docs/performance.md's "about N minutes"


def test_the_era_phase_compares_both_paths_in_every_round(smoke: dict[str, Any]) -> None:
    server = smoke["servers"]["shipcode-echo"]
    config = smoke["config"]
    rounds = config["repetitions"]
    # each pair sends its count once per side per round: pipelined ones `calls`, one-at-a-time ones `latency`
    assert server["sent"]["era modern tools/call"] == server["sent"]["era legacy tools/call"] == rounds * (
        config["calls"] + config["latency"])
    assert server["sent"]["era server/discover"] == server["sent"]["era ping"] == rounds * (config["calls"] + config["latency"])
    for pair in ("call", "call_seq", "discover", "discover_seq"):
        samples = server["samples"]
        assert len(samples[f"era_{pair}_cost"]) == rounds, pair
        for legacy, modern, cost in zip(samples[f"era_{pair}_legacy"], samples[f"era_{pair}_modern"],
                                        samples[f"era_{pair}_cost"], strict=True):
            assert cost == pytest.approx(modern / legacy)  # a paired ratio, from the same round
    assert len(server["samples"]["era_call_cpu_cost"]) == rounds
    measured = {check["target"] for check in smoke["targets"] if check["measured"] is not None}
    assert {"modern tools/call <= 1.15x legacy (pipelined)", "modern tools/call <= 1.15x legacy (one at a time)"} <= measured


def test_modern_results_must_be_complete_and_name_the_server() -> None:
    echo = run.Echo()
    content = [{"type": "text", "text": "echo 7"}]
    good: dict[str, Any] = {"jsonrpc": "2.0", "id": 7, "result": {"resultType": "complete", "content": content, "isError": False,
                                                   "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "e", "version": "1"}}}}
    checker = run.Checker()
    checker.response("call", good, 7, echo, modern=True)
    for result in ({**good["result"], "resultType": "input_required"}, {k: v for k, v in good["result"].items() if k != "_meta"},
                   {"content": content, "isError": False}):
        with pytest.raises(run.BenchError):
            checker.response("call", {**good, "result": result}, 7, echo, modern=True)
    sent = json.loads(run.modern_call(echo, 3))
    assert sent["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] == "2026-07-28"
    assert sent["params"]["arguments"] == json.loads(run.echo_call(echo, 3))["params"]["arguments"]


def test_the_checks_reject_bad_responses() -> None:
    echo = run.Echo()
    good = {"jsonrpc": "2.0", "id": 7, "result": {"content": [{"type": "text", "text": "echo 7"}], "isError": False}}
    checker = run.Checker()
    checker.response("call", good, 7, echo)
    assert checker.checked["call"] == 1
    bad = [
        {**good, "id": 8},
        {"jsonrpc": "2.0", "id": 7, "error": {"code": -32603, "message": "Internal error"}},
        {**good, "result": {"content": [{"type": "text", "text": "echo 8"}]}},
        {**good, "result": {"content": [{"type": "text", "text": "echo 7"}], "isError": True}},
        {"id": 7, "result": {}},
    ]
    for message in bad:
        with pytest.raises(run.BenchError):
            checker.response("call", message, 7, echo)
    pings: list[dict[str, Any]] = [{"jsonrpc": "2.0", "id": i, "result": {}} for i in (1, 2, 3)]
    checker.all_of("ping", [pings[2], {"jsonrpc": "2.0", "method": "notifications/message"}, pings[0], pings[1]], range(1, 4))
    for wrong in ([pings[0], pings[1]], [pings[0], pings[1], pings[1]], [*pings, {"jsonrpc": "2.0", "id": 4, "result": {}}]):
        with pytest.raises(run.BenchError):
            checker.all_of("ping", wrong, range(1, 4))
    assert checker.checked["ping"] == 3


def test_percentile_is_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]
    assert percentile(values, 0.5) == 50
    assert percentile(values, 0.99) == 99
    assert percentile([3.0], 0.99) == 3


def test_generated_trees_are_deterministic(tmp_path: Path) -> None:
    from shipcode_bench.workspaces import NEEDLE, make_files_tree

    def snapshot(root: Path) -> dict[str, bytes]:
        return {path.relative_to(root).as_posix(): path.read_bytes() for path in sorted(root.rglob("*")) if path.is_file()}

    make_files_tree(tmp_path / "a" / "tree", 300, lambda _: None)
    make_files_tree(tmp_path / "b" / "tree", 300, lambda _: None)
    first, second = snapshot(tmp_path / "a" / "tree"), snapshot(tmp_path / "b" / "tree")
    assert first == second and len(first) == 300
    assert sum(NEEDLE.encode() in data for data in first.values()) == 3  # one file in a hundred holds the needle


TINY = Config(repetitions=1, starts=1, pings=50, calls=20, latency=64, warmup=5, timeout=60.0, shutdown_timeout=10.0)


def test_tool_measures_run_every_task_against_its_floor(tmp_path: Path) -> None:
    """The tool measures on tiny workspaces (our own sources as the git repo), peers left out: every task has a figure
    for ours and for its floor, our answers matched the floor's output, and resources/list paged through each tree."""
    from shipcode_bench.tools import tool_figures
    from shipcode_bench.workspaces import Scale

    scale = Scale(tree_sizes=(100, 200, 400), big_lines=3000, far_offset=2500, library=REPO / "src" / "shipcode_mcp")
    figures = tool_figures(sys.executable, REPO / "src", tmp_path, TINY, lambda _: None, peers=False, scale=scale)
    assert figures["errors"] == []
    tasks = {task["task"]: task for task in figures["tasks"]}
    assert len(tasks) == 16
    for task in tasks.values():
        assert task["ours"] > 0 and task["floor"] > 0 and task["to_floor"] == pytest.approx(task["ours"] / task["floor"])
        assert task["peers"] == {}
    assert any(key.startswith("read_file, 100 lines at offset 2,500 of ") for key in tasks), sorted(tasks)
    trees = figures["memory"]
    assert set(trees) == {"stdlib", "big", "files-100", "files-200", "files-400"}
    for key, tree in trees.items():  # after the rounds: the server, and its fork server where a tool ran git or rg
        assert tree["after"]["processes"] >= (1 if key == "big" else 2) and tree["after"]["pss"] > 0, (key, tree)
        assert tree["after"]["peak"] >= tree["after"]["rss"] > 0 and tree["at_rest"]["processes"] >= 1
    paging = figures["resources_list"]
    assert paging["resources"] == {"200": 200, "400": 400}
    assert paging["growth"] == pytest.approx(paging["per_file"]["400"] / paging["per_file"]["200"])


def test_http_measures_compare_ours_with_the_floor(tmp_path: Path) -> None:
    """Ours over HTTP (stateful, and --stateless --workers 2) beside the Starlette floor at each concurrency, every
    reply checked; the memory of open sessions measured; the SDK left out."""
    pytest.importorskip("uvicorn")
    from shipcode_bench.http import CONCURRENCY, http_figures

    figures = http_figures(sys.executable, REPO / "src", tmp_path, TINY, lambda _: None, peers=False, sessions=20)
    assert figures["errors"] == []
    cells = {(row["mode"], row["request"], row["concurrency"]) for row in figures["rows"]}
    assert cells == {(mode, request, clients) for mode in ("stateful", "stateless --workers 2")
                     for request in ("ping", "tools/call") for clients in CONCURRENCY}
    assert all(row["ours"] > 0 and row["floor"] > 0 and row["sdk"] is None for row in figures["rows"])
    assert all(set(row["cpu"]) == {"floor", "ours"} and row["cpu_to_sdk"] is None for row in figures["rows"])
    # every one of the 20 sessions got its id (else a BenchError); 20 sessions may fit in pages already mapped: >= 0
    assert figures["session_bytes"]["ours stateful"] >= 0
    assert [check["target"] for check in figures["targets"]][-1] == "HTTP memory per open session <= 8 KiB"

"""What run_command's sandbox costs: its start, a real test suite in it, and the server's answers while it streams.

Three measures, each against its baseline in the same run (rounds interleaved; medians):

- start: run_command of `true` (in-process: the tool function, a real request context, the real sandbox: the scan
  of the root, bubblewrap's namespaces and mounts, their check, the cgroups) against a plain `sh -c true` forked by
  the same process. Target: under 15 ms more.
- tests: click 8.1.7's own test suite (its sdist, pinned by hash: src and tests) run by pytest in the sandbox
  against the same command run plainly, each round checked to pass the same number of tests. Target: within 1.15x.
- ping: a real server over pipes (`shipcode-mcp --allow-run`) runs a command that writes 100 MB to stdout while a
  client pings it every 20 ms (5 runs, a fresh server each): how long each ping waits for its answer. Target: the
  slowest under 50 ms, of the pings sent once the call is past the stdio loop's order grace (stdio.ORDER_GRACE,
  50 ms: the loop waits that long for a job it just started, so that a quick call is answered before what follows
  it); a ping sent within the grace waits for its end by design, reported apart (`in_grace_ms`), without a target.

    .venv/bin/python bench/run_command_cost.py            # 15 rounds (3 of the test suite); JSON in .bench-cache
    .venv/bin/python bench/run_command_cost.py --smoke    # 2 rounds, 50 MB, no suite: a few seconds, no target

Needs the sandbox (the `run` extra, user namespaces); standard library otherwise, like bench/run.py.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import re
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import run as harness  # bench/run.py: tables, machine facts
from references_precision import CORPORA, download

START_TARGET_MS = 15.0
TESTS_TARGET = 1.15
PING_TARGET_MS = 50.0
PASSED = re.compile(r"(\d+) passed")


def _context() -> Any:
    """A real request context, of a session with no transport (what the server gives a tool)."""
    from shipcode_mcp.context import Context
    from shipcode_mcp.runner import ThreadRunner
    from shipcode_mcp.server import Server

    runner = ThreadRunner(Server("bench", "1"), lambda message, related: None)
    return Context(runner, 1, "tools/call", {})


def _roots(root: Path) -> Any:
    from shipcode_mcp.workspace.command_sandbox import RunOptions
    from shipcode_mcp.workspace.roots import Roots

    roots = Roots([str(root)])
    roots.run_options = RunOptions(readable=sorted({os.path.realpath(sys.prefix), os.path.realpath(sys.base_prefix)}))
    return roots


def _sandboxed(roots: Any, command: str, timeout: int = 600) -> dict[str, Any]:
    from shipcode_mcp.workspace.run_command import run_command

    result = run_command(_context(), roots, command, None, timeout, None, None)
    if result.is_error or result.structured is None:
        raise harness.BenchError(f"run_command failed: {result.content}")
    data: dict[str, Any] = result.structured
    return data


def measure_start(root: Path, rounds: int) -> dict[str, Any]:
    roots = _roots(root)
    ours: list[float] = []
    plain: list[float] = []
    for _ in range(rounds):
        started = time.perf_counter()
        data = _sandboxed(roots, "true")
        ours.append(time.perf_counter() - started)
        if data["exit_code"] != 0:
            raise harness.BenchError(f"true exited {data['exit_code']}: {data['stderr']}")
        started = time.perf_counter()
        subprocess.run(["sh", "-c", "true"], check=True)
        plain.append(time.perf_counter() - started)
    more = statistics.median(ours) - statistics.median(plain)
    return {"sandboxed_ms": _ms(ours), "plain_ms": _ms(plain), "more_ms": round(more * 1000, 2),
            "target_ms": START_TARGET_MS, "met": more * 1000 < START_TARGET_MS}


def _ms(values: list[float]) -> float:
    return round(statistics.median(values) * 1000, 2)


def fetch_suite(cache: Path) -> Path:
    """click's sdist, whole (src and tests), unpacked once under `cache` (pip checks its hash)."""
    corpus = CORPORA["click"]
    target = cache.resolve() / "suites" / f"{corpus.name}-{corpus.version}"
    if (target / "complete").exists():
        return target / f"{corpus.name}-{corpus.version}"
    with tempfile.TemporaryDirectory() as temporary:
        sdist = download(corpus, Path(temporary))
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(parents=True)
        with tarfile.open(sdist) as archive:
            archive.extractall(target, filter="data")
    (target / "complete").touch()
    return target / f"{corpus.name}-{corpus.version}"


def measure_tests(suite: Path, rounds: int) -> dict[str, Any]:
    command = (f"PYTHONDONTWRITEBYTECODE=1 PYTHONPATH=src {sys.executable} -m pytest -q -p no:cacheprovider "
               "-p no:randomly -p no:warnings tests")
    roots = _roots(suite)
    ours: list[float] = []
    plain: list[float] = []
    counts: set[str] = set()
    for _ in range(rounds):
        started = time.perf_counter()
        data = _sandboxed(roots, command)
        ours.append(time.perf_counter() - started)
        counts.add(_passed(data["stdout"], data["exit_code"], "sandboxed"))
        started = time.perf_counter()
        with tempfile.TemporaryDirectory() as home:  # the environment the sandbox gives, stdin as empty
            done = subprocess.run(["sh", "-c", command], cwd=suite, capture_output=True, text=True, check=False,
                                  stdin=subprocess.DEVNULL, env={"PATH": os.environ["PATH"], "HOME": home,
                                                                 "TMPDIR": home, "LANG": "C.UTF-8"})
        plain.append(time.perf_counter() - started)
        counts.add(_passed(done.stdout, done.returncode, "plain"))
    if len(counts) != 1:
        raise harness.BenchError(f"the suite passed different numbers of tests: {sorted(counts)}")
    ratio = statistics.median(ours) / statistics.median(plain)
    return {"suite": "click 8.1.7 tests", "passed": counts.pop(), "sandboxed_s": round(statistics.median(ours), 3),
            "plain_s": round(statistics.median(plain), 3), "ratio": round(ratio, 3), "target": TESTS_TARGET,
            "met": ratio <= TESTS_TARGET}


def _passed(output: str, code: int | None, where: str) -> str:
    found = PASSED.findall(output)
    if code != 0 or not found:
        raise harness.BenchError(f"the suite failed {where} (exit {code}): {output[-1500:]}")
    return found[-1]


def measure_ping(root: Path, size: int, runs: int) -> dict[str, Any]:
    """`runs` commands, each in a fresh server: the pings of all."""
    waits: list[float] = []
    in_grace: list[float] = []
    for _ in range(runs):
        run_waits, run_in_grace = _pings_of_one_run(root, size)
        waits += run_waits
        in_grace += run_in_grace
    if not waits:
        raise harness.BenchError(f"the command ended within the order grace: no ping was sent while it ran ({size} bytes)")
    slowest = max(waits) * 1000
    return {"output_mb": size / 1e6, "runs": runs, "pings": len(waits), "median_ms": _ms(waits),
            "slowest_ms": round(slowest, 2), "target_ms": PING_TARGET_MS, "met": slowest < PING_TARGET_MS,
            "in_grace_ms": [round(wait * 1000, 2) for wait in in_grace]}


def _pings_of_one_run(root: Path, size: int) -> tuple[list[float], list[float]]:
    """A server runs a command that writes `size` bytes while it is pinged every 20 ms: the waits of the pings sent
    past the order grace, and of those sent within it."""
    from shipcode_mcp.transports.stdio import ORDER_GRACE  # (the package measured, imported where it is measured)

    server = subprocess.Popen([sys.executable, "-m", "shipcode_mcp", "--allow-run", "--no-index", str(root)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                              env={**os.environ, "PYTHONPATH": str(harness.REPO / "src")})
    assert server.stdin is not None and server.stdout is not None
    answers: queue.Queue[dict[str, Any]] = queue.Queue()

    def read() -> None:
        assert server.stdout is not None
        for line in server.stdout:
            answers.put(json.loads(line))

    threading.Thread(target=read, daemon=True).start()

    def send(message: dict[str, Any]) -> None:
        assert server.stdin is not None
        server.stdin.write((json.dumps(message) + "\n").encode())
        server.stdin.flush()

    try:
        send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}})
        answers.get(timeout=30)
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        send({"jsonrpc": "2.0", "id": "run", "method": "tools/call", "params": {
            "name": "run_command", "arguments": {"command": f"yes | head -c {size}", "timeout": 600}}})
        called = time.perf_counter()
        waits: list[float] = []
        in_grace: list[float] = []
        result: dict[str, Any] | None = None
        number = 0
        while result is None:
            number += 1
            sent = time.perf_counter()
            send({"jsonrpc": "2.0", "id": number, "method": "ping"})
            while True:
                answer = answers.get(timeout=60)
                if answer.get("id") == "run":
                    result = answer
                    continue
                if answer.get("id") == number:
                    (in_grace if sent - called < ORDER_GRACE else waits).append(time.perf_counter() - sent)
                    break
            time.sleep(0.02)
        data = result["result"]["structuredContent"]
        if data["stdout_bytes"] != size:
            raise harness.BenchError(f"the command wrote {data['stdout_bytes']} bytes, not {size}")
    finally:
        server.kill()
        server.wait()
    return waits, in_grace


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--smoke", action="store_true", help="2 rounds, 50 MB, no test suite")
    parser.add_argument("--cache", type=Path, default=harness.DEFAULT_CACHE)
    parser.add_argument("--json", type=Path, help="where the report goes (default: CACHE/run_command_cost.json)")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(harness.REPO / "src"))
    from shipcode_mcp.workspace.command_sandbox import unavailable_reason

    missing = unavailable_reason()
    if missing is not None:
        print(f"run_command_cost: no sandbox for commands here: {missing}", file=sys.stderr)
        return 2
    rounds = 2 if args.smoke else args.rounds
    report: dict[str, Any] = {"machine": harness.machine()}
    with tempfile.TemporaryDirectory() as folder:
        report["start"] = measure_start(Path(folder), rounds)
        report["ping"] = measure_ping(Path(folder), 50_000_000 if args.smoke else 100_000_000,
                                      1 if args.smoke else max(3, rounds // 3))
    if not args.smoke:
        report["tests"] = measure_tests(fetch_suite(args.cache), max(3, rounds // 5))
    print(json.dumps({key: value for key, value in report.items() if key != "machine"}, indent=2))
    target = args.json or args.cache / "run_command_cost.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(report, indent=2))
    return 0 if args.smoke or all(part.get("met", True) for part in report.values() if isinstance(part, dict)) else 1


if __name__ == "__main__":
    sys.exit(main())

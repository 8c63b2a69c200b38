"""Measures of the protocol: cold start, pipelined and one-at-a-time pings and calls, memory, shutdown, eras."""

from __future__ import annotations

import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .driver import (
    INITIALIZE,
    SHUTDOWN_CALLS,
    BenchError,
    Child,
    Config,
    Echo,
    RssSampler,
    Samples,
    Target,
    clean_environment,
    cpu_seconds,
    discover,
    echo_call,
    is_response,
    median,
    memory,
    modern_call,
    parse_lines,
    percentile,
    ping,
    stderr_log,
    wait_exit,
)


def cold_start(target: Target, samples: Samples, cache: Path, config: Config) -> float:
    """Spawn until the initialize response is read (for the baseline command: until it exits)."""
    if not target.server:
        started = time.perf_counter()
        done = subprocess.run(target.command, stdin=subprocess.DEVNULL, capture_output=True, timeout=config.timeout, check=False,
                              env={**clean_environment(), **target.env})
        elapsed = time.perf_counter() - started
        if done.returncode != 0:
            raise BenchError(f"{target.key} exited with {done.returncode}")
        return elapsed
    started = time.perf_counter()
    child = Child(target, stderr_log(cache, target))
    try:
        child.arm(config.timeout)
        samples.sent["initialize"] += 1
        child.send(INITIALIZE)
        message = child.read_response()
        elapsed = time.perf_counter() - started
        samples.checker.response("initialize", message, 0)
        child.close(config.shutdown_timeout)
    finally:
        child.kill()
    return elapsed


@dataclass
class Pipelined:
    rate: float  # requests per second, from the first write to the last response
    cpu: float  # server CPU seconds per request
    peak_rss: int


def pipelined(child: Child, samples: Samples, phase: str, count: int, make: Callable[[int], bytes],
              echo: Echo | None = None, modern: bool = False) -> Pipelined:
    """A writer thread writes all `count` requests while this thread reads the responses.

    Responses are only counted (newlines) while the clock runs, and parsed and checked after it
    stops, so the driver takes as little CPU as it can from the server on a small machine.
    """
    ids = child.ids(count)
    payload = b"".join(make(i) for i in ids)
    failure: list[BenchError] = []

    def write() -> None:
        try:
            child.send(payload)
        except BenchError as err:
            failure.append(err)

    writer = threading.Thread(target=write, daemon=True)
    chunks: list[bytes] = []
    lines = 0
    wanted = count  # newlines to wait for; grows if some lines turn out to be notifications
    samples.sent[phase] += count
    cpu_before = cpu_seconds(child.pid)
    with RssSampler(child.pid) as sampler:
        started = time.perf_counter()
        writer.start()
        while True:
            chunk = child.out.read1(1 << 16)
            if not chunk:
                raise BenchError(f"{child.target.key} closed its output after {lines} of {count} responses"
                                 f"{''.join(f'; {f}' for f in failure)}{child.stderr_tail()}")
            chunks.append(chunk)
            lines += chunk.count(b"\n")
            if lines >= wanted:
                finished = time.perf_counter()
                cpu_after = cpu_seconds(child.pid)
                data = b"".join(chunks)
                complete = data[:data.rfind(b"\n") + 1]
                messages = parse_lines(complete)
                answered = sum(1 for message in messages if is_response(message))
                if answered >= count:
                    break
                wanted = lines + count - answered
    writer.join()
    if data[len(complete):].strip():
        raise BenchError(f"{phase}: output after the last response: {data[len(complete):][:200]!r}")
    samples.checker.all_of(phase, messages, ids, echo, modern)
    return Pipelined(rate=count / (finished - started), cpu=(cpu_after - cpu_before) / count, peak_rss=sampler.peak)


def sequential(child: Child, samples: Samples, phase: str, count: int, make: Callable[[int], bytes],
               echo: Echo | None = None, modern: bool = False) -> list[float]:
    """One request at a time; returns the round-trip time of each, from the write to the response read."""
    times: list[float] = []
    samples.sent[phase] += count
    for request_id in child.ids(count):
        line = make(request_id)
        started = time.perf_counter()
        child.send(line)
        raw = child.read_line()
        elapsed = time.perf_counter() - started
        messages = parse_lines(raw)
        if messages and is_response(messages[0]):
            times.append(elapsed)
        else:  # a notification came first: this round trip has no clean figure
            while not (messages and is_response(messages[0])):
                messages = parse_lines(child.read_line())
        samples.checker.response(phase, messages[0], request_id, echo, modern)
    return times


def session(target: Target, samples: Samples, cache: Path, config: Config) -> None:
    """One process: memory at rest, latency, pipelined pings (and peak memory), pipelined tools/call."""
    echo = target.echo
    child = Child(target, stderr_log(cache, target))
    try:
        child.arm(config.timeout)
        child.initialize(samples)
        sequential(child, samples, "warm-up", config.warmup, ping)
        if echo is not None:
            sequential(child, samples, "warm-up", max(1, config.warmup // 4), lambda i: echo_call(echo, i), echo)
        time.sleep(0.2)  # "at rest": settled, idle, after a first use
        at_rest = memory(child.pid)
        samples.add("rss_rest", at_rest.get("VmRSS", 0))
        samples.add("anon_rest", at_rest.get("RssAnon", 0))
        times = sequential(child, samples, "latency", config.latency, ping)
        samples.add("latency_p50", percentile(times, 0.50))
        samples.add("latency_p99", percentile(times, 0.99))
        child.arm(config.timeout)
        result = pipelined(child, samples, "ping", config.pings, ping)
        samples.add("ping_rps", result.rate)
        samples.add("ping_cpu", result.cpu)
        samples.add("rss_peak", result.peak_rss)
        if echo is not None:
            child.arm(config.timeout)
            result = pipelined(child, samples, "tools/call", config.calls, lambda i: echo_call(echo, i), echo)
            samples.add("call_rps", result.rate)
            samples.add("call_cpu", result.cpu)
        child.close(config.shutdown_timeout)
    finally:
        child.kill()


def shutdown(target: Target, samples: Samples, cache: Path, config: Config) -> None:
    """10 pipelined tools/call, then stdin closed at once: how many are answered, exit status, time to exit."""
    echo = target.echo
    assert echo is not None
    child = Child(target, stderr_log(cache, target))
    try:
        child.arm(config.timeout)
        child.initialize(samples)
        ids = child.ids(SHUTDOWN_CALLS)
        samples.sent["shutdown"] += SHUTDOWN_CALLS
        child.send(b"".join(echo_call(echo, i) for i in ids))
        child.arm(config.shutdown_timeout)  # one that never exits is killed, and shows as such
        closed = time.perf_counter()
        child.proc.stdin.close()  # type: ignore[union-attr]
        output = child.out.read()
        code = wait_exit(child.proc, config.shutdown_timeout)
        elapsed = time.perf_counter() - closed
        child.disarm()
    finally:
        child.kill()
    answered = 0
    for message in parse_lines(output):
        if is_response(message) and message.get("id") in ids and "error" not in message:
            # An error here (fastmcp's "Connection closed") is a dropped request and counts as one.
            samples.checker.response("shutdown", message, message["id"], echo)
            answered += 1
    samples.add("shutdown_answered", answered)
    samples.add("shutdown_exit", KILLED if code is None else code)
    samples.add("shutdown_time", elapsed)


KILLED = -999  # exit status recorded for a server that had not exited and was killed


@dataclass(frozen=True)
class EraPair:
    """One comparison of the era phase: the same work asked the legacy way and the modern way."""

    key: str
    label: str
    legacy: str  # phase name of the legacy requests (sent and checked are counted under it)
    modern: str
    pipelined: bool  # else one at a time, and the figure is the p50 round trip


ERA_PAIRS = (
    EraPair("call", "tools/call, pipelined", "era legacy tools/call", "era modern tools/call", True),
    EraPair("call_seq", "tools/call, one at a time", "era legacy tools/call", "era modern tools/call", False),
    EraPair("discover", "ping → server/discover, pipelined", "era ping", "era server/discover", True),
    EraPair("discover_seq", "ping → server/discover, one at a time", "era ping", "era server/discover", False),
)


ERA_LIMIT = 1.15  # the target: a modern tools/call costs at most this much more than a legacy one


def era(target: Target, samples: Samples, cache: Path, config: Config) -> None:
    """One process serving both eras: the modern path (2026-07-28) against the legacy one (2025-06-18).

    Legacy requests ride the session opened by initialize; modern ones carry their version and
    capabilities in `_meta`, as a stateless client sends every request. The two sides of each pair
    run in one process: pipelined batches back to back, the first side alternating between rounds;
    one-at-a-time requests taking turns. Each round records its own ratio (modern ÷ legacy, time per
    request), and the table's ratio is the median of these paired ratios, so load from elsewhere on
    the machine falls on both sides.
    """
    echo = target.echo
    assert echo is not None
    makers: dict[str, Callable[[int], bytes]] = {
        "era legacy tools/call": lambda i: echo_call(echo, i), "era modern tools/call": lambda i: modern_call(echo, i),
        "era ping": ping, "era server/discover": discover,
    }
    echoes = {"era legacy tools/call": echo, "era modern tools/call": echo}
    flip = len(samples.values.get("era_call_cost", [])) % 2 == 1
    child = Child(target, stderr_log(cache, target))
    try:
        child.arm(config.timeout)
        child.initialize(samples)
        for phase, make in makers.items():  # every path once through, before anything is timed
            sequential(child, samples, "warm-up", max(1, config.warmup // 4), make, echoes.get(phase), "modern" in phase
                       or "discover" in phase)
        for pair in ERA_PAIRS:
            figures: dict[str, tuple[float, float | None]] = {}  # side -> (seconds per request, CPU per request)
            sides = (("legacy", pair.legacy), ("modern", pair.modern))
            sides = sides[::-1] if flip else sides
            child.arm(config.timeout)
            if pair.pipelined:
                for side, phase in sides:
                    result = pipelined(child, samples, phase, config.calls, makers[phase], echoes.get(phase), side == "modern")
                    figures[side] = (1 / result.rate, result.cpu)
            else:
                # The sides take turns request by request: one-at-a-time round trips on a small machine jump
                # between two levels (both processes on one core or not), and a jump must fall on both sides.
                times: dict[str, list[float]] = {side: [] for side, _ in sides}
                for _ in range(config.latency):
                    for side, phase in sides:
                        times[side] += sequential(child, samples, phase, 1, makers[phase], echoes.get(phase), side == "modern")
                for side, _ in sides:
                    figures[side] = (percentile(times[side], 0.5), None)
            for side in ("legacy", "modern"):
                samples.add(f"era_{pair.key}_{side}", figures[side][0])
            samples.add(f"era_{pair.key}_cost", figures["modern"][0] / figures["legacy"][0])
            legacy_cpu, modern_cpu = figures["legacy"][1], figures["modern"][1]
            if legacy_cpu and modern_cpu is not None:
                samples.add(f"era_{pair.key}_cpu_legacy", legacy_cpu)
                samples.add(f"era_{pair.key}_cpu_modern", modern_cpu)
                samples.add(f"era_{pair.key}_cpu_cost", modern_cpu / legacy_cpu)
        child.close(config.shutdown_timeout)
    finally:
        child.kill()


def run_rounds(targets: list[Target], config: Config, cache: Path, log: Callable[[str], None]) -> dict[str, Samples]:
    """Interleaved repetitions: each round visits every target, in an order rotated by one each round."""
    results = {t.key: Samples() for t in targets}
    active = [t for t in targets if t.unavailable is None]

    def attempt(target: Target, phase: str, work: Callable[[Target, Samples, Path, Config], Any]) -> None:
        samples = results[target.key]
        if any(error.startswith(f"{phase}:") for error in samples.errors):
            return  # it failed in an earlier round and would only fail again
        try:
            value = work(target, samples, cache, config)
        except (BenchError, OSError, subprocess.SubprocessError) as err:
            samples.errors.append(f"{phase}: {err}")
            log(f"  {target.key}: {phase} failed: {err}")
            return
        if phase == "cold start":
            samples.add("cold_start", value)

    for target in active:  # untimed: writes bytecode and fills the page cache, as any second start finds them
        attempt(target, "first start", cold_start)
    for round_number in range(config.repetitions):
        shift = round_number % max(1, len(active))
        order = active[shift:] + active[:shift]
        log(f"round {round_number + 1}/{config.repetitions}: {', '.join(t.key for t in order)}")
        for _ in range(config.starts):
            for target in order:
                attempt(target, "cold start", cold_start)
        for target in order:
            if target.server:
                attempt(target, "session", session)
        for target in order:
            if target.echo is not None:
                attempt(target, "shutdown", shutdown)
        for target in order:
            if target.modern and target.echo is not None:
                attempt(target, "era", era)
    return results


@dataclass(frozen=True)
class Metric:
    key: str
    label: str
    unit: str
    scale: float
    higher_is_better: bool = False


METRICS = (
    Metric("cold_start", "cold start", "ms", 1e3),
    Metric("ping_rps", "ping throughput, pipelined", "req/s", 1, higher_is_better=True),
    Metric("ping_cpu", "server CPU per ping", "µs", 1e6),
    Metric("call_rps", "tools/call throughput, pipelined", "req/s", 1, higher_is_better=True),
    Metric("call_cpu", "server CPU per tools/call", "µs", 1e6),
    Metric("latency_p50", "ping latency p50", "µs", 1e6),
    Metric("latency_p99", "ping latency p99", "µs", 1e6),
    Metric("rss_rest", "RSS at rest", "MiB", 1 / 2**20),
    Metric("anon_rest", "of which private (RssAnon)", "MiB", 1 / 2**20),
    Metric("rss_peak", "peak RSS, pipelined pings", "MiB", 1 / 2**20),
    Metric("shutdown_answered", "shutdown: answered of 10 (worst)", "", 1, higher_is_better=True),
    Metric("shutdown_exit", "shutdown: exit status", "", 1),
    Metric("shutdown_time", "shutdown: time to exit", "ms", 1e3),
)


def summarize(metric: str, values: list[float]) -> float:
    """The figure of a metric: the median, except the worst case where one bad round matters."""
    if metric == "shutdown_answered":
        return min(values)
    if metric == "shutdown_exit":
        return next((v for v in values if v != 0), 0)  # any non-zero exit shows
    return median(values)


def summary(targets: list[Target], results: dict[str, Samples], floor: str = "floor") -> dict[str, Any]:
    """Per server: raw samples, medians, ratios to the floor (same run), requests sent and checked."""
    out: dict[str, Any] = {}
    floor_values = results[floor].values if floor in results else {}
    for target in targets:
        samples = results[target.key]
        medians = {metric: summarize(metric, values) for metric, values in samples.values.items() if values}
        ratios = {}
        for metric, value in medians.items():
            base = floor_values.get(metric)
            if base and metric not in ("shutdown_answered", "shutdown_exit") and summarize(metric, base):
                ratios[metric] = value / summarize(metric, base)
        out[target.key] = {
            "label": target.label, "command": target.command, "version": target.version, "modern": target.modern,
            "unavailable": target.unavailable, "errors": samples.errors,
            "sent": dict(samples.sent), "checked": dict(samples.checker.checked),
            "samples": samples.values, "median": medians, "ratio_to_floor": ratios,
        }
    return out

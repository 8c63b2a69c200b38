"""The benchmark: shipcode-mcp against the floor, the official SDK, fastmcp and the Node reference server.

Every server runs as a child process over real pipes, driven by this script (standard library only,
so that it measures the servers and not a client library). Repetitions are interleaved (each round
visits every server, in a rotated order) and the table shows medians, so a burst of load from
elsewhere on the machine spreads over all servers instead of landing on one. Ratios compare figures
of the same run only. Every response is checked (id, no error, the echoed text); a server that fails
a check has no figure for that phase.

    .venv/bin/python bench/run.py             # everything; peers install under .bench-cache/
    .venv/bin/python bench/run.py --smoke     # tiny counts, our server and the floor: a few seconds

Peers install into their own virtual environments (and npm prefix) under the cache folder, pinned.
The chart is drawn by bench/chart.py with matplotlib from a cache venv, so nothing here needs it.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import random
import select
import shutil
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
BENCH = REPO / "bench"
DEFAULT_CACHE = REPO / ".bench-cache"
PROTOCOL_VERSION = "2025-06-18"
MODERN_VERSION = "2026-07-28"  # the stateless era: every request carries its version and capabilities in _meta

# Pinned peers: a benchmark that compares against "latest" measures a different thing every month.
MCP_PIN = "mcp==2.3.0"
FASTMCP_PIN = "fastmcp==4.1.6"
NODE_PIN = "@modelcontextprotocol/server-everything@2026.8.31"
TOOLS_PINS = ("matplotlib==3.11.2", "py-spy==0.4.3")  # the chart, and profiling by hand

SHUTDOWN_CALLS = 10


class BenchError(Exception):
    """A server broke the protocol, closed its output or hung: the phase has no figure."""


# -- what runs --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Echo:
    """How a server's echo tool is called and what it answers."""

    argument: str = "text"
    reply: str = "{}"  # format of the text content returned for the argument

    def text(self, request_id: int) -> str:
        return f"echo {request_id}"


@dataclass
class Target:
    key: str
    label: str
    command: list[str]
    echo: Echo | None = None  # None: no echo tool (cold start, ping, latency and memory only)
    server: bool = True  # False: a command that just exits (the `python -c "import json"` baseline)
    env: dict[str, str] = field(default_factory=dict)
    version: str = ""
    modern: bool = False  # also serves MCP 2026-07-28: the era phase compares the two paths in one process
    unavailable: str | None = None  # why this target is left out, when it is


@dataclass
class Config:
    repetitions: int = 5
    starts: int = 3  # cold starts per server per repetition
    pings: int = 20_000
    calls: int = 5_000
    latency: int = 2_000
    warmup: int = 200
    timeout: float = 300.0  # a phase that takes longer than this has hung
    shutdown_timeout: float = 10.0


SMOKE = Config(repetitions=2, starts=1, pings=300, calls=100, latency=50, warmup=20, timeout=30.0, shutdown_timeout=10.0)


# -- the wire ---------------------------------------------------------------------------------------
def encode(message: dict[str, Any]) -> bytes:
    return json.dumps(message, separators=(",", ":")).encode() + b"\n"


def ping(request_id: int) -> bytes:
    return encode({"jsonrpc": "2.0", "id": request_id, "method": "ping"})


def echo_call(echo: Echo, request_id: int) -> bytes:
    params = {"name": "echo", "arguments": {echo.argument: echo.text(request_id)}}
    return encode({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params})


MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": MODERN_VERSION,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "shipcode-bench", "version": "1"},  # a SHOULD on every request
}


def modern_call(echo: Echo, request_id: int) -> bytes:
    """The same tools/call as `echo_call`, made modern by its `_meta`: no session needed, any process serves it."""
    params = {"name": "echo", "arguments": {echo.argument: echo.text(request_id)}, "_meta": MODERN_META}
    return encode({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params})


def discover(request_id: int) -> bytes:
    """server/discover, the modern era's cheapest request (ping is legacy only)."""
    return encode({"jsonrpc": "2.0", "id": request_id, "method": "server/discover", "params": {"_meta": MODERN_META}})


INITIALIZE = encode({
    "jsonrpc": "2.0", "id": 0, "method": "initialize",
    "params": {"protocolVersion": PROTOCOL_VERSION, "capabilities": {}, "clientInfo": {"name": "shipcode-bench", "version": "1"}},
})
INITIALIZED = encode({"jsonrpc": "2.0", "method": "notifications/initialized"})


class Checker:
    """Checks each response and counts the checked ones per phase, so a run shows that none was skipped."""

    def __init__(self) -> None:
        self.checked: Counter[str] = Counter()

    def response(self, phase: str, message: Any, request_id: int, echo: Echo | None = None, modern: bool = False) -> None:
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            raise BenchError(f"{phase}: not a JSON-RPC 2.0 message: {message!r:.200}")
        if message.get("id") != request_id:
            raise BenchError(f"{phase}: expected id {request_id}, got {message.get('id')!r}")
        if "error" in message:
            raise BenchError(f"{phase}: id {request_id} answered with an error: {message['error']!r:.200}")
        result = message.get("result")
        if not isinstance(result, dict):
            raise BenchError(f"{phase}: id {request_id} has no result object")
        if modern:  # a modern result says it is complete and names the server
            meta = result.get("_meta")
            if result.get("resultType") != "complete" or not isinstance(meta, dict) or not isinstance(
                    meta.get("io.modelcontextprotocol/serverInfo"), dict):
                raise BenchError(f"{phase}: id {request_id} is not a complete modern result: {result!r:.200}")
        if echo is not None:
            expected = echo.reply.format(echo.text(request_id))
            content = result.get("content")
            if result.get("isError") or not isinstance(content, list) or not any(
                isinstance(block, dict) and block.get("type") == "text" and block.get("text") == expected for block in content
            ):
                raise BenchError(f"{phase}: id {request_id} did not echo {expected!r}: {result!r:.200}")
        self.checked[phase] += 1

    def all_of(self, phase: str, messages: list[Any], ids: range, echo: Echo | None = None, modern: bool = False) -> None:
        """Every id of `ids` answered exactly once, correctly, in any order; notifications are skipped."""
        by_id: dict[Any, Any] = {}
        for message in messages:
            if isinstance(message, dict) and "method" in message:
                if "id" in message:
                    raise BenchError(f"{phase}: unexpected request from the server: {message['method']!r}")
                continue
            key = message.get("id") if isinstance(message, dict) else None
            if key in by_id:
                raise BenchError(f"{phase}: id {key!r} answered twice")
            by_id[key] = message
        if len(by_id) != len(ids) or any(i not in by_id for i in ids):
            raise BenchError(f"{phase}: {len(by_id)} responses for {len(ids)} requests")
        for request_id in ids:
            self.response(phase, by_id[request_id], request_id, echo, modern)


def parse_lines(data: bytes) -> list[Any]:
    try:
        return [json.loads(line) for line in data.split(b"\n") if line.strip()]
    except ValueError as err:
        raise BenchError(f"a line of output is not JSON: {err}") from None


def is_response(message: Any) -> bool:
    return isinstance(message, dict) and "method" not in message


# -- one server process -----------------------------------------------------------------------------
def clean_environment() -> dict[str, str]:
    """This environment without PYTHON* settings, which change what is measured.

    PYTHONDONTWRITEBYTECODE would have our sources recompiled at every start (installed peers have
    their bytecode from pip), PYTHONUNBUFFERED changes how the floor writes, and PYTHONPATH is set
    only for our servers, to the tree being measured.
    """
    return {name: value for name, value in os.environ.items() if not name.startswith("PYTHON")}


class Child:
    """A server process over pipes; a watchdog kills it when a phase overruns, so nothing hangs the run."""

    def __init__(self, target: Target, stderr_path: Path) -> None:
        self.target = target
        env = {**clean_environment(), **target.env}
        with open(stderr_path, "ab") as stderr:
            self.proc = subprocess.Popen(target.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr,
                                         env=env, cwd=REPO)
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.pid = self.proc.pid
        self.stdin_fd = self.proc.stdin.fileno()
        self.out = self.proc.stdout
        self.stderr_path = stderr_path
        self._watchdog: threading.Timer | None = None
        self.next_id = 1

    def ids(self, count: int) -> range:
        first = self.next_id
        self.next_id += count
        return range(first, first + count)

    def arm(self, seconds: float) -> None:
        self.disarm()
        self._watchdog = threading.Timer(seconds, self.proc.kill)
        self._watchdog.daemon = True
        self._watchdog.start()

    def disarm(self) -> None:
        if self._watchdog is not None:
            self._watchdog.cancel()
            self._watchdog = None

    def send(self, data: bytes) -> None:
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(self.stdin_fd, view[:1 << 16]):]
        except OSError as err:
            raise BenchError(f"{self.target.key} stopped reading its input: {err}") from None

    def read_line(self) -> bytes:
        line = self.out.readline()
        if not line:
            raise BenchError(f"{self.target.key} closed its output{self.stderr_tail()}")
        return line

    def read_response(self) -> Any:
        """The next response, skipping the notifications a server may send at any time."""
        while True:
            message = parse_lines(self.read_line())
            if message and is_response(message[0]):
                return message[0]

    def initialize(self, samples: Samples) -> None:
        samples.sent["initialize"] += 1
        self.send(INITIALIZE)
        samples.checker.response("initialize", self.read_response(), 0)
        self.send(INITIALIZED)

    def stderr_tail(self) -> str:
        try:
            tail = self.stderr_path.read_bytes()[-600:].decode("utf-8", "replace").strip()
        except OSError:
            return ""
        return f"; its stderr ends: {tail}" if tail else ""

    def close(self, timeout: float) -> int | None:
        """Close stdin and wait for the exit status (None when it did not exit in time: then it is killed)."""
        self.disarm()
        try:
            self.proc.stdin.close()  # type: ignore[union-attr]
        except OSError:
            pass
        code = wait_exit(self.proc, timeout)
        if code is None:
            self.kill()
        return code

    def kill(self) -> None:
        self.disarm()
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                stream.close()  # type: ignore[union-attr]
            except OSError:
                pass


def wait_exit(proc: subprocess.Popen[bytes], timeout: float) -> int | None:
    """The exit status, or None after `timeout`; a pidfd wakes us at the exit, not at the next poll."""
    try:
        fd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):
        try:
            return proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None
    try:
        ready, _, _ = select.select([fd], [], [], timeout)
    finally:
        os.close(fd)
    return proc.wait() if ready else None


# -- what the kernel knows about a process ------------------------------------------------------------
CLOCK_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def cpu_seconds(pid: int) -> float:
    """CPU time (user + system) of all the process's threads.

    The per-thread scheduler counters are in nanoseconds, where /proc/PID/stat counts 10 ms ticks (too
    coarse for a 0.2 s run); the ticks still count threads that have exited, so the larger is taken.
    """
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        ticks = (int(fields[11]) + int(fields[12])) / CLOCK_TICK
    except (OSError, IndexError, ValueError):
        return 0.0
    nanoseconds = 0
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{task}/schedstat") as schedstat:
                    nanoseconds += int(schedstat.read().split()[0])
            except (OSError, IndexError, ValueError):
                continue  # the thread ended meanwhile
    except OSError:
        return ticks
    return max(ticks, nanoseconds / 1e9)


def memory(pid: int) -> dict[str, int]:
    """VmRSS, VmHWM (peak RSS since start) and RssAnon (its private part) in bytes, from /proc/PID/status."""
    out: dict[str, int] = {}
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith(("VmRSS:", "VmHWM:", "RssAnon:")):
                    name, value = line.split(":", 1)
                    out[name] = int(value.split()[0]) * 1024
    except OSError:
        pass
    return out


class RssSampler:
    """Samples VmRSS while a pipelined run goes on; VmHWM backs it up for peaks between samples."""

    def __init__(self, pid: int, interval: float = 0.005) -> None:
        self.pid = pid
        self.interval = interval
        self.peak = 0
        self._hwm_before = memory(pid).get("VmHWM", 0)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.peak = max(self.peak, memory(self.pid).get("VmRSS", 0))

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        now = memory(self.pid)
        self.peak = max(self.peak, now.get("VmRSS", 0))
        if now.get("VmHWM", 0) > self._hwm_before:  # the high-water mark rose during the run: it is exact
            self.peak = max(self.peak, now["VmHWM"])


# -- the phases ---------------------------------------------------------------------------------------
@dataclass
class Samples:
    """Everything measured of one target: one value per repetition (cold starts: one per start)."""

    values: dict[str, list[float]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    sent: Counter[str] = field(default_factory=Counter)  # requests sent, per phase
    checker: Checker = field(default_factory=Checker)  # responses checked, per phase

    def add(self, metric: str, value: float) -> None:
        self.values.setdefault(metric, []).append(value)


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


def percentile(values: list[float], fraction: float) -> float:
    """Nearest-rank percentile: an actual sample, no interpolation."""
    ordered = sorted(values)
    rank = -(-fraction * len(ordered) // 1)  # ceil
    return ordered[max(0, min(len(ordered) - 1, int(rank) - 1))]


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


def stderr_log(cache: Path, target: Target) -> Path:
    folder = cache / "logs"
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"{target.key}.stderr"


# -- the run --------------------------------------------------------------------------------------------
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


def median(values: list[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


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


def ratio(numerator: float | None, denominator: float | None) -> float | None:
    return numerator / denominator if numerator is not None and denominator else None


OURS = ("shipcode-echo", "shipcode-mcp")


def evaluate(servers: dict[str, Any], workspace: dict[str, Any]) -> list[dict[str, Any]]:
    """The issue's targets, each from figures of this run; `met` is None when it could not be measured."""
    checks: list[dict[str, Any]] = []

    def check(name: str, server: str, measured: float | None, limit: float, at_most: bool = True) -> None:
        met = None if measured is None else measured <= limit if at_most else measured >= limit
        checks.append({"target": name, "server": server, "measured": measured, "limit": limit, "met": met})

    def med(key: str, metric: str) -> float | None:
        value = servers.get(key, {}).get("median", {}).get(metric)
        return float(value) if value is not None else None

    for key in OURS:
        if key not in servers or servers[key]["unavailable"]:
            continue
        check("cold start <= 1.5x python -c 'import json'", key, ratio(med(key, "cold_start"), med("python", "cold_start")), 1.5)
        check("ping throughput >= 0.7x floor", key, ratio(med(key, "ping_rps"), med("floor", "ping_rps")), 0.7, at_most=False)
        if key == "shipcode-echo":
            check("tools/call throughput >= 0.7x floor", key, ratio(med(key, "call_rps"), med("floor", "call_rps")), 0.7, at_most=False)
        check("p50 latency <= 1.3x floor", key, ratio(med(key, "latency_p50"), med("floor", "latency_p50")), 1.3)
        check("RSS at rest <= 1.5x floor", key, ratio(med(key, "rss_rest"), med("floor", "rss_rest")), 1.5)
        check("peak RSS, 20 000 pipelined pings <= 2x own RSS at rest", key, ratio(med(key, "rss_peak"), med(key, "rss_rest")), 2.0)
        if key == "shipcode-echo":
            answered, status = med(key, "shutdown_answered"), med(key, "shutdown_exit")
            check("shutdown: 10 of 10 answered", key, answered, SHUTDOWN_CALLS, at_most=False)
            check("shutdown: exit status 0", key, status, 0)
    for key, server in servers.items():
        if server["unavailable"] or not server.get("modern"):
            continue
        for pair in ERA_PAIRS[:2]:
            check(f"modern tools/call <= {ERA_LIMIT}x legacy ({pair.label.split(', ')[1]})", key,
                  med(key, f"era_{pair.key}_cost"), ERA_LIMIT)
    for tool, command in (("search_code", "rg"), ("list_files", "rg --files")):
        figures = workspace.get(tool)
        check(f"{tool} <= 1.3x {command}", "shipcode-mcp", figures["ratio"] if figures else None, 1.3)
    return checks


# -- the report -------------------------------------------------------------------------------------------
NONE = "-"  # a figure that does not apply or was not measured


def format_value(metric: Metric, value: float) -> str:
    if metric.key == "shutdown_exit":
        return "killed" if value == KILLED else f"{value:.0f}"
    if metric.key == "shutdown_answered":
        return f"{value:.0f}/{SHUTDOWN_CALLS}"
    scaled = value * metric.scale
    if metric.unit == "req/s":
        return f"{scaled:,.0f}/s"
    digits = 0 if scaled >= 100 else 1 if scaled >= 10 else 2
    return f"{scaled:.{digits}f} {metric.unit}"


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    lines = ["| " + " | ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)) + " |" for row in [header, *rows]]
    lines.insert(1, "|" + "|".join("-" * (width + 2) for width in widths) + "|")
    return "\n".join(lines)


def results_table(servers: dict[str, Any]) -> str:
    """Rows are metrics, columns servers; each cell is the median and its ratio to the floor."""
    keys = [key for key, server in servers.items() if not server["unavailable"]]
    header = ["median of the rounds (ratio to floor)", *(servers[key]["label"] for key in keys)]
    rows = []
    for metric in METRICS:
        row = [metric.label]
        for key in keys:
            value = servers[key]["median"].get(metric.key)
            share = servers[key]["ratio_to_floor"].get(metric.key)
            cell = NONE if value is None else format_value(metric, value)
            if share is not None and key != "floor":
                cell += f" ({share:.2f}x)"
            row.append(cell)
        if any(cell != NONE for cell in row[1:]):
            rows.append(row)
    base = servers.get("python", {}).get("median", {}).get("cold_start")
    if base:
        rows.insert(1, ["cold start ÷ python -c 'import json'", *(
            f"{servers[key]['median']['cold_start'] / base:.2f}x" if "cold_start" in servers[key]["median"] else NONE
            for key in keys)])
    return markdown_table(header, rows)


def era_table(server: dict[str, Any]) -> str:
    """Modern against legacy in one process: medians per side, and the median of the rounds' paired ratios."""
    rows = []
    for pair in ERA_PAIRS:
        for suffix, what in (("", "p50 round trip" if not pair.pipelined else "wall time per request"),
                             ("_cpu", "server CPU per request")):
            legacy = server["median"].get(f"era_{pair.key}{suffix}_legacy")
            modern = server["median"].get(f"era_{pair.key}{suffix}_modern")
            cost = server["median"].get(f"era_{pair.key}{suffix}_cost")
            if legacy is None or modern is None or cost is None:
                continue
            target = f" (target <= {ERA_LIMIT}x)" if pair.key.startswith("call") and not suffix else ""
            rows.append([f"{pair.label}: {what}", f"{legacy * 1e6:.1f} µs", f"{modern * 1e6:.1f} µs", f"{cost:.2f}x{target}"])
    header = [f"{server['label']}: 2026-07-28 vs 2025-06-18 (median)", "legacy", "modern",
              "modern ÷ legacy (median of rounds)"]
    return markdown_table(header, rows)


def targets_table(checks: list[dict[str, Any]]) -> str:
    rows = []
    for check in checks:
        measured = check["measured"]
        if measured is None:
            shown = "not measured"
        else:
            shown = f"{measured:.0f}" if check["limit"] in (0, SHUTDOWN_CALLS) else f"{measured:.2f}"
        verdict = {True: "met", False: "MISSED", None: NONE}[check["met"]]
        rows.append([check["target"], check["server"], shown, verdict])
    return markdown_table(["target", "server", "measured", "verdict"], rows)


# -- peers and tools ------------------------------------------------------------------------------------
def ensure_venv(cache: Path, requirements: tuple[str, ...], log: Callable[[str], None]) -> Path:
    """A virtual environment under the cache with exactly these pins; made once, reused after."""
    folder = cache / "venvs" / "+".join(r.replace("==", "-") for r in requirements)
    python = folder / "bin" / "python"
    stamp = folder / ".pins"
    wanted = "\n".join(requirements)
    if python.exists() and stamp.exists() and stamp.read_text() == wanted:
        return python
    log(f"installing {' '.join(requirements)} into {folder}")
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(folder)], check=True, capture_output=True)
    done = subprocess.run([str(python), "-m", "pip", "install", "--disable-pip-version-check", "-q", *requirements],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise BenchError(f"pip install {' '.join(requirements)} failed: {done.stderr.strip()[-500:]}")
    stamp.write_text(wanted)
    return python


def ensure_node_server(cache: Path, log: Callable[[str], None]) -> Path:
    """The Node reference server, installed with npm under the cache; returns its entry point."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        raise BenchError("node and npm are not installed")
    prefix = cache / "node"
    entry = prefix / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
    stamp = prefix / ".pins"
    if entry.exists() and stamp.exists() and stamp.read_text() == NODE_PIN:
        return entry
    log(f"installing {NODE_PIN} into {prefix}")
    prefix.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["npm", "install", "--prefix", str(prefix), "--no-audit", "--no-fund", NODE_PIN],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0 or not entry.exists():
        raise BenchError(f"npm install {NODE_PIN} failed: {done.stderr.strip()[-500:]}")
    stamp.write_text(NODE_PIN)
    return entry


def output_of(command: list[str], env: dict[str, str] | None = None) -> str:
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False, env={**clean_environment(), **(env or {})})
    except (OSError, subprocess.SubprocessError):
        return ""
    return done.stdout.strip() if done.returncode == 0 else ""


def our_env(src: Path) -> dict[str, str]:
    """Our servers run from `src` (this checkout's src/ by default), whichever interpreter runs them."""
    return {"PYTHONPATH": str(src)}


def cli_command(python: str) -> list[str]:
    """The `shipcode-mcp` command as installed beside `python`, else `python -m shipcode_mcp`."""
    script = Path(python).parent / "shipcode-mcp"
    return [str(script)] if script.exists() else [python, "-m", "shipcode_mcp"]


def python_version(python: str) -> str:
    return output_of([python, "-c", "import platform; print(platform.python_version())"])


def make_targets(python: str, src: Path, cache: Path, wanted: set[str], install: bool,
                 log: Callable[[str], None]) -> list[Target]:
    """The servers of the issue, in the order of the table; peers are installed (or found) here."""
    ours = our_env(src)
    version = output_of([python, "-c", "import shipcode_mcp; print(shipcode_mcp.__version__)"], ours)
    cli = cli_command(python)
    plain = f"Python {python_version(python)}"
    targets = [
        Target("python", "python -c 'import json'", [python, "-c", "import json"], server=False, version=plain),
        Target("floor", "floor (stdlib loop)", [python, str(BENCH / "floor_server.py")], Echo(), version=plain),
        Target("shipcode-echo", "shipcode-mcp echo example", [python, str(REPO / "examples" / "echo_server.py")], Echo(),
               env=ours, version=version, modern=True),
        Target("shipcode-mcp", "shipcode-mcp (CLI)", [*cli, str(REPO)], env=ours, version=version),
        Target("shipcode-explicit", "echo, explicit Tool", [python, str(BENCH / "echo_explicit.py")], Echo(),
               env=ours, version=version),
    ]
    peers: list[tuple[str, str, str, Callable[[], list[str]]]] = [
        ("mcp-sdk", f"official SDK {MCP_PIN.split('==')[1]}", MCP_PIN,
         lambda: [str(ensure_venv(cache, (MCP_PIN,), log)), str(BENCH / "peers" / "mcp_sdk_echo.py")]),
        ("fastmcp", f"fastmcp {FASTMCP_PIN.split('==')[1]}", FASTMCP_PIN,
         lambda: [str(ensure_venv(cache, (FASTMCP_PIN,), log)), str(BENCH / "peers" / "fastmcp_echo.py")]),
        ("node-everything", "Node server-everything", NODE_PIN,
         lambda: ["node", str(ensure_node_server(cache, log)), "stdio"]),
    ]
    for key, label, pin, command in peers:
        if key not in wanted:
            continue
        target = Target(key, label, [], Echo("message", "Echo: {}") if key == "node-everything" else Echo(), version=pin)
        if not install and not (cache / ("node" if key == "node-everything" else "venvs")).exists():
            target.unavailable = "not installed (--no-install)"
        else:
            try:
                target.command = command()
            except (BenchError, OSError, subprocess.SubprocessError) as err:
                target.unavailable = str(err)
        if key == "node-everything" and target.unavailable is None:
            target.version += f" on Node {output_of(['node', '--version'])}"
        targets.append(target)
    return [t for t in targets if t.key in wanted]


ALL_KEYS = ("python", "floor", "shipcode-echo", "shipcode-mcp", "shipcode-explicit", "mcp-sdk", "fastmcp", "node-everything")
PEER_KEYS = ("mcp-sdk", "fastmcp", "node-everything")


def machine() -> dict[str, Any]:
    """What the figures were measured on: they mean little without it."""
    cpu = ""
    try:
        with open("/proc/cpuinfo") as info:
            cpu = next((line.split(":", 1)[1].strip() for line in info if line.startswith("model name")), "")
    except OSError:
        pass
    memory_kib = 0
    try:
        with open("/proc/meminfo") as info:
            memory_kib = int(next(line for line in info if line.startswith("MemTotal")).split()[1])
    except (OSError, StopIteration, ValueError):
        pass
    return {
        "cpu": cpu or platform.processor(), "cores": os.cpu_count(), "memory_gib": round(memory_kib / 2**20, 1),
        "system": f"{platform.system()} {platform.release()}", "python": platform.python_version(),
        "commit": output_of(["git", "-C", str(REPO), "describe", "--always", "--dirty"]),
    }


def load_average() -> list[float]:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return []


# -- the workspace ---------------------------------------------------------------------------------------
TREE_FILES = 20_000
TREE_LINES = 190  # lines per file, on average: about 200 MB in all
NEEDLE = "frobnicate_quux"  # in NEEDLE_FILES files, once each: fewer matches than search_code's default limit
NEEDLE_FILES = 150
EXTENSIONS = (".py", ".js", ".ts", ".go", ".rs", ".c", ".java", ".rb")
WORDS = ("return", "value", "index", "buffer", "client", "server", "request", "handler", "result", "error",
         "config", "parse", "render", "update", "cache", "token", "stream", "offset", "length", "count")


def make_tree(root: Path, stamp: Path, log: Callable[[str], None]) -> int:
    """A generated source tree (same seed, same tree); made once and kept in the cache. Returns its size."""
    recipe = f"{TREE_FILES} {TREE_LINES} {NEEDLE} {NEEDLE_FILES} 1"
    if stamp.exists() and stamp.read_text() == recipe:
        return sum(path.stat().st_size for path in root.rglob("*") if path.is_file())
    log(f"generating {TREE_FILES} source files under {root}")
    shutil.rmtree(root, ignore_errors=True)
    rng = random.Random(6)
    pool = []  # a few thousand distinct lines, drawn from for every file: fast to write, varied to search
    for number in range(4000):
        words = rng.choices(WORDS, k=rng.randint(2, 7))
        pool.append(f"{'    ' * rng.randint(0, 3)}{words[0]}_{number} = {' + '.join(words[1:])}({rng.randint(0, 9999)})\n")
    needles = set(rng.sample(range(TREE_FILES), NEEDLE_FILES))
    size = 0
    for index in range(TREE_FILES):
        folder = root / f"pkg{index // 1000:02d}" / f"module{index // 40 % 25:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        lines = rng.choices(pool, k=rng.randint(TREE_LINES // 2, TREE_LINES * 3 // 2))
        if index in needles:
            lines.insert(rng.randrange(len(lines)), f"call_{NEEDLE}(x)  # the benchmark's needle\n")
        data = "".join(lines).encode()
        (folder / f"file{index:05d}{EXTENSIONS[index % len(EXTENSIONS)]}").write_bytes(data)
        size += len(data)
    stamp.write_text(recipe)
    return size


def executable_beside(python: str, name: str) -> str | None:
    """A command installed next to `python` (a venv's scripts), else on PATH."""
    beside = Path(python).parent / name
    return str(beside) if beside.exists() else shutil.which(name)


def timed_command(command: list[str], cwd: Path) -> tuple[float, bytes]:
    started = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                          check=False)
    elapsed = time.perf_counter() - started
    if done.returncode not in (0, 1):
        raise BenchError(f"{' '.join(command)} exited with {done.returncode}")
    return elapsed, done.stdout


def timed_call(child: Child, samples: Samples, tool: str, arguments: dict[str, Any]) -> tuple[float, dict[str, Any]]:
    """One tools/call, end to end through the server: write to response read; the result is checked."""
    (request_id,) = child.ids(1)
    line = encode({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": {"name": tool, "arguments": arguments}})
    samples.sent[tool] += 1
    started = time.perf_counter()
    child.send(line)
    message = child.read_response()
    elapsed = time.perf_counter() - started
    samples.checker.response(tool, message, request_id)
    result = message["result"]
    if result.get("isError") or not isinstance(result.get("structuredContent"), dict):
        raise BenchError(f"{tool} failed: {json.dumps(result)[:300]}")
    return elapsed, result["structuredContent"]


def same_search(ours: dict[str, Any], rg_output: bytes) -> None:
    """search_code found exactly the lines `rg -n` printed."""
    found = {(entry["path"], entry["line"]) for entry in ours["lines"] if entry["match"]}
    expected = set()
    for line in rg_output.decode().splitlines():
        path, number, _ = line.split(":", 2)
        expected.add((path, int(number)))
    if found != expected or ours["truncated"]:
        raise BenchError(f"search_code found {len(found)} matches, rg {len(expected)}")


def same_listing(ours: dict[str, Any], rg_output: bytes) -> None:
    """list_files counted the files `rg --files` printed, and shows the first of them in order."""
    expected = sorted(rg_output.decode().splitlines())
    if ours["total"] != len(expected) or ours["files"] != expected[:len(ours["files"])]:
        raise BenchError(f"list_files has {ours['total']} files, rg --files {len(expected)}")


def workspace_figures(python: str, src: Path, cache: Path, config: Config, log: Callable[[str], None]) -> dict[str, Any]:
    """search_code and list_files through a running shipcode-mcp against rg alone, on the generated tree.

    The server is started once, as a client would have it; each round times rg and the tool call
    (alternating which goes first), after an untimed round that fills the page cache for both.
    """
    root = cache / "tree"
    size = make_tree(root, cache / "tree.recipe", log)
    rg = executable_beside(python, "rg")
    if rg is None:
        return {"errors": ["rg is not installed"]}
    target = Target("shipcode-mcp", "shipcode-mcp (CLI)", [*cli_command(python), str(root)], env=our_env(src))
    cases = (
        ("search_code", {"pattern": NEEDLE}, [rg, "-n", NEEDLE], same_search),
        ("list_files", {}, [rg, "--files"], same_listing),
    )
    times: dict[str, dict[str, list[float]]] = {tool: {"ours": [], "rg": []} for tool, *_ in cases}
    samples = Samples()
    child = Child(target, stderr_log(cache, target))
    try:
        child.arm(config.timeout)
        child.initialize(samples)
        for round_number in range(config.repetitions + 1):
            for tool, arguments, command, same in cases:
                runs = [("rg", lambda command=command: timed_command(command, root)),
                        ("ours", lambda tool=tool, arguments=arguments: timed_call(child, samples, tool, arguments))]
                outputs: dict[str, Any] = {}
                for who, run in runs if round_number % 2 else runs[::-1]:
                    elapsed, outputs[who] = run()
                    if round_number:  # round 0 only warms the page cache
                        times[tool][who].append(elapsed)
                same(outputs["ours"], outputs["rg"])
        child.close(config.shutdown_timeout)
    except (BenchError, OSError, subprocess.SubprocessError) as err:
        log(f"workspace figures failed: {err}")
        return {"errors": [str(err)]}
    finally:
        child.kill()
    out: dict[str, Any] = {"files": TREE_FILES, "bytes": size, "pattern": NEEDLE, "matches": NEEDLE_FILES,
                           "rg": output_of([rg, "--version"]).splitlines()[0], "errors": []}
    for tool, figures in times.items():
        ours, alone = median(figures["ours"]), median(figures["rg"])
        out[tool] = {"ours": ours, "rg": alone, "ratio": ours / alone, "samples": figures}
    return out


def workspace_table(workspace: dict[str, Any]) -> str:
    rows = []
    for tool, alone in (("search_code", f"rg -n {workspace['pattern']}"), ("list_files", "rg --files")):
        figures = workspace.get(tool)
        if figures:
            rows.append([f"{tool} via shipcode-mcp vs `{alone}`", f"{figures['ours'] * 1e3:.1f} ms",
                         f"{figures['rg'] * 1e3:.1f} ms", f"{figures['ratio']:.2f}x"])
    header = [f"workspace: {workspace['files']:,} files, {workspace['bytes'] / 1e6:.0f} MB (median)", "through MCP",
              "rg alone", "ratio"]
    return markdown_table(header, rows)


# -- main ---------------------------------------------------------------------------------------------------
def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Benchmark shipcode-mcp against the floor, the official SDK, fastmcp "
                                     "and the Node reference server, over stdio; prints one table and writes JSON and a chart.")
    parser.add_argument("--smoke", action="store_true",
                        help="tiny counts, our server and the floor only, no chart: proves the benchmark works, measures nothing")
    defaults = Config()
    for name, help_text in (("repetitions", "interleaved rounds"), ("starts", "cold starts per server per round"),
                            ("pings", "pipelined pings per round"), ("calls", "pipelined tools/call per round"),
                            ("latency", "sequential pings per round")):
        parser.add_argument(f"--{name}", type=int, help=f"{help_text} (default {getattr(defaults, name)})")
    parser.add_argument("--servers", help=f"comma-separated, of: {','.join(ALL_KEYS)} (default: all)")
    parser.add_argument("--no-peers", action="store_true", help="leave out the SDK, fastmcp and the Node server")
    parser.add_argument("--no-install", action="store_true", help="use only the peers already in the cache")
    parser.add_argument("--python", default=sys.executable,
                        help="interpreter for our servers, the floor and the baseline (default: this one)")
    parser.add_argument("--src", type=Path, default=REPO / "src",
                        help="the shipcode_mcp source tree to measure (default: this checkout's src/)")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="peers, logs and the generated tree (default .bench-cache/)")
    parser.add_argument("--json", type=Path, help="results file (default docs/benchmark.json; with --smoke, in the cache)")
    parser.add_argument("--chart", type=Path, help="bar chart PNG (default docs/benchmark.png; none with --smoke)")
    parser.add_argument("--no-chart", action="store_true")
    parser.add_argument("--no-workspace", action="store_true", help="skip the search_code and list_files figures")
    return parser.parse_args(argv)


def config_from(args: argparse.Namespace) -> Config:
    config = SMOKE if args.smoke else Config()
    overrides = {name: getattr(args, name) for name in ("repetitions", "starts", "pings", "calls", "latency")
                 if getattr(args, name) is not None}
    return Config(**{**config.__dict__, **overrides})


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    config = config_from(args)

    def log(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    if args.servers:
        wanted = set(args.servers.split(","))
        unknown = wanted - set(ALL_KEYS)
        if unknown:
            log(f"unknown server(s): {', '.join(sorted(unknown))}")
            return 2
    else:
        wanted = set(ALL_KEYS) - (set(PEER_KEYS) | {"shipcode-mcp", "shipcode-explicit"} if args.smoke else set())
    if args.no_peers:
        wanted -= set(PEER_KEYS)
    cache = args.cache.resolve()
    (cache / "logs").mkdir(parents=True, exist_ok=True)
    for old in (cache / "logs").glob("*.stderr"):
        old.unlink()
    json_path = args.json or (cache / "smoke.json" if args.smoke else REPO / "docs" / "benchmark.json")
    chart_path = None if args.no_chart or (args.smoke and args.chart is None) else args.chart or REPO / "docs" / "benchmark.png"

    targets = make_targets(args.python, args.src.resolve(), cache, wanted, not args.no_install, log)
    for target in targets:
        if target.unavailable:
            log(f"{target.key}: left out: {target.unavailable}")
    load_before = load_average()
    started = datetime.datetime.now(datetime.timezone.utc)
    results = run_rounds(targets, config, cache, log)
    servers = summary(targets, results)
    workspace: dict[str, Any] = {}
    if not args.smoke and not args.no_workspace and "shipcode-mcp" in wanted:
        workspace = workspace_figures(args.python, args.src.resolve(), cache, config, log)
    report = {
        "date": started.strftime("%Y-%m-%d %H:%M UTC"), "machine": machine(), "config": config.__dict__,
        "load_average": {"before": load_before, "after": load_average()},
        "servers": servers, "workspace": workspace, "targets": evaluate(servers, workspace),
    }
    json_path.parent.mkdir(parents=True, exist_ok=True)
    json_path.write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n")
    print(render(report))
    if chart_path is not None:
        draw_chart(json_path, chart_path, cache, log)
    failed = [key for key, server in servers.items() if server["errors"] and key not in PEER_KEYS]
    return 1 if failed or workspace.get("errors") else 0


def render(report: dict[str, Any]) -> str:
    """The printed report: where and when, the table, the workspace figures, the targets, the failures."""
    host = report["machine"]
    lines = [
        f"{report['date']} · {host['cpu']}, {host['cores']} cores, {host['memory_gib']} GiB · {host['system']} · "
        f"commit {host['commit']} · load average {report['load_average']['before']} -> {report['load_average']['after']}",
        "versions: " + "; ".join(f"{s['label']}: {s['version']}" for s in report["servers"].values() if s["version"]),
        "",
        results_table(report["servers"]),
    ]
    if report["workspace"].get("search_code") or report["workspace"].get("list_files"):
        lines += ["", workspace_table(report["workspace"])]
    lines += [f"workspace: {error}" for error in report["workspace"].get("errors", [])]
    for server in report["servers"].values():
        if any(key.startswith("era_") for key in server["median"]):
            lines += ["", era_table(server)]
    lines += ["", targets_table(report["targets"])]
    for key, server in report["servers"].items():
        if server["unavailable"]:
            lines.append(f"{key}: not measured: {server['unavailable']}")
        lines += [f"{key}: {error}" for error in server["errors"]]
    return "\n".join(lines)


def draw_chart(json_path: Path, chart_path: Path, cache: Path, log: Callable[[str], None]) -> None:
    """bench/chart.py draws it with matplotlib from a cache venv: this driver stays standard-library only."""
    try:
        python = ensure_venv(cache, TOOLS_PINS, log)
    except (BenchError, OSError, subprocess.SubprocessError) as err:
        log(f"no chart: {err}")
        return
    done = subprocess.run([str(python), str(BENCH / "chart.py"), str(json_path), str(chart_path)], check=False)
    if done.returncode == 0:
        log(f"chart: {chart_path}")


if __name__ == "__main__":
    sys.exit(main())

"""The driver: servers as child processes over real pipes, the wire, the checks, and what the kernel says.

Standard library only, so that the bench measures the servers and not a client library.
"""

from __future__ import annotations

import io
import json
import os
import platform
import select
import shutil
import subprocess
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent.parent
REPO = BENCH.parent
DEFAULT_CACHE = REPO / ".bench-cache"
PROTOCOL_VERSION = "2025-06-18"
MODERN_VERSION = "2026-07-28"  # the stateless era: every request carries its version and capabilities in _meta
SHUTDOWN_CALLS = 10


class BenchError(Exception):
    """A server broke the protocol, closed its output or hung: the phase has no figure."""


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
        self.out: io.BufferedReader = self.proc.stdout  # type: ignore[assignment]  # a pipe: buffered, has read1
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


def descendants(pid: int) -> list[int]:
    """`pid` and every process under it (its fork server, children, parse workers, language servers), from
    /proc's children lists; a process that ended meanwhile is left out."""
    found = [pid]
    for parent in found:  # grows as it goes: breadth first
        try:
            tasks = os.listdir(f"/proc/{parent}/task")
        except OSError:
            continue
        for task in tasks:
            try:
                with open(f"/proc/{parent}/task/{task}/children") as children:
                    found.extend(int(child) for child in children.read().split())
            except (OSError, ValueError):
                continue
    return found


def tree_memory(pid: int) -> dict[str, int]:
    """The memory of a server's whole process tree, in bytes: `pss` (each page shared by several of the
    tree's processes, or with others, counted in part: what the tree costs the machine, from
    smaps_rollup), `rss` (summed, shared pages counted in each), `peak` (the sum of each process's VmHWM:
    an upper bound of the tree's peak, as the processes peaked at different times) and `processes`."""
    out = {"pss": 0, "rss": 0, "peak": 0, "processes": 0}
    for member in descendants(pid):
        figures = memory(member)
        if not figures:
            continue
        out["processes"] += 1
        out["rss"] += figures.get("VmRSS", 0)
        out["peak"] += figures.get("VmHWM", 0)
        try:
            with open(f"/proc/{member}/smaps_rollup") as rollup:
                out["pss"] += next((int(line.split()[1]) * 1024 for line in rollup if line.startswith("Pss:")), 0)
        except OSError:
            pass
    return out


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


@dataclass
class Samples:
    """Everything measured of one target: one value per repetition (cold starts: one per start)."""

    values: dict[str, list[float]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    sent: Counter[str] = field(default_factory=Counter)  # requests sent, per phase
    checker: Checker = field(default_factory=Checker)  # responses checked, per phase

    def add(self, metric: str, value: float) -> None:
        self.values.setdefault(metric, []).append(value)


def percentile(values: list[float], fraction: float) -> float:
    """Nearest-rank percentile: an actual sample, no interpolation."""
    ordered = sorted(values)
    rank = -(-fraction * len(ordered) // 1)  # ceil
    return ordered[max(0, min(len(ordered) - 1, int(rank) - 1))]


def median(values: list[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    lines = ["| " + " | ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)) + " |" for row in [header, *rows]]
    lines.insert(1, "|" + "|".join("-" * (width + 2) for width in widths) + "|")
    return "\n".join(lines)


def stderr_log(cache: Path, target: Target) -> Path:
    folder = cache / "logs"
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"{target.key}.stderr"


def output_of(command: list[str], env: dict[str, str] | None = None) -> str:
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False, env={**clean_environment(), **(env or {})})
    except (OSError, subprocess.SubprocessError):
        return ""
    return done.stdout.strip() if done.returncode == 0 else ""


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


def call_tool(child: Child, samples: Samples, tool: str, arguments: dict[str, Any]) -> tuple[float, dict[str, Any]]:
    """One tools/call, end to end through the server: write to response read; (the seconds, its result),
    the response checked against the protocol."""
    (request_id,) = child.ids(1)
    line = encode({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": {"name": tool, "arguments": arguments}})
    samples.sent[tool] += 1
    started = time.perf_counter()
    child.send(line)
    message = child.read_response()
    elapsed = time.perf_counter() - started
    samples.checker.response(tool, message, request_id)
    return elapsed, message["result"]


def timed_call(child: Child, samples: Samples, tool: str, arguments: dict[str, Any]) -> tuple[float, dict[str, Any]]:
    """One tools/call, end to end through the server: write to response read; the result is checked."""
    elapsed, result = call_tool(child, samples, tool, arguments)
    if result.get("isError") or not isinstance(result.get("structuredContent"), dict):
        raise BenchError(f"{tool} failed: {json.dumps(result)[:300]}")
    return elapsed, result["structuredContent"]

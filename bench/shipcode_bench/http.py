"""Measures over Streamable HTTP: ours against the HTTP floor (bench/http_floor.py, a bare Starlette endpoint on
the same uvicorn returning the same JSON) and the official SDK's server, at several concurrencies, stateful and
`--stateless --workers 2`; and the memory an open session costs (RSS growth over many sessions).

The client is the standard library's http.client, one keep-alive connection per thread: at 64 threads the
client itself takes much of a 2-core machine, the same for every server, so the ratios understate gaps.
"""

from __future__ import annotations

import functools
import http.client
import json
import os
import socket
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .driver import (
    BENCH,
    PROTOCOL_VERSION,
    REPO,
    BenchError,
    Config,
    clean_environment,
    cpu_seconds,
    markdown_table,
    median,
    memory,
)
from .servers import MCP_PIN, cli_command, ensure_venv, our_env

CONCURRENCY = (1, 16, 64)
SESSIONS = 300  # sessions opened to measure the memory of one
FLOOR_LIMIT = 0.8  # ours >= this times the floor's rate
SDK_FACTOR = 5.0  # ours >= this times the SDK's rate
SESSION_BYTES = 8 * 1024
ACCEPT = "application/json, text/event-stream"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class HttpServer:
    """A server process listening on a loopback port; `stateful` ones get a session per connection."""

    def __init__(self, key: str, command: Callable[[int], list[str]], env: dict[str, str], stateful: bool,
                 log_path: Path) -> None:
        self.key = key
        self.port = free_port()
        self.stateful = stateful
        with open(log_path, "ab") as stderr:
            self.proc = subprocess.Popen(command(self.port), stdin=subprocess.DEVNULL, stdout=stderr, stderr=stderr,
                                         env={**clean_environment(), **env}, cwd=REPO)
        deadline = time.monotonic() + 60
        while True:  # ready when it accepts a connection
            if self.proc.poll() is not None:
                raise BenchError(f"{key} exited with {self.proc.returncode} (see {log_path})")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                if time.monotonic() > deadline:
                    raise BenchError(f"{key} never listened on {self.port}") from None
                time.sleep(0.05)

    def connect(self) -> Connection:
        return Connection(self)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class Connection:
    """One keep-alive connection (and, to a stateful server, one initialized session)."""

    def __init__(self, server: HttpServer) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
        self.headers = {"Content-Type": "application/json", "Accept": ACCEPT}
        if server.stateful:
            init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": PROTOCOL_VERSION, "capabilities": {}, "clientInfo": {"name": "shipcode-bench", "version": "1"}}}
            _, session = self.post(init)
            if session:
                self.headers["Mcp-Session-Id"] = session
                self.headers["MCP-Protocol-Version"] = PROTOCOL_VERSION
            self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def post(self, message: dict[str, Any]) -> tuple[Any, str | None]:
        # bytes, so http.client writes head and body at once, as real clients do (a str body is a second write)
        self.conn.request("POST", "/mcp", json.dumps(message, separators=(",", ":")).encode(), self.headers)
        response = self.conn.getresponse()
        body = response.read()
        if response.status >= 300:
            raise BenchError(f"HTTP {response.status}: {body[:200]!r}")
        if not body.strip():
            return None, response.getheader("Mcp-Session-Id")
        if not body.lstrip().startswith((b"{", b"[")):  # an event stream: the data line holds the message
            body = next(line[5:] for line in body.splitlines() if line.startswith(b"data:"))
        return json.loads(body), response.getheader("Mcp-Session-Id")

    def call(self, message: dict[str, Any], check: Callable[[Any], None]) -> None:
        reply, _ = self.post(message)
        check(reply)


def request_of(kind: str, request_id: int, call: dict[str, Any]) -> dict[str, Any]:
    if kind == "ping":
        return {"jsonrpc": "2.0", "id": request_id, "method": "ping"}
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": call}


def checker(kind: str, request_id_of: Callable[[], int]) -> Callable[[Any], None]:
    def check(reply: Any) -> None:
        if not isinstance(reply, dict) or "result" not in reply or (kind == "tools/call" and reply["result"].get("isError")):
            raise BenchError(f"{kind}: bad reply {str(reply)[:200]}")

    return check


def load(connections: list[Connection], kind: str, total: int, call: dict[str, Any]) -> tuple[float, int]:
    """`total` requests over len(connections) threads, one request at a time each; requests per second, requests."""
    per = max(1, total // len(connections))
    failures: list[BaseException] = []

    def work(connection: Connection) -> None:
        try:
            check = checker(kind, lambda: 0)
            for number in range(per):
                connection.call(request_of(kind, number + 1, call), check)
        except BaseException as err:
            failures.append(err)

    for connection in connections:  # fresh TCP connections (sessions live on): idle ones may have met the head deadline
        connection.conn.close()
        connection.conn.connect()
        assert connection.conn.sock is not None
        connection.conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # as httpx and Node clients do
    threads = [threading.Thread(target=work, args=(connection,)) for connection in connections]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - started
    if failures:
        raise BenchError(f"{kind}: {failures[0]}")
    return per * len(connections) / elapsed, per * len(connections)


def family(pid: int) -> list[int]:
    """The process and its descendants (uvicorn's workers), from /proc/PID/task/*/children."""
    found, pending = [], [pid]
    while pending:
        current = pending.pop()
        found.append(current)
        try:
            for task in os.listdir(f"/proc/{current}/task"):
                with open(f"/proc/{current}/task/{task}/children") as children:
                    pending += [int(child) for child in children.read().split()]
        except OSError:
            continue
    return found


def server_cpu(pid: int) -> float:
    """CPU seconds of a server and its workers: what it spent, whatever the client could send."""
    return sum(cpu_seconds(member) for member in family(pid))


def session_memory(server: HttpServer, count: int) -> float:
    """RSS growth per open session: `count` sessions initialized (each on its own short connection), kept open."""
    before = memory(server.proc.pid).get("VmRSS", 0)
    sessions = []
    for _ in range(count):
        connection = server.connect()
        sessions.append(connection.headers.get("Mcp-Session-Id"))
        connection.conn.close()
    if not all(sessions):
        raise BenchError(f"{server.key} gave no session id")
    after = memory(server.proc.pid).get("VmRSS", 0)
    return (after - before) / count


def floor_command(python: str, workers: int, result_file: Path, port: int) -> list[str]:
    return [python, str(BENCH / "http_floor.py"), str(port), str(workers), str(result_file)]


def http_figures(python: str, src: Path, cache: Path, config: Config, log: Callable[[str], None],
                 peers: bool = True, install: bool = True, sessions: int = SESSIONS) -> dict[str, Any]:
    """Ours, the floor and the SDK over HTTP, in interleaved rounds; medians; targets from this run only."""
    root = cache / "http-root"
    root.mkdir(parents=True, exist_ok=True)
    (root / "small.txt").write_text("a small file\n")
    call = {"name": "read_file", "arguments": {"path": "small.txt"}}
    sdk_call = {"name": "echo", "arguments": {"text": "a small file"}}
    logs = cache / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    ours_env = our_env(src)
    cli = cli_command(python)
    errors: list[str] = []
    servers: dict[str, HttpServer] = {}
    results: dict[tuple[str, str, str, int], list[float]] = {}  # (mode, server, kind, concurrency) -> rates
    cpu: dict[tuple[str, str, str, int], list[float]] = {}  # the same -> server CPU seconds per request
    out: dict[str, Any] = {"errors": errors, "rows": [], "targets": [], "concurrency": list(CONCURRENCY), "sessions": sessions}
    try:
        servers["ours stateful"] = HttpServer("ours stateful", lambda port: [*cli, "--http", f"127.0.0.1:{port}", str(root)],
                                              ours_env, True, logs / "http-ours.stderr")
        servers["ours stateless x2"] = HttpServer(
            "ours stateless x2", lambda port: [*cli, "--http", f"127.0.0.1:{port}", "--stateless", "--workers", "2", str(root)],
            ours_env, False, logs / "http-ours-stateless.stderr")
        recorded, _ = servers["ours stateful"].connect().post(request_of("tools/call", 1, call))
        result_file = cache / "http-call-result.json"
        result_file.write_text(json.dumps(recorded["result"]))
        for workers, key in ((1, "floor stateful"), (2, "floor stateless x2")):
            command = functools.partial(floor_command, python, workers, result_file)
            servers[key] = HttpServer(key, command, {}, False, logs / "http-floor.stderr")
        if peers:
            try:
                if not install and not (cache / "venvs").exists():
                    raise BenchError("not installed (--no-install)")
                sdk_python = ensure_venv(cache, (MCP_PIN,), log)
                script = str(BENCH / "peers" / "mcp_sdk_http_echo.py")
                servers["sdk stateful"] = HttpServer("sdk stateful", lambda port: [str(sdk_python), script, str(port)], {}, True,
                                                     logs / "http-sdk.stderr")
            except (BenchError, OSError, subprocess.SubprocessError) as err:
                errors.append(f"SDK: {err}")
        modes = {"stateful": ["floor stateful", "ours stateful", "sdk stateful"],
                 "stateless --workers 2": ["floor stateless x2", "ours stateless x2"]}
        pools = {key: [server.connect() for _ in range(max(CONCURRENCY))] for key, server in servers.items()}
        total = config.latency
        for round_number in range(config.repetitions + 1):
            log(f"http: round {round_number}/{config.repetitions}{' (untimed)' if round_number == 0 else ''}")
            for mode, keys in modes.items():
                present = [key for key in keys if key in servers]
                for kind in ("ping", "tools/call"):
                    for concurrency in CONCURRENCY:
                        shift = round_number % len(present)
                        for key in present[shift:] + present[:shift]:
                            before = server_cpu(servers[key].proc.pid)
                            rate, sent = load(pools[key][:concurrency], kind, total if concurrency > 1 else total // 10,
                                              sdk_call if key.startswith("sdk") else call)
                            spent = (server_cpu(servers[key].proc.pid) - before) / sent
                            if round_number:
                                results.setdefault((mode, key.split()[0], kind, concurrency), []).append(rate)
                                cpu.setdefault((mode, key.split()[0], kind, concurrency), []).append(spent)
        for pool in pools.values():
            for connection in pool:
                connection.conn.close()
        per_session = {key: session_memory(servers[key], sessions) for key in ("ours stateful", "sdk stateful") if key in servers}
        out["session_bytes"] = per_session
    except (BenchError, OSError, subprocess.SubprocessError) as err:
        log(f"http figures failed: {err}")
        errors.append(str(err))
    finally:
        for server in servers.values():
            server.stop()
    for (mode, who, kind, concurrency), rates in sorted(results.items()):
        if who != "ours":
            continue
        ours = median(rates)
        floor = results.get((mode, "floor", kind, concurrency))
        sdk = results.get((mode, "sdk", kind, concurrency))
        row: dict[str, Any] = {"mode": mode, "request": kind, "concurrency": concurrency, "ours": ours,
               "floor": median(floor) if floor else None, "sdk": median(sdk) if sdk else None}
        row["to_floor"] = ours / row["floor"] if row["floor"] else None
        row["to_sdk"] = ours / row["sdk"] if row["sdk"] else None
        row["cpu"] = {who: median(cpu[(mode, who, kind, concurrency)]) for who in ("floor", "ours", "sdk")
                      if cpu.get((mode, who, kind, concurrency))}
        row["cpu_to_sdk"] = row["cpu"]["sdk"] / row["cpu"]["ours"] if "sdk" in row["cpu"] and row["cpu"].get("ours") else None
        out["rows"].append(row)
        name = f"HTTP {mode}, {kind} at concurrency {concurrency}"
        out["targets"].append({"target": f"{name} >= {FLOOR_LIMIT}x the HTTP floor", "server": "shipcode-mcp",
                               "measured": row["to_floor"], "limit": FLOOR_LIMIT,
                               "met": None if row["to_floor"] is None else row["to_floor"] >= FLOOR_LIMIT})
        if row["to_sdk"] is not None:
            out["targets"].append({"target": f"{name} >= {SDK_FACTOR}x the official SDK", "server": "shipcode-mcp",
                                   "measured": row["to_sdk"], "limit": SDK_FACTOR, "met": row["to_sdk"] >= SDK_FACTOR})
    ours_session = out.get("session_bytes", {}).get("ours stateful")
    out["targets"].append({"target": "HTTP memory per open session <= 8 KiB", "server": "shipcode-mcp",
                           "measured": None if ours_session is None else ours_session / 1024, "limit": SESSION_BYTES / 1024,
                           "met": None if ours_session is None else ours_session <= SESSION_BYTES})
    return out


def http_table(figures: dict[str, Any]) -> str:
    rows = []
    for row in figures["rows"]:
        def rate(value: float | None) -> str:
            return "-" if value is None else f"{value:,.0f}/s"
        rows.append([row["mode"], row["request"], str(row["concurrency"]), rate(row["floor"]), rate(row["ours"]),
                     "-" if row["to_floor"] is None else f"{row['to_floor']:.2f}x", rate(row["sdk"]),
                     "-" if row["to_sdk"] is None else f"{row['to_sdk']:.1f}x",
                     " / ".join(f"{row['cpu'][who] * 1e6:.0f}" if who in row["cpu"] else "-" for who in ("floor", "ours", "sdk")),
                     "-" if row["cpu_to_sdk"] is None else f"{row['cpu_to_sdk']:.1f}x"])
    table = markdown_table(["HTTP (median req/s)", "request", "clients", "Starlette floor", "shipcode-mcp", "ours ÷ floor",
                            "official SDK", "ours ÷ SDK", "server CPU µs/request: floor / ours / SDK", "SDK CPU ÷ ours"], rows)
    sessions = figures.get("session_bytes") or {}
    if sessions:
        shown = "; ".join(f"{key.split()[0]} {value / 1024:.1f} KiB" for key, value in sessions.items())
        table += f"\nRSS growth per open session ({figures['sessions']} sessions): {shown}"
    return table

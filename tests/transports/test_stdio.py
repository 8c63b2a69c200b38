"""The stdio transport through real processes and real pipes: EOF, signals, EPIPE, limits, ordering."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from support import HANDSHAKE, INITIALIZED, REPO, McpProcess, peak_rss

SERVER = [sys.executable, str(Path(__file__).parents[1] / "stdio_test_server.py")]  # not beside: this folder holds http/


def call(msg_id: Any, name: str, arguments: dict[str, Any] | None = None, meta: dict[str, Any] | None = None) -> str:
    params: dict[str, Any] = {"name": name, "arguments": arguments or {}}
    if meta:
        params["_meta"] = meta
    return json.dumps({"jsonrpc": "2.0", "id": msg_id, "method": "tools/call", "params": params})


def ping(msg_id: Any) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": msg_id, "method": "ping"})


def test_every_request_read_before_eof_is_answered_then_exit_0() -> None:
    lines = [call(i, "sleep", {"seconds": 0.1}) for i in range(10)] + [ping(100)]
    done = subprocess.run(SERVER, input=("\n".join(lines) + "\n").encode(), capture_output=True, timeout=30,
                          env={**os.environ, "PYTHONPATH": str(REPO / "src")})
    replies = [json.loads(line) for line in done.stdout.splitlines()]
    assert sorted(r["id"] for r in replies) == [*range(10), 100]
    assert all("result" in r for r in replies)
    assert done.returncode == 0 and done.stderr == b""


def test_a_last_line_without_newline_is_still_answered() -> None:
    done = subprocess.run(SERVER, input=ping(1).encode(), capture_output=True, timeout=30,
                          env={**os.environ, "PYTHONPATH": str(REPO / "src")})
    assert done.stdout == b'{"jsonrpc":"2.0","id":1,"result":{}}\n' and done.returncode == 0


def test_sigterm_exits_promptly_and_cleanly() -> None:
    with McpProcess(command=SERVER) as server:
        server.send(HANDSHAKE)
        server.read()
        server.send(call(2, "sleep", {"seconds": 60}))
        server.send(ping(3))
        assert server.read()["id"] == 3
        started = time.monotonic()
        server.proc.send_signal(signal.SIGTERM)
        assert server.proc.wait(5) == 0
        assert time.monotonic() - started < 2
        assert server.close() == 0  # gone already: this joins the stderr reader
        assert b"Traceback" not in server.stderr


def test_a_client_that_disappears_makes_the_server_exit_quietly() -> None:
    proc = subprocess.Popen(SERVER, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, "PYTHONPATH": str(REPO / "src")})
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write((ping(1) + "\n").encode())
    proc.stdin.flush()
    assert proc.stdout.readline() == b'{"jsonrpc":"2.0","id":1,"result":{}}\n'
    proc.stdout.close()  # the client stops reading: the next write gets EPIPE
    proc.stdin.write((call(2, "big", {"size": 1_000_000}) + "\n" + ping(3) + "\n").encode())
    proc.stdin.flush()
    assert proc.wait(10) == 0
    assert proc.stderr is not None and b"Traceback" not in proc.stderr.read()
    proc.stdin.close()


def test_ping_is_answered_while_a_slow_tool_runs_and_cancel_stops_it() -> None:
    with McpProcess(command=SERVER) as server:
        server.send(call(1, "sleep", {"seconds": 30}))
        server.send(ping(2))
        assert server.read(timeout=2) == {"jsonrpc": "2.0", "id": 2, "result": {}}
        server.send(call(3, "echo", {"text": "meanwhile"}))
        assert server.read(timeout=2)["id"] == 3
        server.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}))
        server.send(ping(4))
        assert server.read(timeout=2) == {"jsonrpc": "2.0", "id": 4, "result": {}}
        server.no_output(0.5)  # the cancelled request gets no response
        server.send(ping(5))
        assert server.read() == {"jsonrpc": "2.0", "id": 5, "result": {}}
        assert server.close() == 0


def test_quick_deferred_calls_answer_in_request_order() -> None:
    lines = []
    for i in range(20):
        lines.append(call(i * 2, "sleep", {"seconds": 0.001}))
        lines.append(ping(i * 2 + 1))
    done = subprocess.run(SERVER, input=("\n".join(lines) + "\n").encode(), capture_output=True, timeout=30,
                          env={**os.environ, "PYTHONPATH": str(REPO / "src")})
    assert [json.loads(line)["id"] for line in done.stdout.splitlines()] == list(range(40))


def test_progress_comes_before_the_response_and_only_with_a_token() -> None:
    with McpProcess(command=SERVER) as server:
        server.send(call(1, "progress", meta={"progressToken": "tok"}))
        messages = [server.read() for _ in range(4)]
        assert [m.get("method") for m in messages[:3]] == ["notifications/progress"] * 3
        assert [m["params"]["progress"] for m in messages[:3]] == [1, 2, 3]
        assert messages[3]["id"] == 1
        server.send(call(2, "progress"))
        assert server.read()["id"] == 2
        server.no_output(0.2)
        server.send(ping(3))
        assert server.read() == {"jsonrpc": "2.0", "id": 3, "result": {}}


def test_nothing_but_protocol_reaches_stdout() -> None:
    with McpProcess(command=SERVER) as server:
        server.send(call(1, "noisy"))
        assert server.read()["result"]["content"][0]["text"] == "quiet"
        server.send(ping(2))
        assert server.read()["id"] == 2
        assert server.close() == 0  # which joins the stderr reader
        assert b"a stray print" in server.stderr and b"a child process" in server.stderr


def test_a_large_response_arrives_whole_on_one_line() -> None:
    with McpProcess(command=SERVER) as server:
        server.send(call(1, "big", {"size": 8_000_000}))
        reply = server.read(timeout=30)
        assert len(reply["result"]["content"][0]["text"]) == 8_000_000


def test_pathological_nesting_is_a_parse_error_and_the_server_survives() -> None:
    with McpProcess(command=SERVER) as server:
        server.write(b"[" * 100_000 + b"\n")
        assert server.read() == {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}}
        server.write(b'{"a":' * 100_000 + b"\n")
        assert server.read()["error"]["code"] == -32700
        server.send(ping(1))
        assert server.read()["id"] == 1


@pytest.mark.measures
@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs /proc")
def test_an_oversized_line_is_refused_with_bounded_memory() -> None:
    with McpProcess(command=SERVER) as server:
        server.send(ping(1))
        server.read()
        chunk = b"x" * (1 << 20)
        for _ in range(100):  # 100 MiB on one line, over the 64 MiB limit
            server.write(chunk)
        server.write(b"\n")
        refused = server.read(timeout=30)
        assert refused["id"] is None and refused["error"]["code"] == -32600
        assert "64" in json.dumps(refused) or "67108864" in json.dumps(refused)
        server.send(ping(2))
        assert server.read()["id"] == 2
        assert peak_rss(server.proc.pid) < 160 * 1024 * 1024, "memory must stay near the limit, not the line"


def test_the_real_command_handshake_and_flags(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    version = subprocess.run([sys.executable, "-m", "shipcode_mcp", "--version"], capture_output=True, env=env, timeout=30)
    assert version.stdout == b"shipcode-mcp 1.0.0\n" and version.returncode == 0
    usage = subprocess.run([sys.executable, "-m", "shipcode_mcp", "--help"], capture_output=True, env=env, timeout=30)
    assert b"--allow-write" in usage.stdout and usage.returncode == 0
    missing = subprocess.run([sys.executable, "-m", "shipcode_mcp", str(tmp_path / "nope")], capture_output=True,
                             env=env, timeout=30, input=b"")
    assert missing.returncode == 2 and b"not a directory" in missing.stderr and missing.stdout == b""
    with McpProcess(str(tmp_path)) as server:
        server.send(HANDSHAKE)
        assert server.read_raw() == (
            b'{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{},"resources":{}},'
            b'"serverInfo":{"name":"shipcode-mcp","version":"1.0.0"}}}\n')
        server.send(INITIALIZED)
        server.send(ping(2))
        assert server.read_raw() == b'{"jsonrpc":"2.0","id":2,"result":{}}\n'
        assert server.close() == 0


@pytest.mark.parametrize("tool", ["exit", "exit_inline", "deep", "deep_inline"])
def test_a_handler_that_exits_or_returns_the_unencodable_is_an_internal_error(tool: str) -> None:
    lines = [call(1, tool), call(2, "echo", {"text": "after"}), call(3, "sleep", {"seconds": 0.01}), ping(4)]
    done = subprocess.run(SERVER, input=("\n".join(lines) + "\n").encode(), capture_output=True, timeout=30,
                          env={**os.environ, "PYTHONPATH": str(REPO / "src")})
    replies = {reply["id"]: reply for reply in map(json.loads, done.stdout.splitlines())}
    assert replies[1] == {"jsonrpc": "2.0", "id": 1, "error": {"code": -32603, "message": "Internal error"}}
    assert replies[2]["result"]["content"][0]["text"] == "after"
    assert "result" in replies[3] and replies[4]["result"] == {}
    assert done.returncode == 0


def test_the_line_limit_holds_for_lines_inside_one_read() -> None:
    from shipcode_mcp.server import Server
    from shipcode_mcp.transports.stdio import StdioTransport

    in_read, in_write = os.pipe()
    out_read, out_write = os.pipe()
    transport = StdioTransport(Server("t", "1"), max_message_bytes=100)
    os.write(in_write, (json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"pad": "x" * 200}}) + "\n"
                        + ping(2) + "\n").encode())
    os.close(in_write)
    assert transport.serve(in_read, out_write) == 0
    os.close(out_write)
    with os.fdopen(out_read, "rb") as out:
        replies = [json.loads(line) for line in out.read().splitlines()]
    assert replies[0]["id"] is None and replies[0]["error"]["code"] == -32600
    assert replies[1] == {"jsonrpc": "2.0", "id": 2, "result": {}}
    os.close(in_read)


def _flood_then_ping(server: McpProcess, lines: list[str]) -> float:
    """Write `lines` and a ping in one go; seconds until the ping's answer (other replies are skipped)."""
    server.send(ping("warm"))
    assert server.read()["id"] == "warm"
    started = time.monotonic()
    server.write("".join(line + "\n" for line in lines) + ping("p") + "\n")
    while True:
        reply = server.read(timeout=60)
        if reply.get("id") == "p":
            return time.monotonic() - started


@pytest.mark.measures
def test_ping_and_cancel_are_not_held_up_by_500_queued_slow_calls() -> None:
    """Waiting up to 50 ms for each queued call (the old order grace) held this ping back 25 s."""
    with McpProcess(command=SERVER) as server:
        took = _flood_then_ping(server, [call(i, "sleep", {"seconds": 60}) for i in range(500)])
        print(f"ping behind 500 queued 60 s calls: answered in {took * 1000:.0f} ms")
        assert took < 1.0
        # Cancelling all of them is as quick: the ping after the 500 notifications is answered at once.
        started = time.monotonic()
        server.write("".join(json.dumps({"jsonrpc": "2.0", "method": "notifications/cancelled",
                                         "params": {"requestId": i}}) + "\n" for i in range(500)) + ping("q") + "\n")
        assert server.read(timeout=10) == {"jsonrpc": "2.0", "id": "q", "result": {}}
        print(f"500 cancellations and a ping: {(time.monotonic() - started) * 1000:.0f} ms")
        assert time.monotonic() - started < 1.0
        server.no_output(0.5)  # no response for a cancelled request
        server.send(ping("r"))
        assert server.read() == {"jsonrpc": "2.0", "id": "r", "result": {}}
        started = time.monotonic()
        assert server.close() == 0  # nothing is left running: EOF ends the server at once
        assert time.monotonic() - started < 5


@pytest.mark.measures
def test_a_stream_of_medium_calls_holds_a_ping_back_by_the_order_budget_at_most() -> None:
    """Calls that each finish within the grace, one after another: waiting for each in turn would cost
    the ping 100 x 40 ms = 4 s; the budget bounds the waiting to a fraction of a second."""
    with McpProcess(command=SERVER) as server:
        took = _flood_then_ping(server, [call(i, "sleep", {"seconds": 0.04}) for i in range(100)])
        print(f"ping behind 100 calls of 40 ms: answered in {took * 1000:.0f} ms")
        assert took < 1.0

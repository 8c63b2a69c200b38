"""What the server says on stderr (docs/logging.md), through real processes: the start-up line of each
mode, exactly; one debug line per request on stdio and HTTP (ok, error, cancelled); JSON lines; stdout
carrying the protocol and nothing else."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from logging_support import messages, only_start_line
from support import HANDSHAKE, INITIALIZED, REPO, validate_server_message

HTTP = importlib.util.find_spec("uvicorn") is not None and importlib.util.find_spec("starlette") is not None
LOGGING_SERVER = str(Path(__file__).with_name("logging_server.py"))
REQUEST_LINE = re.compile(r"(\S+) id=(\S+) (ok|tool_error|input_required|cancelled|error -?\d+|http \d+) (\d+\.\d) ms")


def env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO / "tests" / "transports" / "http")])}


def stdio(args: list[str], lines: list[str], cwd: Path | None = None, command: list[str] | None = None,
          ) -> subprocess.CompletedProcess[bytes]:
    """The CLI (or `command`) fed `lines`, then EOF."""
    return subprocess.run((command or [sys.executable, "-m", "shipcode_mcp"]) + args, cwd=cwd, env=env(), timeout=60,
                          input="".join(line + "\n" for line in lines).encode(), capture_output=True)


def request(msg_id: Any, method: str, params: dict[str, Any] | None = None) -> str:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
    if params is not None:
        message["params"] = params
    return json.dumps(message)


def protocol_only(stdout: bytes) -> list[dict[str, Any]]:
    """Every stdout line is a server message of the protocol: nothing else is written there."""
    replies = [json.loads(line) for line in stdout.splitlines()]
    for reply in replies:
        validate_server_message(reply)
    return replies


def request_lines(stderr: bytes) -> dict[str, tuple[str, str]]:
    """id -> (method, outcome) of the debug lines about requests."""
    found = {}
    for message in messages(stderr, "DEBUG"):
        match = REQUEST_LINE.fullmatch(message)
        if match:
            found[match.group(2)] = (match.group(1), match.group(3))
    return found


# -- the start-up line ----------------------------------------------------------------------------------
def test_stdio_with_roots_says_them_and_nothing_else(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    done = stdio([str(tmp_path / "a"), str(tmp_path / "b")], [HANDSHAKE, INITIALIZED, request(2, "ping")])
    assert done.returncode == 0 and [r["id"] for r in protocol_only(done.stdout)] == [1, 2]
    assert only_start_line(done.stderr, f"serving {tmp_path / 'a'}, {tmp_path / 'b'} over stdio; read-only, not "
                                        "watching, children sandboxed, no auth"), done.stderr


def test_stdio_following_the_clients_roots_says_so(tmp_path: Path) -> None:
    done = stdio([], [], cwd=tmp_path)
    assert done.returncode == 0 and done.stdout == b""
    assert only_start_line(done.stderr, f"serving the client's roots (or {tmp_path} if it gives none) over stdio; "
                                        "read-only, not watching, children sandboxed, no auth"), done.stderr


def test_allow_write_says_writes_are_allowed(tmp_path: Path) -> None:
    done = stdio(["--allow-write", str(tmp_path)], [])
    assert done.returncode == 0
    assert only_start_line(done.stderr, f"serving {tmp_path} over stdio; writes allowed, not watching, children sandboxed, no auth"), \
        done.stderr


@pytest.mark.skipif(importlib.util.find_spec("watchfiles") is None, reason="needs the 'watch' extra")
def test_watch_says_it_watches(tmp_path: Path) -> None:
    done = stdio(["--watch", "--allow-write", str(tmp_path)], [])
    assert done.returncode == 0
    assert only_start_line(done.stderr, f"serving {tmp_path} over stdio; writes allowed, watching for changes, children sandboxed, "
                                        "no auth"), done.stderr


@pytest.mark.parametrize("level", ["error", "off"])
def test_error_and_off_say_nothing_at_start(tmp_path: Path, level: str) -> None:
    done = stdio(["--log-level", level, str(tmp_path)], [HANDSHAKE])
    assert done.returncode == 0 and done.stderr == b"" and len(protocol_only(done.stdout)) == 1


def test_info_says_the_start_up_line_too(tmp_path: Path) -> None:
    done = stdio(["--log-level", "info", str(tmp_path)], [])
    assert done.returncode == 0 and only_start_line(
        done.stderr, f"serving {tmp_path} over stdio; read-only, not watching, children sandboxed, no auth"), done.stderr


def test_the_start_up_line_in_json(tmp_path: Path) -> None:
    done = stdio(["--log-format", "json", "--allow-write", str(tmp_path)], [])
    assert done.returncode == 0
    [record] = [json.loads(line) for line in done.stderr.splitlines()]
    assert record.pop("time").endswith("Z")
    said = f"serving {tmp_path} over stdio; writes allowed, not watching, children sandboxed, no auth"
    assert record == {"level": "notice", "logger": "shipcode-mcp", "message": said,
                      "event": "start", "version": "1.0.0", "roots": [str(tmp_path)], "client_roots": False,
                      "transport": "stdio", "write": True, "watch": False, "sandbox": "on", "auth": "none"}


def http_server(args: list[str], port: int) -> subprocess.Popen[bytes]:
    from transports.http.support import start_process

    return start_process(["-m", "shipcode_mcp", "--http", str(port), *args], port, env=env())


def stopped(process: subprocess.Popen[bytes]) -> bytes:
    """SIGTERM, exit status 0, and all the process wrote on stderr."""
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=30)
    assert process.returncode == 0, stderr
    return stderr


@pytest.mark.skipif(not HTTP, reason="needs the 'http' extra")
def test_http_with_sessions_says_its_url(tmp_path: Path) -> None:
    from transports.http.support import McpHttpClient, free_port

    port = free_port()
    process = http_server([str(tmp_path)], port)
    assert McpHttpClient(port).call("ping").json()["result"] == {}
    stderr = stopped(process)
    assert only_start_line(stderr, f"serving {tmp_path} at http://127.0.0.1:{port}/mcp (sessions); read-only, not "
                                   "watching, children sandboxed, no auth"), stderr


@pytest.mark.skipif(not HTTP, reason="needs the 'http' extra")
def test_http_stateless_with_two_workers_says_so_once(tmp_path: Path) -> None:
    from transports.http.support import McpHttpClient, free_port

    port = free_port()
    process = http_server(["--stateless", "--workers", "2", "--allow-write", str(tmp_path)], port)
    assert McpHttpClient(port, handshake=False).call("ping").json()["result"] == {}
    stderr = stopped(process)
    said = (f"serving {tmp_path} at http://127.0.0.1:{port}/mcp (stateless, 2 workers, supervised); writes allowed, "
            "not watching, children sandboxed, no auth")
    assert only_start_line(stderr, said), stderr


# -- one line per request --------------------------------------------------------------------------------
def tool(msg_id: int, name: str, arguments: dict[str, Any] | None = None) -> str:
    return request(msg_id, "tools/call", {"name": name, "arguments": arguments or {}})


CANCEL = json.dumps({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 5}})


def test_debug_on_stdio_writes_a_line_per_request() -> None:
    done = stdio([], [HANDSHAKE, INITIALIZED, tool(2, "echo", {"text": "hi"}), tool(3, "nosuch"), request(4, "nosuch/method"),
                      tool(5, "wait"), CANCEL, request("six", "ping"), "not json"],
                 command=[sys.executable, LOGGING_SERVER, "debug", "text", "stdio"])
    assert done.returncode == 0
    assert sorted(str(r["id"]) for r in protocol_only(done.stdout)) == ["1", "2", "3", "4", "None", "six"]
    assert request_lines(done.stderr) == {
        "1": ("initialize", "ok"), "2": ("tools/call", "ok"), "3": ("tools/call", "error -32602"),
        "4": ("nosuch/method", "error -32601"), "5": ("tools/call", "cancelled"), '"six"': ("ping", "ok"),
        "null": ("(invalid)", "error -32700")}
    assert len(messages(done.stderr)) == 7, done.stderr  # a line per request, and nothing else


def test_warning_on_stdio_writes_no_request_lines() -> None:
    done = stdio([], [HANDSHAKE, tool(2, "echo", {"text": "hi"})],
                 command=[sys.executable, LOGGING_SERVER, "warning", "text", "stdio"])
    assert done.returncode == 0 and done.stderr == b"" and len(protocol_only(done.stdout)) == 2


def test_a_line_written_before_the_start_up_line_waits_for_it(capsys: pytest.CaptureFixture[str]) -> None:
    """The stdio start-up line is written after the sandbox check, up to 100 ms after start (cli._check_sandbox_soon):
    a line any thread writes sooner makes it be said first, once, and a thread writing while it is being said
    waits for it."""
    import threading

    from shipcode_mcp import log

    being_said, go_on = threading.Event(), threading.Event()
    said: list[str] = []

    def start() -> None:
        said.append("start")
        being_said.set()
        assert go_on.wait(30)
        log.notice("the start-up line")

    log.say_first(start)
    first = threading.Thread(target=log.warning, args=("one",))
    first.start()
    assert being_said.wait(30)
    second = threading.Thread(target=log.warning, args=("two",))
    second.start()
    second.join(0.2)
    assert second.is_alive()  # waiting for the start-up line
    go_on.set()
    first.join(30)
    second.join(30)
    log.warning("three")
    log.first_said()  # said already: nothing more
    lines = [line.split(": ", 1)[1] for line in capsys.readouterr().err.splitlines()]
    assert said == ["start"]
    assert lines[0] == "the start-up line" and sorted(lines[1:3]) == ["one", "two"] and lines[3:] == ["three"]


def test_the_cli_at_debug_says_its_start_and_each_request(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("hello\n")
    done = stdio(["--log-level", "debug", str(tmp_path)], [
        HANDSHAKE, INITIALIZED, tool(2, "read_file", {"path": "a.txt"}), tool(3, "read_file", {"path": "missing.txt"}),
        tool(4, "nosuch")])
    assert done.returncode == 0 and len(protocol_only(done.stdout)) == 4
    assert messages(done.stderr)[0] == f"serving {tmp_path} over stdio; read-only, not watching, children sandboxed, no auth"
    assert request_lines(done.stderr) == {"1": ("initialize", "ok"), "2": ("tools/call", "ok"),
                                          "3": ("tools/call", "tool_error"), "4": ("tools/call", "error -32602")}


def test_json_lines_on_stdio() -> None:
    done = stdio([], [HANDSHAKE, tool(2, "nosuch"), tool(5, "wait"), CANCEL],
                 command=[sys.executable, LOGGING_SERVER, "debug", "json", "stdio"])
    assert done.returncode == 0 and len(protocol_only(done.stdout)) == 2
    records = [json.loads(line) for line in done.stderr.splitlines()]
    for record in records:
        assert set(record) >= {"time", "level", "logger", "message", "method", "id", "outcome", "duration_ms"}
        assert record["level"] == "debug" and record["logger"] == "shipcode-mcp"
        assert isinstance(record["duration_ms"], float) and record["duration_ms"] >= 0
    outcomes = {record["id"]: (record["method"], record["outcome"], record.get("code")) for record in records}
    assert outcomes == {1: ("initialize", "ok", None), 2: ("tools/call", "error", -32602),
                        5: ("tools/call", "cancelled", None)}


def http_exchanges(port: int) -> None:
    """ok, error, a tool error, a request refused before MCP, and a request cancelled by the client."""
    import threading

    from support import wait_for
    from transports.http.support import McpHttpClient
    from transports.http.support import request as http_request

    client = McpHttpClient(port)  # initialize (id 0), ok
    assert client.call("tools/call", {"name": "echo", "arguments": {"text": "hi"}}).json()["result"]  # id 1, ok
    assert client.call("nosuch/method").json()["error"]["code"] == -32601  # id 2
    stale = {**client.headers(), "Mcp-Session-Id": "0" * 32}
    assert http_request(port, "POST", {"jsonrpc": "2.0", "id": 9, "method": "ping"}, stale).status == 404
    picky = {**client.headers(), "Accept": "text/html"}  # refused before its body is read
    assert http_request(port, "POST", {"jsonrpc": "2.0", "id": 8, "method": "ping"}, picky).status == 406
    waiting: list[int] = []

    def wait() -> None:  # id 3: the response, once cancelled, is a 202 with no message
        waiting.append(client.call("tools/call", {"name": "wait", "arguments": {}},
                                   extra={"Accept": "application/json"}).status)

    thread = threading.Thread(target=wait)
    thread.start()
    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 3}}
    wait_for(lambda: client.next_id == 3, 10, "the wait call to be sent")
    # The cancel may overtake the call itself (it is then ignored): repeat it until the call has ended.
    while thread.is_alive():
        assert client.post(cancel).status == 202
        thread.join(0.05)
    assert waiting == [202]


@pytest.mark.skipif(not HTTP, reason="needs the 'http' extra")
def test_debug_over_http_writes_a_line_per_request_in_uvicorns_format() -> None:
    from transports.http.support import free_port, start_process

    port = free_port()
    process = start_process([LOGGING_SERVER, "debug", "text", "http", str(port)], port, env=env())
    http_exchanges(port)
    stderr = stopped(process)
    assert request_lines(stderr) == {"0": ("initialize", "ok"), "1": ("tools/call", "ok"),
                                     "2": ("nosuch/method", "error -32601"), "9": ("ping", "http 404"),
                                     "null": ("(unread)", "http 406"), "3": ("tools/call", "cancelled")}
    access = [line for line in stderr.decode().splitlines() if " uvicorn.access INFO: " in line]
    assert len(access) >= 6 and all(re.fullmatch(r'\d\d:\d\d:\d\d uvicorn\.access INFO: 127\.0\.0\.1:\d+ - '
                                                 r'"POST /mcp HTTP/1\.1" \d{3}', line) for line in access), access
    assert any(" uvicorn INFO: " in line for line in stderr.decode().splitlines())  # its own messages too
    messages(stderr)  # every line is one of ours


@pytest.mark.skipif(not HTTP, reason="needs the 'http' extra")
def test_json_lines_over_http_ours_and_uvicorns() -> None:
    from transports.http.support import free_port, start_process

    port = free_port()
    process = start_process([LOGGING_SERVER, "debug", "json", "http", str(port)], port, env=env())
    http_exchanges(port)
    records = [json.loads(line) for line in stopped(process).splitlines()]
    assert all({"time", "level", "logger", "message"} <= set(record) for record in records)
    ours = {record["id"]: (record["outcome"], record.get("code")) for record in records if record["logger"] == "shipcode-mcp"}
    assert ours == {0: ("ok", None), 1: ("ok", None), 2: ("error", -32601), 9: ("http 404", None), None: ("http 406", None),
                    3: ("cancelled", None)}
    access = [record for record in records if record["logger"] == "uvicorn.access"]
    assert len(access) >= 6 and all(record["http_method"] == "POST" and record["path"] == "/mcp" for record in access)
    assert {record["status"] for record in access} >= {200, 202, 404}


@pytest.mark.skipif(not HTTP, reason="needs the 'http' extra")
def test_the_cli_over_http_at_debug_says_its_start_then_each_request(tmp_path: Path) -> None:
    from transports.http.support import McpHttpClient, free_port

    port = free_port()
    process = http_server(["--log-level", "debug", "--stateless", str(tmp_path)], port)
    client = McpHttpClient(port, handshake=False)
    assert client.call("tools/call", {"name": "nosuch", "arguments": {}}).json()["error"]["code"] == -32602
    stderr = stopped(process)
    said = messages(stderr)
    assert said[0] == f"serving {tmp_path} at http://127.0.0.1:{port}/mcp (stateless); read-only, not watching, children sandboxed, no auth"
    assert request_lines(stderr) == {"1": ("tools/call", "error -32602")}


def test_a_cancelled_listen_ends_its_debug_line_and_its_id_may_serve_again(tmp_path: Path) -> None:
    """The listen subscribes to a file (a listen for nothing is refused), so it is cancelled once acknowledged."""
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}
    (tmp_path / "a.txt").write_text("watched\n")
    listen = {"jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen",
              "params": {"notifications": {"resourceSubscriptions": [(tmp_path / "a.txt").as_uri()]}, "_meta": meta}}
    after = [{"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}},
             {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta}}]
    process = subprocess.Popen([sys.executable, "-m", "shipcode_mcp", "--log-level", "debug", "--watch", str(tmp_path)],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               env={"PYTHONPATH": str(REPO / "src")})
    try:
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(json.dumps(listen).encode() + b"\n")
        process.stdin.flush()
        acknowledged = json.loads(process.stdout.readline())
        assert acknowledged["method"] == "notifications/subscriptions/acknowledged", acknowledged
        _, stderr = process.communicate("".join(json.dumps(line) + "\n" for line in after).encode(), timeout=30)
    finally:
        process.kill()
        process.wait(10)
    assert process.returncode == 0
    said = stderr.decode()
    assert "subscriptions/listen id=1 cancelled" in said and "tools/list id=1 ok" in said, said


@pytest.mark.skipif(not HTTP, reason="needs the 'http' extra")
def test_a_token_sent_in_the_url_is_refused_and_never_logged(tmp_path: Path) -> None:
    import logging
    import urllib.error
    import urllib.request

    from transports.http.support import free_port, start_process

    secret = "url-token-0123456789abcdef"
    # The attack: uvicorn's access log, as it comes, writes the query string and the token in it.
    record = logging.LogRecord("uvicorn.access", logging.INFO, "", 0, '%s - "%s %s HTTP/%s" %d',
                               ("127.0.0.1:1", "POST", f"/mcp?access_token={secret}", "1.1", 400), None)
    assert secret in logging.Formatter().format(record)

    tokens = tmp_path / "tokens"
    tokens.write_text(f"{secret}\n")
    tokens.chmod(0o600)
    port = free_port()
    process = start_process(["-m", "shipcode_mcp", str(tmp_path), "--http", str(port), "--auth-token-file", str(tokens),
                             "--log-level", "info"], port, env=env())
    request = urllib.request.Request(f"http://127.0.0.1:{port}/mcp?x=1&access_token={secret}", method="POST",
                                     data=b'{"jsonrpc":"2.0","id":1,"method":"ping"}',
                                     headers={"Content-Type": "application/json", "Accept": "application/json"})
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=10)
    assert refused.value.code == 400
    assert b'error="invalid_request"' in refused.value.headers["WWW-Authenticate"].encode()
    stderr = stopped(process).decode()
    assert secret not in stderr
    assert '"POST /mcp?x=1&access_token=[redacted] HTTP/1.1" 400' in stderr

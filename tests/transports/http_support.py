"""Test support for Streamable HTTP: a real uvicorn server on 127.0.0.1, and a plain http.client client
that shows exactly what went over the wire (status, headers, JSON or SSE events)."""

from __future__ import annotations

import http.client
import json
import os
import socket
import subprocess
import sys
import threading
import time
from typing import Any

import uvicorn

from support import REPO, validate_server_message, wait_for

MCP_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


class UvicornThread:
    """`app` served by uvicorn on 127.0.0.1 (an ephemeral port) in a thread of the test process."""

    def __init__(self, app: Any) -> None:
        config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="on",
                                timeout_graceful_shutdown=1)
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        wait_for(lambda: self.server.started or not self.thread.is_alive(), 10, "uvicorn to start")
        assert self.server.started, "uvicorn did not start"
        self.port: int = self.server.servers[0].sockets[0].getsockname()[1]

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(10)
        assert not self.thread.is_alive(), "uvicorn did not stop"


class Reply:
    def __init__(self, response: http.client.HTTPResponse, stream: bool = False) -> None:
        self.response = response
        self.status = response.status
        self.headers = {k.lower(): v for k, v in response.getheaders()}
        self.body = b"" if stream else response.read()

    @property
    def content_type(self) -> str:
        return self.headers.get("content-type", "").split(";")[0]

    def json(self) -> Any:
        assert self.content_type == "application/json", (self.status, self.headers, self.body)
        message = json.loads(self.body)
        if isinstance(message, dict) and ("result" in message or message.get("id") is not None):
            validate_server_message(message)
        return message

    def events(self) -> list[dict[str, Any]]:
        """Every SSE event of a finished body, as messages."""
        assert self.content_type == "text/event-stream", (self.status, self.headers, self.body)
        return [_message(data) for data in _event_data(self.body.decode().split("\n"))]

    def next_event(self) -> dict[str, Any] | None:
        """The next event of a stream still open (None at its end), comments skipped."""
        data: list[str] = []
        while True:
            line = self.response.readline()
            if not line:
                return None
            text = line.decode().rstrip("\r\n")
            if text == "":
                if data:
                    return _message("\n".join(data))
                continue
            if text.startswith("data:"):
                data.append(text[5:].lstrip(" "))


def _event_data(lines: list[str]) -> list[str]:
    out: list[str] = []
    data: list[str] = []
    for line in lines:
        if line == "":
            if data:
                out.append("\n".join(data))
            data = []
        elif line.startswith("data:"):
            data.append(line[5:].lstrip(" "))
    return out


def _message(data: str) -> dict[str, Any]:
    message = json.loads(data)
    validate_server_message(message)
    return message


def request(port: int, method: str, body: Any = None, headers: dict[str, str] | None = None, *,
            stream: bool = False, raw: bytes | None = None, path: str = "/mcp", timeout: float = 15) -> Reply:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
    connection.request(method, path, body=data, headers=headers or {})
    return Reply(connection.getresponse(), stream=stream)


class McpHttpClient:
    """An MCP client over Streamable HTTP, one connection per POST as browsers and SDKs do."""

    def __init__(self, port: int, *, capabilities: dict[str, Any] | None = None, handshake: bool = True) -> None:
        self.port = port
        self.session_id: str | None = None
        self.next_id = 0
        if handshake:
            reply = self.post(initialize(capabilities))
            assert reply.status == 200, reply.body
            self.session_id = reply.headers.get("mcp-session-id")
            self.initialize_reply = reply.json()
            assert self.post({"jsonrpc": "2.0", "method": "notifications/initialized"}).status == 202

    def headers(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        headers = dict(MCP_HEADERS)
        if self.session_id is not None:
            headers["Mcp-Session-Id"] = self.session_id
            headers["MCP-Protocol-Version"] = "2025-06-18"
        headers.update(extra or {})
        return headers

    def post(self, message: Any, extra: dict[str, str] | None = None, *, stream: bool = False) -> Reply:
        return request(self.port, "POST", message, self.headers(extra), stream=stream)

    def call(self, method: str, params: dict[str, Any] | None = None, *, stream: bool = False,
             extra: dict[str, str] | None = None) -> Reply:
        self.next_id += 1
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            message["params"] = params
        return self.post(message, extra, stream=stream)

    def get(self, extra: dict[str, str] | None = None) -> Reply:
        headers = {k: v for k, v in self.headers(extra).items() if k != "Content-Type"}
        headers["Accept"] = (extra or {}).get("Accept", "text/event-stream")
        return request(self.port, "GET", headers=headers, stream=True)

    def delete(self) -> Reply:
        return request(self.port, "DELETE", headers=self.headers())


def initialize(capabilities: dict[str, Any] | None = None, msg_id: int = 0) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": msg_id, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": capabilities or {}, "clientInfo": {"name": "tests", "version": "1"}}}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def start_process(args: list[str], port: int, *, env: dict[str, str] | None = None,
                  cwd: str | os.PathLike[str] | None = None) -> subprocess.Popen[bytes]:
    """A server process; returns once `port` accepts connections."""
    full_env = dict(os.environ)
    full_env["PYTHONPATH"] = os.pathsep.join([str(REPO / "src"), str(REPO / "tests" / "transports")])
    full_env.update(env or {})
    process = subprocess.Popen([sys.executable, *args], env=full_env, cwd=cwd,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 20
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return process
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                raise AssertionError(f"server did not listen: {process.stderr.read() if process.stderr else b''!r}") from None
            time.sleep(0.05)


def children(pid: int) -> list[int]:
    """The pids of the processes whose parent is `pid` (Linux /proc)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    fields = stat.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry))
    return found

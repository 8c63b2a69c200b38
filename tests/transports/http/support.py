"""Test support for Streamable HTTP: a real uvicorn server on 127.0.0.1, and a plain http.client client
that shows exactly what went over the wire (status, headers, JSON or SSE events)."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import http.client
import json
import os
import socket
import subprocess
import sys
import threading
import time
from functools import cache
from pathlib import Path
from typing import Any

import uvicorn

from shipcode_mcp import Context, Server
from shipcode_mcp.transports.http.serving import uvicorn_server
from support import REPO, validate_server_message, wait_for

MCP_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


class UvicornThread:
    """`app` served by uvicorn on 127.0.0.1 (an ephemeral port) in a thread of the test process."""

    def __init__(self, app: Any) -> None:
        config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="on",
                                timeout_graceful_shutdown=1)
        self.app = app
        self.server = uvicorn_server(config)  # uvicorn.Server, ending listen streams first when it stops
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

    def next_event(self, *, modern: bool = False) -> dict[str, Any] | None:
        """The next event of a stream still open (None at its end), comments skipped; `modern` validates
        it against the 2026-07-28 schema."""
        data: list[str] = []
        while True:
            line = self.response.readline()
            if not line:
                return None
            text = line.decode().rstrip("\r\n")
            if text == "":
                if data:
                    if modern:
                        message: dict[str, Any] = json.loads("\n".join(data))
                        validate_modern(message)
                        return message
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
        for sent in message if isinstance(message, list) else [message]:  # ids written by hand: call() numbers past them
            if isinstance(sent, dict) and type(sent.get("id")) is int:
                self.next_id = max(self.next_id, sent["id"])
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


MODERN_VERSION = "2026-07-28"
NAMED_BY = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri", "tasks/get": "taskId",
            "tasks/update": "taskId", "tasks/cancel": "taskId"}


def modern(method: str, params: dict[str, Any] | None = None, msg_id: int | str | None = 1, *,
           meta: dict[str, Any] | None = None, version: str = MODERN_VERSION) -> dict[str, Any]:
    """A 2026-07-28 request (a notification when `msg_id` is None): the per-request `_meta` of the era."""
    full_meta: dict[str, Any] = {"io.modelcontextprotocol/protocolVersion": version,
                                 "io.modelcontextprotocol/clientInfo": {"name": "tests", "version": "1"},
                                 "io.modelcontextprotocol/clientCapabilities": {}}
    full_meta.update(meta or {})
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": {**(params or {}), "_meta": full_meta}}
    if msg_id is not None:
        message["id"] = msg_id
    return message


def encode_header_value(value: str) -> str:
    """What a client sends for `value`: itself when it is plain visible ASCII, else the base64 sentinel."""
    plain = all(0x20 <= ord(c) <= 0x7E for c in value) and value == value.strip()
    if plain and not (value.startswith("=?base64?") and value.endswith("?=")):
        return value
    return "=?base64?" + base64.b64encode(value.encode()).decode() + "?="


def modern_headers(message: dict[str, Any], extra: dict[str, str] | None = None) -> dict[str, str]:
    """The headers a conforming client sends with `message`: the body's version, method and name mirrored."""
    headers = dict(MCP_HEADERS)
    params = message.get("params", {})
    headers["MCP-Protocol-Version"] = params["_meta"]["io.modelcontextprotocol/protocolVersion"]
    headers["Mcp-Method"] = message["method"]
    key = NAMED_BY.get(message["method"])
    if key is not None and key in params:
        headers["Mcp-Name"] = encode_header_value(params[key])
    headers.update(extra or {})
    return headers


def post_modern(port: int, message: dict[str, Any], extra: dict[str, str] | None = None, *, drop: tuple[str, ...] = (),
                stream: bool = False, path: str = "/mcp") -> Reply:
    """POST `message` with the headers of a conforming modern client, `extra` added and `drop` left out."""
    headers = {k: v for k, v in modern_headers(message, extra).items() if k.lower() not in {d.lower() for d in drop}}
    return request(port, "POST", message, headers, stream=stream, path=path)


@cache
def _modern_validators() -> dict[str, Any]:
    import jsonschema

    schema = json.loads(modern_schema_path().read_text())
    return {name: jsonschema.Draft202012Validator({"$ref": f"#/$defs/{name}", "$defs": schema["$defs"]})
            for name in ("JSONRPCResultResponse", "JSONRPCErrorResponse", "JSONRPCNotification", "ServerResult",
                         "ServerNotification")}


def modern_schema_path() -> Path:
    """The official 2026-07-28 schema: the repository's copy when there is one, else the shared spec."""
    copy = REPO / "tests" / "data" / "mcp-2026-07-28.schema.json"
    return copy if copy.exists() else REPO.parent / "shared" / "spec" / "mcp-2026-07-28.schema.json"


def validate_modern(message: dict[str, Any]) -> None:
    """A message of ours to a modern client must fit the official 2026-07-28 schema."""
    v = _modern_validators()
    if "error" in message:
        v["JSONRPCErrorResponse"].validate(message)
    elif "result" in message:
        v["JSONRPCResultResponse"].validate(message)
        v["ServerResult"].validate(message["result"])
    else:
        v["JSONRPCNotification"].validate(message)
        v["ServerNotification"].validate(message)  # the 2026-07-28 notifications name jsonrpc themselves


def modern_json(reply: Reply) -> dict[str, Any]:
    assert reply.content_type == "application/json", (reply.status, reply.headers, reply.body)
    message: dict[str, Any] = json.loads(reply.body)
    validate_modern(message)
    return message


def modern_events(reply: Reply) -> list[dict[str, Any]]:
    assert reply.content_type == "text/event-stream", (reply.status, reply.headers, reply.body)
    messages = [json.loads(data) for data in _event_data(reply.body.decode().replace("\r\n", "\n").split("\n"))]
    for message in messages:
        validate_modern(message)
    return messages


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def start_process(args: list[str], port: int, *, env: dict[str, str] | None = None,
                  cwd: str | os.PathLike[str] | None = None) -> subprocess.Popen[bytes]:
    """A server process; returns once `port` accepts connections."""
    full_env = dict(os.environ)
    full_env["PYTHONPATH"] = os.pathsep.join([str(REPO / "src"), str(REPO / "tests" / "transports" / "http")])
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


WAITING: set[str] = set()
"""The tags of the `wait` calls whose handler has started."""
CANCELLED: set[str] = set()
"""The tags of the `wait` calls that saw their request cancelled."""


def add_common_features(server: Server) -> None:
    """What both HTTP test servers offer: an inline echo, a tool that reports progress and logs on the
    way, one that waits to be cancelled, and a text resource."""

    @server.tool(inline=True)
    def echo(text: str) -> str:
        """Echo, answered on the event loop."""
        return text

    @server.tool
    def steps(ctx: Context, count: int) -> str:
        """Progress and a log message on the way."""
        for step in range(1, count + 1):
            ctx.report_progress(step, count)
        ctx.info("all steps done")
        return f"{count} steps"

    @server.tool
    def wait(ctx: Context, tag: str, progress: bool = False) -> str:
        """Waits until cancelled (after one progress notification, if asked); `tag` joins WAITING when it
        starts, and CANCELLED when it sees its request cancelled."""
        if progress:
            ctx.report_progress(1, 2)
        WAITING.add(tag)
        if ctx.wait_cancelled(30):
            CANCELLED.add(tag)
        ctx.check_cancelled()
        return "never cancelled"

    @server.resource("test://note", mime_type="text/plain")
    def note() -> str:
        return "a note"


async def drip(writers: list[asyncio.StreamWriter]) -> None:
    """A slow attacker's trickle: one byte on each open connection every half second, until cancelled."""
    while True:
        await asyncio.sleep(0.5)  # the attack's pace, not a synchronisation
        for writer in writers:
            if not writer.is_closing():
                with contextlib.suppress(OSError):
                    writer.write(b"x")

"""Scale-out of MCP 2026-07-28 over Streamable HTTP: three stateless server processes that share a
request-state key, behind a round-robin proxy, serve one multi round-trip request whose rounds land
on different processes; a tampered state, and a state taken to a process with another key, are refused.

Everything is real: the servers are separate processes (tests/transports/http/mrtr_server.py), the proxy
is a TCP proxy on an asyncio loop that sends each new connection to the next backend, and the client
posts plain HTTP (http.client) with the modern headers, one connection per request, so consecutive requests
reach different processes. Every tool answers its pid, which proves where each request ran.
"""

from __future__ import annotations

import asyncio
import base64
import http.client
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from support import REPO, terminate, validate_server_message

SERVER = Path(__file__).resolve().parent / "mrtr_server.py"
MODERN_VERSION = "2026-07-28"
LEGACY_VERSION = "2025-06-18"
INVALID_PARAMS = -32602
CAPABILITIES: dict[str, Any] = {"elicitation": {}}
BACKENDS = 3


# -- the deployment ------------------------------------------------------------------------------
class Backend:
    """One server process; its port is the first line it prints, once its socket listens."""

    def __init__(self, key_file: Path) -> None:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO / "tests")])}
        self.log = key_file.parent / f"server-{len(list(key_file.parent.glob('server-*.log')))}.log"
        with open(self.log, "wb") as log:  # a file, not a pipe: nobody reads stderr while the server runs
            self.process = subprocess.Popen([sys.executable, str(SERVER), str(key_file)], env=env, cwd=REPO,
                                            stdout=subprocess.PIPE, stderr=log)
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line.strip():
            self.process.kill()
            self.process.wait(15)
            raise AssertionError(f"mrtr_server.py did not start: {self.log.read_text(errors='replace')}")
        self.port = int(line)
        self.pid = self.process.pid

    def stop(self) -> None:
        terminate(self.process)
        if self.process.stdout is not None:
            self.process.stdout.close()


class RoundRobinProxy:
    """A TCP proxy on its own event loop (a thread): each new connection goes to the next backend.

    `routed` records the backend port of every connection, in order. The bytes are passed through
    untouched, so what the servers see is exactly what the client sent.
    """

    def __init__(self, ports: list[int]) -> None:
        self.ports = ports
        self.routed: list[int] = []
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.server = asyncio.run_coroutine_threadsafe(
            asyncio.start_server(self._connection, "127.0.0.1", 0), self.loop).result(15)
        self.port: int = self.server.sockets[0].getsockname()[1]

    async def _connection(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        port = self.ports[len(self.routed) % len(self.ports)]
        self.routed.append(port)
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            client_writer.close()
            return
        await asyncio.gather(_pipe(client_reader, upstream_writer), _pipe(upstream_reader, client_writer))

    def stop(self) -> None:
        async def close() -> None:
            self.server.close()
            await self.server.wait_closed()

        asyncio.run_coroutine_threadsafe(close(), self.loop).result(15)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(15)
        self.loop.close()


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Copy until one side ends, then close the other: a `Connection: close` reply ends both directions."""
    try:
        while data := await reader.read(1 << 16):
            writer.write(data)
            await writer.drain()
    except OSError:
        pass
    finally:
        writer.close()


@pytest.fixture
def key_file(tmp_path: Path) -> Path:
    path = tmp_path / "state.key"
    path.write_text(os.urandom(32).hex() + "\n")
    return path


@pytest.fixture
def deployment(key_file: Path) -> Iterator[tuple[list[Backend], RoundRobinProxy]]:
    backends: list[Backend] = []
    proxy: RoundRobinProxy | None = None
    try:
        for _ in range(BACKENDS):
            backends.append(Backend(key_file))
        proxy = RoundRobinProxy([backend.port for backend in backends])
        yield backends, proxy
    finally:
        if proxy is not None:
            proxy.stop()
        for backend in backends:
            backend.stop()


# -- the client ------------------------------------------------------------------------------------
def post(port: int, message: dict[str, Any], headers: dict[str, str]) -> tuple[int, dict[str, Any]]:
    """One POST on a connection of its own (closed after the reply); the JSON-RPC response, from JSON or SSE."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        connection.request("POST", "/mcp", body=json.dumps(message).encode(), headers={
            "Content-Type": "application/json", "Accept": "application/json, text/event-stream", "Connection": "close",
            **headers})
        reply = connection.getresponse()
        body = reply.read().decode()
        kind = (reply.getheader("Content-Type") or "").split(";")[0]
    finally:
        connection.close()
    if kind == "application/json":
        response: dict[str, Any] = json.loads(body)
        validate_server_message(response)  # against the schema of its era
        return reply.status, response
    assert kind == "text/event-stream", (reply.status, reply.getheaders(), body)
    for event in body.replace("\r\n", "\n").split("\n\n"):
        data = "\n".join(line[5:].lstrip(" ") for line in event.split("\n") if line.startswith("data:"))
        if data:
            candidate = json.loads(data)
            validate_server_message(candidate)
            if candidate.get("id") == message["id"] and "method" not in candidate:
                return reply.status, candidate
    raise AssertionError(f"no response to {message['id']} in the stream: {body!r:.500}")


def modern_call(port: int, request_id: int, name: str, arguments: dict[str, Any],
                extra: dict[str, Any] | None = None) -> tuple[int, dict[str, Any]]:
    """A 2026-07-28 tools/call: version and capabilities in `_meta`, mirrored by the routing headers."""
    params: dict[str, Any] = {"name": name, "arguments": arguments, **(extra or {}), "_meta": {
        "io.modelcontextprotocol/protocolVersion": MODERN_VERSION,
        "io.modelcontextprotocol/clientCapabilities": CAPABILITIES,
        "io.modelcontextprotocol/clientInfo": {"name": "scale-out-test", "version": "1"}}}
    message = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
    return post(port, message, {"MCP-Protocol-Version": MODERN_VERSION, "Mcp-Method": "tools/call", "Mcp-Name": name})


def legacy_whoami(port: int, request_id: int) -> int:
    """A stateless 2025-06-18 tools/call (no initialize needed on a stateless server): the pid that ran it."""
    message = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": {"name": "whoami", "arguments": {}}}
    status, response = post(port, message, {"MCP-Protocol-Version": LEGACY_VERSION})
    assert status == 200, response
    pid: int = response["result"]["structuredContent"]["result"]
    return pid


def asked(result: dict[str, Any]) -> str:
    """The key of the one input request of an `input_required` result."""
    assert result["resultType"] == "input_required", result
    ((key, request),) = result["inputRequests"].items()
    assert request["method"] == "elicitation/create", request
    return str(key)


def served_by(backends: list[Backend], proxy: RoundRobinProxy) -> int:
    """The pid of the process the proxy sent the last request to."""
    return next(backend.pid for backend in backends if backend.port == proxy.routed[-1])


def accept(content: dict[str, Any]) -> dict[str, Any]:
    return {"action": "accept", "content": content}


def tampered(state: str) -> str:
    """The state with its signed body changed (the first answer rewritten), its signature kept."""
    body_text, _, mac = state.partition(".")
    body = base64.urlsafe_b64decode(body_text + "=" * (-len(body_text) % 4))
    assert b"Ada" in body, body
    forged = base64.urlsafe_b64encode(body.replace(b"Ada", b"Eve")).rstrip(b"=").decode()
    return f"{forged}.{mac}"


def first_two_rounds(deployment: tuple[list[Backend], RoundRobinProxy],
                     greeting: str) -> tuple[list[int], dict[str, Any], str]:
    """Rounds 1 and 2 of `two_questions` through the proxy: the pids that asked, the arguments, and the
    requestState of round 2 (it carries the answer of round 1)."""
    backends, proxy = deployment
    arguments = {"greeting": greeting}
    status, response = modern_call(proxy.port, 1, "two_questions", arguments)
    assert status == 200, response
    first = response["result"]
    key_1, pid_1 = asked(first), served_by(backends, proxy)
    status, response = modern_call(proxy.port, 2, "two_questions", arguments, {
        "inputResponses": {key_1: accept({"name": "Ada"})}, "requestState": first["requestState"]})
    assert status == 200, response
    second = response["result"]
    key_2, pid_2 = asked(second), served_by(backends, proxy)
    assert key_2 != key_1
    state: str = second["requestState"]
    return [pid_1, pid_2], {"arguments": arguments, "key": key_2}, state


# -- the tests -------------------------------------------------------------------------------------
def test_the_proxy_sends_consecutive_requests_to_different_processes(
        deployment: tuple[list[Backend], RoundRobinProxy]) -> None:
    backends, proxy = deployment
    pids = [legacy_whoami(proxy.port, number) for number in range(2 * BACKENDS)]
    assert proxy.routed == [backend.port for backend in backends] * 2  # one connection per request, in turn
    assert pids == [backend.pid for backend in backends] * 2  # and each ran where it was routed


def test_a_multi_round_trip_request_resumes_on_other_processes(deployment: tuple[list[Backend], RoundRobinProxy]) -> None:
    backends, proxy = deployment
    pids, round_2, state = first_two_rounds(deployment, "Hello")
    status, response = modern_call(proxy.port, 3, "two_questions", round_2["arguments"], {
        "inputResponses": {round_2["key"]: accept({"colour": "green"})}, "requestState": state})
    assert status == 200, response
    result = response["result"]
    assert result["resultType"] == "complete", result
    assert result["structuredContent"]["text"] == "Hello, Ada in green"  # the answer of round 1 came back in the state
    finished = result["structuredContent"]["pid"]
    rounds = [*pids, finished]
    assert rounds == [backend.pid for backend in backends]  # three rounds, three processes, in the proxy's order
    assert rounds[2] not in rounds[:2]  # the round with the state ran where the state was not issued


def test_a_tampered_request_state_is_refused(deployment: tuple[list[Backend], RoundRobinProxy]) -> None:
    _, proxy = deployment
    _, round_2, state = first_two_rounds(deployment, "Hello")
    _, response = modern_call(proxy.port, 3, "two_questions", round_2["arguments"], {
        "inputResponses": {round_2["key"]: accept({"colour": "green"})}, "requestState": tampered(state)})
    assert response["error"]["code"] == INVALID_PARAMS, response
    assert "requestState" in response["error"]["message"]
    assert "result" not in response


def test_a_state_is_bound_to_its_request(deployment: tuple[list[Backend], RoundRobinProxy]) -> None:
    """A genuine state replayed on another request (other arguments) is refused, whichever process gets it."""
    _, proxy = deployment
    _, round_2, state = first_two_rounds(deployment, "Hello")
    _, response = modern_call(proxy.port, 3, "two_questions", {"greeting": "Goodbye"}, {
        "inputResponses": {round_2["key"]: accept({"colour": "green"})}, "requestState": state})
    assert response["error"]["code"] == INVALID_PARAMS, response
    assert "another request" in response["error"]["message"]


def test_a_process_with_another_key_refuses_the_state(deployment: tuple[list[Backend], RoundRobinProxy],
                                                       tmp_path: Path) -> None:
    """The shared key is what makes a state good on another process: the same retry, sent to a process
    with its own key, is refused; sent to one with the shared key, it completes."""
    backends, _ = deployment
    other_key = tmp_path / "other.key"
    other_key.write_text(os.urandom(32).hex() + "\n")
    stranger = Backend(other_key)
    try:
        _, round_2, state = first_two_rounds(deployment, "Hello")
        retry = {"inputResponses": {round_2["key"]: accept({"colour": "green"})}, "requestState": state}
        _, response = modern_call(stranger.port, 3, "two_questions", round_2["arguments"], retry)
        assert response["error"]["code"] == INVALID_PARAMS, response
        assert "signature" in response["error"]["message"]
        status, response = modern_call(backends[0].port, 4, "two_questions", round_2["arguments"], retry)
        assert status == 200 and response["result"]["structuredContent"]["text"] == "Hello, Ada in green", response
    finally:
        stranger.stop()

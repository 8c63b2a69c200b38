"""Streamable HTTP through a real uvicorn server on 127.0.0.1: sessions, headers, JSON and SSE answers,
the GET stream, DELETE, DNS-rebinding checks, stateless mode with several workers, a real SDK client."""

from __future__ import annotations

import importlib.util
import json
import signal
import threading
import time
from collections.abc import Iterator
from typing import Any

import anyio
import pytest

from shipcode_mcp import Context, Server, ToolError
from shipcode_mcp.era import TASKS_EXTENSION as TASKS
from shipcode_mcp.workspace import command_sandbox
from support import REPO, wait_for
from transports.http.support import (
    MCP_HEADERS,
    WAITING,
    McpHttpClient,
    UvicornThread,
    add_common_features,
    children,
    free_port,
    initialize,
    modern,
    post_modern,
    request,
    start_process,
)


def build_server() -> Server:
    server = Server("http-test", "1.0.0", logging=True, list_changed=True, subscribe=True)
    add_common_features(server)

    @server.tool
    def later(text: str) -> str:
        """Echo, answered from a worker thread."""
        return text.upper()

    @server.tool(inline=True)
    def chatty(ctx: Context) -> str:
        """An inline tool that logs: its answer becomes a stream."""
        ctx.info("said on the loop")
        return "ok"

    @server.tool
    def ask(ctx: Context, question: str) -> str:
        """Asks the client's model."""
        try:
            answer = ctx.sample(question, max_tokens=10, timeout=10)
        except Exception as err:  # ClientRequestError: shown to the model
            raise ToolError(f"sampling failed: {err}") from err
        return f"model says {answer['content']['text']}"

    return server


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[Server, int]]:
    server = build_server()
    uvicorn_thread = UvicornThread(server.http_app(session_idle_timeout=0, keepalive=0.5))
    yield server, uvicorn_thread.port
    uvicorn_thread.stop()


@pytest.fixture
def port(served: tuple[Server, int]) -> int:
    return served[1]


# -- sessions -----------------------------------------------------------------------------------------
def test_initialize_issues_a_session_id_and_answers_in_json(port: int) -> None:
    reply = request(port, "POST", initialize(), MCP_HEADERS)
    assert reply.status == 200 and reply.content_type == "application/json"
    session_id = reply.headers["mcp-session-id"]
    assert len(session_id) >= 32 and all(0x21 <= ord(c) <= 0x7E for c in session_id)
    assert reply.body == (b'{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18","capabilities":'
                          b'{"tools":{"listChanged":true},"resources":{"subscribe":true,"listChanged":true},"logging":{}},'
                          b'"serverInfo":{"name":"http-test","version":"1.0.0"}}}\n')
    other = request(port, "POST", initialize(), MCP_HEADERS).headers["mcp-session-id"]
    assert other != session_id


def test_notifications_and_responses_get_202_without_a_body(port: int) -> None:
    client = McpHttpClient(port)
    for message in ({"jsonrpc": "2.0", "method": "notifications/whatever"},
                    {"jsonrpc": "2.0", "id": 12345, "result": {}}):
        reply = client.post(message)
        assert (reply.status, reply.body) == (202, b"")


def test_requests_need_the_session_id_and_a_known_one(port: int) -> None:
    client = McpHttpClient(port)
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    missing = request(port, "POST", ping, MCP_HEADERS)
    assert missing.status == 400 and "Mcp-Session-Id" in missing.json()["error"]["message"]
    unknown = request(port, "POST", ping, {**MCP_HEADERS, "Mcp-Session-Id": "no-such-session"})
    assert unknown.status == 404 and unknown.json()["id"] is None
    assert client.post(ping).json() == {"jsonrpc": "2.0", "id": 1, "result": {}}


def test_the_protocol_version_header_is_checked(port: int) -> None:
    client = McpHttpClient(port)
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    assert client.post(ping, {"MCP-Protocol-Version": "2025-03-26"}).status == 400
    assert client.post(ping, {"MCP-Protocol-Version": "bogus"}).status == 400
    headers = {k: v for k, v in client.headers().items() if k != "MCP-Protocol-Version"}
    assert request(port, "POST", ping, headers).status == 200  # absent: allowed, as the spec's fallback says


def test_delete_ends_the_session(port: int) -> None:
    client = McpHttpClient(port)
    assert client.delete().status == 204
    assert client.call("ping").status == 404
    assert client.delete().status == 404
    assert client.get().status == 404


def test_a_second_initialize_in_a_session_gets_the_same_answer(port: int) -> None:
    client = McpHttpClient(port)
    again = client.post(initialize(msg_id=9))
    assert again.status == 200 and again.headers["mcp-session-id"] == client.session_id
    assert again.json()["result"] == client.initialize_reply["result"]


# -- bad requests ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(("raw", "status", "code"), [
    (b"{not json", 400, -32700),
    (b'[{"jsonrpc":"2.0","id":1,"method":"ping"}]', 400, -32600),
    (b'{"jsonrpc":"2.0","id":null,"method":"ping"}', 400, -32600),
    (b'{"jsonrpc":"1.0","id":1,"method":"ping"}', 400, -32600),
    (b'{"jsonrpc":"2.0","method":"notifications/x","params":[]}', 400, -32600),
    (b'{"jsonrpc":"2.0","id":1}', 400, -32600),
    (b'"ping"', 400, -32600),
])
def test_bodies_that_are_not_one_message_get_400(port: int, raw: bytes, status: int, code: int) -> None:
    client = McpHttpClient(port)
    reply = request(port, "POST", raw=raw, headers=client.headers())
    assert reply.status == status and reply.json()["error"]["code"] == code


def test_content_type_accept_size_and_method_are_checked(port: int) -> None:
    client = McpHttpClient(port)
    ping = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()
    assert request(port, "POST", raw=ping, headers=client.headers({"Content-Type": "text/plain"})).status == 415
    assert request(port, "POST", raw=ping, headers=client.headers({"Accept": "text/html"})).status == 406
    json_only = request(port, "POST", raw=ping, headers=client.headers({"Accept": "application/json"}))
    assert json_only.status == 200 and json_only.content_type == "application/json"
    put = request(port, "PUT", raw=ping, headers=client.headers())
    assert put.status == 405 and put.headers["allow"] == "GET, POST, DELETE"
    assert client.get({"Accept": "application/json"}).status == 406


def test_a_body_over_the_limit_gets_413() -> None:
    uvicorn_thread = UvicornThread(build_server().http_app(max_body_bytes=1000))
    try:
        big = {"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"pad": "x" * 2000}}
        assert request(uvicorn_thread.port, "POST", big, MCP_HEADERS).status == 413
    finally:
        uvicorn_thread.stop()


# -- DNS rebinding --------------------------------------------------------------------------------------
@pytest.mark.parametrize(("headers", "status"), [
    ({"Origin": "http://evil.example.com"}, 403),
    ({"Host": "evil.example.com", "Origin": "http://evil.example.com"}, 403),
    ({"Host": "evil.example.com"}, 403),
    ({"Origin": "null"}, 403),
    ({"Origin": "http://localhost:3000"}, 200),
    ({"Origin": "http://127.0.0.1:9"}, 200),
    ({"Origin": "http://[::1]:80", "Host": "[::1]:8080"}, 200),
    ({"Host": "localhost"}, 200),
    ({"Host": "127.5.6.7:80"}, 200),
    ({"Host": "[::1]"}, 200),
    ({"Origin": "https://localhost"}, 200),
    # What a lenient reading lets through: a loopback name in front, the attacker's behind.
    ({"Host": "127.0.0.1:8080@evil.example.com"}, 403),
    ({"Host": "[::1]evil.example.com"}, 403),
    ({"Host": "127.0.0.1.evil.example.com"}, 403),
    ({"Host": "localhost.evil.example.com"}, 403),
    ({"Host": "localhost:80:80"}, 403),
    ({"Origin": "http://localhost:1@evil.example.com"}, 403),
    ({"Origin": "http://127.0.0.1.evil.example.com"}, 403),
    ({"Origin": "http://[::1]evil.example.com"}, 403),
    ({"Origin": "file://localhost"}, 403),
])
def test_origin_and_host_are_checked_against_dns_rebinding(port: int, headers: dict[str, str], status: int) -> None:
    reply = request(port, "POST", initialize(), {**MCP_HEADERS, **headers})
    assert reply.status == status
    if status == 403:
        assert "mcp-session-id" not in reply.headers and reply.json()["error"]["code"] == -32600


def test_allowed_origins_and_hosts_can_be_configured() -> None:
    app = build_server().http_app(allowed_origins=["https://app.example.com"], allowed_hosts=["mcp.example.com"])
    uvicorn_thread = UvicornThread(app)
    try:
        def status(headers: dict[str, str]) -> int:
            return request(uvicorn_thread.port, "POST", initialize(), {**MCP_HEADERS, **headers}).status

        assert status({"Host": "mcp.example.com", "Origin": "https://app.example.com"}) == 200
        assert status({"Host": "mcp.example.com:443"}) == 200
        assert status({"Host": "mcp.example.com", "Origin": "https://other.example.com"}) == 403
        assert status({"Host": "evil.example"}) == 403
        # On loopback the configured names widen the default: a rebinding attack never uses a loopback name.
        assert status({"Host": "127.0.0.1"}) == 200
        assert status({"Host": "localhost", "Origin": "http://localhost:3000"}) == 200
    finally:
        uvicorn_thread.stop()


# -- answers: JSON or SSE -------------------------------------------------------------------------------
def test_quick_answers_are_json_inline_or_from_a_worker(port: int) -> None:
    client = McpHttpClient(port)
    for tool, text in (("echo", "hi"), ("later", "HI")):
        reply = client.call("tools/call", {"name": tool, "arguments": {"text": "hi"}})
        assert reply.status == 200 and reply.content_type == "application/json"
        assert reply.json()["result"]["content"] == [{"type": "text", "text": text}]


def test_progress_and_logs_turn_the_answer_into_an_sse_stream(port: int) -> None:
    client = McpHttpClient(port)
    reply = client.call("tools/call", {"name": "steps", "arguments": {"count": 3}, "_meta": {"progressToken": "tok"}})
    assert reply.status == 200 and reply.headers["cache-control"].startswith("no-cache")
    assert reply.headers["mcp-session-id"] == client.session_id
    events = reply.events()
    assert [e.get("method", "response") for e in events] == ["notifications/progress"] * 3 + ["notifications/message",
                                                                                            "response"]
    assert [e["params"]["progress"] for e in events[:3]] == [1, 2, 3]
    assert all(e["params"]["progressToken"] == "tok" for e in events[:3])
    assert events[-1]["id"] == client.next_id and events[-1]["result"]["content"][0]["text"] == "3 steps"


def test_an_inline_handler_that_logs_is_streamed_too(port: int) -> None:
    client = McpHttpClient(port)
    events = client.call("tools/call", {"name": "chatty"}).events()
    assert [e.get("method", "response") for e in events] == ["notifications/message", "response"]


def test_a_client_that_takes_only_json_gets_json_and_the_rest_on_its_get_stream(port: int) -> None:
    client = McpHttpClient(port)
    stream = client.get()
    assert stream.status == 200
    reply = client.call("tools/call", {"name": "steps", "arguments": {"count": 1}, "_meta": {"progressToken": 1}},
                        extra={"Accept": "application/json"})
    assert reply.content_type == "application/json" and reply.json()["result"]["content"][0]["text"] == "1 steps"
    first, second = stream.next_event(), stream.next_event()
    assert first is not None and second is not None
    assert (first["method"], second["method"]) == ("notifications/progress", "notifications/message")
    stream.response.close()


def test_a_request_to_the_client_travels_on_the_post_stream_and_the_answer_comes_back(port: int) -> None:
    client = McpHttpClient(port, capabilities={"sampling": {}})
    stream = client.call("tools/call", {"name": "ask", "arguments": {"question": "2+2?"}}, stream=True)
    assert stream.content_type == "text/event-stream"
    asked = stream.next_event()
    assert asked is not None and asked["method"] == "sampling/createMessage"
    assert asked["params"] == {"messages": [{"role": "user", "content": {"type": "text", "text": "2+2?"}}], "maxTokens": 10}
    answer = {"jsonrpc": "2.0", "id": asked["id"],
              "result": {"role": "assistant", "content": {"type": "text", "text": "4"}, "model": "m"}}
    assert client.post(answer).status == 202
    done = stream.next_event()
    assert done is not None and done["result"]["content"] == [{"type": "text", "text": "model says 4"}]
    assert stream.next_event() is None  # the stream ends with the response


def test_without_the_capability_the_handler_is_told_at_once(port: int) -> None:
    client = McpHttpClient(port)
    reply = client.call("tools/call", {"name": "ask", "arguments": {"question": "?"}})
    result = reply.json()["result"]
    assert result["isError"] is True and "does not support sampling/createMessage" in result["content"][0]["text"]


def call_wait_tool(client: McpHttpClient) -> tuple[threading.Thread, list[Any]]:
    """POST a call of `wait` on a thread and return once its handler waits: the thread, and where its reply will be."""
    outcome: list[Any] = []
    assert client.session_id is not None
    call = {"name": "wait", "arguments": {"tag": client.session_id}}
    waiting = threading.Thread(target=lambda: outcome.append(client.call("tools/call", call)))
    waiting.start()
    wait_for(lambda: client.session_id in WAITING, 10, "the wait tool to start")
    return waiting, outcome


def test_an_id_still_in_progress_is_refused(port: int) -> None:
    client = McpHttpClient(port)
    waiting, _outcome = call_wait_tool(client)
    again = client.post({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "x"}}})
    assert again.status == 200 and again.json()["error"]["code"] == -32600
    client.post({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}})
    waiting.join(10)
    assert not waiting.is_alive()


def test_a_failed_initialize_hands_out_no_session(port: int) -> None:
    reply = request(port, "POST", {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"capabilities": []}},
                    MCP_HEADERS)
    assert reply.status == 200 and reply.json()["error"]["code"] == -32602
    assert "mcp-session-id" not in reply.headers


def test_cancellation_ends_the_exchange_without_a_response(port: int) -> None:
    client = McpHttpClient(port)
    waiting, outcome = call_wait_tool(client)
    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1, "reason": "enough"}}
    assert client.post(cancel).status == 202
    waiting.join(10)
    assert outcome and outcome[0].status == 200 and outcome[0].events() == []


def test_deleting_a_session_ends_its_open_exchanges(port: int) -> None:
    client = McpHttpClient(port)
    waiting, outcome = call_wait_tool(client)
    assert client.delete().status == 204
    waiting.join(10)
    assert outcome and outcome[0].status == 404


# -- the GET stream -------------------------------------------------------------------------------------
def test_the_get_stream_carries_list_changes_and_resource_updates(served: tuple[Server, int]) -> None:
    server, port = served
    client = McpHttpClient(port)
    assert client.call("resources/subscribe", {"uri": "test://note"}).json()["result"] == {}
    server.tool(lambda: "x", name="added_before_the_stream")  # kept until a stream opens
    stream = client.get()
    assert stream.status == 200 and stream.content_type == "text/event-stream"
    assert stream.headers["mcp-session-id"] == client.session_id
    first = stream.next_event()
    assert first == {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
    server.resource_updated("test://note")
    assert stream.next_event() == {"jsonrpc": "2.0", "method": "notifications/resources/updated",
                                   "params": {"uri": "test://note"}}
    assert client.get().status == 409  # one stream per session, so no message goes out twice
    server.remove_tool("added_before_the_stream")
    assert stream.next_event() == {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
    stream.response.close()


def test_the_get_stream_ends_with_the_session_and_keeps_itself_alive(port: int) -> None:
    client = McpHttpClient(port)
    stream = client.get()
    started = time.monotonic()
    while b"keep-alive" not in (line := stream.response.readline()):
        assert line, "the stream ended"
    assert time.monotonic() - started < 5
    assert client.delete().status == 204
    assert stream.next_event() is None


# -- stateless ------------------------------------------------------------------------------------------
def test_stateless_mode_serves_every_post_alone() -> None:
    uvicorn_thread = UvicornThread(build_server().http_app(stateless=True))
    port = uvicorn_thread.port
    try:
        init = request(port, "POST", initialize(), MCP_HEADERS)
        assert init.status == 200 and "mcp-session-id" not in init.headers
        call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "later", "arguments": {"text": "a"}}}
        assert request(port, "POST", call, MCP_HEADERS).json()["result"]["content"][0]["text"] == "A"
        streamed = {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                    "params": {"name": "steps", "arguments": {"count": 2}, "_meta": {"progressToken": 1}}}
        assert len(request(port, "POST", streamed, MCP_HEADERS).events()) == 4
        asking = {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "ask", "arguments": {"question": "?"}}}
        text = request(port, "POST", asking, MCP_HEADERS).json()["result"]["content"][0]["text"]
        assert "stateless" in text
        assert request(port, "POST", {"jsonrpc": "2.0", "method": "notifications/initialized"}, MCP_HEADERS).status == 202
        assert request(port, "GET", headers={"Accept": "text/event-stream"}).status == 405
        deleted = request(port, "DELETE", headers={})
        assert deleted.status == 405 and deleted.headers["allow"] == "POST"
        ping = {"jsonrpc": "2.0", "id": 5, "method": "ping"}
        assert request(port, "POST", ping, {**MCP_HEADERS, "MCP-Protocol-Version": "1999-01-01"}).status == 400
    finally:
        uvicorn_thread.stop()


def test_two_stateless_workers_serve_one_deployment() -> None:
    port = free_port()
    process = start_process(["-m", "uvicorn", "worker_app:app", "--host", "127.0.0.1", "--port", str(port),
                             "--workers", "2", "--log-level", "warning"], port)
    try:
        pids: list[int] = []

        def call(hold: float) -> None:
            message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "whoami", "arguments": {"hold": hold}}}
            reply = request(port, "POST", message, MCP_HEADERS)
            pids.append(reply.json()["result"]["structuredContent"]["result"])

        def both_answered() -> bool:
            """While one call holds its worker's event loop, only the other worker can take the calls sent meanwhile."""
            first = threading.Thread(target=call, args=(1.0,))
            first.start()
            while len(set(pids)) < 2 and first.is_alive():
                call(0.0)
                first.join(0.05)  # only paces the calls: any call sent while the first one holds will do
            first.join(10)
            return len(set(pids)) == 2

        wait_for(both_answered, 60, "a call answered by each worker")  # both may take a while to accept
        assert set(pids) <= set(children(process.pid))
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(15)


def test_the_command_line_runs_stateless_workers(tmp_path: Any) -> None:
    (tmp_path / "hello.txt").write_text("hello\n")
    port = free_port()
    process = start_process(["-m", "shipcode_mcp", "--http", f"127.0.0.1:{port}", "--stateless", "--workers", "2",
                             str(tmp_path)], port)
    try:
        init = request(port, "POST", initialize(), MCP_HEADERS)
        assert init.status == 200 and "mcp-session-id" not in init.headers
        assert init.json()["result"]["capabilities"] == {"tools": {}, "resources": {}}
        for number in range(6):
            call = {"jsonrpc": "2.0", "id": number, "method": "tools/call", "params": {"name": "list_files", "arguments": {}}}
            result = request(port, "POST", call, MCP_HEADERS).json()["result"]
            assert result["isError"] is False and "hello.txt" in json.dumps(result)
        assert request(port, "GET", headers={"Accept": "text/event-stream"}).status == 405
        assert request(port, "POST", initialize(), {**MCP_HEADERS, "Origin": "http://evil.example.com"}).status == 403
        # Modern (2026-07-28) clients: no handshake, any worker serves any request.
        discovered = post_modern(port, modern("server/discover")).json()["result"]
        assert discovered["supportedVersions"] == ["2026-07-28", "2025-06-18"]
        assert "extensions" not in discovered["capabilities"]  # a task is one worker's: none is offered (see below)
        for number in range(6):
            call = modern("tools/call", {"name": "read_file", "arguments": {"path": "hello.txt"}}, number)
            result = post_modern(port, call).json()["result"]
            assert result["resultType"] == "complete" and result["structuredContent"]["text"] == "hello"
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(15) == 0


@pytest.mark.skipif(command_sandbox.unavailable_reason() is not None, reason="run_command needs its sandbox")
@pytest.mark.parametrize("workers", [1, 2])
def test_run_command_is_a_task_over_http_in_one_process_and_not_across_workers(tmp_path: Any, workers: int) -> None:
    """A task lives in the process that made it: one process offers the tasks extension and serves a run's polls
    from other POSTs; several workers would send a poll to a process without the task, so they offer none."""
    port = free_port()
    process = start_process(["-m", "shipcode_mcp", "--http", f"127.0.0.1:{port}", "--stateless", "--workers",
                             str(workers), "--allow-run", str(tmp_path)], port)
    declared: dict[str, Any] = {"io.modelcontextprotocol/clientCapabilities": {"extensions": {TASKS: {}}}}
    try:
        extensions = post_modern(port, modern("server/discover")).json()["result"]["capabilities"].get("extensions")
        call = modern("tools/call", {"name": "run_command", "arguments": {"command": "sleep 0.3; echo ran"}}, meta=declared)
        first = post_modern(port, call).json()["result"]
        if workers > 1:
            assert extensions is None and first["resultType"] == "complete" and "ran" in first["structuredContent"]["stdout"]
            return
        assert extensions == {TASKS: {}} and first["resultType"] == "task"
        for number in range(200):
            got = post_modern(port, modern("tasks/get", {"taskId": first["taskId"]}, number, meta=declared)).json()["result"]
            if got["status"] != "working":
                break
            time.sleep(0.05)
        assert got["status"] == "completed" and got["result"]["structuredContent"]["stdout"] == "ran\n"
        missing = post_modern(port, modern("tasks/get", {"taskId": "nothing"}, 7, meta=declared))
        assert missing.json()["error"]["code"] == -32602
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(15) == 0


def test_the_command_line_serves_sessions_over_http(tmp_path: Any) -> None:
    port = free_port()
    process = start_process(["-m", "shipcode_mcp", "--http", str(port), str(tmp_path)], port)
    try:
        client = McpHttpClient(port)
        assert client.session_id is not None
        assert client.initialize_reply["result"]["capabilities"] == {"tools": {}, "resources": {}}
        tools = client.call("tools/list").json()["result"]["tools"]
        assert "read_file" in {tool["name"] for tool in tools}
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(15) == 0


@pytest.mark.parametrize("args", [["--stateless"], ["--http", "8000", "--workers", "2"], ["--http", "nope"],
                                  ["--http", "70000"], ["--http", "8000", "--workers", "0"],
                                  ["--http", "8000", "--stateless", "--workers", "-1"]])
def test_the_command_line_refuses_inconsistent_http_flags(args: list[str]) -> None:
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "shipcode_mcp", *args], capture_output=True, text=True, timeout=30,
                          env={"PYTHONPATH": str(REPO / "src")})
    assert done.returncode == 2 and done.stderr


# -- a real client: the official Python SDK over HTTP, against the conformance example ---------------------
def conformance_example() -> Server:
    """A fresh instance of examples/conformance_server.py's server (the module, loaded anew)."""
    spec = importlib.util.spec_from_file_location("conformance_server", REPO / "examples" / "conformance_server.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    server: Server = module.server
    return server


def test_the_official_python_sdk_client_uses_every_feature_over_http() -> None:
    from mcp import ClientSession, types
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared.exceptions import MCPDeprecationWarning

    uvicorn_thread = UvicornThread(conformance_example().http_app())
    reported: list[float] = []
    logs: list[Any] = []

    async def sampling(context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        return types.CreateMessageResult(role="assistant", content=types.TextContent(type="text", text="fine"), model="m")

    async def elicitation(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        return types.ElicitResult(action="accept", content={"username": "ann", "email": "ann@example.com"})

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        reported.append(progress)

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        logs.append(params.data)

    async def main() -> None:
        url = f"http://127.0.0.1:{uvicorn_thread.port}/mcp"
        async with streamable_http_client(url) as (read, write), ClientSession(
                read, write, sampling_callback=sampling, elicitation_callback=elicitation, logging_callback=on_log) as session:
            result = await session.initialize()
            assert result.protocol_version == "2025-06-18" and result.capabilities.completions is not None
            assert len((await session.list_tools()).tools) == 32
            called = await session.call_tool("test_tool_with_progress", {}, progress_callback=on_progress)
            assert called.is_error is False
            sampled = await session.call_tool("test_sampling", {"prompt": "hi"})
            assert sampled.content[0].text == "LLM response: fine"  # type: ignore[union-attr]
            elicited = await session.call_tool("test_elicitation", {"message": "who?"})
            assert "ann@example.com" in elicited.content[0].text  # type: ignore[union-attr]
            with pytest.warns(MCPDeprecationWarning, match="logging capability is deprecated"):  # legacy: it is ours to test
                await session.set_logging_level("debug")
            await session.call_tool("test_tool_with_logging", {})
            read_back = await session.read_resource("test://template/42/data")
            assert json.loads(read_back.contents[0].text)["id"] == "42"  # type: ignore[union-attr]
            prompt = await session.get_prompt("test_prompt_with_arguments", {"arg1": "a", "arg2": "b"})
            assert "arg1='a'" in prompt.messages[0].content.text  # type: ignore[union-attr]

    try:
        anyio.run(main)
    finally:
        uvicorn_thread.stop()
    assert reported == [0, 50, 100]
    assert logs == ["Tool execution started", "Tool processing data", "Tool execution completed"]



@pytest.mark.parametrize("era", ["2025-06-18", "2026-07-28"])
def test_the_official_python_sdk_client_answers_questions_asked_together_and_by_name_in_both_eras(era: str) -> None:
    """The conformance example's tools that ask the client several things at once (`ctx.request_all`) and under
    keys of their own (`key=`): over 2025-06-18 as requests on the session, one after another; over 2026-07-28
    as input_required rounds, all three questions in one round, which the SDK answers and retries."""
    from mcp import Client, ClientSession, types
    from mcp.client.streamable_http import streamable_http_client

    uvicorn_thread = UvicornThread(conformance_example().http_app())
    asked: list[str] = []

    async def sampling(context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        asked.append("sampling")
        return types.CreateMessageResult(role="assistant", content=types.TextContent(type="text", text="hi there"), model="m")

    async def elicitation(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        field = next(iter(params.requested_schema["properties"]))  # type: ignore[union-attr]
        return types.ElicitResult(action="accept", content={field: {"name": "ann", "color": "teal"}.get(field, "x")})

    async def roots(context: Any) -> types.ListRootsResult:
        asked.append("roots")
        return types.ListRootsResult(roots=[types.Root(uri="file:///work", name="work")])  # type: ignore[arg-type]

    callbacks: dict[str, Any] = {"sampling_callback": sampling, "elicitation_callback": elicitation,
                                 "list_roots_callback": roots}

    async def use(session: Any) -> None:
        together = await session.call_tool("test_input_required_result_multiple_inputs", {})
        assert together.content[0].text == "Name: ann; Greeting: hi there; Roots: 1", together
        assert sorted(asked) == ["What is your name?", "roots", "sampling"]
        rounds = await session.call_tool("test_input_required_result_multi_round", {})
        assert rounds.content[0].text == "Multi-round complete for ann who likes teal", rounds

    async def main() -> None:
        url = f"http://127.0.0.1:{uvicorn_thread.port}/mcp"
        if era == "2025-06-18":
            async with streamable_http_client(url) as (read, write), ClientSession(read, write, **callbacks) as session:
                assert (await session.initialize()).protocol_version == era
                await use(session)
        else:
            async with Client(url, **callbacks) as client:
                assert client.protocol_version == era
                await use(client)
                prompt = await client.get_prompt("test_input_required_result_prompt", {})
                assert prompt.messages[0].content.text == "Answer with this context in mind: x."  # type: ignore[union-attr]

    try:
        anyio.run(main)
    finally:
        uvicorn_thread.stop()

def test_idle_sessions_end_but_an_open_stream_keeps_its_session() -> None:
    server = build_server()
    uvicorn_thread = UvicornThread(server.http_app(session_idle_timeout=0.5, keepalive=0.2))
    try:
        idle, listening = McpHttpClient(uvicorn_thread.port), McpHttpClient(uvicorn_thread.port)
        stream = listening.get()
        wait_for(lambda: len(server.clients()) == 2, 10, "both sessions to be ready")
        wait_for(lambda: len(server.clients()) == 1, 20, "the reaper to end the idle session")  # without touching it
        assert idle.call("ping").status == 404
        assert listening.call("ping").status == 200
        stream.response.close()
    finally:
        uvicorn_thread.stop()

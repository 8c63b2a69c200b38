"""The asyncio runner: over Streamable HTTP, an `async def` tool is a task on the server's own event loop.

It holds no worker thread while it awaits the client, so more of them can wait at once than there are
workers; cancelling the request cancels the task. A real uvicorn server, a plain HTTP client.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from shipcode_mcp import ClientRequestError, Context, Server
from transports.http.support import McpHttpClient, Reply, UvicornThread

WORKERS = 1
"""The server's worker threads: fewer than the async calls that wait on the client at once."""

CALLS = 4

SAMPLED = {"role": "assistant", "content": {"type": "text", "text": "yo"}, "model": "m"}


def build_server(threads: list[str]) -> Server:
    server = Server("async-http", "1.0.0")

    @server.tool
    async def ask(ctx: Context, n: int) -> str:
        """Ask the client's model, on the event loop."""
        threads.append(threading.current_thread().name)
        sampled = await ctx.asample(f"hi {n}", max_tokens=1, timeout=30)
        return f"{n}: {sampled['content']['text']}"

    @server.tool
    async def stray(ctx: Context) -> str:
        """Something else cancels what it awaits: a bug of the tool, not a cancellation by the client."""
        waiting = asyncio.get_running_loop().create_future()
        waiting.cancel()
        return str(await waiting)

    @server.tool
    async def impatient(ctx: Context) -> str:
        """Ask with a short timeout."""
        try:
            await ctx.asample("hi", max_tokens=1, timeout=0.5)
        except ClientRequestError as err:
            return f"{err.error.code} {err.error.message}"
        return "answered"

    @server.tool
    def hold(ctx: Context) -> str:
        """Keep the only worker busy until the request is cancelled."""
        ctx.wait_cancelled(30)
        return "released"

    @server.tool
    async def blocking(ctx: Context) -> str:
        """Wait for the client the blocking way, which would stop the loop that brings the answer."""
        return str(ctx.sample("hi", max_tokens=1, timeout=30))

    return server


@pytest.fixture
def served() -> Iterator[tuple[int, list[str], UvicornThread]]:
    threads: list[str] = []
    uvicorn_thread = UvicornThread(build_server(threads).http_app(session_idle_timeout=0, max_workers=WORKERS))
    yield uvicorn_thread.port, threads, uvicorn_thread
    uvicorn_thread.stop()


def test_async_tools_wait_for_the_client_on_the_loop_more_at_once_than_there_are_workers(
        served: tuple[int, list[str], UvicornThread]) -> None:
    port, threads, uvicorn_thread = served
    client = McpHttpClient(port, capabilities={"sampling": {}})
    streams: dict[int, Reply] = {}
    asked: dict[int, dict[str, Any]] = {}

    def call(n: int) -> None:
        reply = client.post({"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {"name": "ask", "arguments": {"n": n}}},
                            stream=True)
        streams[n] = reply
        event = reply.next_event()  # the tool's request to the client comes on the POST's own stream
        assert event is not None and event["method"] == "sampling/createMessage", event
        asked[n] = event

    callers = [threading.Thread(target=call, args=(n,)) for n in range(1, CALLS + 1)]
    for caller in callers:
        caller.start()
    for caller in callers:
        caller.join(30)
    assert sorted(asked) == list(range(1, CALLS + 1))  # all asked before any was answered: no worker held each
    assert set(threads) == {uvicorn_thread.thread.name}  # every one ran on the server's event loop
    for request in asked.values():
        assert client.post({"jsonrpc": "2.0", "id": request["id"], "result": SAMPLED}).status == 202
    for n, reply in streams.items():
        response = reply.next_event()
        assert response is not None and response["id"] == n
        assert response["result"]["content"] == [{"type": "text", "text": f"{n}: yo"}]


def test_cancelling_an_async_tool_cancels_its_task_and_its_request_to_the_client(
        served: tuple[int, list[str], UvicornThread]) -> None:
    port, _, _ = served
    client = McpHttpClient(port, capabilities={"sampling": {}})
    reply = client.post({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "ask", "arguments": {"n": 7}}},
                        stream=True)
    asked = reply.next_event()
    assert asked is not None and asked["method"] == "sampling/createMessage"
    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7, "reason": "enough"}}
    assert client.post(cancel).status == 202
    told = reply.next_event()  # our own request is given up, on the same stream, and then the stream ends
    assert told is not None and told["method"] == "notifications/cancelled" and told["params"]["requestId"] == asked["id"]
    assert reply.next_event() is None
    # The session goes on: the same tool, asked again, is answered.
    again = client.post({"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": {"name": "ask", "arguments": {"n": 8}}},
                        stream=True)
    request = again.next_event()
    assert request is not None
    assert client.post({"jsonrpc": "2.0", "id": request["id"], "result": SAMPLED}).status == 202
    response = again.next_event()
    assert response is not None and response["result"]["content"][0]["text"] == "8: yo"


def test_an_async_tool_that_waits_the_blocking_way_is_told_to_await(served: tuple[int, list[str], UvicornThread]) -> None:
    port, _, _ = served
    client = McpHttpClient(port, capabilities={"sampling": {}})
    result = client.call("tools/call", {"name": "blocking", "arguments": {}}).json()["result"]
    assert result["isError"] is True
    assert "Cannot wait for sampling/createMessage on the event loop that reads the answer" in result["content"][0]["text"]
    assert "ctx.asample" in result["content"][0]["text"]


def test_an_async_tool_cancelled_as_it_starts_ends_its_exchange_and_frees_its_id(
        served: tuple[int, list[str], UvicornThread]) -> None:
    """The call and its cancellation race on two connections: a task cancelled before its first step
    must still end its request, so every POST ends and each id can be used again."""
    port, _, _ = served
    client = McpHttpClient(port, capabilities={"sampling": {}})
    outcomes: dict[int, int] = {}

    def call(n: int) -> None:
        reply = client.post({"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {"name": "ask", "arguments": {"n": n}}},
                            stream=True)
        while (event := reply.next_event()) is not None:  # the stream ends: answered, or ended without an answer
            if event.get("method") == "sampling/createMessage":
                client.post({"jsonrpc": "2.0", "id": event["id"], "result": SAMPLED})
        outcomes[n] = reply.status

    def cancel(n: int) -> None:
        client.post({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": n}})

    threads = [threading.Thread(target=work, args=(n,)) for n in range(100, 120) for work in (call, cancel)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert sorted(outcomes) == list(range(100, 120))  # no exchange hung
    reused = client.post({"jsonrpc": "2.0", "id": 100, "method": "tools/call", "params": {"name": "ask", "arguments": {"n": 1}}},
                         stream=True)
    request = reused.next_event()
    assert request is not None and request["method"] == "sampling/createMessage"  # the id is free again
    client.post({"jsonrpc": "2.0", "id": request["id"], "result": SAMPLED})
    response = reused.next_event()
    assert response is not None and response["id"] == 100 and "result" in response


def test_a_cancellation_the_client_did_not_ask_for_is_an_internal_error_not_silence(
        served: tuple[int, list[str], UvicornThread]) -> None:
    port, _, _ = served
    client = McpHttpClient(port)
    reply = client.call("tools/call", {"name": "stray", "arguments": {}}).json()
    assert reply["error"] == {"code": -32603, "message": "Internal error"}


def test_an_async_tool_times_out_on_time_while_every_worker_is_busy(served: tuple[int, list[str], UvicornThread]) -> None:
    """The runner's timers run on the loop, not on a worker: a full pool delays no timeout."""
    port, _, _ = served
    client = McpHttpClient(port, capabilities={"sampling": {}})
    hold = {"jsonrpc": "2.0", "id": 49, "method": "tools/call", "params": {"name": "hold", "arguments": {}}}
    busy = threading.Thread(target=client.post, args=(hold,))
    busy.start()
    try:
        started = time.monotonic()
        reply = client.post({"jsonrpc": "2.0", "id": 50, "method": "tools/call",
                             "params": {"name": "impatient", "arguments": {}}}, stream=True)
        events = []
        while (event := reply.next_event()) is not None:
            events.append(event)
        took = time.monotonic() - started
        assert events[-1]["id"] == 50 and "-32001" in events[-1]["result"]["content"][0]["text"]
        assert took < 5.0, took  # its 0.5 s timeout, not the 30 s the busy worker holds
    finally:
        client.post({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 49}})
        busy.join(30)

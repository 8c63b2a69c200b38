"""The threaded runner: what needs threads by nature, with real threads and bounded waits.

A handler that asks the client blocks a worker on a future until the client's answer is read, a
timer gives up on it, or its request is cancelled; the roots are listed in the background. The test
thread plays the client: it waits (with a deadline) for what the server writes, then answers.
The session's own behaviour, without threads, is in tests/test_session.py.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from core_support import INITIALIZED, req
from shipcode_mcp import Context, session
from shipcode_mcp.context import ClientRequestError
from shipcode_mcp.primitives import Tool
from shipcode_mcp.runner import ThreadRunner
from shipcode_mcp.server import Server

DEADLINE = 10.0
"""The longest any wait here may take; on a healthy run each takes milliseconds."""

QUIET = 0.2
"""How long a window in which nothing must happen lasts; a positive check always follows it."""


class Timer:
    """A timer of `Clockwork`: it fires when the test says, unless the runner cancelled it."""

    __slots__ = ("call", "cancelled", "seconds")

    def __init__(self, seconds: float, call: Callable[[], None]) -> None:
        self.seconds = seconds
        self.call = call
        self.cancelled = False

    def fire(self) -> None:
        if not self.cancelled:
            self.call()


class Clockwork(ThreadRunner):
    """The threaded runner with the test's clock: its timers fire when the test fires them."""

    def __init__(self, server: Server, write: Callable[[dict[str, Any], Any], None]) -> None:
        super().__init__(server, write)
        self.timers: list[Timer] = []

    def later(self, seconds: float, call: Callable[[], None]) -> Callable[[], None]:
        timer = Timer(seconds, call)
        self.timers.append(timer)
        return lambda: setattr(timer, "cancelled", True)


class Client:
    """The client's end of a `ThreadRunner`: what the server wrote, as (related, message), in order."""

    def __init__(self, server: Server, runner: type[ThreadRunner] = ThreadRunner) -> None:
        self.written: list[tuple[Any, dict[str, Any]]] = []
        self._changed = threading.Condition()
        self.runner = runner(server, self._write)
        self.then: Callable[[dict[str, Any]], None] | None = None  # called after each write, on the writing thread

    def _write(self, message: dict[str, Any], related: Any) -> None:
        with self._changed:
            self.written.append((related, message))
            self._changed.notify_all()
        if self.then is not None:
            self.then(message)

    @property
    def sent(self) -> list[dict[str, Any]]:
        with self._changed:
            return [message for _, message in self.written]

    def handshake(self, capabilities: dict[str, Any] | None = None) -> Client:
        self.runner.receive(req(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": capabilities or {}}))
        self.runner.receive(INITIALIZED)
        with self._changed:  # forget the initialize answer (a roots/list may have been written already)
            self.written = [(related, m) for related, m in self.written if "method" in m or m.get("id") != 1]
        return self

    def _find(self, predicate: Callable[[dict[str, Any]], bool]) -> dict[str, Any] | None:
        return next((message for _, message in self.written if predicate(message)), None)

    def wait_for(self, predicate: Callable[[dict[str, Any]], bool], what: str) -> dict[str, Any]:
        """The first message written that fits `predicate`, once there is one."""
        with self._changed:
            assert self._changed.wait_for(lambda: self._find(predicate) is not None, DEADLINE), (what, self.written)
            found = self._find(predicate)
        assert found is not None
        return found

    def none_within(self, predicate: Callable[[dict[str, Any]], bool], seconds: float = QUIET) -> None:
        with self._changed:
            assert not self._changed.wait_for(lambda: self._find(predicate) is not None, seconds), self.written

    def requests_for(self, method: str, count: int = 1) -> list[dict[str, Any]]:
        """Our requests of `method` to the client, once there are `count` of them."""
        def asked() -> list[dict[str, Any]]:
            return [message for _, message in self.written if message.get("method") == method and "id" in message]

        with self._changed:
            assert self._changed.wait_for(lambda: len(asked()) >= count, DEADLINE), (method, count, self.written)
            return asked()

    def request_for(self, method: str) -> dict[str, Any]:
        return self.requests_for(method)[0]

    def response_to(self, msg_id: Any) -> dict[str, Any]:
        return self.wait_for(lambda m: m.get("id") == msg_id and "method" not in m, f"the response to {msg_id}")

    def answer(self, request: dict[str, Any], result: dict[str, Any]) -> None:
        self.runner.receive({"jsonrpc": "2.0", "id": request["id"], **({"error": result} if "code" in result else {"result": result})})

    def call(self, msg_id: Any, tool: str, arguments: dict[str, Any] | None = None, **params: Any) -> None:
        self.runner.receive(req(msg_id, "tools/call", {"name": tool, "arguments": arguments or {}, **params}))

    def alive(self) -> None:
        """A positive check after a quiet window: the session still answers."""
        self.runner.receive(req("alive", "ping"))
        assert self.response_to("alive") == {"jsonrpc": "2.0", "id": "alive", "result": {}}


Connect = Callable[..., Client]


@pytest.fixture
def connect() -> Iterator[Connect]:
    """Clients of this test; afterwards each is closed and every worker it started has ended."""
    before = set(threading.enumerate())
    clients: list[Client] = []

    def make(server: Server, runner: type[ThreadRunner] = ThreadRunner) -> Client:
        clients.append(Client(server, runner))
        return clients[-1]

    yield make
    for client in clients:
        client.runner.cancel_all()
        client.runner.close()
    deadline = time.monotonic() + DEADLINE
    for thread in set(threading.enumerate()) - before:
        if thread.name == "shipcode-mcp-background":
            thread.join(max(0.0, deadline - time.monotonic()))
            assert not thread.is_alive(), "a worker outlived its test"


def text(response: dict[str, Any]) -> str:
    value: str = response["result"]["content"][0]["text"]
    return value


def asking(name: str, ask: Callable[[Context], Any], workers: list[threading.Thread] | None = None, *,
           inline: bool = False) -> Tool:
    """A tool that asks the client: its text is the JSON of the answer, or the failure's code and message."""
    def handler(ctx: Context, args: dict[str, Any]) -> str:
        if workers is not None:
            workers.append(threading.current_thread())
        try:
            return json.dumps(ask(ctx))
        except ClientRequestError as err:
            return f"{err.error.code} {err.error.message}"

    return Tool(name, handler, inline=inline)


SAMPLED = {"role": "assistant", "content": {"type": "text", "text": "yo"}, "model": "m"}


def test_a_handler_waits_for_the_client_and_all_of_its_request_is_routed_to_it(connect: Connect) -> None:
    server = Server("s", "1", logging=True)

    def work(ctx: Context, args: dict[str, Any]) -> str:
        ctx.report_progress(1, 2)
        ctx.info("halfway")
        return str(ctx.sample("hi", max_tokens=5)["content"]["text"])

    server.add_tool(Tool("work", work))
    client = connect(server).handshake({"sampling": {}})
    client.call(7, "work", _meta={"progressToken": "p"})
    ours = client.request_for("sampling/createMessage")
    assert ours["params"] == {"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}], "maxTokens": 5}
    client.none_within(lambda m: m.get("id") == 7)  # the handler waits for the answer
    client.answer(ours, SAMPLED)
    assert text(client.response_to(7)) == "yo"
    assert [m.get("method", "response") for m in client.sent] == [
        "notifications/progress", "notifications/message", "sampling/createMessage", "response"]
    assert {related for related, _ in client.written} == {7}


def test_an_unanswered_request_times_out_and_the_client_is_told(connect: Connect) -> None:
    server = Server("s", "1")
    server.add_tool(asking("roots", lambda ctx: ctx.request("roots/list", timeout=0.05)))
    client = connect(server).handshake({"roots": {}})
    client.call(2, "roots")
    response = client.response_to(2)
    assert text(response) == "-32001 The client did not answer roots/list within 0.05 s"
    ours = client.request_for("roots/list")
    notice = {"jsonrpc": "2.0", "method": "notifications/cancelled",
              "params": {"requestId": ours["id"], "reason": "Timed out after 0.05 s"}}
    client.wait_for(lambda m: m == notice, "notifications/cancelled")
    assert [pair for pair in client.written if pair[1] is not response] == [(2, ours), (2, notice)]
    client.answer(ours, {"roots": []})  # a late reply is ignored
    client.alive()
    assert len(client.written) == 4 and client.runner.session.outgoing == {}


def test_the_client_is_told_of_a_timeout_before_the_handler_goes_on(connect: Connect) -> None:
    """Deterministically, the timer thread is slow to go on after failing the future (as on a loaded machine)."""
    server = Server("s", "1")
    responded = threading.Event()

    def ask(ctx: Context) -> Any:
        assert ctx.channel is not None
        future = ctx.channel.ask("roots/list", None, 0.05, ctx)
        future.add_done_callback(lambda _: responded.wait(DEADLINE))  # runs on the timer thread, after the waiter woke
        return future.result()

    server.add_tool(asking("roots", ask))
    client = connect(server).handshake({"roots": {}})
    client.then = lambda m: responded.set() if m.get("id") == 2 and "method" not in m else None
    client.call(2, "roots")
    client.response_to(2)
    client.wait_for(lambda m: m.get("method") == "notifications/cancelled", "notifications/cancelled")
    assert [m.get("method", "response") for m in client.sent] == ["roots/list", "notifications/cancelled", "response"]


def test_cancelling_the_request_that_waits_on_the_client_cancels_our_request_too(connect: Connect) -> None:
    server = Server("s", "1")
    workers: list[threading.Thread] = []
    server.add_tool(asking("ask", lambda ctx: ctx.elicit("name?", {"type": "object", "properties": {"name": {"type": "string"}}}),
                           workers))
    client = connect(server).handshake({"elicitation": {}})
    client.call(5, "ask")
    ours = client.request_for("elicitation/create")
    client.runner.receive({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 5}})
    workers[0].join(DEADLINE)
    assert not workers[0].is_alive()
    assert client.written[-2:] == [(5, ours), (5, {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {
        "requestId": ours["id"], "reason": "The request that needed it was cancelled"}})]  # and no response to 5
    client.answer(ours, {"action": "decline"})  # a late answer is ignored
    client.alive()
    assert client.sent[-3:-1] == [ours, client.written[-2][1]]
    assert client.runner.session.in_flight == {} and client.runner.session.outgoing == {}


def test_a_cancellation_runs_the_callbacks_of_work_under_way(connect: Connect) -> None:
    server = Server("s", "1")
    killed, started = threading.Event(), threading.Event()
    workers: list[threading.Thread] = []

    def slow(ctx: Context, args: dict[str, Any]) -> str:
        workers.append(threading.current_thread())
        ctx.on_cancel(killed.set)
        started.set()
        ctx.wait_cancelled(DEADLINE)
        ctx.check_cancelled()
        return "not cancelled"

    server.add_tool(Tool("slow", slow))
    client = connect(server).handshake()
    client.call(1, "slow")
    assert started.wait(DEADLINE)
    client.runner.receive({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}})
    workers[0].join(DEADLINE)
    assert not workers[0].is_alive() and killed.is_set()
    client.alive()
    assert [m["id"] for m in client.sent] == ["alive"]  # no response to 1
    assert client.runner.session.in_flight == {}


def test_client_errors_and_a_closed_session_fail_asks_clearly(connect: Connect) -> None:
    server = Server("s", "1")
    server.add_tool(asking("sample", lambda ctx: ctx.sample("hi", max_tokens=1, timeout=DEADLINE)))
    server.add_tool(asking("roots", lambda ctx: ctx.list_roots(timeout=30)))
    client = connect(server).handshake({"roots": {}, "sampling": {}})
    client.call(2, "sample")
    client.answer(client.request_for("sampling/createMessage"), {"code": -1, "message": "User rejected sampling"})
    assert text(client.response_to(2)) == "-1 User rejected sampling"
    client.call(3, "roots")
    client.request_for("roots/list")
    client.runner.close()  # the client went away: nobody will answer
    assert text(client.response_to(3)) == "-32603 The client is gone"  # a request read before is still answered
    with pytest.raises(ClientRequestError) as caught:
        client.runner.ask("roots/list", None, DEADLINE, None)
    assert caught.value.error.message == "The client is gone"


def test_an_inline_handler_cannot_ask(connect: Connect) -> None:
    server = Server("s", "1")
    server.add_tool(asking("ask", lambda ctx: ctx.list_roots(), inline=True))
    client = connect(server).handshake({"roots": {}})
    client.call(2, "ask")
    assert client.sent[-1] == {"jsonrpc": "2.0", "id": 2, "result": {"content": [{"type": "text", "text": (
        "-32603 Cannot send roots/list from an inline handler: it would block the reading loop")}], "isError": False}}
    assert len(client.sent) == 1  # no roots/list was sent


def test_a_tool_whose_request_to_the_client_fails_is_a_tool_error(connect: Connect) -> None:
    server = Server("s", "1")
    server.add_tool(Tool("sample", lambda ctx, args: ctx.sample("hi", max_tokens=5)))
    client = connect(server).handshake()  # the client declared no sampling capability
    client.call(2, "sample")
    result = client.response_to(2)["result"]
    assert result["isError"] is True and "sampling/createMessage" in result["content"][0]["text"]


@pytest.mark.parametrize(("answer", "outcome"), [
    ({"action": "accept", "content": {"age": 3}}, '{"action": "accept", "content": {"age": 3}}'),
    ({"action": "accept", "content": {"age": "old"}}, "does not fit the schema"),
    ({"action": "cancel"}, '{"action": "cancel"}'),
    ({"action": "maybe"}, "valid action"),
])
def test_elicit_checks_the_answer_against_the_schema(answer: dict[str, Any], outcome: str,
                                                     connect: Connect) -> None:
    schema = {"type": "object", "properties": {"age": {"type": "integer"}}, "required": ["age"]}
    server = Server("s", "1")
    server.add_tool(asking("ask", lambda ctx: ctx.elicit("age?", schema, timeout=DEADLINE)))
    client = connect(server).handshake({"elicitation": {}})
    client.call(2, "ask")
    ours = client.request_for("elicitation/create")
    assert ours["params"] == {"message": "age?", "requestedSchema": schema}
    client.answer(ours, answer)
    assert outcome in text(client.response_to(2))


def test_an_async_handler_awaits_the_client_without_blocking_others(connect: Connect) -> None:
    server = Server("s", "1")

    @server.tool
    async def ask(ctx: Context, n: int) -> str:
        roots = await ctx.alist_roots(timeout=DEADLINE)
        sampled = await ctx.asample(f"hi {n}", max_tokens=1, timeout=DEADLINE)
        elicited = await ctx.aelicit("ok?", {"type": "object", "properties": {}}, timeout=DEADLINE)
        plain = await ctx.arequest("ping", timeout=DEADLINE)
        return json.dumps([n, roots, sampled["content"]["text"], elicited["action"], plain])

    client = connect(server).handshake({"roots": {}, "sampling": {}, "elicitation": {}})
    client.call(2, "ask", {"n": 2})
    client.call(3, "ask", {"n": 3})
    for method, result in (("roots/list", {"roots": [{"uri": "file:///r"}]}), ("sampling/createMessage", SAMPLED),
                           ("elicitation/create", {"action": "decline"}), ("ping", {})):
        for ours in reversed(client.requests_for(method, 2)):  # both asked before either was answered
            client.answer(ours, result)
    for n in (2, 3):
        assert json.loads(text(client.response_to(n))) == [n, [{"uri": "file:///r"}], "yo", "decline", {}]


def test_an_async_handler_that_stops_waiting_gives_its_request_up_and_a_late_answer_harms_nothing(
        connect: Connect) -> None:
    """asyncio.wait_for cancels the awaited future: the client is told, and its late answer is dropped."""
    import asyncio

    server = Server("s", "1")

    @server.tool
    async def impatient(ctx: Context) -> str:
        try:
            await asyncio.wait_for(ctx.asample("hi", max_tokens=1, timeout=DEADLINE), 0.05)
        except asyncio.TimeoutError:
            return "gave up"
        return "answered"

    client = connect(server).handshake({"sampling": {}})
    client.call(2, "impatient")
    assert text(client.response_to(2)) == "gave up"
    ours = client.request_for("sampling/createMessage")
    cancelled = client.wait_for(lambda m: m.get("method") == "notifications/cancelled", "our request given up")
    assert cancelled["params"]["requestId"] == ours["id"]
    client.answer(ours, SAMPLED)  # too late: nobody waits for it, and nothing breaks
    client.alive()
    client.call(3, "impatient")  # and the next ask works as the first did
    assert text(client.response_to(3)) == "gave up"


def test_an_async_handler_cancelled_by_something_else_than_the_client_is_an_internal_error(
        connect: Connect, capsys: pytest.CaptureFixture[str]) -> None:
    import asyncio

    server = Server("s", "1")

    @server.tool
    async def stray(ctx: Context) -> str:
        waiting = asyncio.get_running_loop().create_future()
        waiting.cancel()
        return str(await waiting)

    client = connect(server).handshake()
    client.call(2, "stray")
    assert client.response_to(2)["error"] == {"code": -32603, "message": "Internal error"}
    assert "cancelled, but not by its client" in capsys.readouterr().err


def test_a_blocking_ask_from_an_async_handler_of_the_threaded_runner_still_works(connect: Connect) -> None:
    """Its loop is not the one that reads the answer, so the wait cannot deadlock: it is allowed."""
    server = Server("s", "1")

    @server.tool
    async def blocking(ctx: Context) -> str:
        return str(ctx.sample("hi", max_tokens=1, timeout=DEADLINE)["content"]["text"])

    client = connect(server).handshake({"sampling": {}})
    client.call(2, "blocking")
    client.answer(client.request_for("sampling/createMessage"), SAMPLED)
    assert text(client.response_to(2)) == "yo"


def test_work_held_for_the_roots_is_answered_when_input_ends(connect: Connect) -> None:
    """The client leaves before it lists its roots: the requests it sent still get their answers."""
    client, _ = following(connect)
    client.request_for("roots/list")
    client.call(2, "count")
    client.none_within(lambda m: m.get("id") == 2)  # held: the roots are being listed
    client.runner.close()
    assert text(client.response_to(2)) == "0 listings"


# -- the client's roots, followed end to end -------------------------------------------------------------------
ROOTS = [{"uri": "file:///a", "name": "a"}]


def following(connect: Connect, runner: type[ThreadRunner] = ThreadRunner) -> tuple[Client, list[list[dict[str, Any]]]]:
    """A client with roots, ready, whose first roots/list is under way; and the lists the server was given."""
    server = Server("s", "1")
    seen: list[list[dict[str, Any]]] = []
    server.on_roots(lambda session, roots: seen.append(roots))
    server.add_tool(Tool("count", lambda ctx, args: f"{len(seen)} listings"))
    client = connect(server, runner).handshake({"roots": {"listChanged": True}})
    return client, seen


def test_the_roots_are_listed_after_initialized_and_after_each_change_and_held_work_waits_for_them(
        connect: Connect) -> None:
    client, seen = following(connect)
    listing = client.request_for("roots/list")
    client.call(2, "count")  # work that follows the roots waits for them
    client.none_within(lambda m: m.get("id") == 2)
    client.answer(listing, {"roots": [*ROOTS, {"name": "no uri"}, "junk"]})
    assert text(client.response_to(2)) == "1 listings"  # it ran in the roots the client gave
    assert seen == [ROOTS] and client.runner.session.roots == ROOTS
    client.runner.receive({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"})
    again = client.requests_for("roots/list", 2)[1]
    client.answer(again, {"roots": []})
    client.call(3, "count")
    assert text(client.response_to(3)) == "2 listings"
    assert seen == [ROOTS, []]


def test_held_work_runs_when_the_roots_are_late(connect: Connect, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(session, "ROOTS_WAIT", 0.05)
    client, seen = following(connect)
    listing = client.request_for("roots/list")
    client.call(2, "count")
    assert text(client.response_to(2)) == "0 listings"  # it waited long enough
    client.answer(listing, {"roots": ROOTS})
    client.call(3, "count")
    assert text(client.response_to(3)) == "1 listings"
    assert seen == [ROOTS]


def test_held_work_waits_its_own_wait_not_that_of_an_earlier_listing(connect: Connect) -> None:
    client, _ = following(connect, Clockwork)
    runner = client.runner
    assert isinstance(runner, Clockwork)
    client.call(2, "count")  # held while the first listing is under way: it starts a wait
    client.answer(client.request_for("roots/list"), {"roots": ROOTS})
    assert text(client.response_to(2)) == "1 listings"
    client.runner.receive({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"})
    second = client.requests_for("roots/list", 2)[1]
    client.call(3, "count")  # held for the second listing: a wait of its own
    waits = [timer for timer in runner.timers if timer.seconds == session.ROOTS_WAIT]
    assert len(waits) == 2
    waits[0].fire()  # the first wait ends, long before the second would
    client.none_within(lambda m: m.get("id") == 3)
    client.answer(second, {"roots": []})
    assert text(client.response_to(3)) == "2 listings"


def test_a_failed_roots_listing_keeps_what_was_known(connect: Connect, capsys: pytest.CaptureFixture[str]) -> None:
    client, seen = following(connect)
    client.answer(client.request_for("roots/list"), {"roots": ROOTS})
    client.runner.receive({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"})
    client.call(2, "count")
    client.answer(client.requests_for("roots/list", 2)[1], {"code": -32601, "message": "Method not found"})
    assert text(client.response_to(2)) == "1 listings"  # released all the same
    assert seen == [ROOTS] and client.runner.session.roots == ROOTS
    assert "roots/list failed: Method not found" in capsys.readouterr().err


# -- progress against the response ----------------------------------------------------------------------------
def race_progress_against_the_response(connect: Connect) -> list[dict[str, Any]]:
    """A thread reports progress as fast as it can while the handler returns; what was sent, in order."""
    running = threading.Event()
    contexts: list[Context] = []

    def spam() -> None:
        assert running.wait(DEADLINE)
        for value in range(1, 2000):
            contexts[0].report_progress(value)

    def work(ctx: Context, args: dict[str, Any]) -> str:
        contexts.append(ctx)
        running.set()
        return "ok"

    server = Server("s", "1")
    server.add_tool(Tool("work", work))
    client = connect(server)
    spammer = threading.Thread(target=spam)
    spammer.start()
    client.call(1, "work", _meta={"progressToken": 1})
    spammer.join(DEADLINE)
    assert not spammer.is_alive()
    client.response_to(1)
    return client.sent


def test_progress_never_follows_the_response_even_when_racing_it(connect: Connect) -> None:
    for _round in range(20):
        sent = race_progress_against_the_response(connect)
        kinds = [m.get("method", "response") for m in sent]
        assert kinds[-1] == "response" and kinds.count("response") == 1
        values = [m["params"]["progress"] for m in sent[:-1]]
        assert values == sorted(set(values))

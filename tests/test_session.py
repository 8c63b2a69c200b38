"""The sans-IO session, driven directly: no processes, no pipes."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from shipcode_mcp.context import RequestContext
from shipcode_mcp.primitives import Prompt, Resource, Tool
from shipcode_mcp.server import Server
from shipcode_mcp.session import ClientRequestError, Job, Session

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}


def make_server() -> Server:
    server = Server("shipcode-mcp", "1.0.0")
    server.add_tool(Tool("echo", lambda ctx, args: args["text"],
                         {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}, inline=True))
    server.add_tool(Tool("later", lambda ctx, args: "done"))
    server.add_resource(Resource("test://a", "a", reader=lambda ctx, uri: "A"))
    return server


class Harness:
    """A session whose output and deferred jobs are collected for inspection."""

    def __init__(self, server: Server | None = None) -> None:
        self.sent: list[dict[str, Any]] = []
        self.jobs: list[Job] = []
        self.session = Session(server or make_server(), send=self.sent.append, spawn=self.jobs.append)

    def receive(self, message: Any) -> list[dict[str, Any]]:
        return self.session.receive(message)


def req(msg_id: Any, method: str, params: Any = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
    if params is not None:
        message["params"] = params
    return message


def test_initialize_answer_is_exact() -> None:
    h = Harness()
    assert h.receive(INIT) == [{"jsonrpc": "2.0", "id": 1, "result": {
        "protocolVersion": "2025-06-18", "capabilities": {"tools": {}, "resources": {}},
        "serverInfo": {"name": "shipcode-mcp", "version": "1.0.0"}}}]
    reply = h.receive(INIT)[0]
    assert list(reply) == ["jsonrpc", "id", "result"]
    assert list(reply["result"]) == ["protocolVersion", "capabilities", "serverInfo"]


@pytest.mark.parametrize("version", ["2024-11-05", "2025-03-26", "2025-11-25", "2026-07-28", "1999-01-01", 20250618, None, "", [1]])
def test_any_other_version_is_offered_ours(version: Any) -> None:
    h = Harness()
    reply = h.receive(req(1, "initialize", {"protocolVersion": version, "capabilities": {}}))[0]
    assert reply["result"]["protocolVersion"] == "2025-06-18"


def test_missing_params_or_version_default() -> None:
    h = Harness()
    assert h.receive(req(1, "initialize"))[0]["result"]["protocolVersion"] == "2025-06-18"
    assert h.receive(req(2, "initialize", {}))[0]["result"]["protocolVersion"] == "2025-06-18"


def test_second_initialize_gets_the_same_answer_and_keeps_first_client_state() -> None:
    h = Harness()
    first = h.receive(req(1, "initialize", {"capabilities": {"roots": {}}, "clientInfo": {"name": "a", "version": "1"}}))
    second = h.receive(req(1, "initialize", {"capabilities": {}, "clientInfo": {"name": "b", "version": "2"}}))
    assert first == second
    assert h.session.client_info["name"] == "a" and "roots" in h.session.client_capabilities


@pytest.mark.parametrize("params", [{"capabilities": "x"}, {"clientInfo": 5}, {"capabilities": []}])
def test_initialize_with_params_of_the_wrong_shape(params: dict[str, Any]) -> None:
    reply = Harness().receive(req(1, "initialize", params))[0]
    assert reply == {"jsonrpc": "2.0", "id": 1, "error": {"code": -32602, "message": "Invalid params"}}


def test_ping_works_in_every_state() -> None:
    h = Harness()
    assert h.receive(req(5, "ping")) == [{"jsonrpc": "2.0", "id": 5, "result": {}}]
    h.receive(INIT)
    assert h.receive(req("p", "ping", {})) == [{"jsonrpc": "2.0", "id": "p", "result": {}}]
    h.receive({"jsonrpc": "2.0", "method": "notifications/initialized"})
    assert h.receive(req(6, "ping", {"_meta": {"x": 1}})) == [{"jsonrpc": "2.0", "id": 6, "result": {}}]


def test_requests_before_initialize_are_served() -> None:
    reply = Harness().receive(req(2, "tools/list"))[0]
    assert [t["name"] for t in reply["result"]["tools"]] == ["echo", "later"]


INVALID = {"code": -32600, "message": "Invalid Request"}


@pytest.mark.parametrize(("message", "reply_id"), [
    ([], None), ([req(1, "ping")], None), ("ping", None), (5, None), (None, None), (True, None),
    ({"jsonrpc": "2.0", "id": 1}, 1), ({"jsonrpc": "2.0"}, None), ({}, None),
    ({"jsonrpc": "2.0", "id": 3, "method": 7}, 3),
    ({"jsonrpc": "2.0", "id": None, "method": "ping"}, None),
    ({"jsonrpc": "2.0", "id": 1.5, "method": "ping"}, None),
    ({"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"}, None),
    ({"jsonrpc": "2.0", "id": True, "method": "ping"}, None),
    ({"jsonrpc": "2.0", "id": [1], "method": "ping"}, None),
    ({"jsonrpc": "1.0", "id": 4, "method": "ping"}, 4),
    ({"id": 4, "method": "ping"}, 4),
    ({"jsonrpc": 2.0, "id": 4, "method": "ping"}, 4),
    ({"jsonrpc": "2.0", "id": 4, "method": "ping", "params": []}, 4),
    ({"jsonrpc": "2.0", "id": "x", "method": "ping", "params": "a"}, "x"),
    ({"jsonrpc": "2.0", "id": 4, "method": "ping", "params": None}, 4),
])
def test_invalid_requests(message: Any, reply_id: Any) -> None:
    assert Harness().receive(message) == [{"jsonrpc": "2.0", "id": reply_id, "error": INVALID}]


@pytest.mark.parametrize("method", ["server/discover", "nope", "", "tools/List", "prompts/list", "logging/setLevel",
                                    "resources/subscribe", "completion/complete", "notifications/initialized"])
def test_unknown_or_not_offered_methods(method: str) -> None:
    h = Harness()
    for _state in range(2):
        assert h.receive(req(9, method)) == [{"jsonrpc": "2.0", "id": 9, "error": {"code": -32601, "message": "Method not found"}}]
        h.receive(INIT)


@pytest.mark.parametrize("message", [
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
    {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 77}},
    {"jsonrpc": "2.0", "method": "notifications/unknown"},
    {"jsonrpc": "2.0", "method": "ping"},
    {"jsonrpc": "2.0", "method": "tools/list", "params": []},
    {"jsonrpc": "1.0", "method": "notifications/initialized"},
    {"method": 5},
    {"jsonrpc": "2.0", "id": 12, "result": {}},
    {"jsonrpc": "2.0", "id": 12, "error": {"code": 1, "message": "x"}},
    {"jsonrpc": "2.0", "result": {}},
    {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}},
])
def test_notifications_and_responses_get_no_answer(message: dict[str, Any]) -> None:
    h = Harness()
    assert h.receive(message) == []
    assert h.sent == [] and h.jobs == []


def test_initialized_notification_marks_the_session_ready() -> None:
    h = Harness()
    h.receive(INIT)
    assert not h.session.ready
    h.receive({"jsonrpc": "2.0", "method": "notifications/initialized"})
    assert h.session.ready


def test_inline_tool_answers_at_once_in_spec_order() -> None:
    reply = Harness().receive(req(3, "tools/call", {"name": "echo", "arguments": {"text": "h\u00e9"}}))
    assert reply == [{"jsonrpc": "2.0", "id": 3, "result": {"content": [{"type": "text", "text": "h\u00e9"}], "isError": False}}]


def test_deferred_tool_answers_through_send_when_its_job_runs() -> None:
    h = Harness()
    assert h.receive(req(4, "tools/call", {"name": "later"})) == []
    assert h.sent == [] and len(h.jobs) == 1
    h.jobs[0].run()
    assert h.sent == [{"jsonrpc": "2.0", "id": 4, "result": {"content": [{"type": "text", "text": "done"}], "isError": False}}]


@pytest.mark.parametrize(("params", "message"), [
    ({}, "Invalid params: name must be a string"),
    ({"name": 5}, "Invalid params: name must be a string"),
    ({"name": "nope"}, "Unknown tool: nope"),
    ({"name": "echo", "arguments": []}, "Invalid params: arguments must be an object"),
    ({"name": "echo", "arguments": "x"}, "Invalid params: arguments must be an object"),
])
def test_tools_call_protocol_errors(params: dict[str, Any], message: str) -> None:
    assert Harness().receive(req(1, "tools/call", params)) == [
        {"jsonrpc": "2.0", "id": 1, "error": {"code": -32602, "message": message}}]


def test_arguments_failing_the_schema_are_a_tool_error_naming_the_argument() -> None:
    result = Harness().receive(req(1, "tools/call", {"name": "echo", "arguments": {"text": 5}}))[0]["result"]
    assert result["isError"] is True
    assert "text" in result["content"][0]["text"] and "string" in result["content"][0]["text"]
    result = Harness().receive(req(1, "tools/call", {"name": "echo", "arguments": {}}))[0]["result"]
    assert result["isError"] is True and "text" in result["content"][0]["text"]


def test_a_bug_in_a_handler_is_an_internal_error_without_details(capsys: pytest.CaptureFixture[str]) -> None:
    server = make_server()
    server.add_tool(Tool("boom", lambda ctx, args: 1 / 0, inline=True))
    reply = Session(server).receive(req(1, "tools/call", {"name": "boom"}))
    assert reply == [{"jsonrpc": "2.0", "id": 1, "error": {"code": -32603, "message": "Internal error"}}]
    assert "ZeroDivisionError" in capsys.readouterr().err


def test_cancelled_request_sends_no_response() -> None:
    h = Harness()
    h.receive(req(4, "tools/call", {"name": "later"}))
    h.receive({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 4, "reason": "user"}})
    h.jobs[0].run()
    assert h.sent == []


def test_cancel_for_unknown_finished_or_malformed_ids_is_ignored() -> None:
    h = Harness()
    h.receive(req(4, "tools/call", {"name": "later"}))
    h.jobs[0].run()
    for params in ({"requestId": 4}, {"requestId": 99}, {"requestId": None}, {}, {"requestId": [4]}):
        assert h.receive({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": params}) == []
    assert len(h.sent) == 1


def test_a_duplicate_in_flight_id_is_refused_and_the_first_still_answers() -> None:
    h = Harness()
    h.receive(req(4, "tools/call", {"name": "later"}))
    reply = h.receive(req(4, "tools/call", {"name": "later"}))
    assert reply[0]["error"]["code"] == -32600 and reply[0]["id"] == 4
    h.jobs[0].run()
    assert h.sent[0]["id"] == 4 and "result" in h.sent[0]
    assert len(h.jobs) == 1


def test_progress_only_with_a_token_increasing_and_never_after_the_response() -> None:
    seen: list[RequestContext] = []
    server = make_server()
    server.add_tool(Tool("work", lambda ctx, args: seen.append(ctx) or "ok"))
    h = Harness(server)
    h.receive(req(1, "tools/call", {"name": "work", "_meta": {"progressToken": "t"}}))
    h.receive(req(2, "tools/call", {"name": "work"}))
    for job in h.jobs:
        ctx = job.context
        assert ctx.report_progress(1, 10, "one") is (ctx.request_id == 1)
        assert ctx.report_progress(1) is False  # not increasing
        assert ctx.report_progress(0.5) is False
        assert ctx.report_progress(2.5) is (ctx.request_id == 1)
        job.run()
        assert ctx.report_progress(3) is False
    assert h.sent == [
        {"jsonrpc": "2.0", "method": "notifications/progress",
         "params": {"progressToken": "t", "progress": 1, "total": 10, "message": "one"}},
        {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": "t", "progress": 2.5}},
        {"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": "ok"}], "isError": False}},
        {"jsonrpc": "2.0", "id": 2, "result": {"content": [{"type": "text", "text": "ok"}], "isError": False}},
    ]


def test_cancellation_runs_callbacks_and_races_with_completion_safely() -> None:
    server = make_server()
    killed = threading.Event()
    started = threading.Event()

    def slow(ctx: RequestContext, args: dict[str, Any]) -> str:
        ctx.on_cancel(killed.set)
        started.set()
        ctx.wait_cancelled(5)
        ctx.check_cancelled()
        return "not cancelled"

    server.add_tool(Tool("slow", slow))
    h = Harness(server)
    h.receive(req(1, "tools/call", {"name": "slow"}))
    worker = threading.Thread(target=h.jobs[0].run)
    worker.start()
    assert started.wait(5)
    h.receive({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}})
    worker.join(5)
    assert killed.is_set() and h.sent == []
    assert h.session.in_flight() == []


def test_resources_read_and_not_found() -> None:
    h = Harness()
    h.receive(req(1, "resources/read", {"uri": "test://a"}))
    h.receive(req(2, "resources/read", {"uri": "test://missing"}))
    h.receive(req(3, "resources/read", {}))
    for job in h.jobs:
        job.run()
    assert h.sent == [
        {"jsonrpc": "2.0", "id": 1, "result": {"contents": [{"uri": "test://a", "text": "A"}]}},
        {"jsonrpc": "2.0", "id": 2, "error": {"code": -32002, "message": "Resource not found", "data": {"uri": "test://missing"}}},
    ]


def test_bad_cursor_is_invalid_params() -> None:
    for cursor in ("nonsense", "MTA6ZmZmZmZmZmY=", 5, ""):
        reply = Harness().receive(req(1, "tools/list", {"cursor": cursor}))[0]
        assert reply["error"]["code"] == -32602


def test_pagination_walks_every_item_once() -> None:
    server = Server("s", "1", page_size=7)
    for i in range(30):
        server.add_tool(Tool(f"t{i:02}", lambda ctx, args: None))
    session = Session(server)
    names: list[str] = []
    cursor = None
    while True:
        params = {"cursor": cursor} if cursor else {}
        result = session.receive(req(1, "tools/list", params))[0]["result"]
        names += [t["name"] for t in result["tools"]]
        cursor = result.get("nextCursor")
        if cursor is None:
            break
    assert names == [f"t{i:02}" for i in range(30)]


def test_requests_to_the_client_are_gated_and_routed() -> None:
    h = Harness()
    h.receive(req(1, "initialize", {"capabilities": {"roots": {"listChanged": True}}}))
    with pytest.raises(ClientRequestError):
        h.session.request("roots/list", timeout=1)  # not ready yet
    h.receive({"jsonrpc": "2.0", "method": "notifications/initialized"})
    with pytest.raises(ClientRequestError) as caught:
        h.session.request("sampling/createMessage", {"messages": [], "maxTokens": 1}, timeout=1)
    assert "does not support" in caught.value.error.message
    answers: list[dict[str, Any]] = []
    worker = threading.Thread(target=lambda: answers.append(h.session.request("roots/list", timeout=5)))
    worker.start()
    for _ in range(500):
        if h.sent:
            break
        threading.Event().wait(0.01)
    sent = h.sent[-1]
    assert sent["method"] == "roots/list" and isinstance(sent["id"], int)
    assert h.receive({"jsonrpc": "2.0", "id": sent["id"], "result": {"roots": []}}) == []
    worker.join(5)
    assert answers == [{"roots": []}]


def test_a_request_to_the_client_times_out_and_is_cancelled() -> None:
    h = Harness()
    h.receive(req(1, "initialize", {"capabilities": {"roots": {}}}))
    h.receive({"jsonrpc": "2.0", "method": "notifications/initialized"})
    with pytest.raises(ClientRequestError) as caught:
        h.session.request("roots/list", timeout=0.05)
    assert caught.value.error.code == -32001
    request_id = h.sent[0]["id"]
    assert h.sent[1] == {"jsonrpc": "2.0", "method": "notifications/cancelled",
                         "params": {"requestId": request_id, "reason": "Timed out after 0.05 s"}}
    assert h.receive({"jsonrpc": "2.0", "id": request_id, "result": {}}) == []  # a late reply is ignored


# -- issue 5: routing, stateless sessions, client requests from handlers, roots, logging, list changes --------
class Routed(Harness):
    """A harness whose transport also takes messages related to a request (as Streamable HTTP does)."""

    def __init__(self, server: Server | None = None, **options: Any) -> None:
        self.sent: list[dict[str, Any]] = []
        self.related: list[tuple[Any, dict[str, Any]]] = []
        self.jobs: list[Job] = []
        self.background: list[Any] = []
        self.session = Session(server or make_server(), send=self.sent.append, spawn=self.jobs.append,
                               send_related=lambda message, related: self.related.append((related, message)),
                               background=self.background.append, **options)

    def ready(self, capabilities: dict[str, Any] | None = None) -> None:
        self.receive(req(1, "initialize", {"capabilities": capabilities or {}}))
        self.receive({"jsonrpc": "2.0", "method": "notifications/initialized"})


def answer_client_requests(h: Harness, results: dict[str, Any], stop: threading.Event) -> threading.Thread:
    """A fake client: answers every request the server sends (through `sent` or `related`) from `results`."""
    def run() -> None:
        answered: set[Any] = set()
        while not stop.is_set():
            outgoing = list(h.sent) + [m for _, m in getattr(h, "related", [])]
            for message in outgoing:
                if "method" in message and "id" in message and message["id"] not in answered:
                    answered.add(message["id"])
                    result = results[message["method"]]
                    reply = {"jsonrpc": "2.0", "id": message["id"]}
                    reply.update({"error": result} if "code" in result else {"result": result})
                    h.receive(reply)
            stop.wait(0.005)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_progress_logs_requests_and_the_response_of_a_request_are_routed_to_it() -> None:
    server = Server("s", "1", logging=True)

    def work(ctx: RequestContext, args: dict[str, Any]) -> str:
        ctx.report_progress(1, 2)
        ctx.info("halfway")
        return ctx.sample("hi", max_tokens=5)["content"]["text"]

    server.add_tool(Tool("work", work))
    h = Routed(server)
    h.ready({"sampling": {}})
    h.receive(req(7, "tools/call", {"name": "work", "_meta": {"progressToken": "p"}}))
    stop = threading.Event()
    answer_client_requests(h, {"sampling/createMessage": {"role": "assistant", "content": {"type": "text", "text": "yo"},
                                                          "model": "m"}}, stop)
    h.jobs[0].run()
    stop.set()
    assert h.sent == []  # nothing of request 7 took the session-wide way
    methods = [m.get("method", "response") for _, m in h.related]
    assert methods == ["notifications/progress", "notifications/message", "sampling/createMessage", "response"]
    assert {related for related, _ in h.related} == {7}
    assert h.related[2][1]["params"] == {"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}],
                                         "maxTokens": 5}
    assert h.related[-1][1]["result"]["content"] == [{"type": "text", "text": "yo"}]


def test_messages_of_no_request_take_the_session_wide_way() -> None:
    server = make_server()
    server.tools_list_changed = True
    h = Routed(server)
    h.ready()
    server.add_tool(Tool("new", lambda ctx, args: None))
    assert h.sent == [{"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}] and h.related == []


def test_list_changes_go_only_to_sessions_whose_initialize_declared_them() -> None:
    server = make_server()
    before = Routed(server)
    before.ready()  # initialized while listChanged was not offered
    server.tools_list_changed = server.prompts_list_changed = True
    after = Routed(server)
    after.ready()
    not_ready = Routed(server)
    not_ready.receive(INIT)
    assert after.session.capabilities["tools"] == {"listChanged": True}
    server.remove_tool("later")
    server.remove_tool("missing")  # no change, no notification
    server.add_prompt(Prompt("p", lambda ctx, args: "x"))  # prompts was not declared at initialize
    assert after.sent == [{"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}]
    assert before.sent == [] and not_ready.sent == []


def test_resource_updates_reach_subscribers_only() -> None:
    server = make_server()
    server.resources_subscribe = True
    one, two = Routed(server), Routed(server)
    one.ready()
    two.ready()
    assert one.receive(req(2, "resources/subscribe", {"uri": "test://a"}))[0]["result"] == {}
    assert two.receive(req(2, "resources/subscribe", {"uri": "test://dir"}))[0]["result"] == {}
    server.resource_updated("test://a")
    server.resource_updated("test://dir/file")
    server.resource_updated("test://directory")  # not inside test://dir
    assert one.sent == [{"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": "test://a"}}]
    assert two.sent == [{"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": "test://dir/file"}}]
    one.receive(req(3, "resources/unsubscribe", {"uri": "test://a"}))
    server.resource_updated("test://a")
    assert len(one.sent) == 1


def test_log_messages_need_the_capability_and_pass_the_level_threshold() -> None:
    quiet = Routed(make_server())
    assert quiet.session.log("emergency", "x") is False and quiet.sent == []
    server = make_server()
    server.logging_enabled = True
    h = Routed(server)
    h.ready()
    assert h.session.log("debug", "hidden") is False  # below the default threshold, info
    assert h.session.log("info", {"k": 1}, "db") is True
    assert h.receive(req(2, "logging/setLevel", {"level": "error"}))[0]["result"] == {}
    assert h.session.log("warning", "hidden") is False
    assert h.session.log("critical", "shown") is True
    assert h.session.log("nonsense", "x") is False
    assert h.sent == [
        {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "logger": "db", "data": {"k": 1}}},
        {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "critical", "data": "shown"}},
    ]
    assert h.receive(req(3, "logging/setLevel", {"level": "loud"}))[0]["error"]["code"] == -32602


def test_a_stateless_session_serves_without_a_handshake_and_cannot_ask_the_client() -> None:
    h = Routed(make_server(), stateless=True)
    assert h.session.ready
    assert h.receive(req(1, "tools/call", {"name": "echo", "arguments": {"text": "x"}}))[0]["result"]["isError"] is False
    with pytest.raises(ClientRequestError) as caught:
        h.session.request("roots/list")
    assert "stateless" in caught.value.error.message
    assert h.sent == [] and h.related == []


def test_an_inline_handler_cannot_wait_on_the_client() -> None:
    server = make_server()

    def ask(ctx: RequestContext, args: dict[str, Any]) -> str:
        try:
            ctx.list_roots()
        except ClientRequestError as err:
            return err.error.message
        return "asked"

    server.add_tool(Tool("ask", ask, inline=True))
    h = Routed(server)
    h.ready({"roots": {}})
    text = h.receive(req(2, "tools/call", {"name": "ask"}))[0]["result"]["content"][0]["text"]
    assert "inline" in text and h.sent == [] and h.related == []


def test_cancelling_a_request_that_waits_on_the_client_cancels_our_request_too() -> None:
    server = make_server()
    asked = threading.Event()

    def ask(ctx: RequestContext, args: dict[str, Any]) -> str:
        asked.set()
        ctx.elicit("name?", {"type": "object", "properties": {"name": {"type": "string"}}})
        return "answered"

    server.add_tool(Tool("ask", ask))
    h = Routed(server)
    h.ready({"elicitation": {}})
    h.receive(req(5, "tools/call", {"name": "ask"}))
    worker = threading.Thread(target=h.jobs[0].run)
    worker.start()
    assert asked.wait(5)
    for _ in range(500):
        if h.related:
            break
        threading.Event().wait(0.01)
    ours = h.related[0][1]
    assert ours["method"] == "elicitation/create"
    h.receive({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 5}})
    worker.join(5)
    assert not worker.is_alive()
    assert [m for _, m in h.related][1:] == [{"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {
        "requestId": ours["id"], "reason": "The request that needed it was cancelled"}}]  # and no response to 5
    h.receive({"jsonrpc": "2.0", "id": ours["id"], "result": {"action": "decline"}})  # a late answer is ignored
    assert len(h.related) == 2 and h.session.in_flight() == []


def test_client_errors_and_a_closed_session_fail_requests_clearly() -> None:
    h = Routed()
    h.ready({"roots": {}, "sampling": {}})
    stop = threading.Event()
    answer_client_requests(h, {"sampling/createMessage": {"code": -1, "message": "User rejected sampling"}}, stop)
    with pytest.raises(ClientRequestError) as caught:
        h.session.request("sampling/createMessage", {"messages": [], "maxTokens": 1}, timeout=5)
    stop.set()
    assert (caught.value.error.code, caught.value.error.message) == (-1, "User rejected sampling")
    failures: list[ClientRequestError] = []

    def ask() -> None:
        try:
            h.session.request("roots/list", timeout=30)
        except ClientRequestError as err:
            failures.append(err)

    worker = threading.Thread(target=ask)
    worker.start()
    for _ in range(500):
        if any(m.get("method") == "roots/list" for m in h.sent):
            break
        threading.Event().wait(0.01)
    h.session.close()  # the client went away: nobody will answer
    worker.join(5)
    assert failures and failures[0].error.message == "The client is gone"
    with pytest.raises(ClientRequestError):
        h.session.request("roots/list")


def test_elicit_checks_the_answer_against_the_schema() -> None:
    server = make_server()
    outcomes: list[Any] = []
    schema = {"type": "object", "properties": {"age": {"type": "integer"}}, "required": ["age"]}

    def ask(ctx: RequestContext, args: dict[str, Any]) -> str:
        try:
            outcomes.append(ctx.elicit("age?", schema, timeout=5))
        except ClientRequestError as err:
            outcomes.append(err.error.message)
        return "done"

    server.add_tool(Tool("ask", ask))
    for answer in ({"action": "accept", "content": {"age": 3}}, {"action": "accept", "content": {"age": "old"}},
                   {"action": "cancel"}, {"action": "maybe"}):
        h = Routed(server)
        h.ready({"elicitation": {}})
        h.receive(req(2, "tools/call", {"name": "ask"}))
        stop = threading.Event()
        answer_client_requests(h, {"elicitation/create": answer}, stop)
        h.jobs[0].run()
        stop.set()
    assert outcomes[0] == {"action": "accept", "content": {"age": 3}}
    assert "does not fit the schema" in outcomes[1]
    assert outcomes[2] == {"action": "cancel"}
    assert "valid action" in outcomes[3]


def race_progress_against_the_response() -> list[dict[str, Any]]:
    """A thread reports progress as fast as it can while the handler returns; what was sent, in order."""
    server = make_server()
    running = threading.Event()
    contexts: list[RequestContext] = []

    def work(ctx: RequestContext, args: dict[str, Any]) -> str:
        contexts.append(ctx)
        running.set()
        return "ok"

    def spam() -> None:
        running.wait(5)
        for value in range(1, 2000):
            contexts[0].report_progress(value)

    server.add_tool(Tool("work", work))
    h = Routed(server)
    h.receive(req(1, "tools/call", {"name": "work", "_meta": {"progressToken": 1}}))
    spammer = threading.Thread(target=spam)
    spammer.start()
    h.jobs[0].run()
    spammer.join(5)
    return [message for _, message in h.related]


def test_progress_never_follows_the_response_even_when_racing_it() -> None:
    for _round in range(20):
        sent = race_progress_against_the_response()
        kinds = [m.get("method", "response") for m in sent]
        assert kinds[-1] == "response" and kinds.count("response") == 1
        values = [m["params"]["progress"] for m in sent[:-1]]
        assert values == sorted(set(values))


def test_the_client_roots_are_listed_after_initialized_and_after_each_change() -> None:
    server = make_server()
    seen: list[list[dict[str, Any]]] = []
    server.on_roots(lambda session, roots: seen.append(roots))
    h = Routed(server)
    h.ready({"roots": {"listChanged": True}})
    assert len(h.background) == 1  # the listing runs off the reading loop
    stop = threading.Event()
    answer_client_requests(h, {"roots/list": {"roots": [{"uri": "file:///a", "name": "a"}, {"name": "no uri"}, "junk"]}}, stop)
    h.background.pop()()
    h.receive({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"})
    h.background.pop()()
    stop.set()
    assert seen == [[{"uri": "file:///a", "name": "a"}]] * 2
    assert h.session.roots == [{"uri": "file:///a", "name": "a"}]


def test_roots_are_not_asked_for_when_nobody_follows_them_or_the_client_has_none() -> None:
    follower = make_server()
    follower.on_roots(lambda session, roots: None)
    for server, capabilities in ((make_server(), {"roots": {}}), (follower, {}), (follower, {"sampling": {}})):
        h = Routed(server)
        h.ready(capabilities)
        h.receive({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"})
        assert h.background == []
    early = Routed(follower)
    early.receive(req(1, "initialize", {"capabilities": {"roots": {}}}))
    early.receive({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"})  # before initialized
    assert early.background == []


def test_a_failed_roots_listing_keeps_what_was_known(capsys: pytest.CaptureFixture[str]) -> None:
    server = make_server()
    seen: list[Any] = []
    server.on_roots(lambda session, roots: seen.append(roots))
    h = Routed(server)
    h.ready({"roots": {}})
    stop = threading.Event()
    answer_client_requests(h, {"roots/list": {"code": -32601, "message": "Method not found"}}, stop)
    h.background.pop()()
    stop.set()
    assert seen == [] and h.session.roots is None


def call_while_roots_are_listed(server: Server, tool: str) -> tuple[Routed, threading.Thread]:
    """A client with roots is ready, a listing is under way, and a call of `tool` runs on a worker."""
    server.on_roots(lambda session, roots: None)
    h = Routed(server)
    h.ready({"roots": {}})
    h.receive(req(2, "tools/call", {"name": tool}))
    worker = threading.Thread(target=h.jobs[0].run)
    worker.start()
    worker.join(0.2)
    return h, worker


def test_deferred_work_waits_for_a_roots_listing_under_way() -> None:
    h, worker = call_while_roots_are_listed(make_server(), "later")
    assert worker.is_alive() and h.related == []  # waiting for the roots
    stop = threading.Event()
    answer_client_requests(h, {"roots/list": {"roots": []}}, stop)
    h.background.pop()()
    stop.set()
    worker.join(5)
    assert [m["id"] for _, m in h.related] == [2]


def test_a_flood_of_roots_changes_lists_once_more_not_once_each() -> None:
    server = make_server()
    seen: list[Any] = []
    server.on_roots(lambda session, roots: seen.append(roots))
    h = Routed(server)
    h.ready({"roots": {"listChanged": True}})
    for _ in range(1000):
        h.receive({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"})
    assert len(h.background) == 1  # one refresh under way, no thread per notification
    stop = threading.Event()
    answer_client_requests(h, {"roots/list": {"roots": []}}, stop)
    h.background.pop()()
    stop.set()
    assert len(seen) == 2  # the listing under way, then one more for every change that came meanwhile
    h.receive({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"})
    assert len(h.background) == 1  # a later change starts a new refresh


def test_work_cancelled_while_it_waits_for_the_roots_never_runs() -> None:
    server = make_server()
    ran: list[str] = []
    server.add_tool(Tool("write", lambda ctx, args: ran.append("ran") or "written"))
    h, worker = call_while_roots_are_listed(server, "write")
    assert worker.is_alive()
    h.receive({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2}})
    worker.join(2)
    assert not worker.is_alive() and ran == [] and h.related == []


def test_negotiated_capabilities_hold_for_the_whole_session() -> None:
    server = Server("s", "1", list_changed=True)
    server.add_tool(Tool("a", lambda ctx, args: "a", inline=True))
    h = Harness(server)
    h.receive(INIT)
    h.receive({"jsonrpc": "2.0", "method": "notifications/initialized"})
    server.remove_tool("a")
    assert h.receive(req(2, "tools/list")) == [{"jsonrpc": "2.0", "id": 2, "result": {"tools": []}}]
    assert h.receive(req(3, "tools/call", {"name": "a"}))[0]["error"]["message"] == "Unknown tool: a"
    server.add_prompt(Prompt("p", lambda ctx, args: "hello"))
    assert h.receive(req(4, "prompts/list"))[0]["error"]["code"] == -32601  # never declared to this client
    assert Harness(server).receive(req(5, "prompts/list"))[0]["result"]["prompts"][0]["name"] == "p"  # a new one


def test_a_tool_whose_request_to_the_client_fails_is_a_tool_error() -> None:
    server = make_server()
    server.add_tool(Tool("sample", lambda ctx, args: ctx.sample("hi", max_tokens=5)))
    h = Harness(server)
    h.receive(INIT)  # the client declared no sampling capability
    h.receive({"jsonrpc": "2.0", "method": "notifications/initialized"})
    h.receive(req(2, "tools/call", {"name": "sample"}))
    h.jobs[0].run()
    result = h.sent[0]["result"]
    assert result["isError"] is True and "sampling/createMessage" in result["content"][0]["text"]


# -- work that may walk a tree runs off the reading loop; subscriptions keep the client's last word ----------
class Subscriptions:
    """A subscribe handler that records what it was asked and the changes made; it refuses URIs in `gone`."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, bool]] = []
        self.kept: set[str] = set()
        self.gone: set[str] = set()

    def __call__(self, session: Session, uri: str, subscribe: bool) -> Any:
        from shipcode_mcp.primitives import ResourceNotFound

        self.asked.append((uri, subscribe))
        if subscribe and uri in self.gone:
            raise ResourceNotFound(uri)
        return (lambda: self.kept.add(uri)) if subscribe else (lambda: self.kept.discard(uri))


def subscribing_harness() -> tuple[Harness, Subscriptions]:
    server = make_server()
    server.resources_subscribe = True
    handler = Subscriptions()
    server.subscribe_handler = handler
    h = Harness(server)
    h.receive(INIT)
    h.receive({"jsonrpc": "2.0", "method": "notifications/initialized"})
    return h, handler


def test_subscribe_with_a_handler_runs_off_the_loop() -> None:
    h, handler = subscribing_harness()
    assert h.receive(req(2, "resources/subscribe", {"uri": "test://a"})) == []
    assert handler.asked == [] and len(h.jobs) == 1  # nothing ran on the reading loop
    h.jobs.pop().run()
    assert h.sent == [{"jsonrpc": "2.0", "id": 2, "result": {}}]
    assert handler.kept == {"test://a"} and h.session.subscriptions == {"test://a"}


def test_an_unsubscribe_that_overtakes_its_subscribe_wins() -> None:
    h, handler = subscribing_harness()
    h.receive(req(2, "resources/subscribe", {"uri": "test://a"}))
    assert h.receive(req(3, "resources/unsubscribe", {"uri": "test://a"})) == [{"jsonrpc": "2.0", "id": 3, "result": {}}]
    h.jobs.pop().run()  # the subscribe finishes last
    assert h.sent == [{"jsonrpc": "2.0", "id": 2, "result": {}}]
    assert handler.kept == set() and h.session.subscriptions == set()
    # Subscribing again afterwards works as usual.
    h.receive(req(4, "resources/subscribe", {"uri": "test://a"}))
    h.jobs.pop().run()
    assert handler.kept == {"test://a"} and h.session.subscriptions == {"test://a"}


@pytest.mark.parametrize("later_first", [True, False])
def test_of_two_subscribes_the_later_decides_whatever_finishes_first(later_first: bool) -> None:
    h, handler = subscribing_harness()
    h.receive(req(2, "resources/subscribe", {"uri": "test://a"}))
    h.receive(req(3, "resources/subscribe", {"uri": "test://a"}))
    earlier, later = h.jobs
    if later_first:  # the later one is kept; then the earlier is refused (the file went): it must not undo it
        later.run()
        handler.gone.add("test://a")
        earlier.run()
        assert handler.kept == {"test://a"} and h.session.subscriptions == {"test://a"}
    else:  # the earlier one is kept; then the later is refused: the client's last word is "not found"
        earlier.run()
        handler.gone.add("test://a")
        later.run()
        assert handler.kept == set() and h.session.subscriptions == set()
    errors = [m["id"] for m in h.sent if "error" in m]
    assert errors == ([2] if later_first else [3])


def test_a_refused_subscribe_leaves_no_subscription() -> None:
    h, handler = subscribing_harness()
    h.session.subscriptions.add("test://gone")  # subscribed earlier, and the file went since
    handler.kept.add("test://gone")
    handler.gone.add("test://gone")
    h.receive(req(2, "resources/subscribe", {"uri": "test://gone"}))
    h.jobs.pop().run()
    assert h.sent[0]["error"] == {"code": -32002, "message": "Resource not found", "data": {"uri": "test://gone"}}
    assert handler.kept == set() and h.session.subscriptions == set()


def test_a_cancelled_subscribe_changes_nothing() -> None:
    h, handler = subscribing_harness()
    h.receive(req(2, "resources/subscribe", {"uri": "test://a"}))
    h.receive({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2}})
    h.jobs.pop().run()
    assert h.sent == [] and handler.kept == set() and h.session.subscriptions == set()


def test_resources_list_with_a_source_runs_off_the_loop_and_carries_its_meta() -> None:
    class Cut(list[Resource]):
        meta = {"example.test/cut": True}

    called: list[str] = []
    server = make_server()

    def source() -> Cut:
        called.append("source")
        return Cut([Resource("test://b", "b")])

    server.add_resource_source(source, on_new_listing=lambda: called.append("hook"))
    h = Harness(server)
    h.receive(INIT)
    assert h.receive(req(2, "resources/list")) == [] and called == []
    h.jobs.pop().run()
    assert called == ["hook", "source"]
    assert h.sent == [{"jsonrpc": "2.0", "id": 2, "result": {
        "resources": [{"uri": "test://a", "name": "a"}, {"uri": "test://b", "name": "b"}],
        "_meta": {"example.test/cut": True}}}]


def test_resources_list_without_a_source_stays_inline() -> None:
    h = Harness()
    h.receive(INIT)
    assert h.receive(req(2, "resources/list")) == [{"jsonrpc": "2.0", "id": 2, "result": {
        "resources": [{"uri": "test://a", "name": "a"}]}}]

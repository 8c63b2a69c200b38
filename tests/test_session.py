"""The sans-IO session, driven in the test's own thread: no threads, no sleeps, no I/O.

A `Driver` collects what the session sends and keeps its deferred work until the test runs it, so
every interleaving (a cancellation during work, a subscribe finishing after its unsubscribe, a roots
listing under way) is chosen by the test. Runners, and what needs threads by nature, are in
tests/test_runner.py.
"""

from __future__ import annotations

import itertools
import sys
from typing import Any

import pytest

from core_support import INIT, INITIALIZED, Driver, req
from shipcode_mcp.actions import Answer, Cancel, FollowRoots, Release, Report, Send, Start
from shipcode_mcp.context import ClientRequestError, Context
from shipcode_mcp.primitives import Prompt, Resource, ResourceNotFound, ResourceTemplate, Tool
from shipcode_mcp.runner import ThreadRunner
from shipcode_mcp.server import Server
from shipcode_mcp.session import ROOTS_WAIT, TRANSITIONS, Phase

CANCEL_4 = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 4, "reason": "user"}}
LIST_CHANGED = {"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}


def make_server() -> Server:
    server = Server("shipcode-mcp", "1.0.0")
    server.add_tool(Tool("echo", lambda ctx, args: args["text"],
                         {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}, inline=True))
    server.add_tool(Tool("later", lambda ctx, args: "done"))
    server.add_resource(Resource("test://a", "a", reader=lambda ctx, uri: "A"))
    return server


def cancel(msg_id: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": msg_id}}


def ready(server: Server | None = None, capabilities: dict[str, Any] | None = None) -> Driver:
    """A driver past the handshake, with nothing sent yet."""
    driver = Driver(server or make_server())
    driver.handshake(capabilities)
    driver.sent.clear()
    return driver


def done(msg_id: Any, text: str = "done") -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": msg_id, "result": {"content": [{"type": "text", "text": text}], "isError": False}}


# -- the handshake ---------------------------------------------------------------------------------------
def test_initialize_answer_is_exact() -> None:
    d = Driver(make_server())
    assert d.receive(INIT) == [{"jsonrpc": "2.0", "id": 1, "result": {
        "protocolVersion": "2025-06-18", "capabilities": {"tools": {}, "resources": {}},
        "serverInfo": {"name": "shipcode-mcp", "version": "1.0.0"}}}]
    reply = d.receive(INIT)[0]
    assert list(reply) == ["jsonrpc", "id", "result"]
    assert list(reply["result"]) == ["protocolVersion", "capabilities", "serverInfo"]


@pytest.mark.parametrize("version", ["2024-11-05", "2025-03-26", "2025-11-25", "2026-07-28", "1999-01-01", 20250618, None, "", [1]])
def test_any_other_version_is_offered_ours(version: Any) -> None:
    reply = Driver(make_server()).receive(req(1, "initialize", {"protocolVersion": version, "capabilities": {}}))[0]
    assert reply["result"]["protocolVersion"] == "2025-06-18"


def test_missing_params_or_version_default() -> None:
    d = Driver(make_server())
    assert d.receive(req(1, "initialize"))[0]["result"]["protocolVersion"] == "2025-06-18"
    assert d.receive(req(2, "initialize", {}))[0]["result"]["protocolVersion"] == "2025-06-18"


def test_second_initialize_gets_the_same_answer_and_keeps_first_client_state() -> None:
    d = Driver(make_server())
    first = d.receive(req(1, "initialize", {"capabilities": {"roots": {}}, "clientInfo": {"name": "a", "version": "1"}}))
    second = d.receive(req(1, "initialize", {"capabilities": {}, "clientInfo": {"name": "b", "version": "2"}}))
    assert first == second
    assert d.session.client_info["name"] == "a" and "roots" in d.session.client_capabilities


@pytest.mark.parametrize("params", [{"capabilities": "x"}, {"clientInfo": 5}, {"capabilities": []}])
def test_initialize_with_params_of_the_wrong_shape(params: dict[str, Any]) -> None:
    d = Driver(make_server())
    assert d.receive(req(1, "initialize", params)) == [
        {"jsonrpc": "2.0", "id": 1, "error": {"code": -32602, "message": "Invalid params"}}]
    assert d.session.phase is Phase.NEW


# -- the lifecycle: one enum, one table --------------------------------------------------------------------
EVENTS = {  # each event of the table, as a client or the runner makes it happen
    "initialize": lambda d: d.receive(req(7, "initialize", {"capabilities": {}})),
    "initialized": lambda d: d.receive(INITIALIZED),
    "close": lambda d: d.perform(d.session.close()),
}
PATHS = {Phase.NEW: [], Phase.INITIALIZING: ["initialize"], Phase.READY: ["initialize", "initialized"],
         Phase.CLOSED: ["close"], Phase.STATELESS: []}


def in_phase(phase: Phase) -> Driver:
    d = Driver(make_server(), stateless=phase is Phase.STATELESS)
    for event in PATHS[phase]:
        EVENTS[event](d)
    assert d.session.phase is phase
    return d


def test_the_table_names_only_the_events_and_phases_walked_here() -> None:
    assert {event for _, event in TRANSITIONS} == set(EVENTS)
    assert set(PATHS) == set(Phase)


@pytest.mark.parametrize(("phase", "event"), list(itertools.product(Phase, EVENTS)),
                         ids=lambda value: getattr(value, "value", value))
def test_every_phase_and_event_moves_as_the_table_says(phase: Phase, event: str) -> None:
    d = in_phase(phase)
    EVENTS[event](d)
    assert d.session.phase is TRANSITIONS.get((phase, event), phase)
    assert d.session.ready is (d.session.phase is Phase.READY)
    assert d.session.stateless is (d.session.phase is Phase.STATELESS)


def test_initialized_notification_marks_the_session_ready() -> None:
    d = Driver(make_server())
    d.receive(INIT)
    assert not d.session.ready
    assert d.receive(INITIALIZED) == []
    assert d.session.ready


def test_ping_works_in_every_state() -> None:
    for phase in (Phase.NEW, Phase.INITIALIZING, Phase.READY, Phase.STATELESS):
        d = in_phase(phase)
        assert d.receive(req(5, "ping")) == [{"jsonrpc": "2.0", "id": 5, "result": {}}]
        assert d.receive(req("p", "ping", {})) == [{"jsonrpc": "2.0", "id": "p", "result": {}}]
        assert d.receive(req(6, "ping", {"_meta": {"x": 1}})) == [{"jsonrpc": "2.0", "id": 6, "result": {}}]


def test_requests_before_initialize_are_served() -> None:
    reply = Driver(make_server()).receive(req(2, "tools/list"))[0]
    assert [t["name"] for t in reply["result"]["tools"]] == ["echo", "later"]


# -- what is not a request -----------------------------------------------------------------------------
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
    assert Driver(make_server()).receive(message) == [{"jsonrpc": "2.0", "id": reply_id, "error": INVALID}]


@pytest.mark.parametrize("method", ["server/discover", "nope", "", "tools/List", "prompts/list", "logging/setLevel",
                                    "resources/subscribe", "completion/complete", "notifications/initialized"])
def test_unknown_or_not_offered_methods(method: str) -> None:
    d = Driver(make_server())
    for _state in range(2):
        assert d.receive(req(9, method)) == [{"jsonrpc": "2.0", "id": 9, "error": {"code": -32601, "message": "Method not found"}}]
        d.receive(INIT)


@pytest.mark.parametrize("message", [
    INITIALIZED,
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
    d = Driver(make_server())
    assert d.receive(message) == []
    assert d.sent == [] and d.jobs == [] and d.actions == []


# -- requests: inline, deferred, failing -------------------------------------------------------------------
def test_inline_tool_answers_at_once_in_spec_order() -> None:
    reply = Driver(make_server()).receive(req(3, "tools/call", {"name": "echo", "arguments": {"text": "h\u00e9"}}))
    assert reply == [done(3, "h\u00e9")]


def test_a_deferred_answer_appears_only_when_the_test_runs_the_job() -> None:
    d = Driver(make_server())
    assert d.receive(req(4, "tools/call", {"name": "later"})) == []
    assert d.sent == [] and len(d.jobs) == 1 and list(d.session.in_flight) == [4]
    assert d.run() == [done(4)]
    assert d.session.in_flight == {}


def test_every_answer_names_the_request_it_belongs_to() -> None:
    session = Driver(make_server()).session
    [inline] = session.receive(req(3, "tools/call", {"name": "echo", "arguments": {"text": "x"}}))
    [unknown] = session.receive(req("u", "nope"))
    [start] = session.receive(req(4, "tools/call", {"name": "later"}))
    assert isinstance(inline, Send) and isinstance(unknown, Send) and isinstance(start, Start)
    [deferred] = session.finish(start.job, start.job.run())
    assert isinstance(deferred, Send)
    assert [(s.related, s.message["id"]) for s in (inline, unknown, deferred)] == [(3, 3), ("u", "u"), (4, 4)]


@pytest.mark.parametrize(("params", "message"), [
    ({}, "Invalid params: name must be a string"),
    ({"name": 5}, "Invalid params: name must be a string"),
    ({"name": "nope"}, "Unknown tool: nope"),
    ({"name": "echo", "arguments": []}, "Invalid params: arguments must be an object"),
    ({"name": "echo", "arguments": "x"}, "Invalid params: arguments must be an object"),
])
def test_tools_call_protocol_errors(params: dict[str, Any], message: str) -> None:
    assert Driver(make_server()).receive(req(1, "tools/call", params)) == [
        {"jsonrpc": "2.0", "id": 1, "error": {"code": -32602, "message": message}}]


def test_arguments_failing_the_schema_are_a_tool_error_naming_the_argument() -> None:
    result = Driver(make_server()).receive(req(1, "tools/call", {"name": "echo", "arguments": {"text": 5}}))[0]["result"]
    assert result["isError"] is True
    assert "text" in result["content"][0]["text"] and "string" in result["content"][0]["text"]
    result = Driver(make_server()).receive(req(1, "tools/call", {"name": "echo", "arguments": {}}))[0]["result"]
    assert result["isError"] is True and "text" in result["content"][0]["text"]


def crash(ctx: Context, args: dict[str, Any]) -> Any:
    if args.get("exit"):
        sys.exit(3)
    return 1 / 0


@pytest.mark.parametrize("inline", [True, False])
@pytest.mark.parametrize("exits", [False, True])
def test_a_bug_in_a_handler_is_an_internal_error_without_details(inline: bool, exits: bool,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    server = make_server()
    server.add_tool(Tool("boom", crash, inline=inline))
    d = Driver(server)
    sent = d.receive(req(1, "tools/call", {"name": "boom", "arguments": {"exit": exits}}))
    if not inline:
        assert sent == []
        sent = d.run()
    assert sent == [{"jsonrpc": "2.0", "id": 1, "error": {"code": -32603, "message": "Internal error"}}]
    culprit = "SystemExit" if exits else "ZeroDivisionError"
    [report] = d.of_kind(Report)
    assert "tools/call failed" in report.text and culprit in report.text
    assert culprit in capsys.readouterr().err
    assert d.receive(req(2, "ping")) == [{"jsonrpc": "2.0", "id": 2, "result": {}}]  # the session lives on


def test_resources_read_and_not_found() -> None:
    d = Driver(make_server())
    assert d.receive(req(1, "resources/read", {"uri": "test://a"})) == []
    assert d.receive(req(2, "resources/read", {"uri": "test://missing"})) == []
    assert d.receive(req(3, "resources/read", {})) == [
        {"jsonrpc": "2.0", "id": 3, "error": {"code": -32602, "message": "Invalid params: uri must be a string"}}]
    assert d.run_all() == [
        {"jsonrpc": "2.0", "id": 1, "result": {"contents": [{"uri": "test://a", "text": "A"}]}},
        {"jsonrpc": "2.0", "id": 2, "error": {"code": -32002, "message": "Resource not found", "data": {"uri": "test://missing"}}},
    ]


def test_resources_list_with_a_source_runs_off_the_loop_and_carries_its_meta() -> None:
    class Cut(list[Resource]):
        meta = {"example.test/cut": True}

    called: list[str] = []
    server = make_server()

    def source() -> Cut:
        called.append("source")
        return Cut([Resource("test://b", "b")])

    server.add_resource_source(source, on_new_listing=lambda: called.append("hook"))
    d = Driver(server)
    d.receive(INIT)
    assert d.receive(req(2, "resources/list")) == [] and called == []
    assert d.run() == [{"jsonrpc": "2.0", "id": 2, "result": {
        "resources": [{"uri": "test://a", "name": "a"}, {"uri": "test://b", "name": "b"}],
        "_meta": {"example.test/cut": True}}}]
    assert called == ["hook", "source"]


def test_resources_list_without_a_source_stays_inline() -> None:
    d = Driver(make_server())
    d.receive(INIT)
    assert d.receive(req(2, "resources/list")) == [{"jsonrpc": "2.0", "id": 2, "result": {
        "resources": [{"uri": "test://a", "name": "a"}]}}]


# -- cancellation and ids ------------------------------------------------------------------------------------
def test_a_cancelled_request_is_a_cancel_action_and_sends_nothing() -> None:
    d = Driver(make_server())
    d.receive(req(4, "tools/call", {"name": "later"}))
    [job] = d.jobs
    assert d.receive(CANCEL_4) == []
    [action] = d.actions
    assert isinstance(action, Cancel) and action.context is job.context and job.context.cancelled
    assert d.receive(CANCEL_4) == [] and len(d.actions) == 1  # cancelled already: no second Cancel
    assert d.run() == []
    assert d.sent == [] and d.session.in_flight == {}


def test_a_cancellation_while_the_work_runs_runs_its_callbacks_and_nothing_is_sent() -> None:
    server = make_server()
    d = Driver(server)
    seen: list[str] = []

    def slow(ctx: Context, args: dict[str, Any]) -> str:
        ctx.on_cancel(lambda: seen.append("killed"))
        d.receive(cancel(1))  # the reading loop gets the client's cancellation while the work runs
        seen.append("woke" if ctx.wait_cancelled(0) else "not woken")
        ctx.check_cancelled()
        return "not cancelled"

    server.add_tool(Tool("slow", slow))
    d.receive(req(1, "tools/call", {"name": "slow"}))
    assert d.run() == []
    assert seen == ["killed", "woke"] and d.sent == [] and d.session.in_flight == {}
    assert d.receive(cancel(1)) == [] and len(d.of_kind(Cancel)) == 1  # over: a late cancellation is ignored


def test_cancel_for_unknown_finished_or_malformed_ids_is_ignored() -> None:
    d = Driver(make_server())
    d.receive(req(4, "tools/call", {"name": "later"}))
    d.run()
    for params in ({"requestId": 4}, {"requestId": 99}, {"requestId": None}, {}, {"requestId": [4]}):
        assert d.receive({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": params}) == []
    assert len(d.sent) == 1 and d.actions == []


def test_cancel_all_cancels_what_is_in_flight_once() -> None:
    d = Driver(make_server())
    d.receive(req(1, "tools/call", {"name": "later"}))
    d.receive(req(2, "tools/call", {"name": "later"}))
    cancels = d.session.cancel_all()
    assert [c.context.request_id for c in cancels if isinstance(c, Cancel)] == [1, 2] and len(cancels) == 2
    d.perform(cancels)
    assert d.session.cancel_all() == []
    assert d.run_all() == []


def test_a_duplicate_in_flight_id_is_refused_and_the_first_still_answers() -> None:
    d = Driver(make_server())
    d.receive(req(4, "tools/call", {"name": "later"}))
    reply = d.receive(req(4, "tools/call", {"name": "later"}))
    assert reply == [{"jsonrpc": "2.0", "id": 4, "error": {
        "code": -32600, "message": "Invalid Request", "data": "id is in use by a request in progress"}}]
    assert len(d.jobs) == 1
    assert d.run() == [done(4)]
    assert d.receive(req(4, "tools/call", {"name": "later"})) == [] and d.run() == [done(4)]  # over: the id is free again


# -- progress and logging -------------------------------------------------------------------------------------
def test_progress_only_with_a_token_increasing_and_never_after_the_response() -> None:
    server = make_server()
    server.add_tool(Tool("work", lambda ctx, args: "ok"))
    d = Driver(server)
    d.receive(req(1, "tools/call", {"name": "work", "_meta": {"progressToken": "t"}}))
    d.receive(req(2, "tools/call", {"name": "work"}))
    for job in list(d.jobs):
        ctx = job.context
        assert ctx.report_progress(1, 10, "one") is (ctx.request_id == 1)
        assert ctx.report_progress(1) is False  # not increasing
        assert ctx.report_progress(0.5) is False
        assert ctx.report_progress(2.5) is (ctx.request_id == 1)
        d.run(job)
        assert ctx.report_progress(3) is False
    assert d.sent == [
        {"jsonrpc": "2.0", "method": "notifications/progress",
         "params": {"progressToken": "t", "progress": 1, "total": 10, "message": "one"}},
        {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": "t", "progress": 2.5}},
        done(1, "ok"),
        done(2, "ok"),
    ]


def test_log_messages_need_the_capability_and_pass_the_level_threshold() -> None:
    quiet = ready()
    quiet.receive(req(2, "tools/call", {"name": "later"}))
    assert quiet.jobs[0].context.log("emergency", "x") is False and quiet.sent == []
    server = make_server()
    server.logging_enabled = True
    d = ready(server)
    d.receive(req(2, "tools/call", {"name": "later"}))
    before = d.jobs[-1].context
    assert before.log("debug", "hidden") is False  # below the default threshold, info
    assert before.log("info", {"k": 1}, "db") is True
    assert d.receive(req(3, "logging/setLevel", {"level": "error"})) == [{"jsonrpc": "2.0", "id": 3, "result": {}}]
    d.receive(req(4, "tools/call", {"name": "later"}))
    after = d.jobs[-1].context
    assert after.log("warning", "hidden") is False
    assert after.log("critical", "shown") is True
    assert after.log("nonsense", "x") is False
    assert before.log("warning", "its own level") is True  # the level travels with the request
    d.run_all()
    assert after.log("critical", "too late") is False  # nothing about a request after its response
    assert [m.get("params") or m["id"] for m in d.sent] == [
        {"level": "info", "logger": "db", "data": {"k": 1}}, 3,
        {"level": "critical", "data": "shown"}, {"level": "warning", "data": "its own level"}, 2, 4]
    assert {m.get("method") for m in d.sent if "params" in m} == {"notifications/message"}
    assert d.receive(req(5, "logging/setLevel", {"level": "loud"}))[0]["error"]["code"] == -32602


# -- pagination and capabilities ---------------------------------------------------------------------------------
def test_bad_cursor_is_invalid_params() -> None:
    for cursor in ("nonsense", "MTA6ZmZmZmZmZmY=", 5, ""):
        reply = Driver(make_server()).receive(req(1, "tools/list", {"cursor": cursor}))[0]
        assert reply["error"]["code"] == -32602


def test_pagination_walks_every_item_once() -> None:
    server = Server("s", "1", page_size=7)
    for i in range(30):
        server.add_tool(Tool(f"t{i:02}", lambda ctx, args: None))
    d = Driver(server)
    names: list[str] = []
    cursor = None
    for page in itertools.count(1):
        result = d.request(page, "tools/list", {"cursor": cursor} if cursor else {})["result"]
        names += [t["name"] for t in result["tools"]]
        cursor = result.get("nextCursor")
        if cursor is None:
            break
    assert names == [f"t{i:02}" for i in range(30)] and page == 5


def test_negotiated_capabilities_hold_for_the_whole_session() -> None:
    server = Server("s", "1", list_changed=True)
    server.add_tool(Tool("a", lambda ctx, args: "a", inline=True))
    d = ready(server)
    server.remove_tool("a")
    assert d.receive(req(2, "tools/list")) == [{"jsonrpc": "2.0", "id": 2, "result": {"tools": []}}]
    assert d.receive(req(3, "tools/call", {"name": "a"}))[0]["error"]["message"] == "Unknown tool: a"
    server.add_prompt(Prompt("p", lambda ctx, args: "hello"))
    assert d.receive(req(4, "prompts/list"))[0]["error"]["code"] == -32601  # never declared to this client
    assert Driver(server).receive(req(5, "prompts/list"))[0]["result"]["prompts"][0]["name"] == "p"  # a new one


def test_a_stateless_session_serves_without_a_handshake_and_cannot_ask_the_client() -> None:
    follower = make_server()
    follower.on_roots(lambda session, roots: None)
    d = Driver(follower, stateless=True)
    assert d.session.stateless and not d.session.ready  # STATELESS is a phase of its own
    assert d.receive(req(1, "tools/call", {"name": "echo", "arguments": {"text": "x"}})) == [done(1, "x")]
    d.receive(req(2, "initialize", {"capabilities": {"roots": {}}}))
    d.receive(INITIALIZED)
    d.receive(LIST_CHANGED)
    assert d.session.phase is Phase.STATELESS and d.session.client_capabilities == {} and d.actions == []
    with pytest.raises(ClientRequestError) as caught:
        d.session.ask("roots/list", None, None)
    assert "stateless" in caught.value.error.message
    assert [m["id"] for m in d.sent] == [1, 2] and d.session.outgoing == {}


# -- list changes and resource updates reach only the right clients --------------------------------------------
class Connected:
    """A threaded runner connected to a server, whose writes (related, message) are collected."""

    def __init__(self, server: Server) -> None:
        self.written: list[tuple[Any, dict[str, Any]]] = []
        self.runner = ThreadRunner(server, lambda message, related: self.written.append((related, message)))

    def handshake(self, initialized: bool = True) -> Connected:
        self.runner.receive(INIT)
        if initialized:
            self.runner.receive(INITIALIZED)
        self.written.clear()
        return self

    @property
    def sent(self) -> list[dict[str, Any]]:
        return [message for _, message in self.written]


def test_messages_of_no_request_take_the_session_wide_way() -> None:
    server = make_server()
    server.enable_list_changed("tools")
    client = Connected(server).handshake()
    server.add_tool(Tool("new", lambda ctx, args: None))
    assert client.written == [(None, {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})]


def test_list_changes_go_only_to_sessions_whose_initialize_declared_them() -> None:
    server = make_server()
    before = Connected(server).handshake()  # initialized while listChanged was not offered
    server.enable_list_changed("tools", "prompts")
    after = Connected(server).handshake()
    not_ready = Connected(server).handshake(initialized=False)
    assert after.runner.session.capabilities == {"tools": {"listChanged": True}, "resources": {}}
    assert set(server.clients()) == {before.runner, after.runner}  # the ready ones
    server.remove_tool("later")
    server.remove_tool("missing")  # no change, no notification
    server.add_prompt(Prompt("p", lambda ctx, args: "x"))  # prompts was not declared at initialize
    assert after.sent == [{"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}]
    assert before.sent == [] and not_ready.sent == []


def test_removing_a_resource_a_template_or_a_prompt_is_said_once_and_shows_in_the_lists() -> None:
    """docs/library.md, "Changing what is offered": each remove_* takes the item out of its list and sends one
    list_changed to the sessions that declared it; removing what is not there sends nothing."""
    server = Server("s", "1", list_changed=True)
    server.add_resource(Resource("test://a", "a"))
    server.add_resource_template(ResourceTemplate("test://{name}", "named", lambda ctx, uri, args: "x"))
    server.add_prompt(Prompt("p", lambda ctx, args: "x"))
    client = Connected(server).handshake()
    d = ready(server)  # initialized while they were offered: the lists stay its to ask for
    server.remove_resource("test://a")
    server.remove_resource("test://a")
    server.remove_resource_template("test://{name}")
    server.remove_resource_template("test://{name}")
    server.remove_prompt("p")
    server.remove_prompt("p")
    changed = [message["method"] for message in client.sent]
    assert changed == ["notifications/resources/list_changed"] * 2 + ["notifications/prompts/list_changed"]
    assert d.receive(req(2, "resources/list"))[0]["result"]["resources"] == []
    assert d.receive(req(3, "resources/templates/list"))[0]["result"]["resourceTemplates"] == []
    assert d.receive(req(4, "prompts/list"))[0]["result"]["prompts"] == []


def test_a_notification_handler_hears_the_clients_notifications_of_its_method() -> None:
    server = make_server()
    heard: list[Any] = []
    server.on_notification("notifications/custom", lambda session, params: heard.append(params))
    d = ready(server)
    d.receive({"jsonrpc": "2.0", "method": "notifications/custom", "params": {"n": 1}})
    d.receive({"jsonrpc": "2.0", "method": "notifications/other", "params": {"n": 2}})
    assert heard == [{"n": 1}] and d.sent == []


def test_resource_updates_reach_subscribers_only() -> None:
    server = Server("s", "1", subscribe=True)
    server.add_resource(Resource("test://a", "a"))
    one, two, other = Connected(server).handshake(), Connected(server).handshake(), Connected(server).handshake()
    one.runner.receive(req(2, "resources/subscribe", {"uri": "test://a"}))
    two.runner.receive(req(2, "resources/subscribe", {"uri": "test://dir"}))
    assert one.sent == two.sent == [{"jsonrpc": "2.0", "id": 2, "result": {}}]
    assert server.subscriptions() == {"test://a": None, "test://dir": None}
    one.written.clear()
    two.written.clear()

    def updated(uri: str) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": uri}}

    server.resource_updated("test://a")
    server.resource_updated("test://dir/file")
    server.resource_updated("test://directory")  # not inside test://dir
    server.resource_updated("test://dir/only-exact", within=False)
    assert one.written == [(None, updated("test://a"))]
    assert two.written == [(None, updated("test://dir/file"))]
    assert other.written == []
    one.runner.receive(req(3, "resources/unsubscribe", {"uri": "test://a"}))
    server.resource_updated("test://a")
    assert one.sent[1:] == [{"jsonrpc": "2.0", "id": 3, "result": {}}]
    assert server.subscriptions() == {"test://dir": None}


# -- subscriptions: the client's last word stands, in whatever order the checks finish ------------------------------
class Checks:
    """A subscribe check that records what it was asked; it refuses URIs in `gone`."""

    def __init__(self) -> None:
        self.asked: list[str] = []
        self.gone: set[str] = set()

    def __call__(self, ctx: Context, uri: str) -> str:
        self.asked.append(uri)
        if uri in self.gone:
            raise ResourceNotFound(uri)
        return f"check {len(self.asked)}"


def subscribing() -> tuple[Driver, Checks]:
    server = make_server()
    checks = Checks()
    server.on_subscribe(checks)
    return ready(server), checks


def subscribe(d: Driver, msg_id: int, method: str = "resources/subscribe") -> list[dict[str, Any]]:
    return d.receive(req(msg_id, method, {"uri": "test://a"}))


def test_a_subscribe_with_a_check_runs_off_the_loop() -> None:
    d, checks = subscribing()
    assert subscribe(d, 2) == []
    assert checks.asked == [] and len(d.jobs) == 1  # nothing ran on the reading loop
    assert d.run() == [{"jsonrpc": "2.0", "id": 2, "result": {}}]
    assert d.session.subscriptions == {"test://a": "check 1"}


def test_an_unsubscribe_that_overtakes_its_subscribe_wins() -> None:
    d, checks = subscribing()
    subscribe(d, 2)
    assert subscribe(d, 3, "resources/unsubscribe") == [{"jsonrpc": "2.0", "id": 3, "result": {}}]
    assert d.run() == [{"jsonrpc": "2.0", "id": 2, "result": {}}]  # the subscribe finishes last
    assert checks.asked == ["test://a"] and d.session.subscriptions == {}
    subscribe(d, 4)  # subscribing again afterwards works as usual
    d.run()
    assert d.session.subscriptions == {"test://a": "check 2"}


@pytest.mark.parametrize("later_first", [True, False])
def test_of_two_subscribes_the_later_decides_whatever_finishes_first(later_first: bool) -> None:
    d, checks = subscribing()
    subscribe(d, 2)
    subscribe(d, 3)
    earlier, later = d.jobs
    if later_first:  # the later one is kept; then the earlier is refused (the file went): it must not undo it
        d.run(later)
        checks.gone.add("test://a")
        d.run(earlier)
        assert d.session.subscriptions == {"test://a": "check 1"}
    else:  # the earlier one succeeds; then the later is refused: the client's last word is "not found"
        d.run(earlier)
        checks.gone.add("test://a")
        d.run(later)
        assert d.session.subscriptions == {}
    assert [m["id"] for m in d.sent if "error" in m] == ([2] if later_first else [3])


def test_a_refused_subscribe_leaves_no_subscription() -> None:
    d, checks = subscribing()
    subscribe(d, 2)
    d.run()
    assert d.session.subscriptions == {"test://a": "check 1"}
    checks.gone.add("test://a")  # subscribed earlier, and the file went since
    subscribe(d, 3)
    assert d.run() == [{"jsonrpc": "2.0", "id": 3, "error": {
        "code": -32002, "message": "Resource not found", "data": {"uri": "test://a"}}}]
    assert d.session.subscriptions == {}


def test_a_cancelled_subscribe_changes_nothing() -> None:
    d, checks = subscribing()
    subscribe(d, 2)
    d.receive(cancel(2))
    assert d.run() == [] and checks.asked == [] and d.session.subscriptions == {}
    subscribe(d, 3)
    d.run()
    subscribe(d, 4)
    d.receive(cancel(4))
    d.run()
    assert d.session.subscriptions == {"test://a": "check 1"}  # as it was
    assert subscribe(d, 5, "resources/unsubscribe") == [{"jsonrpc": "2.0", "id": 5, "result": {}}]
    assert d.session.subscriptions == {}


def test_a_subscribe_cancelled_while_its_check_runs_changes_nothing() -> None:
    server = make_server()
    drivers: list[Driver] = []

    def check(ctx: Context, uri: str) -> str:
        drivers[0].receive(cancel(2))  # arrives while the check walks
        return "kept"

    server.on_subscribe(check)
    d = ready(server)
    drivers.append(d)
    subscribe(d, 2)
    assert d.run() == [] and d.session.subscriptions == {}


def test_a_cancel_the_session_read_decides_before_the_runner_has_cancelled_the_context() -> None:
    """The runner performs Cancel outside the session's calls: finish must already treat the request as
    cancelled (no answer, no subscription), or the client would be subscribed without being told."""
    d, checks = subscribing()
    subscribe(d, 2)
    [job] = d.jobs
    actions = d.session.receive(cancel(2))  # read, not yet performed
    assert [type(action).__name__ for action in actions] == ["Cancel"] and not job.context.cancelled
    assert d.session.finish(job, job.run()) == []
    assert checks.asked == ["test://a"] and d.session.subscriptions == {}
    assert d.session.receive(cancel(2)) == []  # and nothing is left to cancel


# -- the client's roots, as actions ------------------------------------------------------------------------------
def follower() -> Server:
    server = make_server()
    server.on_roots(lambda session, roots: None)
    return server


ROOTS = [{"uri": "file:///a", "name": "a"}]


def test_the_roots_are_followed_after_initialized_and_after_each_change() -> None:
    d = Driver(follower())
    d.receive(req(1, "initialize", {"capabilities": {"roots": {"listChanged": True}}}))
    d.receive(LIST_CHANGED)  # before initialized: nothing to follow yet
    assert d.actions == []
    d.receive(INITIALIZED)
    assert len(d.of_kind(FollowRoots)) == 1 and d.session.roots_listing
    assert d.session.roots_listed(ROOTS) == []
    assert d.session.roots == ROOTS and not d.session.roots_listing
    d.receive(LIST_CHANGED)
    assert len(d.of_kind(FollowRoots)) == 2 and len(d.sent) == 1  # the initialize answer, nothing else


@pytest.mark.parametrize(("follows", "capabilities"), [(False, {"roots": {}}), (True, {}), (True, {"sampling": {}})])
def test_roots_are_not_asked_for_when_nobody_follows_them_or_the_client_has_none(
        follows: bool, capabilities: dict[str, Any]) -> None:
    d = ready(follower() if follows else make_server(), capabilities)
    d.receive(LIST_CHANGED)
    assert d.actions == []


def test_a_failed_roots_listing_keeps_what_was_known() -> None:
    d = ready(follower(), {"roots": {}})
    d.session.roots_listed(ROOTS)
    d.receive(LIST_CHANGED)
    assert len(d.of_kind(FollowRoots)) == 2
    assert d.session.roots_listed(None) == []
    assert d.session.roots == ROOTS and not d.session.roots_listing


def test_deferred_work_waits_for_a_listing_under_way_until_the_roots_come() -> None:
    d = ready(follower(), {"roots": {}})
    assert d.receive(req(2, "tools/call", {"name": "later"})) == []
    assert d.receive(req(3, "tools/call", {"name": "later"})) == []
    assert d.jobs == [] and [type(a) for a in d.actions] == [FollowRoots, Release]  # one timer for all the held work
    assert d.of_kind(Release)[0].seconds == ROOTS_WAIT
    assert d.receive(req(4, "tools/call", {"name": "echo", "arguments": {"text": "x"}})) == [done(4, "x")]  # inline: at once
    d.perform(d.session.roots_listed(ROOTS))
    assert [job.context.request_id for job in d.jobs] == [2, 3]
    assert d.run_all() == [done(2), done(3)]
    assert d.receive(req(5, "tools/call", {"name": "later"})) == [] and len(d.jobs) == 1  # no listing: at once


def test_held_work_starts_when_the_wait_is_over_even_if_the_roots_never_come() -> None:
    d = ready(follower(), {"roots": {}})
    d.receive(req(2, "tools/call", {"name": "later"}))
    d.perform(d.session.release_held())  # the Release timer fired
    assert d.run_all() == [done(2)]
    assert d.session.roots_listed(ROOTS) == [] and d.jobs == []  # the roots came later: nothing is started twice
    assert d.session.release_held() == []


def test_a_flood_of_roots_changes_lists_once_more_not_once_each() -> None:
    d = ready(follower(), {"roots": {"listChanged": True}})
    for _ in range(1000):
        d.receive(LIST_CHANGED)
    assert len(d.of_kind(FollowRoots)) == 1  # one refresh under way, none per notification
    d.receive(req(2, "tools/call", {"name": "later"}))
    again = d.session.roots_listed([{"uri": "file:///old"}])
    assert [type(a) for a in again] == [FollowRoots]  # one more for every change that came meanwhile
    d.perform(again)
    assert d.jobs == [] and d.session.roots_listing  # the held work waits for the newest roots
    d.perform(d.session.roots_listed(ROOTS))
    assert d.session.roots == ROOTS and [job.context.request_id for job in d.jobs] == [2]
    d.receive(LIST_CHANGED)
    assert len(d.of_kind(FollowRoots)) == 3  # a later change starts a new refresh


def test_work_cancelled_while_it_waits_for_the_roots_never_runs() -> None:
    server = follower()
    ran: list[str] = []

    def write(ctx: Context, args: dict[str, Any]) -> str:
        ran.append("ran")
        return "written"

    server.add_tool(Tool("write", write))
    d = ready(server, {"roots": {}})
    d.receive(req(2, "tools/call", {"name": "write"}))
    d.receive(cancel(2))
    assert [type(a) for a in d.actions] == [FollowRoots, Release, Cancel]
    d.perform(d.session.roots_listed(ROOTS))
    assert d.run_all() == [] and ran == [] and d.sent == [] and d.session.in_flight == {}


# -- asking the client: gating and correlation ----------------------------------------------------------------
def refusal(d: Driver, method: str) -> tuple[int, str]:
    with pytest.raises(ClientRequestError) as caught:
        d.session.ask(method, None, None)
    return caught.value.error.code, caught.value.error.message


def test_asking_the_client_is_gated_by_its_capabilities_and_the_lifecycle() -> None:
    d = Driver(make_server())
    d.receive(req(1, "initialize", {"capabilities": {"roots": {"listChanged": True}}}))
    assert refusal(d, "roots/list") == (-32600, "The client has not finished initialization")
    assert d.session.ask("ping", None, None) == {"jsonrpc": "2.0", "id": 1, "method": "ping"}  # ping needs no handshake
    d.receive(INITIALIZED)
    assert refusal(d, "sampling/createMessage") == (-32601, "The client does not support sampling/createMessage")
    assert refusal(d, "elicitation/create") == (-32601, "The client does not support elicitation/create")
    assert d.session.ask("roots/list", None, None) == {"jsonrpc": "2.0", "id": 2, "method": "roots/list"}
    assert list(d.session.outgoing) == [1, 2]  # refusals register nothing
    d.perform(d.session.close())
    assert refusal(d, "roots/list") == (-32603, "The client is gone")
    stateless = Driver(make_server(), stateless=True)
    assert refusal(stateless, "ping") == (-32600, "Cannot send ping: a stateless server has no session to carry the answer")
    assert len(d.sent) == 1 and stateless.sent == []  # asking sends nothing itself: the runner writes the request


def test_only_our_requests_are_answered_and_each_once() -> None:
    d = ready(capabilities={"roots": {}, "sampling": {}})
    d.receive(req(5, "tools/call", {"name": "later"}))
    parent = d.jobs[0].context
    first = d.session.ask("roots/list", None, parent)
    second = d.session.ask("sampling/createMessage", {"messages": [], "maxTokens": 1}, None)
    assert (first["id"], second["id"]) == (1, 2) and second["params"] == {"messages": [], "maxTokens": 1}
    refused = {"jsonrpc": "2.0", "id": 2, "error": {"code": -1, "message": "User rejected sampling"}}
    [answer] = d.session.receive(refused)
    assert isinstance(answer, Answer) and (answer.request_id, answer.response) == (2, refused)
    assert d.session.receive(refused) == []  # once
    for stranger in ({"jsonrpc": "2.0", "id": 99, "result": {}}, {"jsonrpc": "2.0", "id": "1", "result": {}},
                     {"jsonrpc": "2.0", "id": 5, "result": {}}):  # not ours: 5 is the client's own request
        assert d.session.receive(stranger) == []
    listed = {"jsonrpc": "2.0", "id": 1, "result": {"roots": []}}
    [answer] = d.session.receive(listed)
    assert isinstance(answer, Answer) and (answer.request_id, answer.response) == (1, listed)
    assert d.session.outgoing == {} and d.sent == [] and list(d.session.in_flight) == [5]


def test_giving_up_tells_the_client_on_behalf_of_the_request_that_asked() -> None:
    d = ready(capabilities={"elicitation": {}, "roots": {}})
    d.receive(req(5, "tools/call", {"name": "later"}))
    ours = d.session.ask("elicitation/create", {"message": "name?", "requestedSchema": {}}, d.jobs[0].context)
    [notice] = d.session.give_up(ours["id"], "The request that needed it was cancelled")
    assert isinstance(notice, Send) and notice.related == 5
    assert notice.message == {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {
        "requestId": ours["id"], "reason": "The request that needed it was cancelled"}}
    assert d.session.give_up(ours["id"], "again") == []  # once
    assert d.session.receive({"jsonrpc": "2.0", "id": ours["id"], "result": {"action": "decline"}}) == []  # a late answer
    alone = d.session.ask("roots/list", None, None)
    [notice] = d.session.give_up(alone["id"], "Timed out after 0.05 s")
    assert isinstance(notice, Send) and notice.related is None
    assert notice.message["params"] == {"requestId": alone["id"], "reason": "Timed out after 0.05 s"}
    answered = d.session.ask("roots/list", None, None)
    d.session.receive({"jsonrpc": "2.0", "id": answered["id"], "result": {"roots": []}})
    assert d.session.give_up(answered["id"], "too late") == []  # answered first: nothing to cancel


def test_close_answers_every_pending_ask_with_none_and_still_answers_requests_read() -> None:
    d = ready(capabilities={"roots": {}, "sampling": {}})
    d.receive(req(5, "tools/call", {"name": "later"}))
    first = d.session.ask("roots/list", None, None)
    second = d.session.ask("sampling/createMessage", {"messages": [], "maxTokens": 1}, None)
    answers = d.session.close()
    assert [(type(a), getattr(a, "request_id", None), getattr(a, "response", "?")) for a in answers] == [
        (Answer, first["id"], None), (Answer, second["id"], None)]
    assert d.session.close() == [] and d.session.phase is Phase.CLOSED
    assert d.session.receive({"jsonrpc": "2.0", "id": first["id"], "result": {"roots": []}}) == []
    assert d.session.give_up(second["id"], "Timed out") == []  # the client is gone: nobody to tell
    assert d.run() == [done(5)]  # a request read before the end is still answered

"""The session's modern era (MCP 2026-07-28), sans-IO: every request stands alone, carrying its version,
capabilities and identity in `_meta`, beside a legacy (2025-06-18) session in the same `Session`.

Driven by `core_support.Driver` in the test's own thread (no threads, no sleeps): deferred work waits
until the test runs it, an async handler's work is awaited on a loop of the test's own. Every message the
session writes here is checked against the 2026-07-28 schema (the definition of its kind), or the
2025-06-18 one for legacy messages, by `support.validate_server_message`.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from core_support import INIT, Driver, req
from shipcode_mcp import era
from shipcode_mcp.actions import AdoptRoots, Job, Release, Report, Send, Start
from shipcode_mcp.context import ClientRequestError, Context
from shipcode_mcp.primitives import Prompt, Resource, ResourceNotFound, Tool
from shipcode_mcp.server import Server
from support import modern_definition, validate_modern, validate_server_message

SERVER_INFO = {"name": "shipcode-mcp", "version": "1.0.0"}
INFO_META = {era.SERVER_INFO_KEY: SERVER_INFO}
ID_KEY = era.SUBSCRIPTION_ID_KEY


def meta(capabilities: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    """A modern request's `_meta`: version, capabilities, client identity, and `extra` keys as given."""
    out: dict[str, Any] = {era.VERSION_KEY: "2026-07-28", era.CAPABILITIES_KEY: capabilities or {},
                           era.CLIENT_INFO_KEY: {"name": "t", "version": "1"}}
    out.update(extra)
    return out


def modern(params: dict[str, Any] | None = None, capabilities: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    """`params` with a modern `_meta` (merged over a `_meta` it has)."""
    params = dict(params or {})
    params["_meta"] = {**meta(capabilities, **extra), **params.get("_meta", {})}
    return params


def checked(messages: list[dict[str, Any]], *, legacy: bool = False) -> list[dict[str, Any]]:
    """`messages`, each validated against its era's schema; results and subscription notifications must be
    told modern (the others are shaped alike in both eras and also fit 2026-07-28's unions)."""
    for message in messages:
        validate_server_message(message)
        if legacy:
            assert modern_definition(message) is None, message
            continue
        if "result" in message or ("id" not in message and ID_KEY in message.get("params", {}).get("_meta", {})):
            assert modern_definition(message) is not None, message
        elif "error" in message:
            validate_modern(message, "JSONRPCErrorResponse")
        else:
            validate_modern(message, "ServerNotification")
    return messages


class ModernDriver(Driver):
    """A Driver the server can tell of list changes and updates, as it tells a connected runner."""

    def __init__(self, server: Server, *, stateless: bool = False) -> None:
        super().__init__(server, stateless=stateless)
        self.awaited = 0  # jobs whose coroutine was awaited (async handlers)
        server.connect(self)  # a registry.Client: listening, subscribed, announce

    def listening(self) -> bool:
        return self.session.ready or bool(self.session.listeners)

    def subscribed(self) -> dict[str, Any]:
        return self.session.subscribed()

    def announce(self, method: str, params: dict[str, Any] | None = None, within: bool = True) -> None:
        self.perform(self.session.announce(method, params, within))

    def ask_modern(self, msg_id: Any, method: str, params: dict[str, Any] | None = None,
                   capabilities: dict[str, Any] | None = None, /, **extra: Any) -> dict[str, Any]:
        """A modern request and the work it starts run to its one response, everything sent checked; `extra`: more
        fields of its `_meta`, by their names (with a slash, so written `**{era.LOG_LEVEL_KEY: ...}`)."""
        before = len(self.sent)
        self.receive(req(msg_id, method, modern(params, capabilities, **extra)))
        while self.jobs:
            job = self.jobs[0]
            if job.deferred.awork is not None:
                self.run_async(job)
            else:
                self.run(job)
        sent = checked(self.sent[before:])
        replies = [m for m in sent if m.get("id") == msg_id and "method" not in m]
        assert len(replies) == 1, sent
        return replies[0]

    def run_async(self, job: Job) -> list[dict[str, Any]]:
        """An async handler's work awaited as an asyncio runner awaits it, on a loop of this thread."""
        self.jobs.remove(job)
        self.awaited += 1
        before = len(self.sent)
        outcome = asyncio.run(job.arun())
        actions = self.session.finish(job, outcome)

        def send() -> None:
            self.perform(actions)

        job.context.finish(send)
        return self.sent[before:]


def make_server(**options: Any) -> Server:
    server = Server("shipcode-mcp", "1.0.0", **options)
    server.add_tool(Tool("echo", lambda ctx, args: args["text"],
                         {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}, inline=True))
    server.add_tool(Tool("later", lambda ctx, args: "done"))
    server.add_resource(Resource("test://a", "a", reader=lambda ctx, uri: "A"))
    return server


def text(value: str) -> list[dict[str, Any]]:
    return [{"type": "text", "text": value}]


# -- discover, versions, required _meta ---------------------------------------------------------------------------------
def test_discover_is_exact_in_the_spec_examples_order() -> None:
    d = ModernDriver(make_server(instructions="Read the code."))
    reply = d.ask_modern(1, "server/discover")
    assert reply == {"jsonrpc": "2.0", "id": 1, "result": {
        "resultType": "complete", "supportedVersions": ["2026-07-28", "2025-06-18"],
        "capabilities": {"tools": {}, "resources": {}}, "_meta": INFO_META, "instructions": "Read the code.",
        "ttlMs": 300000, "cacheScope": "public"}}
    assert list(reply["result"]) == ["resultType", "supportedVersions", "capabilities", "_meta", "instructions", "ttlMs",
                                     "cacheScope"]
    plain = ModernDriver(make_server(logging=True, list_changed=True, subscribe=True)).ask_modern(1, "server/discover")
    assert list(plain["result"]) == ["resultType", "supportedVersions", "capabilities", "_meta", "ttlMs", "cacheScope"]
    assert plain["result"]["capabilities"] == {
        "logging": {}, "tools": {"listChanged": True}, "resources": {"subscribe": True, "listChanged": True}}


def test_what_discover_alone_says_of_the_server() -> None:
    """`about` (the spec's Implementation: title, description, websiteUrl, icons) and `discover_instructions` go
    in server/discover only: not in a legacy initialize answer, nor in the serverInfo of every modern result."""
    server = make_server()
    server.about = {"title": "Demo", "description": "A demo.", "websiteUrl": "https://example.com/",
                    "icons": [{"src": "https://example.com/i.svg", "mimeType": "image/svg+xml"}]}
    server.discover_instructions = "Read the code."
    d = ModernDriver(server)
    message = d.ask_modern(1, "server/discover")
    validate_modern(message, "DiscoverResult")
    reply = message["result"]
    assert reply["_meta"]["io.modelcontextprotocol/serverInfo"] == {
        "name": "shipcode-mcp", "version": "1.0.0", **server.about}
    assert reply["instructions"] == "Read the code."
    listed = d.ask_modern(2, "tools/list")["result"]
    assert listed["_meta"]["io.modelcontextprotocol/serverInfo"] == {"name": "shipcode-mcp", "version": "1.0.0"}
    legacy = Driver(server)
    assert legacy.receive(INIT) and legacy.sent[0]["result"]["serverInfo"] == {"name": "shipcode-mcp", "version": "1.0.0"}
    assert "instructions" not in legacy.sent[0]["result"]
    server.instructions = "For both eras."  # `instructions`, where set, is every era's
    assert ModernDriver(server).ask_modern(1, "server/discover")["result"]["instructions"] == "For both eras."


def test_an_extension_is_declared_and_answered_for_modern_requests_only() -> None:
    """Registry.add_extension: declared under capabilities.extensions in server/discover, its method answered
    off the reading loop as a complete modern result with its cache hints; a legacy session's initialize answer
    and requests know nothing of it; a method the core answers cannot be taken."""
    server = make_server()
    seen: list[Any] = []

    def hello(context: Context, params: dict[str, Any]) -> dict[str, Any]:
        seen.append(context.on_loop)
        return {"greeting": f"hello {params.get('who', '?')}"}

    server.add_extension("io.example/hello", {"loud": True}, {"hello/say": hello}, cache_hints={"hello/say": (5, "public")})
    with pytest.raises(ValueError, match="tools/list"):
        server.add_extension("io.example/other", {}, {"tools/list": hello})
    d = ModernDriver(server)
    assert d.ask_modern(1, "server/discover")["result"]["capabilities"] == {
        "tools": {}, "resources": {}, "extensions": {"io.example/hello": {"loud": True}}}
    reply = d.ask_modern(2, "hello/say", {"who": "you"})
    assert reply == {"jsonrpc": "2.0", "id": 2, "result": {"resultType": "complete", "greeting": "hello you",
                                                            "_meta": INFO_META, "ttlMs": 5, "cacheScope": "public"}}
    assert seen == [False]  # off the reading loop
    legacy = Driver(server)
    answer = legacy.receive(req(1, "initialize", INIT))[0]
    assert answer["result"]["capabilities"] == {"tools": {}, "resources": {}}
    assert legacy.receive(req(2, "hello/say", {"who": "you"})) == [
        {"jsonrpc": "2.0", "id": 2, "error": {"code": -32601, "message": "Method not found"}}]
    assert ModernDriver(make_server()).ask_modern(3, "hello/say")["error"]["code"] == -32601


def test_discover_is_modern_only() -> None:
    d = Driver(make_server())
    assert checked(d.receive(req(1, "server/discover")), legacy=True) == [
        {"jsonrpc": "2.0", "id": 1, "error": {"code": -32601, "message": "Method not found"}}]


@pytest.mark.parametrize(("method", "params"), [
    ("server/discover", {}),
    ("subscriptions/listen", {"notifications": "not an object"}),
    ("subscriptions/listen", {"notifications": {"taskIds": []}}),
    ("tools/call", {"name": "echo", "arguments": {"text": 5}}),
])
def test_an_id_in_use_is_refused_first_whatever_the_method(method: str, params: dict[str, Any]) -> None:
    """One rule for every request of either era, server/discover and subscriptions/listen included (methods.METHODS):
    an id held by a request in progress gets -32600 before anything else is judged (the request's params
    included); before the table, discover was answered and listen judged its params first."""
    d = ModernDriver(make_server())
    assert d.receive(req(5, "tools/call", modern({"name": "later"}))) == []  # its work waits: id 5 is in use
    assert checked(d.receive(req(5, method, modern(params)))) == [{"jsonrpc": "2.0", "id": 5, "error": {
        "code": -32600, "message": "Invalid Request", "data": "id is in use by a request in progress"}}]
    assert d.run_all() == [{"jsonrpc": "2.0", "id": 5, "result": {
        "resultType": "complete", "content": text("done"), "isError": False, "_meta": INFO_META}}]


def test_the_sessions_old_name_for_its_registry_still_answers_and_warns() -> None:
    server = make_server()
    session = Driver(server).session
    with pytest.warns(DeprecationWarning, match="Session.server is deprecated: use Session.registry"):
        assert session.server is server
    assert session.registry is server


def test_modern_requests_are_served_before_any_initialize_and_after_a_legacy_one() -> None:
    d = ModernDriver(make_server())
    expected = {"resultType": "complete", "content": text("hi"), "isError": False, "_meta": INFO_META}
    assert d.ask_modern(1, "tools/call", {"name": "echo", "arguments": {"text": "hi"}})["result"] == expected
    assert d.session.capabilities is None and d.session.client_capabilities == {}  # nothing negotiated
    d.handshake({"roots": {}})
    assert d.ask_modern(2, "tools/call", {"name": "echo", "arguments": {"text": "hi"}})["result"] == expected
    assert d.ask_modern(3, "tools/call", {"name": "later"})["result"] == {**expected, "content": text("done")}
    assert d.session.client_capabilities == {"roots": {}} and d.session.ready  # the legacy session is untouched


@pytest.mark.parametrize("version", ["2025-06-18", "2025-11-25", "2099-01-01", ""])
def test_an_unsupported_version_is_32022_naming_what_is_supported(version: str) -> None:
    d = ModernDriver(make_server())
    reply = d.ask_modern(1, "tools/list", **{era.VERSION_KEY: version})
    assert reply == {"jsonrpc": "2.0", "id": 1, "error": {
        "code": -32022, "message": "Unsupported protocol version",
        "data": {"supported": ["2026-07-28", "2025-06-18"], "requested": version}}}
    validate_modern(reply, "UnsupportedProtocolVersionError")


@pytest.mark.parametrize(("bad", "names"), [
    ({era.VERSION_KEY: 20260728}, era.VERSION_KEY),
    ({era.VERSION_KEY: None}, era.VERSION_KEY),
    ({era.CAPABILITIES_KEY: None}, era.CAPABILITIES_KEY),
    ({era.CAPABILITIES_KEY: []}, era.CAPABILITIES_KEY),
    ({era.CAPABILITIES_KEY: "all"}, era.CAPABILITIES_KEY),
    ({era.CLIENT_INFO_KEY: "t"}, era.CLIENT_INFO_KEY),
    ({era.CLIENT_INFO_KEY: ["t"]}, era.CLIENT_INFO_KEY),
    ({era.LOG_LEVEL_KEY: "loud"}, era.LOG_LEVEL_KEY),
    ({era.LOG_LEVEL_KEY: 3}, era.LOG_LEVEL_KEY),
])
def test_required_meta_missing_or_of_the_wrong_shape_is_invalid_params(bad: dict[str, Any], names: str) -> None:
    d = ModernDriver(make_server(logging=True))
    params = {"_meta": {**meta(), **bad}}
    d.receive(req(1, "tools/list", params))
    reply = checked(d.sent)[0]
    assert reply["error"]["code"] == -32602 and names in reply["error"]["message"]
    assert reply["error"]["message"].startswith("Invalid params")


def test_capabilities_are_required_client_info_is_not() -> None:
    d = ModernDriver(make_server())
    d.receive(req(1, "tools/list", {"_meta": {era.VERSION_KEY: "2026-07-28"}}))
    assert checked(d.sent)[0]["error"]["code"] == -32602
    assert d.ask_modern(2, "tools/list", **{era.CLIENT_INFO_KEY: {}})["result"]["resultType"] == "complete"
    d.sent.clear()
    d.receive(req(3, "tools/list", {"_meta": {era.VERSION_KEY: "2026-07-28", era.CAPABILITIES_KEY: {}}}))
    assert checked(d.sent)[0]["result"]["resultType"] == "complete"


@pytest.mark.parametrize("partial", [
    {era.CAPABILITIES_KEY: {}, era.CLIENT_INFO_KEY: {"name": "t", "version": "1"}},  # the conformance suite's probe
    {era.CAPABILITIES_KEY: {}},
    {era.CLIENT_INFO_KEY: {"name": "t", "version": "1"}},
    {era.LOG_LEVEL_KEY: "debug", "progressToken": 5},
])
def test_a_meta_with_per_request_fields_but_no_version_is_a_modern_request_refused_with_32602(partial: dict[str, Any]) -> None:
    """On stdio nothing else tells the era: a `_meta` holding any of 2026-07-28's per-request fields is modern,
    and without its version it is malformed (-32602, the request's id), never served as a legacy request."""
    d = ModernDriver(make_server(logging=True))
    d.receive(req(102, "tools/list", {"_meta": partial}))
    reply = checked(d.sent)[0]
    assert reply == {"jsonrpc": "2.0", "id": 102, "error": {
        "code": -32602, "message": f"Invalid params: _meta needs {era.VERSION_KEY}, a string"}}


def test_a_meta_without_per_request_fields_is_still_legacy() -> None:
    d = ModernDriver(make_server())
    d.receive(req(1, "tools/list", {"_meta": {"progressToken": 1, "example.test/x": True}}))
    assert checked(d.sent, legacy=True) == [Driver(make_server()).request(1, "tools/list")]


TASKS_NEEDED: dict[str, Any] = {"requiredCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}}


@pytest.mark.parametrize(("method", "params"), [
    ("tasks/get", {"taskId": "gate-test"}),
    ("tasks/update", {"taskId": "gate-test", "inputResponses": {}}),
    ("tasks/cancel", {"taskId": "gate-test"}),
    ("tasks/list", {}),
    ("tasks/result", {"taskId": "t"}),
])
def test_tasks_methods_need_the_tasks_extension_declared_32021(method: str, params: dict[str, Any]) -> None:
    """The tasks extension: its methods from a client that did not declare it are -32021 naming it; from one
    that did, they are methods this server does not have (-32601). Legacy sessions have no tasks at all."""
    d = ModernDriver(make_server())
    reply = d.ask_modern(7, method, params, {"sampling": {}, "extensions": {"example.test/other": {}}})
    assert reply == {"jsonrpc": "2.0", "id": 7, "error": {
        "code": -32021, "message": "Missing required client capability", "data": TASKS_NEEDED}}
    validate_modern(reply, "MissingRequiredClientCapabilityError")
    declared = d.ask_modern(8, method, params, {"extensions": {"io.modelcontextprotocol/tasks": {}}})
    assert declared == {"jsonrpc": "2.0", "id": 8, "error": {"code": -32601, "message": "Method not found"}}
    d.handshake()
    assert d.request(9, method, params) == {"jsonrpc": "2.0", "id": 9, "error": {"code": -32601, "message": "Method not found"}}


def test_listen_for_task_notifications_needs_the_tasks_extension() -> None:
    d = ModernDriver(make_server(list_changed=True))
    assert listen(d, 3, {"taskIds": ["t1"]}) == [{"jsonrpc": "2.0", "id": 3, "error": {
        "code": -32021, "message": "Missing required client capability", "data": TASKS_NEEDED}}]
    assert d.session.listeners == {}
    declared: dict[str, Any] = {"extensions": {"io.modelcontextprotocol/tasks": {}}}
    assert listen(d, 4, {"taskIds": ["t1"], "toolsListChanged": True}, declared) == [
        acknowledged(4, {"toolsListChanged": True})]  # no tasks here: none agreed to


@pytest.mark.parametrize("method", ["ping", "initialize", "logging/setLevel", "resources/subscribe", "resources/unsubscribe"])
def test_legacy_only_methods_are_not_found_in_the_modern_era(method: str) -> None:
    d = ModernDriver(make_server(logging=True, subscribe=True))
    d.handshake()  # even in a legacy session that offers them
    reply = d.ask_modern(5, method, {"uri": "test://a", "level": "info", "protocolVersion": "2025-06-18"})
    assert reply == {"jsonrpc": "2.0", "id": 5, "error": {
        "code": -32601, "message": "Method not found", "data": f"{method} is not a method of MCP 2026-07-28"}}
    assert d.session.subscriptions == {} and d.session.log_level is None  # and nothing changed


def test_unknown_methods_are_not_found() -> None:
    reply = ModernDriver(make_server()).ask_modern(1, "tools/frobnicate")
    assert reply == {"jsonrpc": "2.0", "id": 1, "error": {"code": -32601, "message": "Method not found"}}


# -- results: resultType, serverInfo, cache hints ------------------------------------------------------------------------
def feature_server() -> Server:
    class Cut(list[Resource]):
        meta = {"example.test/cut": True}

    server = make_server(title="Shipcode")
    server.add_prompt(Prompt("greet", lambda ctx, args: "hello"))
    server.add_resource_source(lambda: Cut([Resource("test://b", "b")]))
    server.add_tool(Tool("meta", lambda ctx, args: {"n": 1}, inline=True))
    return server


@pytest.mark.parametrize(("method", "params", "cache"), [
    ("tools/list", {}, (300000, "public")),
    ("prompts/list", {}, (300000, "public")),
    ("resources/list", {}, (0, "private")),
    ("resources/templates/list", {}, (300000, "public")),
    ("resources/read", {"uri": "test://a"}, (0, "private")),
    ("prompts/get", {"name": "greet"}, None),
    ("tools/call", {"name": "echo", "arguments": {"text": "x"}}, None),
    ("tools/call", {"name": "later"}, None),
])
def test_every_result_is_complete_first_with_server_info_and_cache_hints_where_due(
        method: str, params: dict[str, Any], cache: tuple[int, str] | None) -> None:
    d = ModernDriver(feature_server())
    legacy = Driver(feature_server())
    legacy.receive(INIT)
    plain = legacy.request(9, method, params)["result"]
    result = d.ask_modern(1, method, params)["result"]
    info = {**SERVER_INFO, "title": "Shipcode"}
    assert next(iter(result)) == "resultType" and result["resultType"] == "complete"
    assert result["_meta"] == {**plain.get("_meta", {}), era.SERVER_INFO_KEY: info}  # merged with the handler's own
    if cache is None:
        assert "ttlMs" not in result and "cacheScope" not in result
        assert list(result)[-1] == "_meta"
    else:
        assert (result["ttlMs"], result["cacheScope"]) == cache
        assert list(result)[-3:] == ["_meta", "ttlMs", "cacheScope"]
    body = {key: value for key, value in result.items() if key not in ("resultType", "_meta", "ttlMs", "cacheScope")}
    assert body == {key: value for key, value in plain.items() if key != "_meta"}  # the same answer otherwise


def test_resources_list_keeps_its_sources_meta_beside_server_info() -> None:
    result = ModernDriver(feature_server()).ask_modern(1, "resources/list")["result"]
    assert result["_meta"] == {"example.test/cut": True, era.SERVER_INFO_KEY: {**SERVER_INFO, "title": "Shipcode"}}


def test_a_missing_resource_is_32602_in_the_modern_era_and_32002_in_the_legacy_one() -> None:
    d = ModernDriver(make_server())
    assert d.ask_modern(1, "resources/read", {"uri": "test://missing"}) == {"jsonrpc": "2.0", "id": 1, "error": {
        "code": -32602, "message": "Resource not found", "data": {"uri": "test://missing"}}}
    d.handshake()
    assert checked([d.request(2, "resources/read", {"uri": "test://missing"})], legacy=True) == [
        {"jsonrpc": "2.0", "id": 2, "error": {"code": -32002, "message": "Resource not found", "data": {"uri": "test://missing"}}}]


def test_a_handler_raising_resource_not_found_is_32602_too() -> None:
    server = make_server()

    def gone(ctx: Context, uri: str) -> str:
        raise ResourceNotFound(uri)

    server.add_resource(Resource("test://gone", "gone", reader=gone))
    assert ModernDriver(server).ask_modern(1, "resources/read", {"uri": "test://gone"})["error"]["code"] == -32602


def test_legacy_messages_are_unchanged_beside_modern_ones() -> None:
    d = ModernDriver(feature_server())
    d.ask_modern(1, "tools/list")
    handshake = d.handshake()
    assert checked([handshake], legacy=True) == [{"jsonrpc": "2.0", "id": 1, "result": {
        "protocolVersion": "2025-06-18", "capabilities": {"tools": {}, "resources": {}, "prompts": {}},
        "serverInfo": {**SERVER_INFO, "title": "Shipcode"}}}]
    assert list(handshake["result"]) == ["protocolVersion", "capabilities", "serverInfo"]
    d.sent.clear()
    assert checked([d.request(2, "tools/call", {"name": "later"})], legacy=True) == [
        {"jsonrpc": "2.0", "id": 2, "result": {"content": text("done"), "isError": False}}]
    assert checked([d.request(3, "ping")], legacy=True) == [{"jsonrpc": "2.0", "id": 3, "result": {}}]
    assert d.request(4, "resources/list")["result"] == {
        "resources": [{"uri": "test://a", "name": "a"}, {"uri": "test://b", "name": "b"}], "_meta": {"example.test/cut": True}}


# -- per-request logging and progress ------------------------------------------------------------------------------------
def test_log_messages_follow_the_requests_own_level_and_need_the_capability() -> None:
    server = make_server(logging=True)
    server.add_tool(Tool("chatty", lambda ctx, args: [ctx.debug("d"), ctx.info("i"), ctx.warning("w"), ctx.error("e")] and "ok"))
    d = ModernDriver(server)
    d.handshake()
    d.sent.clear()
    d.ask_modern(1, "tools/call", {"name": "chatty"}, **{era.LOG_LEVEL_KEY: "warning"})
    assert [(m.get("method"), m.get("params", {}).get("data")) for m in d.sent] == [
        ("notifications/message", "w"), ("notifications/message", "e"), (None, None)]
    d.sent.clear()
    d.ask_modern(2, "tools/call", {"name": "chatty"}, **{era.LOG_LEVEL_KEY: "debug"})
    assert [m["params"]["data"] for m in d.sent if "method" in m] == ["d", "i", "w", "e"]
    d.sent.clear()
    d.ask_modern(3, "tools/call", {"name": "chatty"})  # no level: no logging, whatever the legacy session set
    assert [m["id"] for m in d.sent] == [3]
    quiet = ModernDriver(make_server())  # logging not offered: the level is accepted and nothing is sent
    quiet.session.registry.add_tool(Tool("chatty", lambda ctx, args: (ctx.error("e") and "logged") or "silent"))
    assert quiet.ask_modern(1, "tools/call", {"name": "chatty"}, **{era.LOG_LEVEL_KEY: "debug"})["result"]["content"] == text(
        "silent")
    assert [m["id"] for m in quiet.sent] == [1]


def test_progress_with_a_token_in_the_modern_meta() -> None:
    server = make_server()
    server.add_tool(Tool("work", lambda ctx, args: (ctx.report_progress(1, 2, "half"), ctx.report_progress(2, 2)) and "ok"))
    d = ModernDriver(server)
    d.ask_modern(1, "tools/call", {"name": "work"}, progressToken="tok")
    assert d.sent[:2] == [
        {"jsonrpc": "2.0", "method": "notifications/progress",
         "params": {"progressToken": "tok", "progress": 1, "total": 2, "message": "half"}},
        {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": "tok", "progress": 2, "total": 2}}]
    assert d.sent[2]["result"]["content"] == text("ok")
    d.sent.clear()
    d.ask_modern(2, "tools/call", {"name": "work"})
    assert [m["id"] for m in d.sent] == [2]


# -- multi round-trip requests -------------------------------------------------------------------------------------------
TARGET = {"type": "object", "properties": {"target": {"type": "string"}}, "required": ["target"]}
SURE = {"type": "object", "properties": {"sure": {"type": "boolean"}}, "required": ["sure"]}


def deploy(ctx: Context, version: str) -> str:
    first = ctx.elicit("Where to?", TARGET)
    second = ctx.elicit(f"Deploy {version} to {first['content']['target']}?", SURE)
    return f"{version} to {first['content']['target']}: {second['content']['sure']}"


async def adeploy(ctx: Context, version: str) -> str:
    first = await ctx.aelicit("Where to?", TARGET)
    second = await ctx.aelicit(f"Deploy {version} to {first['content']['target']}?", SURE)
    return f"{version} to {first['content']['target']}: {second['content']['sure']}"


ELICIT: dict[str, Any] = {"elicitation": {}}
CALL = {"name": "deploy", "arguments": {"version": "1.2"}}
ANSWER_1 = {"action": "accept", "content": {"target": "prod"}}
ANSWER_2 = {"action": "accept", "content": {"sure": True}}


def mrtr_server(handler: Any = deploy, **options: Any) -> Server:
    server = make_server(**options)
    server.tool(handler, name="deploy")
    return server


def two_rounds(d: ModernDriver, call: dict[str, Any] = CALL) -> str:
    """Rounds 1 and 2 of `deploy`; the requestState of round 2."""
    first = d.ask_modern(1, "tools/call", call, ELICIT)["result"]
    assert list(first) == ["resultType", "inputRequests", "requestState", "_meta"]
    assert first["resultType"] == "input_required" and first["_meta"] == INFO_META
    assert first["inputRequests"] == {"elicitation-1": {"method": "elicitation/create",
                                                        "params": {"message": "Where to?", "requestedSchema": TARGET}}}
    # The state carries the question asked, so that its answer holds for that question only.
    second = d.ask_modern(2, "tools/call", {**call, "requestState": first["requestState"],
                                            "inputResponses": {"elicitation-1": ANSWER_1}}, ELICIT)["result"]
    assert list(second) == ["resultType", "inputRequests", "requestState", "_meta"]
    assert second["resultType"] == "input_required" and second["_meta"] == INFO_META
    assert second["inputRequests"] == {"elicitation-2": {"method": "elicitation/create", "params": {
        "message": "Deploy 1.2 to prod?", "requestedSchema": SURE}}}
    state = second["requestState"]
    assert isinstance(state, str) and state
    return state


@pytest.mark.parametrize("handler", [deploy, adeploy], ids=["sync", "async"])
def test_a_tool_that_elicits_twice_takes_three_rounds(handler: Any) -> None:
    d = ModernDriver(mrtr_server(handler))
    state = two_rounds(d)
    assert d.awaited == (2 if handler is adeploy else 0)  # the async tool was awaited, as an asyncio runner does
    third = d.ask_modern(3, "tools/call", {**CALL, "requestState": state, "inputResponses": {"elicitation-2": ANSWER_2}}, ELICIT)
    assert third == {"jsonrpc": "2.0", "id": 3, "result": {
        "resultType": "complete", "content": text("1.2 to prod: True"), "isError": False, "_meta": INFO_META}}
    assert d.session.outgoing == {} and d.session.in_flight == {}  # nothing was asked by request, nothing waits
    assert not any("method" in m and "id" in m for m in d.sent)


def test_a_retry_may_answer_again_what_the_state_carries() -> None:
    d = ModernDriver(mrtr_server())
    state = two_rounds(d)
    again = {"elicitation-1": {"action": "accept", "content": {"target": "staging"}}, "elicitation-2": ANSWER_2}
    third = d.ask_modern(3, "tools/call", {**CALL, "requestState": state, "inputResponses": again}, ELICIT)
    assert third["result"]["content"] == text("1.2 to prod: True")  # the signed answer stands


@pytest.mark.parametrize("defended", [False, True])
def test_the_last_round_cannot_be_replayed_to_run_the_handler_again(defended: bool,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 22: the last round of a request, sent again within its state's lifetime, ran the handler again each
    time (the control: states never held). Now a state is spent once its request is answered: the replay gets
    -32602 and the handler does not run; a round that asked again (round 2's state) may still be retried."""
    from shipcode_mcp.request_state import RequestStates

    if not defended:
        monkeypatch.setattr(RequestStates, "_hold", lambda self, mac, expiry: None)
    ran: list[str] = []

    def deploy_once(ctx: Context, version: str) -> str:
        done = deploy(ctx, version)
        ran.append(done)
        return done

    d = ModernDriver(mrtr_server(deploy_once))
    state = two_rounds(d)
    finish = {**CALL, "requestState": state, "inputResponses": {"elicitation-2": ANSWER_2}}
    assert d.ask_modern(3, "tools/call", finish, ELICIT)["result"]["content"] == text("1.2 to prod: True")
    replayed = [d.ask_modern(4 + n, "tools/call", finish, ELICIT) for n in range(3)]
    if not defended:
        assert len(ran) == 4  # the harm: the handler ran again for every replay
        return
    assert len(ran) == 1 and all("answered already" in refused(reply) for reply in replayed)
    retried = ModernDriver(mrtr_server(deploy_once))  # rounds that asked again are retried as often as needed
    first = retried.ask_modern(1, "tools/call", CALL, ELICIT)["result"]["requestState"]
    again = {**CALL, "requestState": first, "inputResponses": {"elicitation-1": ANSWER_1}}
    for number in (2, 3):
        assert retried.ask_modern(number, "tools/call", again, ELICIT)["result"]["resultType"] == "input_required"


def test_an_elicitation_answer_that_fails_its_schema_is_a_tool_error_not_a_new_question() -> None:
    d = ModernDriver(mrtr_server())
    d.ask_modern(1, "tools/call", CALL, ELICIT)
    bad = {"elicitation-1": {"action": "accept", "content": {"target": 5}}}
    result = d.ask_modern(2, "tools/call", {**CALL, "inputResponses": bad}, ELICIT)["result"]
    assert result["resultType"] == "complete" and result["isError"] is True


def test_sampling_and_roots_asks_take_their_rounds() -> None:
    server = make_server()

    def think(ctx: Context, args: dict[str, Any]) -> str:
        roots = ctx.list_roots()
        answer = ctx.sample("Which root?", max_tokens=20)
        return f"{answer['content']['text']} of {len(roots)}"

    server.add_tool(Tool("think", think))
    d = ModernDriver(server)
    caps: dict[str, Any] = {"sampling": {}, "roots": {}}
    first = d.ask_modern(1, "tools/call", {"name": "think"}, caps)["result"]
    assert first["inputRequests"] == {"roots-1": {"method": "roots/list"}}
    roots = {"roots": [{"uri": "file:///a", "name": "a"}, {"uri": "file:///b"}]}
    second = d.ask_modern(2, "tools/call", {"name": "think", "inputResponses": {"roots-1": roots}}, caps)["result"]
    assert second["inputRequests"] == {"sampling-2": {"method": "sampling/createMessage", "params": {
        "messages": [{"role": "user", "content": {"type": "text", "text": "Which root?"}}], "maxTokens": 20}}}
    sampled = {"role": "assistant", "content": {"type": "text", "text": "the first"}, "model": "m", "stopReason": "endTurn"}
    third = d.ask_modern(3, "tools/call", {"name": "think", "requestState": second["requestState"],
                                           "inputResponses": {"sampling-2": sampled}}, caps)["result"]
    assert third["content"] == text("the first of 2")
    assert d.session.roots is None  # a tool's own roots/list is its business, not the workspace's


@pytest.mark.parametrize("handler", [deploy, adeploy], ids=["sync", "async"])
def test_a_client_without_the_capability_is_32021_naming_it(handler: Any) -> None:
    d = ModernDriver(mrtr_server(handler))
    reply = d.ask_modern(1, "tools/call", CALL, {"sampling": {}})
    assert reply == {"jsonrpc": "2.0", "id": 1, "error": {
        "code": -32021, "message": "The client does not support elicitation/create",
        "data": {"requiredCapabilities": {"elicitation": {}}}}}
    validate_modern(reply, "MissingRequiredClientCapabilityError")


# -- questions a handler names, and questions asked together (the suite's input-required-result-* fixtures) -------------
NAME = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
ALICE = {"action": "accept", "content": {"name": "Alice"}}
SAMPLED = {"role": "assistant", "content": {"type": "text", "text": "Hello there!"}, "model": "m", "stopReason": "endTurn"}
ALL_THREE: dict[str, Any] = {"elicitation": {}, "sampling": {}, "roots": {}}
GREETING = {"messages": [{"role": "user", "content": {"type": "text", "text": "Generate a greeting"}}], "maxTokens": 50}
THREE: dict[str, tuple[str, dict[str, Any] | None]] = {
    "user_name": ("elicitation/create", {"message": "What is your name?", "requestedSchema": NAME}),
    "greeting": ("sampling/createMessage", GREETING),
    "client_roots": ("roots/list", None),
}


def greeter() -> Server:
    server = make_server()

    @server.tool
    def greet(ctx: Context) -> str:
        """Asks under a key of its own."""
        return f"Hello, {ctx.elicit('What is your name?', NAME, key='user_name')['content']['name']}!"

    return server


def test_a_question_goes_out_under_the_key_its_handler_names() -> None:
    d = ModernDriver(greeter())
    first = d.ask_modern(1, "tools/call", {"name": "greet"}, ELICIT)["result"]
    assert first["inputRequests"] == {"user_name": {"method": "elicitation/create", "params": {
        "message": "What is your name?", "requestedSchema": NAME}}}
    done = d.ask_modern(2, "tools/call", {"name": "greet", "requestState": first["requestState"],
                                          "inputResponses": {"user_name": ALICE}}, ELICIT)["result"]
    assert done["content"] == text("Hello, Alice!")


def test_an_answer_under_a_named_key_is_taken_at_once_other_keys_are_ignored_and_a_wrong_key_asks_again() -> None:
    d = ModernDriver(greeter())
    extra = {"user_name": ALICE, "unknown_extra_key": {"action": "accept", "content": {"foo": "bar"}}}
    assert d.ask_modern(1, "tools/call", {"name": "greet", "inputResponses": extra}, ELICIT)["result"]["content"] == text(
        "Hello, Alice!")
    wrong = d.ask_modern(2, "tools/call", {"name": "greet", "inputResponses": {"wrong_key": ALICE}}, ELICIT)["result"]
    assert wrong["resultType"] == "input_required" and list(wrong["inputRequests"]) == ["user_name"]


def together(ctx: Context) -> str:
    answers = ctx.request_all(THREE)
    return (f"{answers['user_name']['content']['name']}, {answers['greeting']['content']['text']}, "
            f"{len(answers['client_roots']['roots'])}")


async def atogether(ctx: Context) -> str:
    answers = await ctx.arequest_all(THREE)
    return (f"{answers['user_name']['content']['name']}, {answers['greeting']['content']['text']}, "
            f"{len(answers['client_roots']['roots'])}")


@pytest.mark.parametrize("handler", [together, atogether], ids=["sync", "async"])
def test_questions_asked_together_are_one_round_and_the_next_asks_only_what_is_unanswered(handler: Any) -> None:
    server = make_server()
    server.tool(handler, name="together")
    d = ModernDriver(server)
    first = d.ask_modern(1, "tools/call", {"name": "together"}, ALL_THREE)["result"]
    assert first["inputRequests"] == {
        "user_name": {"method": "elicitation/create", "params": {"message": "What is your name?", "requestedSchema": NAME}},
        "greeting": {"method": "sampling/createMessage", "params": GREETING},
        "client_roots": {"method": "roots/list"}}
    second = d.ask_modern(2, "tools/call", {"name": "together", "requestState": first["requestState"],
                                            "inputResponses": {"user_name": ALICE, "greeting": SAMPLED}}, ALL_THREE)["result"]
    assert second["inputRequests"] == {"client_roots": {"method": "roots/list"}}  # the state keeps the two answers given
    done = d.ask_modern(3, "tools/call", {"name": "together", "requestState": second["requestState"],
                                          "inputResponses": {"client_roots": {"roots": [{"uri": "file:///a"}]}}}, ALL_THREE)
    assert done["result"]["content"] == text("Alice, Hello there!, 1")


def test_questions_asked_together_need_every_capability_they_use() -> None:
    server = make_server()
    server.tool(together, name="together")
    reply = ModernDriver(server).ask_modern(1, "tools/call", {"name": "together"}, {"elicitation": {}, "sampling": {}})
    assert reply["error"] == {"code": -32021, "message": "The client does not support roots/list",
                              "data": {"requiredCapabilities": {"roots": {}}}}


def test_one_key_for_two_questions_is_a_bug_of_the_handler_not_a_question() -> None:
    server = make_server()

    @server.tool
    def twice(ctx: Context) -> str:
        """Names two different questions alike."""
        ctx.elicit("First?", NAME, key="same")
        return str(ctx.elicit("Second?", SURE, key="same"))

    d = ModernDriver(server)
    first = d.ask_modern(1, "tools/call", {"name": "twice"}, ELICIT)["result"]
    again = d.ask_modern(2, "tools/call", {"name": "twice", "requestState": first["requestState"],
                                           "inputResponses": {"same": ALICE}}, ELICIT)
    assert again == {"jsonrpc": "2.0", "id": 2, "error": {"code": -32603, "message": "Internal error"}}  # not asked forever
    [report] = d.of_kind(Report)
    assert "ValueError: the input key 'same' names two questions of one request" in report.text


def refused(reply: dict[str, Any]) -> str:
    assert set(reply) == {"jsonrpc", "id", "error"} and reply["error"]["code"] == -32602, reply
    message: str = reply["error"]["message"]
    assert message.startswith("Invalid requestState: ")
    return message


def test_a_tampered_state_is_refused() -> None:
    d = ModernDriver(mrtr_server())
    state = two_rounds(d)
    body, mac = state.split(".")
    for forged in (body[:-2] + ("AA" if body[-2:] != "AA" else "BB") + "." + mac, body + "." + mac[:-2] + "xx", "x" + state,
                   state + ".x", "garbage", ""):
        reply = d.ask_modern(3, "tools/call", {**CALL, "requestState": forged, "inputResponses": {"elicitation-2": ANSWER_2}},
                             ELICIT)
        refused(reply)


@pytest.mark.parametrize(("method", "params"), [
    ("tools/call", {"name": "deploy", "arguments": {"version": "6.6.6"}}),
    ("tools/call", {"name": "deploy", "arguments": {}}),
    ("tools/call", {"name": "later", "arguments": {"version": "1.2"}}),
    ("prompts/get", {"name": "deploy", "arguments": {"version": "1.2"}}),
    ("resources/read", {"uri": "test://a"}),
])
def test_a_state_replayed_on_another_request_is_refused(method: str, params: dict[str, Any]) -> None:
    server = mrtr_server()
    server.add_prompt(Prompt("deploy", lambda ctx, args: "p"))
    d = ModernDriver(server)
    state = two_rounds(d)
    reply = d.ask_modern(3, method, {**params, "requestState": state, "inputResponses": {"elicitation-2": ANSWER_2}}, ELICIT)
    assert "another request" in refused(reply)


def test_an_expired_state_is_refused() -> None:
    now = [1_000_000.0]
    server = mrtr_server()
    server.request_states.clock = lambda: now[0]
    d = ModernDriver(server)
    state = two_rounds(d)
    now[0] += server.request_states.ttl + 1
    reply = d.ask_modern(3, "tools/call", {**CALL, "requestState": state, "inputResponses": {"elicitation-2": ANSWER_2}}, ELICIT)
    assert "expired" in refused(reply)


def test_a_state_from_another_key_is_refused_and_one_from_the_same_key_accepted() -> None:
    state = two_rounds(ModernDriver(mrtr_server(state_key=b"a" * 32)))
    finish = {**CALL, "requestState": state, "inputResponses": {"elicitation-2": ANSWER_2}}
    other = ModernDriver(mrtr_server(state_key=b"b" * 32)).ask_modern(3, "tools/call", finish, ELICIT)
    assert "signature" in refused(other)
    fresh = ModernDriver(mrtr_server()).ask_modern(3, "tools/call", finish, ELICIT)  # a random key per process
    assert "signature" in refused(fresh)
    same = ModernDriver(mrtr_server(state_key=b"a" * 32)).ask_modern(3, "tools/call", finish, ELICIT)  # another worker
    assert same["result"]["content"] == text("1.2 to prod: True")


@pytest.mark.parametrize("responses", [[], "x", 5, {"elicitation-1": 5}, {"elicitation-1": ["accept"]}, {"k": None}])
def test_malformed_input_responses_are_invalid_params(responses: Any) -> None:
    d = ModernDriver(mrtr_server())
    reply = d.ask_modern(1, "tools/call", {**CALL, "inputResponses": responses}, ELICIT)
    assert reply == {"jsonrpc": "2.0", "id": 1, "error": {
        "code": -32602, "message": "Invalid params: inputResponses must map keys to results"}}


def test_legacy_requests_still_ask_by_request_not_by_rounds() -> None:
    d = ModernDriver(mrtr_server())
    d.handshake(ELICIT)
    d.receive(req(2, "tools/call", CALL))
    assert d.jobs[0].context.rounds is None and d.jobs[0].context.protocol_version == "2025-06-18"


# -- the client's roots, followed on the modern path ---------------------------------------------------------------------
def test_a_server_following_roots_asks_for_them_first_then_serves_in_them() -> None:
    followed: list[list[dict[str, Any]]] = []
    server = make_server()
    server.on_roots(lambda session, roots: followed.append(roots))
    d = ModernDriver(server)
    caps: dict[str, Any] = {"roots": {}}
    assert d.ask_modern(1, "tools/call", {"name": "later"}, caps) == {"jsonrpc": "2.0", "id": 1, "result": {
        "resultType": "input_required", "inputRequests": {"roots": {"method": "roots/list"}}, "_meta": INFO_META}}
    assert d.jobs == [] and followed == []  # asked inline, before any work
    roots = [{"uri": "file:///ws", "name": "ws"}]
    reply = d.ask_modern(2, "tools/call", {"name": "later", "inputResponses": {"roots": {"roots": roots}}}, caps)
    assert reply["result"] == {"resultType": "complete", "content": text("done"), "isError": False, "_meta": INFO_META}
    assert followed == [roots] and d.session.roots == roots
    assert d.ask_modern(3, "tools/call", {"name": "later"}, caps)["result"]["resultType"] == "complete"  # known now
    assert followed == [roots]


def test_roots_are_not_asked_of_a_client_without_them_nor_for_lists() -> None:
    server = make_server()
    server.on_roots(lambda session, roots: None)
    d = ModernDriver(server)
    assert d.ask_modern(1, "tools/call", {"name": "later"})["result"]["resultType"] == "complete"
    assert d.ask_modern(2, "tools/list", None, {"roots": {}})["result"]["resultType"] == "complete"
    unfollowed = ModernDriver(make_server())
    assert unfollowed.ask_modern(1, "tools/call", {"name": "later"}, {"roots": {}})["result"]["resultType"] == "complete"


# -- subscriptions/listen ------------------------------------------------------------------------------------------------
def listen(d: ModernDriver, msg_id: Any, notifications: dict[str, Any], capabilities: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    return checked(d.receive(req(msg_id, "subscriptions/listen", modern({"notifications": notifications}, capabilities))))


def acknowledged(msg_id: Any, agreed: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
            "params": {"_meta": {ID_KEY: msg_id}, "notifications": agreed}}


def test_listen_acknowledges_only_what_the_server_offers() -> None:
    everything = {"toolsListChanged": True, "promptsListChanged": True, "resourcesListChanged": True,
                  "resourceSubscriptions": ["test://a"]}
    bare = ModernDriver(make_server())
    nothing = listen(bare, 7, everything)  # nothing honoured: refused, it would hold its stream for nothing
    assert nothing[0]["error"]["code"] == -32602 and "nothing to listen for" in nothing[0]["error"]["message"]
    assert bare.session.listeners == {} and bare.session.in_flight == {}
    server = make_server(list_changed=True, subscribe=True)
    server.add_prompt(Prompt("p", lambda ctx, args: "x"))
    full = ModernDriver(server)
    assert listen(full, "L", everything) == [acknowledged("L", everything)]
    assert listen(full, 8, {"toolsListChanged": False, "resourceSubscriptions": []})[0]["error"]["code"] == -32602
    tools_only = make_server()
    tools_only.enable_list_changed("tools")
    assert listen(ModernDriver(tools_only), 9, everything) == [acknowledged(9, {"toolsListChanged": True})]


@pytest.mark.parametrize("notifications", [None, [], "all", {"resourceSubscriptions": "test://a"}, {"resourceSubscriptions": [1]}])
def test_listen_with_a_malformed_filter_is_invalid_params(notifications: Any) -> None:
    d = ModernDriver(make_server(subscribe=True))
    params = modern({} if notifications is None else {"notifications": notifications})
    reply = checked(d.receive(req(1, "subscriptions/listen", params)))
    assert reply[0]["error"]["code"] == -32602 and d.session.listeners == {}


def test_list_changes_after_the_ack_reach_the_listener_tagged_with_its_id() -> None:
    server = make_server(list_changed=True)
    d = ModernDriver(server)
    listen(d, 5, {"toolsListChanged": True})
    other = ModernDriver(server)
    listen(other, 6, {"promptsListChanged": True})
    d.sent.clear()
    other.sent.clear()
    server.add_tool(Tool("new", lambda ctx, args: None))
    server.list_changed("resources")  # nobody opted in
    assert checked(d.sent) == [{"jsonrpc": "2.0", "method": "notifications/tools/list_changed", "params": {"_meta": {ID_KEY: 5}}}]
    assert other.sent == []
    assert d.session.in_flight.keys() == {5}  # still open: no response


def test_resource_updates_reach_a_subscribed_uri_and_what_lies_within_a_subscribed_folder() -> None:
    server = make_server(subscribe=True)
    d = ModernDriver(server)
    listen(d, 5, {"resourceSubscriptions": ["test://a", "test://dir"]})
    d.sent.clear()
    for uri in ("test://a", "test://dir/file", "test://directory", "test://b"):
        server.resource_updated(uri)
    server.resource_updated("test://dir/exact-only", within=False)

    def updated(uri: str) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"_meta": {ID_KEY: 5}, "uri": uri}}

    assert checked(d.sent) == [updated("test://a"), updated("test://dir/file")]
    assert server.subscriptions() == {"test://a": None, "test://dir": None}


def test_a_subscribe_check_runs_off_the_loop_and_a_refused_uri_is_left_out() -> None:
    server = make_server()
    asked: list[str] = []

    def check(ctx: Context, uri: str) -> str:
        asked.append(uri)
        if uri == "test://missing":
            raise ResourceNotFound(uri)
        return f"kept {uri}"

    server.on_subscribe(check)
    d = ModernDriver(server)
    assert listen(d, 5, {"resourceSubscriptions": ["test://a", "test://missing"]}) == [] and asked == []
    assert checked(d.run()) == [acknowledged(5, {"resourceSubscriptions": ["test://a"]})]
    assert asked == ["test://a", "test://missing"] and server.subscriptions() == {"test://a": "kept test://a"}
    d.sent.clear()
    server.resource_updated("test://missing")
    server.resource_updated("test://a")
    assert [m["params"]["uri"] for m in checked(d.sent)] == ["test://a"]


def test_a_cancelled_subscription_ends_with_no_response() -> None:
    server = make_server(list_changed=True)
    d = ModernDriver(server)
    listen(d, 5, {"toolsListChanged": True})
    d.sent.clear()
    assert d.receive({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 5}}) == []
    server.add_tool(Tool("new", lambda ctx, args: None))
    assert d.perform(d.session.close()) == [] and d.sent == []
    assert d.session.listeners == {} and d.session.in_flight == {}


def test_closing_the_session_ends_each_subscription_with_its_result() -> None:
    d = ModernDriver(make_server(list_changed=True))
    listen(d, 5, {"toolsListChanged": True})
    listen(d, "s", {"toolsListChanged": True})
    d.sent.clear()
    assert checked(d.perform(d.session.close())) == [
        {"jsonrpc": "2.0", "id": 5, "result": {"resultType": "complete", "_meta": {ID_KEY: 5}}},
        {"jsonrpc": "2.0", "id": "s", "result": {"resultType": "complete", "_meta": {ID_KEY: "s"}}}]
    assert all(modern_definition(m) == "SubscriptionsListenResult" for m in d.sent)


def test_a_listen_id_in_use_is_refused_and_listen_sends_no_requests() -> None:
    d = ModernDriver(make_server(list_changed=True))
    listen(d, 5, {"toolsListChanged": True})
    assert listen(d, 5, {})[0]["error"]["code"] == -32600
    assert d.session.outgoing == {}


def test_a_legacy_session_and_a_listener_in_one_session_each_get_their_own_form() -> None:
    server = make_server(list_changed=True)
    d = ModernDriver(server)
    d.handshake()
    listen(d, 5, {"toolsListChanged": True})
    d.sent.clear()
    server.add_tool(Tool("new", lambda ctx, args: None))
    assert d.sent == [{"jsonrpc": "2.0", "method": "notifications/tools/list_changed"},
                      {"jsonrpc": "2.0", "method": "notifications/tools/list_changed", "params": {"_meta": {ID_KEY: 5}}}]
    checked(d.sent[:1], legacy=True)
    checked(d.sent[1:])


# -- the schema check itself has teeth -----------------------------------------------------------------------------------
@pytest.mark.parametrize("message", [
    {"jsonrpc": "2.0", "id": 1, "result": {"resultType": "complete", "tools": []}},  # no cache hints
    {"jsonrpc": "2.0", "id": 1, "result": {"resultType": "complete", "tools": [], "ttlMs": -1, "cacheScope": "public"}},
    {"jsonrpc": "2.0", "id": 1, "result": {"resultType": "complete", "content": "x"}},
    {"jsonrpc": "2.0", "id": 1, "result": {"resultType": "finished", "content": []}},
    {"jsonrpc": "2.0", "id": 1, "result": {"resultType": "input_required", "inputRequests": {"k": {"method": "ping"}}}},
    {"jsonrpc": "2.0", "id": 1, "result": {"resultType": "complete", "_meta": {era.SERVER_INFO_KEY: {"name": 1}}}},
    {"jsonrpc": "2.0", "id": 1, "error": {"code": -32022, "message": "x", "data": {"supported": []}}},
    {"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged", "params": {"_meta": {ID_KEY: 1}}},
    {"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"_meta": {ID_KEY: 1}}},
])
def test_the_schema_check_refuses_what_the_2026_schema_refuses(message: dict[str, Any]) -> None:
    with pytest.raises((ValueError, AssertionError)):  # jsonschema_rs.ValidationError is a ValueError
        validate_server_message(message)


def test_a_modern_round_asks_nothing_by_request_and_its_roots_reach_the_server_off_the_loop() -> None:
    """A modern request never asks the client by request; the roots it brings go to the server's callbacks
    off the reading loop (AdoptRoots), and its work waits for them (at most ROOTS_WAIT)."""
    server = mrtr_server()
    told: list[Any] = []
    server.on_roots(lambda session, roots: told.append(roots))
    d = ModernDriver(server)
    actions = d.session.receive(req(1, "tools/call", modern(CALL, {"roots": {}, "elicitation": {}})))
    assert [type(a) for a in actions] == [Send]
    actions = d.session.receive(req(2, "tools/call", modern(
        {**CALL, "inputResponses": {"roots": {"roots": [{"uri": "file:///w"}]}}}, {"roots": {}, "elicitation": {}})))
    assert [type(a) for a in actions] == [AdoptRoots, Release]
    assert told == [] and d.session.outgoing == {}  # nothing ran on the loop, nothing was asked
    server.roots_changed(d.session, [{"uri": "file:///w"}])  # what the runner does in the background
    assert [type(a) for a in d.session.roots_adopted()] == [Start]


def test_a_modern_request_cancelled_on_stdio_gets_no_response() -> None:
    told: list[bool] = []

    def slow(ctx: Context, args: dict[str, Any]) -> str:
        told.append(ctx.cancelled)
        ctx.check_cancelled()
        return "done"

    server = Server("s", "1")
    server.add_tool(Tool("slow", slow))
    d = ModernDriver(server)
    assert d.receive(req(9, "tools/call", modern({"name": "slow", "arguments": {}}))) == []
    assert d.receive({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 9}}) == []
    assert d.run() == [] and told == []  # cancelled before it ran: the work never starts
    assert d.session.in_flight == {}
    # The id is free again, and a request under it is answered.
    [answer] = checked(d.receive(req(9, "tools/list", modern())))
    assert answer["result"]["resultType"] == "complete"


def test_roots_and_questions_travel_together_when_every_round_meets_a_fresh_session() -> None:
    """Stateless HTTP: each round is served by a new session (any process). The roots a client gave in
    one round travel in the requestState of the next, with the answers, so the request completes."""
    server = mrtr_server()
    followed: list[Any] = []
    server.on_roots(lambda session, roots: followed.append(roots))
    caps = {"roots": {}, **ELICIT}
    roots = {"roots": [{"uri": "file:///w"}]}
    first = ModernDriver(server, stateless=True).ask_modern(1, "tools/call", CALL, caps)["result"]
    assert first["inputRequests"] == {"roots": {"method": "roots/list"}} and "requestState" not in first
    second = ModernDriver(server, stateless=True).ask_modern(
        2, "tools/call", {**CALL, "inputResponses": {"roots": roots}}, caps)["result"]
    assert list(second["inputRequests"]) == ["elicitation-1"]
    third = ModernDriver(server, stateless=True).ask_modern(3, "tools/call", {
        **CALL, "requestState": second["requestState"], "inputResponses": {"elicitation-1": ANSWER_1}}, caps)["result"]
    assert list(third["inputRequests"]) == ["elicitation-2"]
    last = ModernDriver(server, stateless=True).ask_modern(4, "tools/call", {
        **CALL, "requestState": third["requestState"], "inputResponses": {"elicitation-2": ANSWER_2}}, caps)["result"]
    assert last["content"] == text("1.2 to prod: True")
    assert followed == [roots["roots"]] * 3  # each fresh session told the server the roots it was given


def test_an_answer_holds_only_for_the_question_it_answered() -> None:
    """The question changed between rounds (here: the tool's arguments are the same, but what it asks
    depends on the workspace): an answer to the old question is not taken for the new one."""
    asked: list[str] = []
    place = ["prod"]

    def confirm(ctx: Context, args: dict[str, Any]) -> str:
        question = f"Deploy to {place[0]}?"
        asked.append(question)
        answer = ctx.elicit(question, SURE)
        return f"{question} {answer['content']['sure']}"

    server = make_server()
    server.add_tool(Tool("confirm", confirm))
    d = ModernDriver(server)
    first = d.ask_modern(1, "tools/call", {"name": "confirm"}, ELICIT)["result"]
    place[0] = "staging"  # the workspace changed before the client came back
    again = d.ask_modern(2, "tools/call", {"name": "confirm", "requestState": first["requestState"],
                                           "inputResponses": {"elicitation-1": ANSWER_2}}, ELICIT)["result"]
    assert again["resultType"] == "input_required"
    assert again["inputRequests"]["elicitation-1"]["params"]["message"] == "Deploy to staging?"
    done = d.ask_modern(3, "tools/call", {"name": "confirm", "requestState": again["requestState"],
                                          "inputResponses": {"elicitation-1": ANSWER_2}}, ELICIT)["result"]
    assert done["content"] == text("Deploy to staging? True")


def test_a_resource_or_prompt_needing_a_capability_the_client_lacks_is_refused_with_32021() -> None:
    server = make_server()

    def read(ctx: Context, uri: str) -> str:
        return str(ctx.elicit("Which?", SURE))

    server.add_resource(Resource("test://asks", "asks", reader=read))
    server.add_prompt(Prompt("asks", lambda ctx, args: str(ctx.elicit("Which?", SURE))))
    d = ModernDriver(server)
    for msg_id, method, params in ((1, "resources/read", {"uri": "test://asks"}), (2, "prompts/get", {"name": "asks"})):
        error = d.ask_modern(msg_id, method, params)["error"]
        assert error["code"] == -32021 and error["data"] == {"requiredCapabilities": {"elicitation": {}}}


def test_a_question_raised_inside_a_task_group_still_ends_the_round() -> None:
    if not hasattr(asyncio, "TaskGroup"):
        pytest.skip("asyncio.TaskGroup is Python 3.11+")

    async def gathered(ctx: Context) -> str:
        async with asyncio.TaskGroup() as group:  # type: ignore[attr-defined]
            task = group.create_task(ctx.aelicit("Where to?", TARGET))
        return str(task.result()["content"]["target"])

    server = make_server()
    server.tool(gathered, name="gathered")
    d = ModernDriver(server)
    first = d.ask_modern(1, "tools/call", {"name": "gathered"}, ELICIT)["result"]
    assert first["resultType"] == "input_required" and list(first["inputRequests"]) == ["elicitation-1"]
    done = d.ask_modern(2, "tools/call", {"name": "gathered", "requestState": first["requestState"],
                                          "inputResponses": {"elicitation-1": ANSWER_1}}, ELICIT)["result"]
    assert done["content"] == text("prod")


def test_a_method_that_may_not_ask_gets_a_clear_error_never_a_request_to_the_client() -> None:
    server = make_server()
    d = ModernDriver(server)
    d.receive(INIT)
    d.receive({"jsonrpc": "2.0", "method": "notifications/initialized"})
    context = d.session._modern_context(7, "completion/complete", modern({}, ELICIT), modern({}, ELICIT)["_meta"])
    with pytest.raises(ClientRequestError, match="only tools/call, resources/read and prompts/get may ask"):
        context.elicit("Which?", SURE)
    assert d.session.outgoing == {}


def test_templates_that_follow_the_roots_are_never_fresh() -> None:
    server = make_server()
    d = ModernDriver(server)
    fixed = d.ask_modern(1, "resources/templates/list")["result"]
    server.add_template_source(lambda: [])
    sourced = d.ask_modern(2, "resources/templates/list")["result"]
    server.on_roots(lambda session, roots: None)
    following = d.ask_modern(3, "resources/templates/list")["result"]
    assert (fixed["ttlMs"], sourced["ttlMs"], following["ttlMs"]) == (300000, 300000, 0)
    assert fixed["cacheScope"] == following["cacheScope"] == "public"


def test_the_request_that_brings_the_roots_is_served_in_them_inline_handlers_included() -> None:
    """The whole request waits for the roots it brought (its handler call too), so a resource the new
    roots offer through a template, or an inline tool that reads them, sees them."""
    server = make_server()
    roots_now: list[str] = []

    def follow(session: Any, roots: list[dict[str, Any]]) -> None:
        roots_now[:] = [root["uri"] for root in roots]

    server.on_roots(follow)
    server.add_tool(Tool("where", lambda ctx, args: ",".join(roots_now) or "nowhere", inline=True))
    d = ModernDriver(server)
    caps: dict[str, Any] = {"roots": {}}
    assert d.ask_modern(1, "tools/call", {"name": "where"}, caps)["result"]["resultType"] == "input_required"
    answered = d.ask_modern(2, "tools/call", {"name": "where", "inputResponses": {"roots": {"roots": [
        {"uri": "file:///w"}]}}}, caps)["result"]
    assert answered["content"] == text("file:///w")


def test_a_question_in_an_exception_group_with_an_interrupt_lets_the_interrupt_go_on() -> None:
    import builtins

    from shipcode_mcp.actions import input_required_in
    from shipcode_mcp.context import InputRequired

    group_of = getattr(builtins, "BaseExceptionGroup", None)
    if group_of is None:
        pytest.skip("exception groups are Python 3.11+")
    question = InputRequired({"elicitation-1": {"method": "elicitation/create"}}, {})
    assert input_required_in(group_of("tasks", [question, ValueError("a bug")])) is question
    assert input_required_in(group_of("tasks", [question, KeyboardInterrupt()])) is None


def test_a_listen_whose_check_ends_after_the_input_ended_is_acknowledged_and_ended() -> None:
    """Nothing may stay open once the input is over (stdio waits for every request read)."""
    server = make_server()
    server.on_subscribe(lambda ctx, uri: f"kept {uri}")
    d = ModernDriver(server)
    assert listen(d, 5, {"resourceSubscriptions": ["test://a"]}) == []
    assert d.perform(d.session.close()) == []
    assert checked(d.run()) == [acknowledged(5, {"resourceSubscriptions": ["test://a"]}),
                                {"jsonrpc": "2.0", "id": 5, "result": {"resultType": "complete", "_meta": {ID_KEY: 5}}}]
    assert d.session.in_flight == {} and d.session.listeners == {}

"""Streamable HTTP for MCP 2026-07-28, beside the 2025-06-18 session endpoints, through a real uvicorn
server on 127.0.0.1: the routing headers checked against the body, no session, HTTP statuses per error,
JSON or an SSE stream per request, subscriptions/listen as a long-lived stream, and a closed stream as
the cancellation of its request."""

from __future__ import annotations

import base64
import http.client
import json
import threading
from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.subscriptions import ToolsListChanged

from shipcode_mcp import Server, Tool
from shipcode_mcp.transports.http.headers import decode_header_value, header_mismatch, modern_status
from support import wait_for
from transports.http.support import (
    CANCELLED,
    MCP_HEADERS,
    MODERN_VERSION,
    WAITING,
    McpHttpClient,
    UvicornThread,
    add_common_features,
    modern,
    modern_events,
    modern_headers,
    modern_json,
    post_modern,
    request,
)

SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"


def build_server() -> Server:
    server = Server("http-modern", "1.0.0", logging=True, list_changed=True, subscribe=True)
    add_common_features(server)

    @server.tool(name="grüße", inline=True)
    def greet() -> str:
        """A name outside plain ASCII: its Mcp-Name travels base64-encoded."""
        return "hallo"

    return server


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[Server, UvicornThread]]:
    server = build_server()
    uvicorn_thread = UvicornThread(server.http_app(session_idle_timeout=0, keepalive=0.3))
    yield server, uvicorn_thread
    uvicorn_thread.stop()


@pytest.fixture
def port(served: tuple[Server, UvicornThread]) -> int:
    return served[1].port


@pytest.fixture(scope="module")
def stateless_served() -> Iterator[tuple[Server, UvicornThread]]:
    server = build_server()
    uvicorn_thread = UvicornThread(server.http_app(stateless=True))
    yield server, uvicorn_thread
    uvicorn_thread.stop()


@pytest.fixture
def stateless_port(stateless_served: tuple[Server, UvicornThread]) -> int:
    return stateless_served[1].port


def raw(headers: dict[str, str]) -> list[tuple[bytes, bytes]]:
    """Headers as an ASGI server hands them over: lower-case names, values as bytes."""
    return [(name.lower().encode(), value.encode("latin-1")) for name, value in headers.items()]


def b64(text: str) -> str:
    return "=?base64?" + base64.b64encode(text.encode()).decode() + "?="


CALL = modern("tools/call", {"name": "echo", "arguments": {"text": "hi"}})
READ = modern("resources/read", {"uri": "test://note"})
LIST = modern("tools/list")


# -- header validation, the pure function ------------------------------------------------------------
@pytest.mark.parametrize("message", [CALL, READ, LIST, modern("prompts/get", {"name": "p"})])
def test_headers_that_mirror_the_body_pass(message: dict[str, Any]) -> None:
    assert header_mismatch(raw(modern_headers(message)), message) is None


@pytest.mark.parametrize(("message", "drop", "named"), [
    (CALL, "MCP-Protocol-Version", "MCP-Protocol-Version"),
    (CALL, "Mcp-Method", "Mcp-Method"),
    (CALL, "Mcp-Name", "Mcp-Name"),
    (READ, "Mcp-Name", "Mcp-Name"),
    (LIST, "MCP-Protocol-Version", "MCP-Protocol-Version"),
    (LIST, "Mcp-Method", "Mcp-Method"),
])
def test_a_missing_header_is_named(message: dict[str, Any], drop: str, named: str) -> None:
    headers = {k: v for k, v in modern_headers(message).items() if k != drop}
    assert header_mismatch(raw(headers), message) == f"Header mismatch: the {named} header is required"


@pytest.mark.parametrize(("message", "header", "value", "body"), [
    (CALL, "MCP-Protocol-Version", "2025-06-18", "2026-07-28"),
    (CALL, "Mcp-Method", "tools/list", "tools/call"),
    (CALL, "Mcp-Name", "other", "echo"),
    (READ, "Mcp-Name", "test://other", "test://note"),
    (CALL, "Mcp-Name", "Echo", "echo"),  # values are case-sensitive
])
def test_a_header_that_differs_from_the_body_is_refused_with_both_values(message: dict[str, Any], header: str,
                                                                        value: str, body: str) -> None:
    headers = modern_headers(message, {header: value})
    assert header_mismatch(raw(headers), message) == (
        f"Header mismatch: {header} header value {value!r} does not match body value {body!r}")


def test_header_names_are_case_insensitive_and_mcp_name_is_asked_only_where_the_spec_says() -> None:
    headers = {"mcp-protocol-version": MODERN_VERSION, "MCP-METHOD": "tools/call", "mCp-NaMe": "echo"}
    assert header_mismatch(raw(headers), CALL) is None
    assert header_mismatch(raw({"mcp-protocol-version": MODERN_VERSION, "mcp-method": "tools/list"}), LIST) is None
    # A request without the parameter Mcp-Name mirrors is left for the core to refuse (-32602).
    nameless = modern("tools/call", {"arguments": {}})
    assert header_mismatch(raw({"mcp-protocol-version": MODERN_VERSION, "mcp-method": "tools/call"}), nameless) is None


def test_the_base64_sentinel_is_decoded_before_the_comparison() -> None:
    for name in ("grüße", " padded ", "line1\nline2", "=?base64?literal?=", "echo"):
        message = modern("tools/call", {"name": name})
        headers = modern_headers(message, {"Mcp-Name": b64(name)})
        assert header_mismatch(raw(headers), message) is None, name
    wrong = modern_headers(CALL, {"Mcp-Name": b64("ech0")})
    assert header_mismatch(raw(wrong), CALL) == "Header mismatch: Mcp-Name header value 'ech0' does not match body value 'echo'"


@pytest.mark.parametrize("value", [
    "=?base64?not base64?=",
    "=?base64?ZWNobw?=",  # unpadded
    "=?base64?ZWNob3==?=",  # non-canonical: the spare bits are not zero
    "=?base64?/w==?=",  # bytes that are not UTF-8
])
def test_a_malformed_sentinel_is_refused(value: str) -> None:
    assert decode_header_value(value) is None
    assert header_mismatch(raw(modern_headers(CALL, {"Mcp-Name": value})), CALL) == (
        "Header mismatch: the Mcp-Name header value is not valid =?base64?...?= (canonical base64 of UTF-8)")


def test_a_sentinel_only_counts_as_a_whole_value_and_only_in_lower_case() -> None:
    assert decode_header_value("x=?base64?ZWNobw==?=") == "x=?base64?ZWNobw==?="
    assert decode_header_value("=?BASE64?ZWNobw==?=") == "=?BASE64?ZWNobw==?="
    assert decode_header_value("=?base64?ZWNobw==?=") == "echo"


@pytest.mark.parametrize(("header", "value"), [
    ("Mcp-Name", "grüße"), ("Mcp-Name", "a\x00b"), ("Mcp-Method", "tools/call\x7f"), ("MCP-Protocol-Version", "2026-07-28\x01"),
])
def test_a_header_value_with_invalid_characters_is_refused(header: str, value: str) -> None:
    message = modern("tools/call", {"name": value}) if header == "Mcp-Name" else CALL
    headers = modern_headers(message, {header: value})
    assert header_mismatch(raw(headers), message) == f"Header mismatch: the {header} header value contains invalid characters"


SQL_SCHEMA = {"type": "object", "properties": {
    "region": {"type": "string", "x-mcp-header": "Region"},
    "limit": {"type": "integer", "x-mcp-header": "Limit"},
    "dry": {"type": "boolean", "x-mcp-header": "Dry"},
    "target": {"type": "object", "properties": {"zone": {"type": "string", "x-mcp-header": "Zone"}}},
    "query": {"type": "string"}}}


def sql(arguments: dict[str, Any]) -> dict[str, Any]:
    return modern("tools/call", {"name": "execute_sql", "arguments": arguments})


@pytest.mark.parametrize(("arguments", "params"), [
    ({"region": "us-west1", "query": "SELECT 1"}, {"Mcp-Param-Region": "us-west1"}),
    ({"region": "Zürich", "limit": 42, "dry": True}, {"Mcp-Param-Region": b64("Zürich"), "Mcp-Param-Limit": "42.0",
                                                        "Mcp-Param-Dry": "true"}),
    ({"target": {"zone": "b"}, "region": None}, {"Mcp-Param-Zone": "b"}),
    ({"query": "no marked argument"}, {"Mcp-Param-Unknown": "ignored: no argument is marked for it"}),
])
def test_arguments_marked_x_mcp_header_are_mirrored(arguments: dict[str, Any], params: dict[str, str]) -> None:
    message = sql(arguments)
    assert header_mismatch(raw(modern_headers(message, params)), message, SQL_SCHEMA) is None


@pytest.mark.parametrize(("arguments", "params", "said"), [
    ({"region": "us-west1"}, {}, "the Mcp-Param-Region header is required"),
    ({"region": "us-west1"}, {"Mcp-Param-Region": "eu-west1"}, "Mcp-Param-Region header value 'eu-west1' does not match"),
    ({"limit": 42}, {"Mcp-Param-Limit": "forty-two"}, "Mcp-Param-Limit header value 'forty-two' does not match"),
    ({"dry": False}, {"Mcp-Param-Dry": "False"}, "Mcp-Param-Dry header value 'False' does not match"),
    ({"query": "x"}, {"Mcp-Param-Region": "us-west1"}, "the Mcp-Param-Region header is sent but the argument has no value"),
    ({"target": {"zone": "b"}}, {"Mcp-Param-Zone": "c"}, "Mcp-Param-Zone header value 'c' does not match"),
    ({"region": "us\x01"}, {"Mcp-Param-Region": "us\x01"}, "the Mcp-Param-Region header value contains invalid characters"),
])
def test_a_marked_argument_whose_header_is_missing_or_differs_is_refused(arguments: dict[str, Any],
                                                                          params: dict[str, str], said: str) -> None:
    message = sql(arguments)
    refused = header_mismatch(raw(modern_headers(message, params)), message, SQL_SCHEMA)
    assert refused is not None and said in refused, refused


def test_a_marked_argument_is_checked_over_http(port: int, served: tuple[Server, UvicornThread]) -> None:
    server = served[0]
    if "execute_sql" not in server.tools:
        server.add_tool(Tool("execute_sql", lambda ctx, args: f"ran in {args.get('region')}", SQL_SCHEMA))
    message = sql({"region": "us-west1", "query": "SELECT 1"})
    ok = post_modern(port, message, {"Mcp-Param-Region": "us-west1"})
    assert ok.status == 200 and modern_json(ok)["result"]["content"][0]["text"] == "ran in us-west1"
    # A gateway routed on the header, the server would run the body: refused.
    lied = post_modern(port, message, {"Mcp-Param-Region": "eu-west1"})
    assert lied.status == 400 and lied.json()["error"]["code"] == -32020
    missing = post_modern(port, message)
    assert missing.status == 400 and "Mcp-Param-Region header is required" in missing.json()["error"]["message"]


def test_a_header_sent_twice_is_refused() -> None:
    pairs = [*raw(modern_headers(CALL)), (b"mcp-method", b"tools/call")]
    assert header_mismatch(pairs, CALL) == "Header mismatch: the Mcp-Method header is sent 2 times"


def test_the_status_of_a_modern_error() -> None:
    def status(code: int, message: dict[str, Any] = CALL) -> int:
        return modern_status({"jsonrpc": "2.0", "id": 1, "error": {"code": code, "message": "m"}}, message)

    assert [status(code) for code in (-32020, -32021, -32022, -32601)] == [400, 400, 400, 404]
    assert [status(code) for code in (-32602, -32603, -32600, -32002, -32001)] == [200] * 5
    no_capabilities = modern("tools/list")
    del no_capabilities["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"]
    assert status(-32602, no_capabilities) == 400
    assert status(-32602, modern("tools/list", version=20260728)) == 400  # type: ignore[arg-type]
    assert status(-32602, modern("tools/list", meta={"io.modelcontextprotocol/logLevel": "loud"})) == 400
    assert status(-32602, modern("tools/list", meta={"io.modelcontextprotocol/clientInfo": "me"})) == 400
    assert status(-32602, modern("tools/list", meta={"io.modelcontextprotocol/logLevel": "debug"})) == 200
    assert modern_status({"jsonrpc": "2.0", "id": 1, "result": {}}, CALL) == 200


# -- header validation over HTTP --------------------------------------------------------------------
@pytest.mark.parametrize(("extra", "drop", "named"), [
    ({}, ("MCP-Protocol-Version",), "the MCP-Protocol-Version header is required"),
    ({}, ("Mcp-Method",), "the Mcp-Method header is required"),
    ({}, ("Mcp-Name",), "the Mcp-Name header is required"),
    ({"MCP-Protocol-Version": "2025-06-18"}, (), "MCP-Protocol-Version header value '2025-06-18' does not match body value '2026-07-28'"),
    ({"Mcp-Method": "tools/list"}, (), "Mcp-Method header value 'tools/list' does not match body value 'tools/call'"),
    ({"Mcp-Name": "later"}, (), "Mcp-Name header value 'later' does not match body value 'echo'"),
    ({"Mcp-Name": b64("later")}, (), "Mcp-Name header value 'later' does not match body value 'echo'"),
    ({"Mcp-Name": "=?base64?!!?="}, (), "the Mcp-Name header value is not valid =?base64?...?= (canonical base64 of UTF-8)"),
    ({"Mcp-Name": "échò"}, (), "the Mcp-Name header value contains invalid characters"),  # sent as latin-1 bytes
])
def test_a_header_mismatch_gets_400_and_minus_32020_naming_the_header(port: int, extra: dict[str, str],
                                                                      drop: tuple[str, ...], named: str) -> None:
    reply = post_modern(port, CALL, extra, drop=drop)
    assert reply.status == 400 and "mcp-session-id" not in reply.headers
    assert modern_json(reply) == {"jsonrpc": "2.0", "id": 1, "error": {"code": -32020, "message": f"Header mismatch: {named}"}}


def test_headers_are_checked_in_stateless_mode_too(stateless_port: int) -> None:
    reply = post_modern(stateless_port, CALL, drop=("Mcp-Method",))
    assert reply.status == 400 and modern_json(reply)["error"]["code"] == -32020


def test_a_name_outside_ascii_travels_base64_encoded(port: int) -> None:
    message = modern("tools/call", {"name": "grüße"})
    assert modern_headers(message)["Mcp-Name"] == "=?base64?Z3LDvMOfZQ==?="
    reply = post_modern(port, message)
    assert reply.status == 200, reply.body
    assert modern_json(reply)["result"]["content"] == [{"type": "text", "text": "hallo"}]


# -- no session -------------------------------------------------------------------------------------
def test_a_modern_request_needs_no_session_and_gets_none(port: int) -> None:
    reply = post_modern(port, CALL)
    assert reply.status == 200 and reply.content_type == "application/json"
    assert "mcp-session-id" not in reply.headers
    assert modern_json(reply)["result"]["content"] == [{"type": "text", "text": "hi"}]


def test_a_session_id_on_a_modern_request_is_ignored_and_not_echoed(port: int) -> None:
    for session_id in ("no-such-session", McpHttpClient(port).session_id or ""):
        reply = post_modern(port, CALL, {"Mcp-Session-Id": session_id})
        assert reply.status == 200 and "mcp-session-id" not in reply.headers
        assert modern_json(reply)["result"]["content"] == [{"type": "text", "text": "hi"}]


def test_a_modern_request_is_served_on_a_stateless_endpoint(stateless_port: int) -> None:
    reply = post_modern(stateless_port, CALL)
    assert reply.status == 200 and "mcp-session-id" not in reply.headers
    assert modern_json(reply)["result"]["content"] == [{"type": "text", "text": "hi"}]


def test_a_modern_notification_gets_202_and_no_session(port: int, stateless_port: int) -> None:
    notification = modern("notifications/whatever", msg_id=None)
    for where in (port, stateless_port):
        reply = request(where, "POST", notification, MCP_HEADERS)  # the spec asks no header of a notification
        assert (reply.status, reply.body) == (202, b"") and "mcp-session-id" not in reply.headers


def test_legacy_sessions_go_on_beside_modern_requests(port: int) -> None:
    client = McpHttpClient(port)
    assert post_modern(port, CALL).status == 200
    reply = client.call("tools/call", {"name": "echo", "arguments": {"text": "old"}})
    assert reply.headers["mcp-session-id"] == client.session_id
    assert reply.json()["result"] == {"content": [{"type": "text", "text": "old"}], "isError": False}


# -- statuses per error (the core answers; the transport chooses the status) -------------------------
def test_an_unsupported_version_gets_400_and_minus_32022(port: int) -> None:
    message = modern("tools/list", version="2099-01-01")
    reply = post_modern(port, message)
    assert reply.status == 400
    error = modern_json(reply)["error"]
    assert error["code"] == -32022
    assert error["data"] == {"supported": ["2026-07-28", "2025-06-18"], "requested": "2099-01-01"}


def test_a_request_without_client_capabilities_gets_400_and_minus_32602(port: int) -> None:
    message = modern("tools/list")
    del message["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"]
    reply = post_modern(port, message)
    assert reply.status == 400 and modern_json(reply)["error"]["code"] == -32602


DISCOVER_HEADERS = {**MCP_HEADERS, "MCP-Protocol-Version": MODERN_VERSION, "Mcp-Method": "server/discover"}
CLIENT_INFO = {"name": "conformance-client", "version": "1.0.0"}
NO_META = "_meta with io.modelcontextprotocol/protocolVersion and io.modelcontextprotocol/clientCapabilities"


@pytest.mark.parametrize(("rpc_id", "params", "missing"), [
    (101, {}, NO_META),
    (102, {"_meta": {"io.modelcontextprotocol/clientInfo": CLIENT_INFO, "io.modelcontextprotocol/clientCapabilities": {}}},
     "io.modelcontextprotocol/protocolVersion, a string"),
    (104, {"_meta": {"io.modelcontextprotocol/protocolVersion": MODERN_VERSION, "io.modelcontextprotocol/clientInfo": CLIENT_INFO}},
     "io.modelcontextprotocol/clientCapabilities, an object"),
    ("s", {"_meta": {"progressToken": 1}}, NO_META),  # modern by its header alone
])
@pytest.mark.parametrize("where", ["sessions", "stateless"])
def test_a_request_with_the_modern_header_and_no_or_incomplete_meta_gets_400_and_minus_32602_with_its_id(
        port: int, stateless_port: int, where: str, rpc_id: int | str, params: dict[str, Any], missing: str) -> None:
    """The conformance suite's server-stateless probes (0.2.0-alpha.12, sep-2575-request-meta-invalid-*): the
    header says 2026-07-28, the body's `_meta` is absent or lacks a required field. Not a legacy request with
    a wrong header (-32600, id null, 'unsupported MCP-Protocol-Version'): a malformed modern one."""
    message = {"jsonrpc": "2.0", "id": rpc_id, "method": "server/discover", "params": params}
    reply = request(port if where == "sessions" else stateless_port, "POST", message, DISCOVER_HEADERS)
    assert reply.status == 400 and "mcp-session-id" not in reply.headers
    body = modern_json(reply)
    assert body["id"] == rpc_id and body["error"]["code"] == -32602, body
    assert body["error"]["message"].startswith("Invalid params: ") and body["error"]["message"].endswith(missing)


def test_the_modern_header_alone_leaves_initialize_and_other_versions_as_they_were(port: int) -> None:
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
    reply = request(port, "POST", init, {**MCP_HEADERS, "MCP-Protocol-Version": MODERN_VERSION})
    assert reply.status == 200 and reply.json()["result"]["protocolVersion"] == "2025-06-18"
    other = request(port, "POST", {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
                    {**MCP_HEADERS, "MCP-Protocol-Version": "2024-11-05", "Mcp-Session-Id": reply.headers["mcp-session-id"]})
    assert other.status == 400 and other.json()["error"]["message"] == (
        "Bad Request: unsupported MCP-Protocol-Version '2024-11-05' (a session speaks 2025-06-18; a 2026-07-28 "
        "request names its version in params._meta)")


@pytest.mark.parametrize("method", ["tasks/get", "tasks/update", "tasks/cancel"])
def test_tasks_methods_without_the_extension_get_400_and_minus_32021(port: int, method: str) -> None:
    message = modern(method, {"taskId": "gate-test"})
    reply = post_modern(port, message, {"Mcp-Name": "gate-test"})
    assert reply.status == 400 and modern_json(reply) == {"jsonrpc": "2.0", "id": 1, "error": {
        "code": -32021, "message": "Missing required client capability",
        "data": {"requiredCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}}}}


@pytest.mark.parametrize("method", ["ping", "logging/setLevel", "no/such/method"])
def test_a_method_the_modern_era_lacks_gets_404_and_minus_32601(port: int, method: str) -> None:
    reply = post_modern(port, modern(method))
    assert reply.status == 404 and modern_json(reply)["error"]["code"] == -32601


def test_other_errors_of_a_modern_request_keep_200(port: int) -> None:
    reply = post_modern(port, modern("resources/read", {"uri": "test://missing"}))
    assert reply.status == 200 and modern_json(reply)["error"]["code"] == -32602


# -- JSON or SSE --------------------------------------------------------------------------------------
def test_a_modern_result_is_complete_and_says_who_served_it(port: int) -> None:
    result = modern_json(post_modern(port, CALL))["result"]
    assert result["resultType"] == "complete"
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"] == {"name": "http-modern", "version": "1.0.0"}


def test_progress_and_logs_make_an_sse_stream_of_the_request_that_ends_with_its_result(port: int) -> None:
    message = modern("tools/call", {"name": "steps", "arguments": {"count": 2}},
                     meta={"progressToken": "p", "io.modelcontextprotocol/logLevel": "info"})
    reply = post_modern(port, message)
    assert reply.status == 200 and reply.content_type == "text/event-stream"
    assert reply.headers["x-accel-buffering"] == "no" and "mcp-session-id" not in reply.headers
    events = modern_events(reply)
    assert [event.get("method") for event in events] == [
        "notifications/progress", "notifications/progress", "notifications/message", None]
    assert [event["params"]["progress"] for event in events[:2]] == [1, 2]
    assert events[2]["params"]["data"] == "all steps done"
    assert events[-1]["id"] == 1 and events[-1]["result"]["content"] == [{"type": "text", "text": "2 steps"}]


def test_without_a_progress_token_or_log_level_the_answer_is_json(port: int) -> None:
    reply = post_modern(port, modern("tools/call", {"name": "steps", "arguments": {"count": 2}}))
    assert reply.content_type == "application/json"
    assert modern_json(reply)["result"]["content"] == [{"type": "text", "text": "2 steps"}]


# -- cancellation: closing the response is cancelling the request --------------------------------------
def open_post(port: int, message: dict[str, Any]) -> http.client.HTTPConnection:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=15)
    connection.request("POST", "/mcp", body=json.dumps(message).encode(), headers=modern_headers(message))
    return connection


def test_closing_the_connection_before_any_answer_cancels_the_request(port: int) -> None:
    message = modern("tools/call", {"name": "wait", "arguments": {"tag": "json-phase"}})
    connection = open_post(port, message)
    wait_for(lambda: "json-phase" in WAITING, 10, "the tool to start")
    connection.close()
    wait_for(lambda: "json-phase" in CANCELLED, 10, "the tool to be cancelled")


def test_closing_the_sse_stream_cancels_the_request(port: int) -> None:
    message = modern("tools/call", {"name": "wait", "arguments": {"tag": "sse-phase", "progress": True}},
                     meta={"progressToken": 7})
    connection = open_post(port, message)
    response = connection.getresponse()
    assert response.status == 200 and response.getheader("content-type", "").startswith("text/event-stream")
    first = response.readline()
    assert first.startswith(b"event: message") or first.startswith(b"data:"), first
    wait_for(lambda: "sse-phase" in WAITING, 10, "the tool to start")
    assert "sse-phase" not in CANCELLED
    connection.close()
    wait_for(lambda: "sse-phase" in CANCELLED, 10, "the tool to be cancelled")


# -- subscriptions/listen ---------------------------------------------------------------------------
def listen(port: int, msg_id: int | str = "listen-1", **filters: Any) -> Any:
    message = modern("subscriptions/listen", {"notifications": filters}, msg_id)
    reply = post_modern(port, message, stream=True)
    assert reply.status == 200 and reply.content_type == "text/event-stream", (reply.status, reply.headers)
    assert reply.headers["x-accel-buffering"] == "no" and "mcp-session-id" not in reply.headers
    return reply


def test_listen_acknowledges_then_carries_list_changes_tagged_with_its_id(served: tuple[Server, UvicornThread]) -> None:
    server, uvicorn_thread = served
    reply = listen(uvicorn_thread.port, "listen-tools", toolsListChanged=True)
    ack = reply.next_event(modern=True)
    assert ack is not None and ack["method"] == "notifications/subscriptions/acknowledged"
    assert ack["params"]["_meta"][SUBSCRIPTION_ID] == "listen-tools"
    assert ack["params"]["notifications"] == {"toolsListChanged": True}

    @server.tool(inline=True)
    def added_while_listening() -> str:
        """Registering a tool tells every listener that the list changed."""
        return "new"

    change = reply.next_event(modern=True)
    assert change == {"jsonrpc": "2.0", "method": "notifications/tools/list_changed",
                      "params": {"_meta": {SUBSCRIPTION_ID: "listen-tools"}}}
    reply.response.close()


def test_a_quiet_listen_stream_keeps_itself_alive_with_comments(port: int) -> None:
    reply = listen(port, 9, toolsListChanged=True)
    assert reply.next_event(modern=True) is not None  # the acknowledgement
    lines: list[bytes] = []
    while lines.count(b":\r\n") < 2:  # one every 0.3 s here
        line = reply.response.readline()
        assert line, lines
        lines.append(line)
    assert set(lines) == {b":\r\n"}  # nothing else on a quiet stream
    reply.response.close()


def test_closing_a_listen_stream_ends_the_subscription(served: tuple[Server, UvicornThread]) -> None:
    uvicorn_thread = served[1]
    endpoint = uvicorn_thread.app.state.mcp
    reply = listen(uvicorn_thread.port, "bye", toolsListChanged=True)
    assert reply.next_event(modern=True) is not None
    assert len(endpoint.listens) == 1
    reply.response.close()
    wait_for(lambda: not endpoint.listens, 10, "the listen to end")


def test_shutting_down_ends_a_listen_with_its_result() -> None:
    uvicorn_thread = UvicornThread(build_server().http_app(keepalive=0.3))
    try:
        reply = listen(uvicorn_thread.port, 5, toolsListChanged=True)
        assert reply.next_event(modern=True) is not None
    finally:
        stopping = threading.Thread(target=uvicorn_thread.stop)
        stopping.start()
    last = reply.next_event(modern=True)
    stopping.join(15)
    assert last == {"jsonrpc": "2.0", "id": 5, "result": {"resultType": "complete", "_meta": {SUBSCRIPTION_ID: 5}}}
    assert reply.next_event() is None


def test_listen_needs_an_sse_client(port: int) -> None:
    message = modern("subscriptions/listen", {"notifications": {"toolsListChanged": True}})
    reply = post_modern(port, message, {"Accept": "application/json"})
    assert reply.status == 406


# -- a real modern client -----------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["sessions", "stateless"])
def test_the_official_sdk_client_speaks_2026_07_28_over_http(served: tuple[Server, UvicornThread],
                                                             stateless_served: tuple[Server, UvicornThread],
                                                             mode: str) -> None:
    """mcp 2.x `Client` in its default mode: it probes with server/discover, then sends every request with
    the mirrored headers (a base64 Mcp-Name for a name outside ASCII) and listens for list changes, on an
    endpoint that keeps legacy sessions and on a stateless one alike."""
    server, uvicorn_thread = served if mode == "sessions" else stateless_served

    async def main() -> None:
        async with Client(f"http://127.0.0.1:{uvicorn_thread.port}/mcp") as client:
            assert client.protocol_version == "2026-07-28"
            assert {"echo", "grüße", "steps"} <= {tool.name for tool in (await client.list_tools()).tools}
            called = await client.call_tool("grüße", {})
            assert not called.is_error and called.content[0].model_dump()["text"] == "hallo"
            read = await client.read_resource("test://note")
            assert read.contents[0].model_dump()["text"] == "a note"
            async with client.listen(tools_list_changed=True) as subscription:
                @server.tool(inline=True)
                def added_for_the_sdk() -> str:
                    """Registering it changes the list the client listens to."""
                    return "new"

                with anyio.fail_after(10):
                    event = await subscription.__aiter__().__anext__()
                assert isinstance(event, ToolsListChanged)

    anyio.run(main)
    wait_for(lambda: not uvicorn_thread.app.state.mcp.listens, 10, "the SDK's listen stream to end")


@pytest.mark.parametrize(("header", "body", "same"), [
    ("42", 42, True), ("42.0", 42, True), ("-7", -7, True), ("4_2", 42, False), (" 42", 42, False),
    ("9007199254740992", 9007199254740993, False), ("9" * 400, int("9" * 400), True), ("9" * 400, 1, False),
    ("1.0000000000000001", 1, False), ("0.1", 0.1, True), ("1e2", 100, True), ("nan", 1.5, False),
])
def test_numbers_in_mcp_param_headers_are_compared_exactly(header: str, body: Any, same: bool) -> None:
    message = sql({"limit": body})
    refused = header_mismatch(raw(modern_headers(message, {"Mcp-Param-Limit": header})), message, SQL_SCHEMA)
    assert (refused is None) is same, refused


def test_a_null_client_info_or_log_level_is_no_envelope_error() -> None:
    found = {"jsonrpc": "2.0", "id": 1, "error": {"code": -32602, "message": "Resource not found"}}
    for key in ("io.modelcontextprotocol/clientInfo", "io.modelcontextprotocol/logLevel"):
        assert modern_status(found, modern("resources/read", {"uri": "test://x"}, meta={key: None})) == 200

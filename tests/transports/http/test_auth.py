"""The HTTP face of authorization (transports/http/auth.py), against real servers on loopback: the 401,
400 and 403 answers and their exact `WWW-Authenticate` challenges (RFC 6750, RFC 9728, the MCP
"Authorization" page's examples), the Protected Resource Metadata, legacy sessions and modern request
states bound to their caller, and the official SDK client with a static bearer token in both eras.

Each attack is first shown to work where nothing defends against it (the same server without auth),
so that a refusal cannot pass by accident. Token-file servers are `shipcode-mcp` processes; the OAuth
mode's metadata and challenges need no authorization server (nothing asks it before a token comes),
and the request-state test is a library server built with `create_app(auth=ResourceServer(...))`.
"""

from __future__ import annotations

import base64
import http.client
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import httpx2
import pytest
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client

from auth_support import OTHER_TOKEN, READ_TOKEN, WRITE_TOKEN, BearerClient, CliServer, bearer, write_tokens
from shipcode_mcp.auth.scopes import READ, WRITE
from shipcode_mcp.auth.token_file import TokenFile
from shipcode_mcp.auth.tokens import Principal
from shipcode_mcp.transports.http import create_app
from shipcode_mcp.transports.http.auth import ResourceServer
from transports.http.mrtr_server import build_server as build_mrtr_server
from transports.http.support import (
    MCP_HEADERS,
    McpHttpClient,
    Reply,
    UvicornThread,
    initialize,
    modern,
    modern_events,
    modern_json,
    post_modern,
    request,
)

if TYPE_CHECKING:
    from starlette.responses import Response

ISSUER = "http://127.0.0.1:9/"  # never asked: no request here carries a token to an OAuth server
NO_TOKEN = {"error": "unauthorized", "error_description": "this server needs a bearer token"}
OFFERED = 'scope="shipcode:read shipcode:write"'
"""What a 401 or 400 asks for on a server with write tools (tokens_server): every scope its tools need, so one
authorization covers them all; a read-only server (oauth_server) asks for shipcode:read alone."""
INVALID_PARAMS = -32602


# -- servers ---------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("workspace")
    (root / "hello.txt").write_text("hello\n")
    return root


@pytest.fixture(scope="module")
def tokens_server(workspace: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[CliServer]:
    """`shipcode-mcp --allow-write --auth-token-file`: a read token, a write token, another write token."""
    folder = tmp_path_factory.mktemp("tokens")
    path = write_tokens(folder / "tokens")
    with CliServer(["--allow-write", "--auth-token-file", str(path), str(workspace)], folder / "server.log") as server:
        yield server


@pytest.fixture(scope="module")
def open_server(workspace: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[CliServer]:
    """The same server without auth (loopback only, as the command line allows): where the attacks work."""
    folder = tmp_path_factory.mktemp("open")
    with CliServer(["--allow-write", str(workspace)], folder / "server.log") as server:
        yield server


@pytest.fixture(scope="module")
def oauth_server(workspace: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[CliServer]:
    folder = tmp_path_factory.mktemp("oauth")
    with CliServer(["--auth-issuer", ISSUER, str(workspace)], folder / "server.log") as server:
        yield server


def prm_url(server: CliServer) -> str:
    return f"http://127.0.0.1:{server.port}/.well-known/oauth-protected-resource/mcp"


def challenge(reply: Reply) -> str:
    return reply.headers["www-authenticate"]


def post_initialize(port: int, headers: dict[str, str] | None = None, path: str = "/mcp") -> Reply:
    return request(port, "POST", initialize(), {**MCP_HEADERS, **(headers or {})}, path=path)


def tool_call(name: str, arguments: dict[str, Any], msg_id: int = 1) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": msg_id, "method": "tools/call", "params": {"name": name, "arguments": arguments}}


def tool_result(reply: Reply) -> dict[str, Any]:
    assert reply.status == 200, (reply.status, reply.body)
    message = reply.json() if reply.content_type == "application/json" else reply.events()[-1]
    result: dict[str, Any] = message["result"]
    return result


# -- 401: no token, another scheme, a malformed or unknown token ------------------------------------
def test_without_a_token_the_open_server_answers_and_a_protected_one_says_401(
        open_server: CliServer, tokens_server: CliServer, oauth_server: CliServer) -> None:
    assert post_initialize(open_server.port).status == 200  # the attack: anyone who reaches the port
    for server, expected in ((tokens_server, f"Bearer {OFFERED}"),
                             (oauth_server, f'Bearer resource_metadata="{prm_url(oauth_server)}", scope="shipcode:read"')):
        reply = post_initialize(server.port)
        assert reply.status == 401
        assert challenge(reply) == expected  # no error code when no credentials came (RFC 6750 section 3.1)
        assert json.loads(reply.body) == NO_TOKEN
        for method in ("GET", "DELETE"):
            other = request(server.port, method, headers={"Accept": "text/event-stream", "Mcp-Session-Id": "0" * 32})
            assert (other.status, challenge(other)) == (401, expected)


@pytest.mark.parametrize("authorization", ["Basic cmVhZDpyZWFk", f"Token {READ_TOKEN}", f"{READ_TOKEN}", "Bearer"])
def test_another_scheme_is_as_if_no_token_came(tokens_server: CliServer, oauth_server: CliServer,
                                               authorization: str) -> None:
    assert post_initialize(tokens_server.port, {"Authorization": f"Bearer {READ_TOKEN}"}).status == 200
    if authorization == "Bearer":  # the scheme alone: a token that is empty, so malformed
        reply = post_initialize(tokens_server.port, {"Authorization": authorization})
        assert (reply.status, challenge(reply)) == (401, f'Bearer error="invalid_token", {OFFERED}, '
                                                         'error_description="the token is malformed"')
        return
    reply = post_initialize(tokens_server.port, {"Authorization": authorization})
    assert (reply.status, challenge(reply), json.loads(reply.body)) == (401, f"Bearer {OFFERED}", NO_TOKEN)
    reply = post_initialize(oauth_server.port, {"Authorization": authorization})
    assert challenge(reply) == f'Bearer resource_metadata="{prm_url(oauth_server)}", scope="shipcode:read"'


def test_the_scheme_is_case_insensitive(tokens_server: CliServer) -> None:
    for scheme in ("bearer", "BEARER", "Bearer"):
        assert post_initialize(tokens_server.port, {"Authorization": f"{scheme} {WRITE_TOKEN}"}).status == 200


@pytest.mark.parametrize("token", [f"{READ_TOKEN} {READ_TOKEN}", f'"{READ_TOKEN}"', f"{READ_TOKEN},x", "é" * 20,
                                   "a" * 8193, "=abc"])
def test_a_malformed_token_is_invalid(tokens_server: CliServer, oauth_server: CliServer, token: str) -> None:
    raw = token.encode("utf-8").decode("latin-1")  # http.client sends header values as latin-1
    reply = post_initialize(tokens_server.port, {"Authorization": f"Bearer {raw}"})
    assert reply.status == 401
    assert challenge(reply) == f'Bearer error="invalid_token", {OFFERED}, error_description="the token is malformed"'
    assert json.loads(reply.body) == {"error": "invalid_token", "error_description": "the token is malformed"}
    reply = post_initialize(oauth_server.port, {"Authorization": f"Bearer {raw}"})
    assert challenge(reply) == (f'Bearer error="invalid_token", resource_metadata="{prm_url(oauth_server)}", '
                                'scope="shipcode:read", error_description="the token is malformed"')


def test_an_unknown_token_is_invalid_and_never_echoed(tokens_server: CliServer) -> None:
    guess = READ_TOKEN[:-1] + "X"
    reply = post_initialize(tokens_server.port, bearer(guess))
    assert reply.status == 401
    assert challenge(reply) == f'Bearer error="invalid_token", {OFFERED}, error_description="the token is not valid"'
    assert guess.encode() not in reply.body
    assert guess not in tokens_server.stderr()


# -- 400: two Authorization headers, a token in the URL ----------------------------------------------
def send_raw(port: int, headers: list[tuple[str, str]], path: str = "/mcp") -> Reply:
    """A POST initialize with exactly `headers`, repeated names included."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=15)
    body = json.dumps(initialize()).encode()
    connection.putrequest("POST", path)
    for name, value in [*MCP_HEADERS.items(), ("Content-Length", str(len(body))), *headers]:
        connection.putheader(name, value)
    connection.endheaders(body)
    return Reply(connection.getresponse())


def test_two_authorization_headers_are_a_bad_request(tokens_server: CliServer) -> None:
    for token in (WRITE_TOKEN, READ_TOKEN):  # each one alone is good
        assert send_raw(tokens_server.port, [("Authorization", f"Bearer {token}")]).status == 200
    reply = send_raw(tokens_server.port, [("Authorization", f"Bearer {WRITE_TOKEN}"), ("Authorization", f"Bearer {READ_TOKEN}")])
    assert reply.status == 400
    assert challenge(reply) == f'Bearer error="invalid_request", {OFFERED}, error_description="send one Authorization header"'
    assert json.loads(reply.body) == {"error": "invalid_request", "error_description": "send one Authorization header"}


@pytest.mark.parametrize("query", [f"access_token={READ_TOKEN}", "access_token=", f"x=1&access_token={WRITE_TOKEN}"])
def test_a_token_in_the_url_is_a_bad_request(tokens_server: CliServer, query: str) -> None:
    """RFC 6750's URI query method is not supported (the URL ends up in logs): refused even beside a good header."""
    assert post_initialize(tokens_server.port, bearer(WRITE_TOKEN), path="/mcp?x=1").status == 200
    reply = post_initialize(tokens_server.port, bearer(WRITE_TOKEN), path=f"/mcp?{query}")
    assert reply.status == 400
    assert challenge(reply) == (f'Bearer error="invalid_request", {OFFERED}, error_description='
                                '"send the access token in the Authorization header, never in the URL"')


# -- 403: a read token writing -------------------------------------------------------------------------
INSUFFICIENT = ('Bearer error="insufficient_scope", scope="shipcode:read shipcode:write", '
                'error_description="this request needs the scope shipcode:write"')
WRITES = [("write_file", lambda name: {"path": name, "content": "written\n"}),
          ("edit_file", lambda name: {"path": name, "old_text": "hello", "new_text": "edited"})]
"""Each call writes the file it names (made beforehand with "hello" in it, for edit_file to find)."""


def targets(workspace: Path, prefix: str) -> list[str]:
    """Three files to write: on the open server, with a write token, with a read token."""
    names = [f"{prefix}-{number}.txt" for number in range(3)]
    for name in names:
        (workspace / name).write_text("hello\n")
    return names


@pytest.mark.parametrize(("tool", "arguments"), WRITES, ids=[name for name, _ in WRITES])
def test_a_read_token_cannot_write_in_a_legacy_session(open_server: CliServer, tokens_server: CliServer,
                                                        workspace: Path, tool: str, arguments: Any) -> None:
    mine, written, refused = targets(workspace, f"legacy-{tool}")
    assert tool_result(McpHttpClient(open_server.port).post(tool_call(tool, arguments(mine))))["isError"] is False
    assert tool_result(BearerClient(tokens_server.port, WRITE_TOKEN).post(tool_call(tool, arguments(written))))[
        "isError"] is False
    assert (workspace / written).read_text() != "hello\n"
    before = {path.name: path.read_text() for path in workspace.iterdir()}
    reader = BearerClient(tokens_server.port, READ_TOKEN)
    assert tool_result(reader.post(tool_call("read_file", {"path": "hello.txt"})))["isError"] is False
    reply = reader.post(tool_call(tool, arguments(refused)))
    assert reply.status == 403
    assert challenge(reply) == INSUFFICIENT
    assert json.loads(reply.body) == {"error": "insufficient_scope",
                                      "error_description": "this request needs the scope shipcode:write"}
    assert {path.name: path.read_text() for path in workspace.iterdir()} == before  # nothing written


@pytest.mark.parametrize(("tool", "arguments"), WRITES, ids=[name for name, _ in WRITES])
def test_a_read_token_cannot_write_in_a_modern_request(open_server: CliServer, tokens_server: CliServer,
                                                        workspace: Path, tool: str, arguments: Any) -> None:
    mine, written, refused = targets(workspace, f"modern-{tool}")

    def call(port: int, token: str | None, target: str) -> Reply:
        return post_modern(port, modern("tools/call", {"name": tool, "arguments": arguments(target)}),
                           bearer(token) if token else None)

    assert modern_result(call(open_server.port, None, mine))["isError"] is False
    assert modern_result(call(tokens_server.port, WRITE_TOKEN, written))["isError"] is False
    assert (workspace / written).read_text() != "hello\n"
    before = {path.name: path.read_text() for path in workspace.iterdir()}
    reply = call(tokens_server.port, READ_TOKEN, refused)
    assert (reply.status, challenge(reply)) == (403, INSUFFICIENT)
    assert {path.name: path.read_text() for path in workspace.iterdir()} == before
    read = post_modern(tokens_server.port, modern("tools/call", {"name": "read_file", "arguments": {"path": "hello.txt"}}),
                       bearer(READ_TOKEN))
    assert modern_result(read)["isError"] is False


def modern_result(reply: Reply) -> dict[str, Any]:
    assert reply.status == 200, (reply.status, reply.body)
    message = modern_json(reply) if reply.content_type == "application/json" else modern_events(reply)[-1]
    result: dict[str, Any] = message["result"]
    return result


def test_the_403_of_an_oauth_server_follows_the_spec_example(oauth_server: CliServer, tmp_path: Path) -> None:
    """MCP "Authorization", scope challenge: error, scope (every scope the request needs, so one
    re-authorization is enough), resource_metadata, error_description."""
    tokens = TokenFile(str(write_tokens(tmp_path / "tokens")))
    resource = ResourceServer(tokens, resource=f"http://127.0.0.1:{oauth_server.port}/mcp",
                              authorization_servers=[ISSUER])
    reply = resource.insufficient(Principal("ann", frozenset({READ})), (READ, WRITE))
    assert reply.status_code == 403
    assert reply.headers["www-authenticate"] == (
        f'Bearer error="insufficient_scope", scope="shipcode:read shipcode:write", resource_metadata="{prm_url(oauth_server)}", '
        'error_description="this request needs the scope shipcode:write"')


# -- Protected Resource Metadata (RFC 9728) ----------------------------------------------------------
def test_the_protected_resource_metadata_names_the_issuer_the_resource_and_the_scopes(oauth_server: CliServer) -> None:
    expected = {"resource": f"http://127.0.0.1:{oauth_server.port}/mcp", "authorization_servers": [ISSUER],
                "scopes_supported": ["shipcode:read", "shipcode:write"], "bearer_methods_supported": ["header"],
                "resource_name": "shipcode-mcp"}
    for path in ("/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"):
        reply = request(oauth_server.port, "GET", headers={"Accept": "application/json"}, path=path)  # no token needed
        assert reply.status == 200 and reply.content_type == "application/json"
        assert json.loads(reply.body) == expected
        assert reply.headers["access-control-allow-origin"] == "*"  # browser clients discover it too


def test_the_metadata_follows_resource_url(workspace: Path, tmp_path: Path) -> None:
    public = "https://mcp.example.com/mcp"
    with CliServer(["--auth-issuer", ISSUER, "--resource-url", public, str(workspace)], tmp_path / "server.log") as server:
        reply = request(server.port, "GET", path="/.well-known/oauth-protected-resource/mcp")
        assert json.loads(reply.body)["resource"] == public
        refused = post_initialize(server.port)
        assert challenge(refused) == ('Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-'
                                      'resource/mcp", scope="shipcode:read"')


def test_a_token_file_server_has_no_metadata_to_discover(tokens_server: CliServer, open_server: CliServer) -> None:
    for server in (tokens_server, open_server):
        for path in ("/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"):
            assert request(server.port, "GET", path=path).status == 404


# -- legacy sessions belong to their caller ------------------------------------------------------------
def test_another_callers_session_is_not_found(open_server: CliServer, tokens_server: CliServer) -> None:
    owner = McpHttpClient(open_server.port)
    stranger = McpHttpClient(open_server.port, handshake=False)
    stranger.session_id = owner.session_id
    assert stranger.call("ping").status == 200  # without auth, whoever knows the id uses the session

    ann = BearerClient(tokens_server.port, WRITE_TOKEN)
    bob = BearerClient(tokens_server.port, OTHER_TOKEN, handshake=False)  # a good token, of another caller
    bob.session_id = ann.session_id
    refused = bob.call("tools/call", {"name": "read_file", "arguments": {"path": "hello.txt"}})
    assert refused.status == 404
    unknown = BearerClient(tokens_server.port, OTHER_TOKEN, handshake=False)
    unknown.session_id = "0" * 32
    assert refused.body == unknown.call("ping").body  # the same answer as for a session that never existed
    assert bob.get().status == 404
    assert bob.delete().status == 404
    assert ann.call("ping").status == 200  # still there, still Ann's
    assert ann.delete().status == 204


# -- modern request states belong to their caller ----------------------------------------------------
CAPABLE: dict[str, Any] = {"io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}}


@pytest.fixture
def mrtr_servers(tmp_path: Path) -> Iterator[tuple[UvicornThread, UvicornThread]]:
    """The scale-out test's two_questions server, without auth and with a token file."""
    key = os.urandom(32)
    tokens = TokenFile(str(write_tokens(tmp_path / "tokens")))
    plain = UvicornThread(create_app(build_mrtr_server(key), stateless=True))
    guarded = UvicornThread(create_app(build_mrtr_server(key), stateless=True,
                                       auth=ResourceServer(tokens, resource="http://127.0.0.1/mcp")))
    try:
        yield plain, guarded
    finally:
        plain.stop()
        guarded.stop()


def two_questions(port: int, token: str | None, msg_id: int, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    message = modern("tools/call", {"name": "two_questions", "arguments": {"greeting": "Hello"}, **(extra or {})},
                     msg_id, meta=CAPABLE)
    reply = post_modern(port, message, bearer(token) if token else None)
    assert reply.status == 200, (reply.status, reply.body)
    return modern_json(reply) if reply.content_type == "application/json" else modern_events(reply)[-1]


def state_after_two_rounds(port: int, token: str | None) -> tuple[str, str]:
    """Rounds 1 and 2 as `token`'s caller: the key of the second question and the state carrying Ada."""
    first = two_questions(port, token, 1)["result"]
    ((key, _),) = first["inputRequests"].items()
    retry: dict[str, Any] = {"inputResponses": {key: {"action": "accept", "content": {"name": "Ada"}}}}
    if "requestState" in first:
        retry["requestState"] = first["requestState"]
    second = two_questions(port, token, 2, retry)["result"]
    assert second["resultType"] == "input_required", second
    ((key_2, _),) = second["inputRequests"].items()
    return key_2, second["requestState"]


def last_round(port: int, token: str | None, key: str, state: str) -> dict[str, Any]:
    return two_questions(port, token, 3, {"inputResponses": {key: {"action": "accept", "content": {"colour": "green"}}},
                                          "requestState": state})


def test_a_request_state_is_good_only_for_the_caller_it_was_issued_to(
        mrtr_servers: tuple[UvicornThread, UvicornThread]) -> None:
    plain, guarded = mrtr_servers
    key, state = state_after_two_rounds(plain.port, None)
    replayed = last_round(plain.port, None, key, state)  # without auth: whoever holds the state finishes the request
    assert replayed["result"]["structuredContent"]["text"] == "Hello, Ada in green"

    key, state = state_after_two_rounds(guarded.port, WRITE_TOKEN)
    stolen = last_round(guarded.port, OTHER_TOKEN, key, state)
    assert stolen["error"]["code"] == INVALID_PARAMS, stolen
    assert "issued to another caller" in stolen["error"]["message"]
    assert "Ada" not in json.dumps(stolen)
    own = last_round(guarded.port, WRITE_TOKEN, key, state)
    assert own["result"]["structuredContent"]["text"] == "Hello, Ada in green"


# -- the official SDK client with a static token ----------------------------------------------------
def leaves(error: BaseException) -> list[BaseException]:
    """The exceptions an exception group holds, however deep (the error itself when it is none)."""
    inner = getattr(error, "exceptions", None)
    return [leaf for child in inner for leaf in leaves(child)] if inner else [error]


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_the_official_sdk_client_with_a_bearer_token(tokens_server: CliServer, workspace: Path, mode: str) -> None:
    """mcp 2.x `Client` over an httpx client that sends the token: a 2025-06-18 session (`legacy`) and
    the 2026-07-28 stateless requests it chooses by default (`auto`)."""
    url = f"http://127.0.0.1:{tokens_server.port}/mcp"
    name = f"sdk-{mode}.txt"

    async def main() -> None:
        async with httpx2.AsyncClient(headers=bearer(WRITE_TOKEN)) as http, \
                Client(streamable_http_client(url, http_client=http), mode=mode) as client:
            assert client.protocol_version == ("2025-06-18" if mode == "legacy" else "2026-07-28")
            read = await client.call_tool("read_file", {"path": "hello.txt"})
            assert not read.is_error and "hello" in read.content[0].model_dump()["text"]
            written = await client.call_tool("write_file", {"path": name, "content": "by the SDK\n"})
            assert not written.is_error, written
        async with httpx2.AsyncClient(headers=bearer(READ_TOKEN)) as http, \
                Client(streamable_http_client(url, http_client=http), mode=mode) as client:
            assert not (await client.call_tool("read_file", {"path": name})).is_error
            with anyio.fail_after(30), pytest.raises(MCPError):  # the SDK's word for an HTTP error status
                await client.call_tool("write_file", {"path": name, "content": "by a reader\n"})
        with anyio.fail_after(30), pytest.raises(Exception) as refused:  # a group holding the SDK's error
            async with Client(url, mode=mode) as client:  # no token at all
                await client.list_tools()
        assert any(isinstance(error, MCPError) for error in leaves(refused.value)), repr(refused.value)

    anyio.run(main)
    assert (workspace / name).read_text() == "by the SDK\n"


def test_write_implies_read_and_a_token_with_neither_gets_403_on_everything(workspace: Path, tmp_path: Path) -> None:
    """A broader scope covers the narrower one: a token granted only shipcode:write (as a token-file line may
    say) reads too. `shipcode:read` is what every request needs, GET streams and DELETE included, so a token
    with neither scope (an OAuth token for other purposes, say) gets 403 everywhere."""
    path = write_tokens(tmp_path / "tokens", f"{WRITE_TOKEN} shipcode:read shipcode:write\n{OTHER_TOKEN} shipcode:write\n")
    with CliServer(["--allow-write", "--auth-token-file", str(path), str(workspace)], tmp_path / "server.log") as server:
        assert BearerClient(server.port, WRITE_TOKEN).call("ping").status == 200
        assert BearerClient(server.port, OTHER_TOKEN).call("ping").status == 200  # write alone: reads too

    app_server = build_mrtr_server(bytes(32))
    auth = ResourceServer(TokenFile(str(path)), resource="http://127.0.0.1/mcp")
    create_app(app_server, auth=auth)
    for wanted in (None, {"jsonrpc": "2.0", "id": 1, "method": "ping"}):
        assert auth.check(Principal("x", frozenset({WRITE})), wanted, app_server) is None
        refused = auth.check(Principal("x", frozenset({"openid", "profile"})), wanted, app_server)
        assert refused is not None and refused.status_code == 403
        assert refused.headers["WWW-Authenticate"] == ('Bearer error="insufficient_scope", scope="shipcode:read", '
                                                       'error_description="this request needs the scope shipcode:read"')


def test_an_unreachable_issuer_is_a_503_that_names_nothing_and_is_warned_about_once(
        capfd: pytest.CaptureFixture[str]) -> None:
    """The issuer is down: tokens cannot be checked, which is not the client's fault (503, Retry-After), but
    the answer says no more than that (no issuer URL, no OS error text for whoever asks), and the log gets
    one warning, not one per request."""
    from shipcode_mcp.auth.issuer import IssuerVerifier

    resource = "http://127.0.0.1/mcp"
    auth = ResourceServer(IssuerVerifier("http://127.0.0.1:9", resource), resource=resource,
                          authorization_servers=["http://127.0.0.1:9"])
    running = UvicornThread(create_app(build_mrtr_server(bytes(32)), stateless=True, auth=auth))
    try:
        def b64(data: dict[str, Any]) -> str:
            return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")

        for kid in ("k1", "k2", "k3"):  # well-formed, so the issuer's keys are needed to judge it
            token = f"{b64({'alg': 'RS256', 'kid': kid})}.{b64({'sub': 'x'})}.c2ln"
            reply = post_initialize(running.port, bearer(token))
            assert reply.status == 503 and reply.headers.get("retry-after") == "5"
            assert json.loads(reply.body) == {"error": "temporarily_unavailable",
                                              "error_description": "the authorization server cannot be reached"}
    finally:
        running.stop()
    warnings = [line for line in capfd.readouterr().err.splitlines() if " WARNING: " in line]
    assert len(warnings) == 1 and "cannot verify tokens now: " in warnings[0], warnings


def test_tools_list_shows_a_token_only_the_tools_it_may_call(tokens_server: CliServer) -> None:
    """Issue 22: a read-only token was listed write_file and edit_file, whose calls it gets 403 for. In a legacy
    session and a modern request alike, it is now listed only what it may call (its list is private to it, in
    the modern cache hint); a write token still sees every tool."""
    def legacy(token: str) -> set[str]:
        reply = BearerClient(tokens_server.port, token).call("tools/list")
        return {tool["name"] for tool in reply.json()["result"]["tools"]}

    def modern_list(token: str) -> dict[str, Any]:
        return modern_result(post_modern(tokens_server.port, modern("tools/list"), bearer(token)))

    everything, readable = legacy(WRITE_TOKEN), legacy(READ_TOKEN)
    writers = {"write_file", "edit_file", "apply_patch", "create_directory", "move_path", "delete_path", "git_add",
               "git_commit", "git_branch", "git_switch", "git_restore", "git_stash", "replace_symbol", "insert_symbol",
               "rename_symbol"}
    assert writers | {"read_file"} <= everything
    assert readable == everything - writers
    assert {tool["name"] for tool in modern_list(READ_TOKEN)["tools"]} == readable
    assert {tool["name"] for tool in modern_list(WRITE_TOKEN)["tools"]} == everything
    assert modern_list(READ_TOKEN)["cacheScope"] == "private"


class _Counting:
    """A verifier that knows no token and counts what it is asked (as an introspecting one asks its issuer)."""

    def __init__(self) -> None:
        self.asked = 0

    def verify(self, token: str) -> Any:
        from shipcode_mcp.auth.tokens import TokenRejected

        self.asked += 1
        raise TokenRejected("the token is not active")

    def describe(self) -> str:
        return "counting"


def _bearing(token: str, peer: str) -> Any:
    from starlette.requests import Request

    return Request({"type": "http", "method": "POST", "path": "/mcp", "query_string": b"", "client": (peer, 4000),
                    "headers": [(b"authorization", f"Bearer {token}".encode())]})


def _refusal(answer: Principal | Response) -> Response:
    """What `authenticate` answered a token it does not accept: a refusal, never a Principal."""
    assert not isinstance(answer, Principal), answer
    return answer


@pytest.mark.parametrize("defended", [False, True])
def test_unknown_tokens_cost_the_issuer_a_bounded_number_of_questions(defended: bool,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 22: every unknown opaque token was one introspection (343 a second from one client). A refusal is
    now kept REFUSAL_SECONDS, and one address may have VERIFY_BURST tokens verified, then VERIFY_RATE a second
    (429 beyond); another address keeps its own budget. The control (both off) asks the issuer every time."""
    import asyncio

    from shipcode_mcp.transports.http import auth as http_auth

    if not defended:
        monkeypatch.setattr(http_auth, "REFUSAL_SECONDS", 0.0)
        monkeypatch.setattr(http_auth, "VERIFY_BURST", 10**9)
    counting = _Counting()
    resource = ResourceServer(counting, resource="http://127.0.0.1/mcp")

    async def flood() -> list[int]:
        statuses = [_refusal(await resource.authenticate(_bearing("same-token-0123456789", "10.0.0.1"))).status_code
                    for _ in range(50)]
        statuses += [_refusal(await resource.authenticate(_bearing(f"new-token-{n:012}", "10.0.0.1"))).status_code
                     for n in range(100)]
        return statuses

    statuses = asyncio.run(flood())
    if not defended:
        assert counting.asked == 150 and set(statuses) == {401}  # the harm: one question per request
        return
    assert statuses[:50] == [401] * 50 and counting.asked <= http_auth.VERIFY_BURST + 2  # one for the repeated token
    assert statuses.count(429) >= 100 - http_auth.VERIFY_BURST - 2
    other = _refusal(asyncio.run(resource.authenticate(_bearing("other-token-0123456789", "10.0.0.2"))))
    assert other.status_code == 401 and counting.asked <= http_auth.VERIFY_BURST + 3

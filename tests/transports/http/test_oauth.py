"""shipcode-mcp as an OAuth 2.1 resource server, end to end over real sockets: a real authorization
server written by others (oidc-provider, certified, under Node 22: tests/auth/oidc_provider.mjs), a real
`shipcode-mcp --http --auth-issuer` process, and the official Python SDK's OAuth client doing what a
client does: discovery from our 401 (Protected Resource Metadata, then the issuer's metadata), dynamic
client registration, the authorization code flow with PKCE (the test plays the browser through the
server's auto-approving interaction), a token whose audience is our resource; then tools in both eras.
The authorization server binds a client to the scopes it registered with (oidc-provider's default), and
the SDK registers with the scopes of our first 401: that 401 names every scope our tools need between
them, so one authorization reads and writes. When the person consenting grants only reading, a write gets
403 insufficient_scope and the SDK steps up.

Then the refusals. Every forged or misdirected token is first shown to be a meaningful attack (it
passes a claims-only reading with our audience and issuer, its signature is the issuer's own, or the same
request succeeds against a server without auth), then shown refused, with the Bearer challenge.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import anyio
import httpx2
import jwt
import mcp_types as types
import pytest
from cryptography.hazmat.primitives import serialization
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

from auth.oauth_support import (
    READ_WRITE,
    REDIRECT_URI,
    authorization_server,
    authorize,
    follow_authorization,
    metadata,
    pkce_pair,
    register,
)
from interop.client_support import LEGACY, MODERN, shipcode_http

READ = "shipcode:read"
PROTOCOL = "2025-06-18"


# -- the cast: two authorization servers, a workspace, servers guarding it ------------------------------

@pytest.fixture(scope="module")
def issuer() -> Iterator[str]:
    with authorization_server() as url:
        yield url


@pytest.fixture(scope="module")
def other_issuer() -> Iterator[str]:
    """A second, unrelated authorization server (its own keys): its tokens are no good with us."""
    with authorization_server() as url:
        yield url


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("workspace")
    (folder / "README.md").write_text("# Demo\n\nGuarded by OAuth.\n")
    (folder / "src").mkdir()
    (folder / "src" / "app.py").write_text("def greet(name):\n    return f'Hello, {name}!'\n")
    return folder


@pytest.fixture(scope="module")
def server(issuer: str, root: Path) -> Iterator[str]:
    """`shipcode-mcp ROOT --allow-write --http 127.0.0.1:PORT --auth-issuer ISSUER`: its /mcp URL, which
    is also its resource (the default, derived from the listening address)."""
    with shipcode_http(str(root), "--allow-write", "--auth-issuer", issuer) as url:
        yield url


@pytest.fixture(scope="module")
def read_only_server(issuer: str, root: Path) -> Iterator[str]:
    """The same workspace and issuer without --allow-write: no tool needs shipcode:write."""
    with shipcode_http(str(root), "--auth-issuer", issuer) as url:
        yield url


@pytest.fixture(scope="module")
def open_server(root: Path) -> Iterator[str]:
    """The same workspace served without auth (loopback): where each attack is shown to work."""
    with shipcode_http(str(root), "--allow-write") as url:
        yield url


# -- a raw client: what goes on the wire, with the Bearer token the test chooses --------------------------

def initialize(msg_id: int = 1) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": msg_id, "method": "initialize",
            "params": {"protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": {"name": "attacker", "version": "1"}}}


def post(url: str, message: dict[str, Any], token: str | None, session: str | None = None) -> httpx2.Response:
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json",
               "MCP-Protocol-Version": PROTOCOL}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    if session is not None:
        headers["Mcp-Session-Id"] = session
    return httpx2.post(url, content=json.dumps(message), headers=headers, timeout=30)


def result_of(answer: httpx2.Response) -> dict[str, Any]:
    """The JSON-RPC result of a 200 answer, sent as JSON or as one SSE event."""
    assert answer.status_code == 200, (answer.status_code, answer.text)
    text = answer.text
    if answer.headers["content-type"].startswith("text/event-stream"):
        text = "\n".join(line[5:].strip() for line in text.splitlines() if line.startswith("data:"))
    message: dict[str, Any] = json.loads(text)
    assert "result" in message, message
    result: dict[str, Any] = message["result"]
    return result


def open_session(url: str, token: str) -> str:
    """A legacy (2025-06-18) session created with `token`: initialize, then initialized."""
    answer = post(url, initialize(), token)
    assert result_of(answer)["protocolVersion"] == PROTOCOL
    session = answer.headers["mcp-session-id"]
    assert post(url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, token, session).status_code == 202
    return session


def call(name: str, arguments: dict[str, Any], msg_id: int = 2) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": msg_id, "method": "tools/call", "params": {"name": name, "arguments": arguments}}


def challenge(answer: httpx2.Response) -> dict[str, str]:
    """The parameters of the response's Bearer challenge (RFC 6750 section 3)."""
    value = answer.headers.get("www-authenticate", "")
    assert value.startswith("Bearer "), value
    return dict(re.findall(r'(\w+)="([^"]*)"', value))


def assert_refused(answer: httpx2.Response, server: str, because: str) -> None:
    """401 invalid_token, pointing at our metadata, saying why."""
    assert answer.status_code == 401, (answer.status_code, answer.text)
    params = challenge(answer)
    assert params["error"] == "invalid_token", params
    assert params["resource_metadata"] == prm_url(server), params
    assert because in params["error_description"], params


def prm_url(server: str) -> str:
    origin, _, path = server.partition("://")[2].partition("/")
    return f"http://{origin}/.well-known/oauth-protected-resource/{path}"


def segments(token: str) -> list[bytes]:
    return [base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)) for part in token.split(".")]


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def issuer_key(issuer: str, kid: str) -> Any:
    """The issuer's public signing key `kid`, read from its JWKS."""
    keys = httpx2.get(metadata(issuer)["jwks_uri"], timeout=10).json()["keys"]
    entry = next(key for key in keys if key["kid"] == kid)
    return jwt.PyJWK(entry).key


def claims_only(token: str) -> dict[str, Any]:
    """What a server that reads claims without checking the signature would accept."""
    claims: dict[str, Any] = jwt.decode(token, options={"verify_signature": False})
    return claims


# -- the official SDK client's OAuth flow --------------------------------------------------------------------

@dataclass
class Memory:
    """The SDK's TokenStorage, in memory."""

    tokens: OAuthToken | None = None
    client_info: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info


@dataclass
class Browser:
    """The SDK's redirect and callback handlers: follow the authorization URL through the server's
    interaction (as `login`), keep the code, state and iss it redirects back with. `consents` says what
    the person consents to, one entry per authorization in turn (of the resource scopes asked for; when
    the entries run out, everything asked for)."""

    login: str = "alice"
    consents: list[str] = field(default_factory=list)
    authorizations: list[dict[str, list[str]]] = field(default_factory=list)
    back: dict[str, str] = field(default_factory=dict)

    async def redirect(self, url: str) -> None:
        from urllib.parse import parse_qs, quote, urlsplit

        turn = len(self.authorizations)
        self.authorizations.append(parse_qs(urlsplit(url).query))
        url = f"{url}&login_hint={self.login}"
        if turn < len(self.consents):
            url += f"&consented_scope={quote(self.consents[turn])}"
        self.back = await anyio.to_thread.run_sync(follow_authorization, url)
        assert "code" in self.back, self.back

    async def callback(self) -> AuthorizationCodeResult:
        return AuthorizationCodeResult(code=self.back["code"], state=self.back.get("state"), iss=self.back.get("iss"))


@dataclass
class Wire:
    """Every HTTP exchange of the SDK's client, auth flow included: (method, url, status), and the
    WWW-Authenticate of each 401 and 403."""

    seen: list[tuple[str, str, int]] = field(default_factory=list)
    challenges: list[tuple[int, str]] = field(default_factory=list)

    async def response(self, response: httpx2.Response) -> None:
        self.seen.append((response.request.method, str(response.request.url), response.status_code))
        if response.status_code in (401, 403):
            self.challenges.append((response.status_code, response.headers.get("www-authenticate", "")))

    def paths(self) -> list[tuple[str, str, int]]:
        return [(method, url.split("?")[0], status) for method, url, status in self.seen]


@asynccontextmanager
async def sdk_client(url: str, mode: str, browser: Browser, wire: Wire, storage: Memory) -> AsyncIterator[Client]:
    provider = OAuthClientProvider(
        url, OAuthClientMetadata(client_name="shipcode e2e", redirect_uris=[REDIRECT_URI],  # type: ignore[list-item]
                                 grant_types=["authorization_code", "refresh_token"], token_endpoint_auth_method="none"),
        storage, redirect_handler=browser.redirect, callback_handler=browser.callback)
    async with httpx2.AsyncClient(auth=provider, timeout=httpx2.Timeout(30, read=60),
                                  event_hooks={"response": [wire.response]}) as http:
        async with Client(streamable_http_client(url, http_client=http), mode=mode) as client:
            yield client


def text_of(result: types.CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, types.TextContent))


@pytest.mark.parametrize(("mode", "version"), [("auto", MODERN), ("legacy", LEGACY)])
def test_the_sdk_client_discovers_registers_authorizes_and_works(issuer: str, server: str, root: Path, mode: str,
                                                                  version: str) -> None:
    """Against a server with write tools: one authorization for read and write, no 403, no step-up."""
    browser, wire, storage = Browser(), Wire(), Memory()

    async def main() -> None:
        async with sdk_client(server, mode, browser, wire, storage) as client:
            assert client.protocol_version == version
            listed = await client.list_tools()
            assert {"read_file", "list_files", "write_file"} <= {tool.name for tool in listed.tools}
            read = await client.call_tool("read_file", {"path": "src/app.py"})
            assert not read.is_error and "def greet(name):" in text_of(read), text_of(read)
            files = await client.call_tool("list_files", {})
            assert not files.is_error and "README.md" in text_of(files), text_of(files)
            written = await client.call_tool("write_file", {"path": f"notes/{mode}.md", "content": "- ship\n"})
            assert not written.is_error, text_of(written)

    anyio.run(main)
    assert (root / "notes" / f"{mode}.md").read_text() == "- ship\n"

    # How the SDK got there: our 401, our metadata, the issuer's metadata, registration, the token.
    paths = wire.paths()
    assert paths[:6] == [
        ("POST", server, 401),
        ("GET", prm_url(server), 200),
        ("GET", f"{issuer}/.well-known/oauth-authorization-server", 200),
        ("POST", f"{issuer}/reg", 201),
        ("POST", f"{issuer}/token", 200),
        ("POST", server, 200),
    ], wire.seen
    assert wire.challenges == [(401, f'Bearer resource_metadata="{prm_url(server)}", scope="{READ_WRITE}"')]
    assert [status for _, url, status in paths if url == server].count(403) == 0, wire.seen
    (first,) = browser.authorizations  # one authorization, for everything
    assert first["resource"] == [server] and first["code_challenge_method"] == ["S256"]
    assert set(READ_WRITE.split()) <= set(first["scope"][0].split()), first  # (+ offline_access)
    # The client registered with those scopes, which bind it (test_the_authorization_server_binds_...).
    assert storage.client_info is not None and storage.client_info.client_name == "shipcode e2e"
    assert storage.client_info.scope is not None and set(READ_WRITE.split()) <= set(storage.client_info.scope.split())
    assert storage.tokens is not None
    claims = claims_only(storage.tokens.access_token)
    assert set(claims["scope"].split()) == set(READ_WRITE.split())
    assert claims["aud"] == server and claims["iss"] == issuer and claims["sub"] == "alice"


@pytest.mark.parametrize(("mode", "version"), [("auto", MODERN), ("legacy", LEGACY)])
def test_the_sdk_client_steps_up_when_the_person_granted_only_reading(issuer: str, server: str, root: Path,
                                                                      mode: str, version: str) -> None:
    """The person consenting the first time grants shipcode:read alone (write was asked for): reading
    works, write_file gets 403 insufficient_scope naming both scopes, the SDK authorizes again with the
    client it registered, the person grants both this time, and the write goes through."""
    browser, wire, storage = Browser(login="dana", consents=[READ]), Wire(), Memory()
    granted: list[str] = []

    async def main() -> None:
        async with sdk_client(server, mode, browser, wire, storage) as client:
            assert client.protocol_version == version
            read = await client.call_tool("read_file", {"path": "src/app.py"})
            assert not read.is_error and "def greet(name):" in text_of(read), text_of(read)
            assert len(browser.authorizations) == 1 and storage.tokens is not None
            granted.append(claims_only(storage.tokens.access_token)["scope"])
            written = await client.call_tool("write_file", {"path": f"notes/step-up-{mode}.md", "content": "- up\n"})
            assert not written.is_error, text_of(written)

    anyio.run(main)
    assert (root / "notes" / f"step-up-{mode}.md").read_text() == "- up\n"

    first, second = browser.authorizations
    assert set(READ_WRITE.split()) <= set(first["scope"][0].split()), first  # asked for both...
    assert granted == [READ]  # ...and got reading only
    assert wire.challenges == [
        (401, f'Bearer resource_metadata="{prm_url(server)}", scope="{READ_WRITE}"'),
        (403, f'Bearer error="insufficient_scope", scope="{READ_WRITE}", resource_metadata="{prm_url(server)}", '
              'error_description="this request needs the scope shipcode:write"'),
    ], wire.challenges
    paths = wire.paths()
    assert paths.count(("POST", f"{issuer}/reg", 201)) == 1, wire.seen  # the step-up reuses the registration
    assert second["client_id"] == first["client_id"] and second["resource"] == [server]
    assert set(READ_WRITE.split()) <= set(second["scope"][0].split()), second
    assert storage.tokens is not None
    claims = claims_only(storage.tokens.access_token)
    assert set(claims["scope"].split()) == set(READ_WRITE.split())
    assert claims["aud"] == server and claims["iss"] == issuer and claims["sub"] == "dana"


def test_the_authorization_server_binds_a_client_to_its_registered_scopes(issuer: str, server: str) -> None:
    """Why the first 401 must name shipcode:write too: a client registered with shipcode:read alone (as
    the SDK would after a 401 naming only that) is refused shipcode:write later, while a client
    registered with both gets both."""
    endpoints = metadata(issuer)

    def ask(client: dict[str, Any], scope: str) -> dict[str, str]:
        _, challenge_ = pkce_pair()
        query = urlencode({"response_type": "code", "client_id": client["client_id"], "redirect_uri": REDIRECT_URI,
                           "scope": scope, "resource": server, "state": "s", "code_challenge": challenge_,
                           "code_challenge_method": "S256"})
        return follow_authorization(f"{endpoints['authorization_endpoint']}?{query}")

    reader = register(issuer, scope=READ)
    assert reader["scope"] == READ
    assert "code" in ask(reader, READ)
    refused = ask(reader, READ_WRITE)
    assert refused.get("error") == "invalid_scope" and "code" not in refused, refused
    assert refused.get("scope") == "shipcode:write", refused  # the scope it may not ask for
    both = register(issuer, scope=READ_WRITE)
    assert "code" in ask(both, READ_WRITE)


# -- tokens that must not work --------------------------------------------------------------------------------

def test_no_token_gets_the_challenge_that_starts_discovery(server: str, issuer: str) -> None:
    """With write tools offered, the challenge asks for both scopes (what the SDK registers with)."""
    answer = post(server, initialize(), None)
    assert answer.status_code == 401
    assert answer.headers["www-authenticate"] == f'Bearer resource_metadata="{prm_url(server)}", scope="{READ_WRITE}"'
    document = httpx2.get(prm_url(server), timeout=10).json()
    assert document["resource"] == server and document["authorization_servers"] == [issuer]
    assert document["scopes_supported"] == READ_WRITE.split()


def test_a_server_without_write_tools_asks_for_reading_only(read_only_server: str, issuer: str) -> None:
    """Without --allow-write no tool needs shipcode:write, and the 401 asks for shipcode:read alone."""
    answer = post(read_only_server, initialize(), None)
    assert answer.status_code == 401
    assert answer.headers["www-authenticate"] == \
        f'Bearer resource_metadata="{prm_url(read_only_server)}", scope="{READ}"'
    refused = post(read_only_server, initialize(), "not-a-jwt")
    assert refused.status_code == 401 and challenge(refused)["scope"] == READ, refused.headers
    # A token for reading is all it takes: the whole tool list, without write_file.
    token = authorize(issuer, read_only_server, READ).access_token
    session = open_session(read_only_server, token)
    listed = result_of(post(read_only_server, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, token, session))
    names = {tool["name"] for tool in listed["tools"]}
    assert "read_file" in names and "write_file" not in names and "edit_file" not in names, names


def test_a_good_token_works_where_a_forged_one_would(server: str, issuer: str) -> None:
    """The baseline the refusals below differ from: a real token for us, read and write."""
    token = authorize(issuer, server).access_token
    session = open_session(server, token)
    assert "def greet" in json.dumps(result_of(post(server, call("read_file", {"path": "src/app.py"}), token, session)))


def test_an_expired_token_is_refused(server: str, issuer: str) -> None:
    token = authorize(issuer, server, client_name="expired tokens").access_token
    claims = claims_only(token)
    assert claims["aud"] == server and claims["iss"] == issuer and claims["exp"] < claims["iat"] + 3601
    kid = jwt.get_unverified_header(token)["kid"]
    # The issuer's own signature, our audience: only the expiry (an hour ago) is wrong.
    jwt.decode(token, issuer_key(issuer, kid), algorithms=["RS256"], audience=server, issuer=issuer,
               options={"verify_exp": False})
    with pytest.raises(jwt.ExpiredSignatureError):
        jwt.decode(token, issuer_key(issuer, kid), algorithms=["RS256"], audience=server, issuer=issuer, leeway=30)
    assert_refused(post(server, initialize(), token), server, "expired")


def test_a_token_for_another_audience_is_refused(server: str, issuer: str) -> None:
    elsewhere = server.rsplit("/", 1)[0] + "/another-api"
    token = authorize(issuer, elsewhere).access_token
    kid = jwt.get_unverified_header(token)["kid"]
    claims = jwt.decode(token, issuer_key(issuer, kid), algorithms=["RS256"], issuer=issuer, options={"verify_aud": False})
    assert claims["aud"] == elsewhere and set(claims["scope"].split()) == set(READ_WRITE.split())
    assert_refused(post(server, initialize(), token), server, "not for this resource")


def test_a_token_from_another_issuer_is_refused(server: str, other_issuer: str) -> None:
    token = authorize(other_issuer, server).access_token
    kid = jwt.get_unverified_header(token)["kid"]
    claims = jwt.decode(token, issuer_key(other_issuer, kid), algorithms=["RS256"], audience=server, issuer=other_issuer)
    assert claims["aud"] == server  # a genuine token, for us, from an issuer we do not trust
    answer = post(server, initialize(), token)
    assert answer.status_code == 401 and challenge(answer)["error"] == "invalid_token", answer.text


def test_a_tampered_token_is_refused(server: str, issuer: str) -> None:
    """A read-only token whose payload is rewritten to grant writing (the signature kept)."""
    token = authorize(issuer, server, READ).access_token
    header, _, signature = token.split(".")
    claims = json.loads(segments(token)[1])
    assert claims["scope"] == READ
    forged = ".".join([header, b64(json.dumps({**claims, "scope": READ_WRITE, "sub": "admin"}).encode()), signature])
    assert claims_only(forged)["scope"] == READ_WRITE and claims_only(forged)["aud"] == server
    assert_refused(post(server, initialize(), forged), server, "signature does not verify")
    flipped = token[:-4] + ("AAAA" if not token.endswith("AAAA") else "BBBB")
    assert_refused(post(server, initialize(), flipped), server, "signature does not verify")


def test_an_unsigned_token_is_refused(server: str, issuer: str, open_server: str) -> None:
    """`alg: none`: claims anyone can write, with our audience and issuer."""
    real = claims_only(authorize(issuer, server, READ).access_token)
    forged = ".".join([b64(json.dumps({"alg": "none", "typ": "at+jwt"}).encode()),
                       b64(json.dumps({**real, "scope": READ_WRITE}).encode()), ""])
    assert claims_only(forged)["aud"] == server and claims_only(forged)["iss"] == issuer
    assert result_of(post(open_server, initialize(), forged))["protocolVersion"] == PROTOCOL  # no auth: in
    assert_refused(post(server, initialize(), forged), server, "'none' is not accepted")


def test_a_token_signed_with_the_public_key_as_an_hmac_secret_is_refused(server: str, issuer: str) -> None:
    """The classic confusion: HS256 keyed with the issuer's public key, which everyone can read. A
    verifier that lets the token choose the algorithm and hands it the key it has would accept it."""
    real = authorize(issuer, server, READ).access_token
    kid = jwt.get_unverified_header(real)["kid"]
    public = issuer_key(issuer, kid).public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    signing_input = ".".join([b64(json.dumps({"alg": "HS256", "typ": "at+jwt", "kid": kid}).encode()),
                              b64(json.dumps({**claims_only(real), "scope": READ_WRITE, "sub": "admin"}).encode())])
    forged = signing_input + "." + b64(hmac.new(public, signing_input.encode(), hashlib.sha256).digest())
    # What the confused verifier checks, and finds right:
    assert hmac.compare_digest(segments(forged)[2], hmac.new(public, signing_input.encode(), hashlib.sha256).digest())
    assert claims_only(forged)["aud"] == server and claims_only(forged)["iss"] == issuer
    assert_refused(post(server, initialize(), forged), server, "'HS256' is not accepted")


def test_an_opaque_token_without_introspection_credentials_is_refused(server: str, issuer: str) -> None:
    grant = authorize(issuer, server, client_name="opaque tokens")
    assert grant.access_token.count(".") == 0
    introspector = register(issuer, resource_server=True, client_name="some resource server")
    answer = httpx2.post(metadata(issuer)["introspection_endpoint"], data={"token": grant.access_token}, timeout=10,
                         auth=(introspector["client_id"], introspector["client_secret"]))
    assert answer.json()["active"] is True and answer.json()["aud"] == server  # a live token, for us
    assert_refused(post(server, initialize(), grant.access_token), server, "cannot introspect")


def test_an_opaque_token_is_introspected_with_the_servers_credentials(issuer: str, root: Path, tmp_path: Path) -> None:
    introspector = register(issuer, resource_server=True, client_name="shipcode-mcp")
    secret = tmp_path / "secret"
    secret.write_text(introspector["client_secret"] + "\n")
    secret.chmod(0o600)
    with shipcode_http(str(root), "--auth-issuer", issuer, f"--auth-client-id={introspector['client_id']}",  # an id may start with '-'
                       "--auth-client-secret-file", str(secret)) as url:
        token = authorize(issuer, url, READ, client_name="opaque tokens", login_hint="carol").access_token
        session = open_session(url, token)
        assert "README.md" in json.dumps(result_of(post(url, call("list_files", {}), token, session)))
        elsewhere = authorize(issuer, url.rsplit("/", 1)[0] + "/another-api", client_name="opaque tokens").access_token
        assert_refused(post(url, initialize(), elsewhere), url, "not for this resource")
        assert_refused(post(url, initialize(), "not-a-token-the-issuer-made"), url, "not active")


def test_a_read_only_token_cannot_write(server: str, issuer: str, root: Path) -> None:
    writer = authorize(issuer, server).access_token
    reader = authorize(issuer, server, READ).access_token
    # With both scopes the call writes (the attack below is a real write, not a broken request)...
    session = open_session(server, writer)
    assert not result_of(post(server, call("write_file", {"path": "notes/w.md", "content": "w\n"}), writer, session))["isError"]
    assert (root / "notes" / "w.md").read_text() == "w\n"
    # ...with shipcode:read alone it is refused, naming both scopes needed (one step-up suffices).
    session = open_session(server, reader)
    answer = post(server, call("write_file", {"path": "notes/r.md", "content": "r\n"}), reader, session)
    assert answer.status_code == 403, answer.text
    params = challenge(answer)
    assert params["error"] == "insufficient_scope" and params["scope"] == READ_WRITE, params
    assert params["resource_metadata"] == prm_url(server)
    assert not (root / "notes" / "r.md").exists()
    assert "def greet" in json.dumps(result_of(post(server, call("read_file", {"path": "src/app.py"}), reader, session)))


def test_a_session_belongs_to_the_subject_that_opened_it(server: str, issuer: str) -> None:
    alice = authorize(issuer, server, READ, login_hint="alice").access_token
    bob = authorize(issuer, server, READ, login_hint="bob").access_token
    assert claims_only(alice)["sub"] == "alice" and claims_only(bob)["sub"] == "bob"
    session = open_session(server, alice)
    assert result_of(post(server, call("list_files", {}), alice, session))  # the owner: fine
    also_alice = authorize(issuer, server, READ, login_hint="alice").access_token  # another token, same subject
    assert result_of(post(server, call("list_files", {}, 3), also_alice, session))
    answer = post(server, call("list_files", {}, 4), bob, session)
    assert answer.status_code == 404, answer.text
    assert result_of(post(server, call("list_files", {}, 5), bob, open_session(server, bob)))  # bob's own: fine


def test_the_authorization_server_requires_pkce(issuer: str) -> None:
    """The authorization server really enforces PKCE: without a code challenge, no authorization."""
    client = register(issuer)
    answer = httpx2.get(f"{metadata(issuer)['authorization_endpoint']}?response_type=code&client_id={client['client_id']}"
                        f"&redirect_uri={REDIRECT_URI}&scope={READ}&state=s", timeout=10, follow_redirects=False)
    location = answer.headers.get("location", "")
    assert "error=invalid_request" in location and "PKCE" in location, (answer.status_code, location)

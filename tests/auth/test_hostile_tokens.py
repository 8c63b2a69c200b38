"""A hostile client's and a hostile token's view of authorization (found in issue 14's security review): the attacks
that got through, each first shown to be a real attack (the same input handled as it should be one step
away, or the defence working for its neighbour), then what the fix holds to.

The issuer is the one tests/auth/test_issuer.py builds (stdlib HTTP server, `cryptography` keys); the HTTP
face is a library server (`create_app(auth=ResourceServer(...))`) under uvicorn on loopback.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import time
from collections.abc import Iterator
from typing import Any

import pytest
from starlette.requests import Request
from starlette.responses import Response

from auth.test_issuer import KEY, RESOURCE, Issuer, fake, publish, rsa_key, token  # noqa: F401 (fake: a fixture)
from shipcode_mcp import Server, log
from shipcode_mcp.auth import issuer as issuer_module
from shipcode_mcp.auth.issuer import IssuerUnavailable, IssuerVerifier
from shipcode_mcp.auth.tokens import Principal, TokenRejected
from shipcode_mcp.transports.http import auth as http_auth
from shipcode_mcp.transports.http import create_app
from shipcode_mcp.transports.http.auth import ResourceServer
from transports.http.support import MCP_HEADERS, UvicornThread, request


def b64(value: Any) -> str:
    return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()


def forged(issuer: Issuer, header: dict[str, Any]) -> str:
    """A JWT with `header` and a good-looking payload for RESOURCE, and a signature that verifies nowhere."""
    now = int(time.time())
    payload = {"iss": issuer.base, "aud": RESOURCE, "sub": "mallory", "exp": now + 300, "scope": "shipcode:read"}
    return f"{b64(header)}.{b64(payload)}.AAAA"


def http_request(token: str, query: str = "") -> Request:
    return Request({"type": "http", "method": "POST", "path": "/mcp", "query_string": query.encode(),
                    "headers": [(b"authorization", f"Bearer {token}".encode())]})


# -- 1. a JWT header PyJWT itself refuses escapes the verifier: 500 and a traceback, not 401 --------------------
@pytest.fixture
def oauth_endpoint(fake: Issuer) -> Iterator[UvicornThread]:  # noqa: F811 (the fixture, by name)
    publish(fake, KEY)
    verifier = IssuerVerifier(fake.base, RESOURCE)
    server = UvicornThread(create_app(Server("review", "1.0.0"), auth=ResourceServer(
        verifier, resource=RESOURCE, authorization_servers=[fake.base])))
    try:
        yield server
    finally:
        server.stop()


UNREADABLE_HEADERS = [
    pytest.param({"alg": "RS256", "kid": ["k1"]}, id="kid-a-list"),
    pytest.param({"alg": "RS256", "kid": 5}, id="kid-a-number"),
    pytest.param({"alg": "RS256", "kid": "k1", "crit": ["exp"]}, id="crit-unknown"),
]


@pytest.mark.parametrize("header", UNREADABLE_HEADERS)
def test_a_jwt_header_pyjwt_refuses_is_a_401_not_a_500(fake: Issuer, oauth_endpoint: UvicornThread,  # noqa: F811
                                                     header: dict[str, Any]) -> None:
    message = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    # The neighbour, handled as it should be: a forged token with a string kid is a 401 invalid_token.
    fine = request(oauth_endpoint.port, "POST", message, {**MCP_HEADERS, "Authorization": "Bearer " + forged(
        fake, {"alg": "RS256", "kid": "k1"})})
    assert fine.status == 401 and 'error="invalid_token"' in fine.headers["www-authenticate"]
    reply = request(oauth_endpoint.port, "POST", message, {**MCP_HEADERS, "Authorization": "Bearer " + forged(fake, header)})
    assert reply.status == 401, (reply.status, reply.body)
    assert 'error="invalid_token"' in reply.headers["www-authenticate"]


@pytest.mark.parametrize("alg", ["ES256", "ES512"])
def test_a_token_whose_algorithm_does_not_fit_an_undeclared_key_is_refused(fake: Issuer, alg: str) -> None:  # noqa: F811
    undeclared = rsa_key("no-alg")
    entry = {name: value for name, value in undeclared.jwk().items() if name != "alg"}  # JWKS often omit alg
    fake.serve("/.well-known/oauth-authorization-server", {"issuer": fake.base, "jwks_uri": f"{fake.base}/jwks"})
    fake.serve("/jwks", {"keys": [entry]})
    verifier = IssuerVerifier(fake.base, RESOURCE)
    assert verifier.verify(token(fake, undeclared)).subject == "alice"  # the key is good for its own algorithm
    with pytest.raises(TokenRejected):  # RS384 on it: refused cleanly (signature), the neighbour of the attack
        verifier.verify(forged(fake, {"alg": "RS384", "kid": "no-alg"}))
    with pytest.raises(TokenRejected):
        verifier.verify(forged(fake, {"alg": alg, "kid": "no-alg"}))


# -- 2. a key set that fails to load is fetched again for every made-up kid -----------------------------------
def test_made_up_kids_do_not_hammer_an_issuer_whose_key_set_fails(fake: Issuer) -> None:  # noqa: F811
    publish(fake, KEY)
    stranger = rsa_key("stranger")
    # The defence, where the key set loads: fifty made-up kids cost the issuer one fetch (test_issuer.py shows it).
    verifier = IssuerVerifier(fake.base, RESOURCE)
    for number in range(50):
        with pytest.raises(TokenRejected):
            verifier.verify(token(fake, stranger, headers={"kid": f"kid-{number}"}))
    assert len(fake.paths("/jwks")) == 1
    # The attack: the same flood while the key set answers 503.
    fake.asked.clear()
    fake.serve("/jwks", {"error": "down"}, status=503)
    failing = IssuerVerifier(fake.base, RESOURCE)
    for number in range(50):
        with pytest.raises((TokenRejected, IssuerUnavailable)):
            failing.verify(token(fake, stranger, headers={"kid": f"kid-{number}"}))
    assert len(fake.paths("/jwks")) <= 1, len(fake.paths("/jwks"))


# -- 3. an introspected verdict outlives the minute the docs promise ------------------------------------------
class Clock:
    """time.time() as the test says; monotonic time as it is."""

    def __init__(self) -> None:
        self.now = time.time()

    def time(self) -> float:
        return self.now

    def monotonic(self) -> float:
        return time.monotonic()


def test_a_revoked_opaque_token_stops_working_within_a_minute(fake: Issuer, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    clock = Clock()
    monkeypatch.setattr(http_auth, "time", clock)
    monkeypatch.setattr(issuer_module, "time", clock)
    fake.serve("/.well-known/oauth-authorization-server",
               {"issuer": fake.base, "introspection_endpoint": f"{fake.base}/introspect"})
    fake.serve("/introspect", {"active": True, "sub": "alice", "aud": RESOURCE, "scope": "shipcode:read",
                               "exp": int(clock.now) + 3600})
    verifier = IssuerVerifier(fake.base, RESOURCE, client_id="rs", client_secret="secret")
    guard = ResourceServer(verifier, resource=RESOURCE, authorization_servers=[fake.base])
    opaque = "opaque-token-of-alice-0123456789"
    assert isinstance(asyncio.run(guard.authenticate(http_request(opaque))), Principal)
    fake.serve("/introspect", {"active": False})  # the issuer revokes it
    clock.now += issuer_module.INTROSPECTION_CACHE_SECONDS + 1
    with pytest.raises(TokenRejected):  # the verifier's own promise holds: it asks again, and hears "revoked"
        verifier.verify(opaque)
    found = asyncio.run(guard.authenticate(http_request(opaque)))
    assert isinstance(found, Response) and found.status_code == 401, found


# -- 4. a token in the URL that the refusal recognises but the access log does not redact ---------------------
ACCESS_FORMAT = '%s - "%s %s HTTP/%s" %d'


def access_line(path: str) -> str:
    record = logging.LogRecord("uvicorn.access", logging.INFO, "", 0, ACCESS_FORMAT,
                               ("127.0.0.1:1", "POST", path, "1.1", 400), None)
    return log.uvicorn_formatter().format(record)


@pytest.mark.parametrize("name", ["access%5Ftoken", "%61ccess_token", "access_tok%65n"])
def test_a_percent_encoded_token_parameter_is_refused_and_never_logged(fake: Issuer, name: str) -> None:  # noqa: F811
    secret = "url-token-0123456789abcdef"
    guard = ResourceServer(IssuerVerifier(fake.base, RESOURCE), resource=RESOURCE, authorization_servers=[fake.base])
    refused = asyncio.run(guard.authenticate(http_request("x" * 20, f"{name}={secret}")))
    assert isinstance(refused, Response) and refused.status_code == 400  # recognised as a token in the URL
    assert secret not in access_line(f"/mcp?access_token={secret}")  # the plain spelling is redacted
    assert secret not in access_line(f"/mcp?{name}={secret}")

"""IssuerVerifier against an issuer the test builds: a stdlib HTTP server on 127.0.0.1 serving discovery
metadata, a JWKS of `cryptography` keys and an introspection endpoint, with every request recorded, so
that each check is seen to be made (and what it costs the issuer) rather than assumed."""

from __future__ import annotations

import base64
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from shipcode_mcp.auth import issuer as issuer_module
from shipcode_mcp.auth.issuer import IssuerUnavailable, IssuerVerifier, discovery_urls
from shipcode_mcp.auth.tokens import TokenRejected

RESOURCE = "http://127.0.0.1:8000/mcp"


@dataclass
class Issuer:
    """What the fake issuer serves (path -> (status, headers, JSON body)) and what it was asked."""

    base: str = ""
    routes: dict[str, tuple[int, dict[str, str], Any]] = field(default_factory=dict)
    asked: list[tuple[str, str, dict[str, str], bytes]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def paths(self, prefix: str = "") -> list[str]:
        with self.lock:
            return [path for _, path, _, _ in self.asked if path.startswith(prefix)]

    def serve(self, path: str, body: Any, status: int = 200, headers: dict[str, str] | None = None) -> None:
        self.routes[path] = (status, headers or {}, body)


@pytest.fixture
def fake() -> Iterator[Issuer]:
    state = Issuer()

    class Handler(BaseHTTPRequestHandler):
        def answer(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            body = self.rfile.read(length) if length else b""
            with state.lock:
                state.asked.append((self.command, self.path, dict(self.headers), body))
            status, headers, document = state.routes.get(self.path, (404, {}, {"error": "not found"}))
            data = json.dumps(document).encode()
            self.send_response(status)
            for name, value in {"Content-Type": "application/json", **headers}.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = answer

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.base = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@dataclass
class Key:
    private: Any
    kid: str
    alg: str = "RS256"

    def jwk(self) -> dict[str, Any]:
        """The public half as a JWK, as the issuer publishes it."""
        entry: dict[str, Any] = json.loads(jwt.algorithms.get_default_algorithms()[self.alg].to_jwk(self.private.public_key()))
        return {**entry, "kid": self.kid, "use": "sig", "alg": self.alg}


def rsa_key(kid: str, alg: str = "RS256") -> Key:
    return Key(rsa.generate_private_key(public_exponent=65537, key_size=2048), kid, alg)


KEY = rsa_key("k1")


def publish(fake: Issuer, *keys: Key, issuer: str | None = None, path: str = "/.well-known/oauth-authorization-server",
            **extra: Any) -> str:
    """Metadata naming `issuer` (default: the fake's base URL) and a JWKS with `keys`; the issuer."""
    name = issuer or fake.base
    fake.serve(path, {"issuer": name, "jwks_uri": f"{fake.base}/jwks", **extra})
    fake.serve("/jwks", {"keys": [key.jwk() for key in keys]})
    return name


def token(fake: Issuer, key: Key = KEY, *, headers: dict[str, Any] | None = None, **claims: Any) -> str:
    now = int(time.time())
    body: dict[str, Any] = {"iss": fake.base, "aud": RESOURCE, "sub": "alice", "exp": now + 300, "iat": now,
                            "scope": "shipcode:read"}
    body.update(claims)
    body = {name: value for name, value in body.items() if value is not None}
    return jwt.encode(body, key.private, algorithm=key.alg, headers={"kid": key.kid, **(headers or {})})


def refused(verifier: IssuerVerifier, value: str, because: str) -> None:
    with pytest.raises(TokenRejected) as caught:
        verifier.verify(value)
    assert because in caught.value.description, caught.value.description


# -- discovery ---------------------------------------------------------------------------------------------

def test_discovery_tries_rfc8414_then_openid_with_and_without_path_insertion(fake: Issuer) -> None:
    issuer = f"{fake.base}/tenant"
    assert discovery_urls(issuer) == [f"{fake.base}/.well-known/oauth-authorization-server/tenant",
                                      f"{fake.base}/.well-known/openid-configuration/tenant",
                                      f"{fake.base}/tenant/.well-known/openid-configuration"]
    publish(fake, KEY, issuer=issuer, path="/tenant/.well-known/openid-configuration")
    verifier = IssuerVerifier(issuer, RESOURCE)
    assert verifier.verify(token(fake, iss=issuer)).subject == "alice"
    assert fake.paths("/") == ["/.well-known/oauth-authorization-server/tenant", "/.well-known/openid-configuration/tenant",
                               "/tenant/.well-known/openid-configuration", "/jwks"]
    assert discovery_urls(fake.base + "/") == [f"{fake.base}/.well-known/oauth-authorization-server",
                                               f"{fake.base}/.well-known/openid-configuration"]


def test_a_document_naming_another_issuer_is_refused(fake: Issuer) -> None:
    # Served where our issuer's metadata is looked for, but about someone else (or written differently).
    for named in (f"{fake.base}/other", fake.base + "/"):
        fake.routes.clear()
        publish(fake, KEY, issuer=named)
        fake.serve("/.well-known/openid-configuration", {"issuer": named, "jwks_uri": f"{fake.base}/jwks"})
        verifier = IssuerVerifier(fake.base, RESOURCE)
        with pytest.raises(IssuerUnavailable, match="names issuer"):
            verifier.verify(token(fake))
    # The same keys under a document that names the issuer exactly: accepted (the refusal was the name).
    publish(fake, KEY)
    assert IssuerVerifier(fake.base, RESOURCE).verify(token(fake)).subject == "alice"


def test_redirects_are_not_followed(fake: Issuer) -> None:
    publish(fake, KEY, path="/elsewhere")
    fake.serve("/.well-known/oauth-authorization-server", {}, 302, {"Location": f"{fake.base}/elsewhere"})
    fake.serve("/.well-known/openid-configuration", {}, 307, {"Location": f"{fake.base}/elsewhere"})
    with pytest.raises(IssuerUnavailable, match="HTTP 30"):
        IssuerVerifier(fake.base, RESOURCE).verify(token(fake))
    assert "/elsewhere" not in fake.paths()
    # Keys behind a redirect: not read either.
    publish(fake, KEY)
    fake.serve("/jwks", {}, 302, {"Location": f"{fake.base}/keys"})
    fake.serve("/keys", {"keys": [KEY.jwk()]})
    with pytest.raises(IssuerUnavailable, match="HTTP 302"):
        IssuerVerifier(fake.base, RESOURCE).verify(token(fake))
    assert "/keys" not in fake.paths()


@pytest.mark.parametrize(("url", "allowed"), [
    ("https://issuer.example", True), ("http://127.0.0.1:9000", True), ("http://localhost:9000", True),
    ("http://[::1]:9000", True), ("http://127.0.0.2", True), ("http://issuer.example", False),
    ("http://10.0.0.1:9000", False), ("http://127.0.0.1.evil.example", False), ("ftp://127.0.0.1", False),
    ("https://", False),
])
def test_plain_http_is_for_loopback_issuers_only(url: str, allowed: bool) -> None:
    if allowed:
        IssuerVerifier(url, RESOURCE)
    else:
        with pytest.raises(ValueError, match="https://"):
            IssuerVerifier(url, RESOURCE)


def test_metadata_naming_a_plain_http_key_set_elsewhere_is_the_issuers_fault(fake: Issuer) -> None:
    """A jwks_uri over http:// to another machine is not read, and the verifier says the issuer is
    unusable (a 503), not an unexpected error."""
    fake.serve("/.well-known/oauth-authorization-server", {"issuer": fake.base, "jwks_uri": "http://203.0.113.7/jwks"})
    with pytest.raises(IssuerUnavailable, match="jwks_uri must be an https"):
        IssuerVerifier(fake.base, RESOURCE).verify(token(fake))


# -- keys ------------------------------------------------------------------------------------------------------

def test_a_rotated_key_is_fetched_once_when_a_token_names_it(fake: Issuer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(issuer_module, "MIN_KEY_REFRESH", 0.0)
    publish(fake, KEY)
    verifier = IssuerVerifier(fake.base, RESOURCE)
    assert verifier.verify(token(fake)).subject == "alice"
    assert verifier.verify(token(fake, sub="bob")).subject == "bob"
    assert fake.paths("/jwks") == ["/jwks"]  # known kid: no refetch
    rotated = rsa_key("k2")
    publish(fake, rotated, KEY)
    assert verifier.verify(token(fake, rotated, sub="carol")).subject == "carol"
    assert fake.paths("/jwks") == ["/jwks", "/jwks"]  # one refetch for the new kid
    assert verifier.verify(token(fake, rotated, sub="dave")).subject == "dave"
    assert fake.paths("/jwks") == ["/jwks", "/jwks"]


def test_made_up_kids_do_not_make_the_verifier_hammer_the_issuer(fake: Issuer, monkeypatch: pytest.MonkeyPatch) -> None:
    stranger = rsa_key("k-stranger")
    publish(fake, KEY)
    # Without the rate limit, each made-up kid costs the issuer a JWKS fetch (the limit is what saves it):
    monkeypatch.setattr(issuer_module, "MIN_KEY_REFRESH", 0.0)
    unlimited = IssuerVerifier(fake.base, RESOURCE)
    for number in range(10):
        refused(unlimited, token(fake, stranger, headers={"kid": f"kid-{number}"}), "a key the issuer does not publish")
    assert len(fake.paths("/jwks")) == 10
    # With it: the first unknown kid fetches, the flood after it does not.
    monkeypatch.setattr(issuer_module, "MIN_KEY_REFRESH", 30.0)
    fake.asked.clear()
    limited = IssuerVerifier(fake.base, RESOURCE)
    for number in range(50):
        refused(limited, token(fake, stranger, headers={"kid": f"kid-{number}"}), "a key the issuer does not publish")
    assert len(fake.paths("/jwks")) == 1
    assert limited.verify(token(fake)).subject == "alice"  # and real tokens still pass meanwhile
    assert len(fake.paths("/jwks")) == 1


def test_only_asymmetric_algorithms_and_only_the_one_a_key_declares(fake: Issuer) -> None:
    publish(fake, KEY)
    verifier = IssuerVerifier(fake.base, RESOURCE)
    good = token(fake)
    payload = good.split(".")[1]
    unsigned = base64.urlsafe_b64encode(json.dumps({"alg": "none", "kid": "k1"}).encode()).decode().rstrip("=") + f".{payload}."
    assert jwt.decode(unsigned, options={"verify_signature": False})["aud"] == RESOURCE
    refused(verifier, unsigned, "'none' is not accepted")
    claims = jwt.decode(good, options={"verify_signature": False})
    hmac_token = jwt.encode(claims, "a shared secret of at least 32 bytes!", algorithm="HS256", headers={"kid": "k1"})
    refused(verifier, hmac_token, "'HS256' is not accepted")
    # PS256 with the key published for RS256: a valid PSS signature, but not what the key is for.
    pss = jwt.encode(jwt.decode(good, options={"verify_signature": False}), KEY.private, algorithm="PS256", headers={"kid": "k1"})
    refused(verifier, pss, "not the one its key is for")
    # An EC key works for what it declares.
    ec_key = Key(ec.generate_private_key(ec.SECP256R1()), "e1", "ES256")
    publish(fake, KEY, ec_key)
    assert IssuerVerifier(fake.base, RESOURCE).verify(token(fake, ec_key)).subject == "alice"


# -- claims ----------------------------------------------------------------------------------------------------

def test_exp_and_nbf_have_a_small_leeway(fake: Issuer) -> None:
    publish(fake, KEY)
    verifier = IssuerVerifier(fake.base, RESOURCE)
    now = int(time.time())
    assert verifier.verify(token(fake, exp=now - 10)).subject == "alice"  # clock skew: fine
    refused(verifier, token(fake, exp=now - 60), "expired")
    assert verifier.verify(token(fake, nbf=now + 10)).subject == "alice"
    refused(verifier, token(fake, nbf=now + 60), "not valid yet")
    refused(verifier, token(fake, exp=None), "'exp'")


def test_the_audience_may_be_a_list_or_a_string_but_must_name_us(fake: Issuer) -> None:
    publish(fake, KEY)
    verifier = IssuerVerifier(fake.base, RESOURCE)
    assert verifier.verify(token(fake, aud=RESOURCE)).subject == "alice"
    assert verifier.verify(token(fake, aud=["https://api.example", RESOURCE])).subject == "alice"
    refused(verifier, token(fake, aud=["https://api.example"]), "not for this resource")
    refused(verifier, token(fake, aud=RESOURCE + "/"), "not for this resource")
    refused(verifier, token(fake, aud=None), "'aud'")
    refused(verifier, token(fake, iss=fake.base + "/"), "not from")


def test_scopes_come_from_scope_or_scp(fake: Issuer) -> None:
    publish(fake, KEY)
    verifier = IssuerVerifier(fake.base, RESOURCE)
    assert verifier.verify(token(fake, scope="shipcode:read shipcode:write")).scopes == {"shipcode:read", "shipcode:write"}
    assert verifier.verify(token(fake, scope=None, scp=["shipcode:read", "shipcode:write"])).scopes == {
        "shipcode:read", "shipcode:write"}
    assert verifier.verify(token(fake, scope=None, scp="shipcode:read")).scopes == {"shipcode:read"}
    assert verifier.verify(token(fake, scope=None)).scopes == frozenset()


def test_a_token_must_name_a_subject_or_a_client(fake: Issuer) -> None:
    publish(fake, KEY)
    verifier = IssuerVerifier(fake.base, RESOURCE)
    refused(verifier, token(fake, sub=None), "names no subject")
    refused(verifier, token(fake, sub=""), "names no subject")
    principal = verifier.verify(token(fake, sub=None, client_id="robot"))
    assert principal.subject == "robot" and principal.client_id == "robot" and principal.issuer == fake.base
    assert principal.key == f"{fake.base}#client:robot"  # a client acting for itself, named apart from a user "robot"


# -- introspection -----------------------------------------------------------------------------------------------

def introspecting(fake: Issuer, answer: dict[str, Any]) -> IssuerVerifier:
    fake.serve("/.well-known/oauth-authorization-server", {"issuer": fake.base, "introspection_endpoint": f"{fake.base}/introspect"})
    fake.serve("/introspect", answer)
    return IssuerVerifier(fake.base, RESOURCE, client_id="shipcode rs", client_secret="s3cret:&")


def test_an_opaque_token_is_introspected_with_our_credentials(fake: Issuer) -> None:
    now = int(time.time())
    verifier = introspecting(fake, {"active": True, "sub": "alice", "aud": [RESOURCE], "iss": fake.base,
                                    "scope": "shipcode:read", "exp": now + 300, "client_id": "app"})
    principal = verifier.verify("opaque-token-1")
    assert principal.subject == "alice" and principal.scopes == {"shipcode:read"} and principal.client_id == "app"
    (method, _, headers, body), = [entry for entry in fake.asked if entry[1] == "/introspect"]
    assert method == "POST" and parse_qs(body.decode()) == {"token": ["opaque-token-1"], "token_type_hint": ["access_token"]}
    assert base64.b64decode(headers["Authorization"].removeprefix("Basic ")) == b"shipcode%20rs:s3cret%3A%26"
    verifier.verify("opaque-token-1")
    assert fake.paths("/introspect") == ["/introspect"]  # cached
    # Without credentials there is nothing to ask with:
    refused(IssuerVerifier(fake.base, RESOURCE), "opaque-token-2", "cannot introspect")


@pytest.mark.parametrize(("answer", "because"), [
    ({"active": False}, "not active"),
    ({"active": "true", "sub": "alice", "aud": RESOURCE}, "not active"),
    ({"active": True, "sub": "alice", "aud": "https://api.example"}, "not for this resource"),
    ({"active": True, "sub": "alice"}, "not for this resource"),
    ({"active": True, "sub": "alice", "aud": RESOURCE, "iss": "https://someone.example"}, "not from"),
    ({"active": True, "sub": "alice", "aud": RESOURCE, "exp": 1000}, "expired"),
    ({"active": True, "aud": RESOURCE}, "names no subject"),
    ({"active": True, "sub": "alice", "aud": RESOURCE, "token_type": "refresh_token"}, "refresh token is no access token"),
])
def test_introspection_answers_that_do_not_let_a_token_in(fake: Issuer, answer: dict[str, Any], because: str) -> None:
    refused(introspecting(fake, answer), "opaque-token", because)


def test_the_introspection_cache_is_bounded(fake: Issuer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(issuer_module, "INTROSPECTION_CACHE_ENTRIES", 16)
    verifier = introspecting(fake, {"active": True, "sub": "alice", "aud": RESOURCE, "exp": int(time.time()) + 300})
    sizes = []
    for number in range(40):
        verifier.verify(f"opaque-{number}")
        sizes.append(len(verifier._introspected))
    assert max(sizes) == 16 and sizes[:16] == list(range(1, 17))
    assert len(fake.paths("/introspect")) == 40


def _authenticate(resource: Any, value: str) -> Any:
    """What the HTTP front's ResourceServer makes of a request bearing `value` (its cache included)."""
    import asyncio

    from starlette.requests import Request

    scope = {"type": "http", "method": "POST", "path": "/mcp", "query_string": b"",
             "headers": [(b"authorization", f"Bearer {value}".encode())]}
    return asyncio.run(resource.authenticate(Request(scope)))


@pytest.mark.parametrize("defended", [False, True])
def test_a_token_whose_exp_is_a_string_is_not_served_past_its_expiry(fake: Issuer, defended: bool,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 22, finding 9. PyJWT takes `"exp": "<digits>"` as a time, so the token passes while it lasts; the
    front then finds no numeric expiry and keeps the verdict CACHE_SECONDS, serving the token after its end
    (the control, with the check off). With it, a string exp, nbf or iat (or a non-finite one) is refused, and
    the numeric form's verdict ends with the token."""
    from shipcode_mcp.auth.tokens import Principal
    from shipcode_mcp.transports.http.auth import ResourceServer

    if not defended:
        monkeypatch.setattr(issuer_module, "TIME_CLAIMS", ())
    publish(fake, KEY)
    verifier = IssuerVerifier(fake.base, RESOURCE, leeway=0)
    resource = ResourceServer(verifier, resource=RESOURCE)
    ends = int(time.time()) + 2
    stringly, numeric = token(fake, exp=str(ends), sub="mallory"), token(fake, exp=ends)
    assert isinstance(_authenticate(resource, numeric), Principal)
    first = _authenticate(resource, stringly)
    assert isinstance(first, Principal) is (not defended), first
    while time.time() < ends + 0.5:  # bounded: the token's own end
        time.sleep(0.1)
    assert _authenticate(resource, numeric).status_code == 401  # the numeric form's verdict ended with it
    later = _authenticate(resource, stringly)
    if not defended:
        assert isinstance(later, Principal) and later.subject == "mallory"  # the harm: served past its expiry
        return
    assert later.status_code == 401
    now = int(time.time())
    for claims, because in (({"exp": str(now + 300)}, "exp is not a number"), ({"nbf": str(now)}, "nbf is not a number"),
                            ({"iat": "yesterday"}, "iat"), ({"exp": float("inf")}, "(exp)")):
        refused(verifier, token(fake, **claims), because)
    refused(introspecting(fake, {"active": True, "sub": "alice", "aud": RESOURCE, "exp": str(now + 300)}),
            "opaque-token", "exp is not a number")

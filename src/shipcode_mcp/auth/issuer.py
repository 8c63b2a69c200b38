"""Tokens of an OAuth 2.1 authorization server, checked as a resource server must (MCP "Authorization",
RFC 9068, RFC 8707, RFC 7662).

The issuer's metadata is found by RFC 8414 or OpenID Connect discovery and must name the issuer exactly.
A JWT access token is verified against the issuer's published keys (fetched once, fetched again when a
token names an unknown `kid`, at most every `MIN_KEY_REFRESH` seconds so that made-up kids cannot make
us hammer the issuer): an asymmetric signature only (`none` and HMAC algorithms are refused), `iss` equal
to the issuer, `aud` containing our canonical resource URI, `exp` and `nbf` with a small leeway. A token
that is not a JWT is introspected (RFC 7662) when the issuer offers it and we have client credentials
for it; the answer must say `active`, and its `aud` must contain our resource. Tokens are never sent
anywhere but to the issuer's own introspection endpoint.

PyJWT (with `cryptography`) does the JOSE work; it comes with the `auth` extra.
"""

from __future__ import annotations

import base64
import json
import math
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from .. import log
from ..hosts import is_loopback
from .tokens import Principal, TokenRejected, fingerprint

ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA")
"""Signatures we accept: asymmetric only, so that no one who knows a public key can sign."""
LEEWAY = 30.0
"""Seconds of clock skew tolerated on `exp`, `nbf` and `iat`."""
MIN_KEY_REFRESH = 30.0
KEY_LIFETIME = 3600.0
"""Keys older than this are fetched again on next use (an issuer rotates keys; a revoked one must go)."""
INTROSPECTION_CACHE_SECONDS = 60.0
"""An introspected token is trusted this long at most (a revocation takes effect within it)."""
INTROSPECTION_CACHE_ENTRIES = 4096
"""At most this many introspection verdicts are kept (a flood of tokens cannot grow memory)."""
FETCH_TIMEOUT = 10.0
MAX_DOCUMENT_BYTES = 1024 * 1024
TIME_CLAIMS = ("exp", "nbf", "iat")
"""Claims that must be numbers (RFC 7519 NumericDate) when present: PyJWT reads `"exp": "1796150421"` as a
time, but our cache does not, and would keep such a token's verdict past its end."""


class IssuerUnavailable(Exception):
    """The issuer could not be asked (down, slow, or answering nonsense): not the token's fault, a 503."""


class IssuerVerifier:
    """Verifies the access tokens `issuer` issues for `resource`. Thread-safe; blocking (network)."""

    def __init__(self, issuer: str, resource: str, *, client_id: str | None = None, client_secret: str | None = None,
                 leeway: float = LEEWAY) -> None:
        check_url(issuer, "the issuer")
        self.issuer = issuer
        self.resource = resource
        self.client_id = client_id
        self.client_secret = client_secret
        self.leeway = leeway
        self._lock = threading.Lock()
        self._metadata: dict[str, Any] | None = None
        self._metadata_tried = 0.0
        self._keys: dict[str, tuple[Any, str | None]] = {}  # kid -> (PyJWK, the algorithm the key declares)
        self._keys_fetched = 0.0  # when keys were last read
        self._keys_tried = 0.0  # when a read was last attempted, whatever came of it
        self._fetching = threading.Lock()  # one read of the key set at a time
        self._introspected: dict[str, tuple[float, Principal]] = {}

    def describe(self) -> str:
        return f"OAuth, tokens of {self.issuer} for {self.resource}"

    # -- metadata and keys ----------------------------------------------------------------------------
    def metadata(self) -> dict[str, Any]:
        """The issuer's metadata, discovered once (a failed discovery is retried after MIN_KEY_REFRESH)."""
        with self._lock:
            if self._metadata is not None:
                return self._metadata
            if time.monotonic() - self._metadata_tried < MIN_KEY_REFRESH and self._metadata_tried:
                raise IssuerUnavailable(f"the metadata of {self.issuer} could not be read; retrying shortly")
            self._metadata_tried = time.monotonic()
        problems: list[str] = []
        for url in discovery_urls(self.issuer):
            try:
                document = fetch_json(url)
            except IssuerUnavailable as err:
                problems.append(str(err))
                continue
            if document.get("issuer") != self.issuer:
                problems.append(f"{url} names issuer {document.get('issuer')!r}, not {self.issuer!r}")
                continue
            if not isinstance(document.get("jwks_uri"), str) and not isinstance(document.get("introspection_endpoint"), str):
                problems.append(f"{url} names neither jwks_uri nor introspection_endpoint")
                continue
            with self._lock:
                self._metadata = document
            return document
        raise IssuerUnavailable(f"no usable metadata for issuer {self.issuer}: {'; '.join(problems)}")

    def _key(self, kid: str | None) -> tuple[Any, str | None]:
        """The issuer's signing key `kid` (or its only key when the token names none). The key set is read
        again when it is older than KEY_LIFETIME or a token names a kid it lacks, but at most once every
        MIN_KEY_REFRESH seconds whatever came of the last attempt, and by one thread at a time: made-up
        kids cannot make us hammer an issuer, least of all one that is failing. Keys read before stay in
        use while a new read fails."""
        found = self._known(kid)
        if found is not None:
            return found
        with self._fetching:
            found = self._known(kid)  # another thread may have read the keys meanwhile
            if found is None and self._may_fetch():
                self._keys_tried = time.monotonic()
                try:
                    self._fetch_keys()
                except IssuerUnavailable:
                    if not self._keys:
                        raise
                    log.warning(f"the keys of {self.issuer} could not be read again; those read before stay in use")
                found = self._known(kid, stale_ok=True)
        if found is None and not self._keys_fetched:  # never read: we cannot tell, the issuer is to blame
            raise IssuerUnavailable(f"the keys of {self.issuer} have not been read yet; retrying shortly")
        if found is None:
            raise TokenRejected("the token is signed with a key the issuer does not publish")
        return found

    def _known(self, kid: str | None, *, stale_ok: bool = False) -> tuple[Any, str | None] | None:
        with self._lock:
            if not stale_ok and time.monotonic() - self._keys_fetched > KEY_LIFETIME and self._may_fetch():
                return None  # old: read them again first (if allowed now)
            return self._pick(kid)

    def _may_fetch(self) -> bool:
        return not self._keys_tried or time.monotonic() - self._keys_tried >= MIN_KEY_REFRESH

    def _pick(self, kid: str | None) -> tuple[Any, str | None] | None:
        if kid is not None:
            return self._keys.get(kid)
        keys = list(self._keys.values())
        return keys[0] if len(keys) == 1 else None

    def _fetch_keys(self) -> None:
        import jwt

        uri = self.metadata().get("jwks_uri")
        if not isinstance(uri, str):
            raise TokenRejected("the issuer publishes no keys (no jwks_uri): only introspected tokens are accepted")
        check_issuer_url(uri, "jwks_uri")
        document = fetch_json(uri)
        keys: dict[str, tuple[Any, str | None]] = {}
        for entry in document.get("keys", []) if isinstance(document.get("keys"), list) else []:
            if not isinstance(entry, dict) or entry.get("use", "sig") != "sig" or entry.get("kty") == "oct":
                continue
            try:
                key = jwt.PyJWK(entry)
            except (jwt.PyJWKError, jwt.InvalidKeyError, ValueError, TypeError):
                continue  # a key type or curve we cannot use: others may do
            declared = entry.get("alg")
            keys[str(entry.get("kid", ""))] = (key, declared if isinstance(declared, str) else None)
        with self._lock:
            self._keys = keys
            self._keys_fetched = time.monotonic()
        log.info(f"{len(keys)} signing key(s) of {self.issuer} read from {uri}")

    # -- verification -----------------------------------------------------------------------------------
    def verify(self, token: str) -> Principal:
        if token.count(".") == 2:
            return self._verify_jwt(token)
        return self._introspect(token)

    def _verify_jwt(self, token: str) -> Principal:
        import jwt

        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError:  # not JSON, a kid that is no string, an unknown crit, ...
            raise TokenRejected("the token is not a well-formed JWT") from None
        algorithm = header.get("alg")
        if algorithm not in ALGORITHMS:
            raise TokenRejected(f"the token's algorithm {str(algorithm)[:20]!r} is not accepted")
        kid = header.get("kid")
        key, declared = self._key(kid if isinstance(kid, str) else None)
        if declared not in (None, algorithm):
            raise TokenRejected("the token's algorithm is not the one its key is for")
        try:
            claims = jwt.decode(token, key.key, algorithms=[algorithm], audience=self.resource, issuer=self.issuer,
                                leeway=self.leeway, options={"require": ["exp", "iss", "aud"]})
        except jwt.ExpiredSignatureError:
            raise TokenRejected("the token has expired") from None
        except jwt.ImmatureSignatureError:
            raise TokenRejected("the token is not valid yet") from None
        except jwt.InvalidAudienceError:
            raise TokenRejected(f"the token is not for this resource (its audience is not {self.resource})") from None
        except jwt.InvalidIssuerError:
            raise TokenRejected(f"the token is not from {self.issuer}") from None
        except jwt.InvalidSignatureError:
            raise TokenRejected("the token's signature does not verify") from None
        except jwt.MissingRequiredClaimError as err:
            raise TokenRejected(f"the token has no {err.claim!r} claim") from None
        except (jwt.InvalidKeyError, TypeError, ValueError):  # e.g. an ES256 token naming an RSA key
            raise TokenRejected("the token's algorithm is not the one its key is for") from None
        except jwt.InvalidTokenError as err:
            raise TokenRejected(f"the token is not valid: {err}") from None
        except jwt.PyJWTError:
            raise TokenRejected("the token is not valid") from None
        numeric_times(claims)
        return self._principal(claims)

    def _principal(self, claims: dict[str, Any]) -> Principal:
        subject, kind = claims.get("sub"), "sub"
        if not subject:  # a client acting for itself (client credentials): named apart from users
            subject, kind = claims.get("client_id"), "client"
        if not isinstance(subject, str) or not subject:
            raise TokenRejected("the token names no subject (sub) or client (client_id)")
        scope = claims.get("scope", claims.get("scp", ""))
        scopes = scope.split() if isinstance(scope, str) else [s for s in scope if isinstance(s, str)] if isinstance(scope, list) else []
        expiry = claims.get("exp")
        client = claims.get("client_id", claims.get("azp"))
        return Principal(subject, frozenset(scopes), issuer=self.issuer, client_id=client if isinstance(client, str) else None,
                         expires_at=float(expiry) if isinstance(expiry, (int, float)) else None, kind=kind)

    def _introspect(self, token: str) -> Principal:
        name = fingerprint(token)
        now = time.time()
        with self._lock:
            cached = self._introspected.get(name)
        if cached is not None and cached[0] > now:
            return cached[1]
        endpoint = self.metadata().get("introspection_endpoint")
        if not isinstance(endpoint, str) or self.client_id is None:
            raise TokenRejected("the token is not a JWT, and this server cannot introspect tokens of its issuer")
        check_issuer_url(endpoint, "introspection_endpoint")
        body = urllib.parse.urlencode({"token": token, "token_type_hint": "access_token"}).encode()
        credentials = f"{urllib.parse.quote(self.client_id, safe='')}:{urllib.parse.quote(self.client_secret or '', safe='')}"
        answer = fetch_json(endpoint, body, {"Authorization": "Basic " + base64.b64encode(credentials.encode()).decode(),
                                             "Content-Type": "application/x-www-form-urlencoded"})
        if answer.get("active") is not True:
            raise TokenRejected("the token is not active (expired, revoked or unknown to the issuer)")
        if str(answer.get("token_type", "")).lower() in ("refresh_token", "urn:ietf:params:oauth:token-type:refresh_token"):
            raise TokenRejected("a refresh token is no access token")
        if answer.get("iss", self.issuer) != self.issuer:
            raise TokenRejected(f"the token is not from {self.issuer}")
        audience = answer.get("aud")
        audiences = [audience] if isinstance(audience, str) else audience if isinstance(audience, list) else []
        if self.resource not in audiences:
            raise TokenRejected(f"the token is not for this resource (its audience is not {self.resource})")
        numeric_times(answer)
        expiry = answer.get("exp")
        if isinstance(expiry, (int, float)) and expiry + self.leeway < now:
            raise TokenRejected("the token has expired")
        until = now + INTROSPECTION_CACHE_SECONDS
        if isinstance(expiry, (int, float)):
            until = min(until, float(expiry))
        # The verdict lasts until `until` wherever it is kept (the HTTP front caches by expires_at too), so
        # a revocation takes effect within INTROSPECTION_CACHE_SECONDS.
        principal = self._principal({**answer, "exp": until})
        with self._lock:
            if len(self._introspected) >= INTROSPECTION_CACHE_ENTRIES:
                self._introspected = {k: v for k, v in self._introspected.items() if v[0] > now}
                if len(self._introspected) >= INTROSPECTION_CACHE_ENTRIES:
                    self._introspected.clear()
            self._introspected[name] = (until, principal)
        return principal


def numeric_times(claims: dict[str, Any]) -> None:
    """Refuse a token whose `exp`, `nbf` or `iat` (`TIME_CLAIMS`) is there but no finite number: a string
    one would pass PyJWT's checks and then count as no expiry at all wherever the verdict is kept."""
    for name in TIME_CLAIMS:
        value = claims.get(name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value)):
            raise TokenRejected(f"the token's {name} is not a number")


def discovery_urls(issuer: str) -> list[str]:
    """Where an issuer's metadata may be, in the order MCP clients try them (RFC 8414 section 3.1, then
    OpenID Connect discovery with and without path insertion)."""
    parts = urllib.parse.urlsplit(issuer)
    origin = f"{parts.scheme}://{parts.netloc}"
    path = parts.path.rstrip("/")
    if not path:
        return [f"{origin}/.well-known/oauth-authorization-server", f"{origin}/.well-known/openid-configuration"]
    return [f"{origin}/.well-known/oauth-authorization-server{path}", f"{origin}/.well-known/openid-configuration{path}",
            f"{origin}{path}/.well-known/openid-configuration"]


def check_url(url: str, what: str) -> None:
    """An authorization server is reached over HTTPS (OAuth 2.1), or plain HTTP on this machine only."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme == "https" and parts.hostname:
        return
    if parts.scheme == "http" and parts.hostname and is_loopback(parts.hostname):
        return
    raise ValueError(f"{what} must be an https:// URL (or http:// on a loopback address): {url!r}")


def check_issuer_url(url: str, what: str) -> None:
    """check_url for a URL the issuer's metadata names: a bad one is the issuer's fault (503), never an
    error that escapes the verifier."""
    try:
        check_url(url, what)
    except ValueError as err:
        raise IssuerUnavailable(f"the metadata of the issuer is unusable: {err}") from None


def fetch_json(url: str, data: bytes | None = None, headers: dict[str, str] | None = None) -> dict[str, Any]:
    """GET (or POST `data` to) `url` and read a JSON object, within FETCH_TIMEOUT and MAX_DOCUMENT_BYTES.
    Redirects are not followed: metadata and keys are where the issuer says they are."""
    request = urllib.request.Request(url, data=data, headers={"Accept": "application/json", **(headers or {})})
    opener = urllib.request.build_opener(_NoRedirect)
    try:
        with opener.open(request, timeout=FETCH_TIMEOUT) as response:
            raw = response.read(MAX_DOCUMENT_BYTES + 1)
    except urllib.error.HTTPError as err:
        raise IssuerUnavailable(f"{url} answered HTTP {err.code}") from None
    except (urllib.error.URLError, OSError, ValueError) as err:
        raise IssuerUnavailable(f"{url} could not be read: {getattr(err, 'reason', err)}") from None
    if len(raw) > MAX_DOCUMENT_BYTES:
        raise IssuerUnavailable(f"{url} answered more than {MAX_DOCUMENT_BYTES} bytes")
    try:
        document = json.loads(raw)
    except ValueError:
        raise IssuerUnavailable(f"{url} did not answer JSON") from None
    if not isinstance(document, dict):
        raise IssuerUnavailable(f"{url} did not answer a JSON object")
    return document


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None

"""The HTTP face of authorization (MCP "Authorization", RFC 9728, RFC 6750): the Protected Resource
Metadata clients discover, the bearer token of each request, and the 401, 403 and 400 answers with the
`WWW-Authenticate` challenge that tells a client what to do next.

A token is verified off the event loop (a verifier may fetch keys) and the verdict kept, by the token's
digest, until the token expires or `CACHE_SECONDS` pass, whichever is first; a refusal is kept
`REFUSAL_SECONDS`; a token-file reload forgets every verdict. A client address may have `VERIFY_BURST`
tokens verified at once and `VERIFY_RATE` a second after that (429 beyond): each unknown opaque token costs
an introspection at the authorization server, and one client made 343 a second. A token is never logged
or passed on.
"""

from __future__ import annotations

import asyncio
import collections
import json
import re
import time
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlsplit

from starlette.responses import Response

from ... import log
from ...auth.issuer import IssuerUnavailable
from ...auth.scopes import READ, SUPPORTED, granted, needed, offered
from ...auth.tokens import Principal, TokenRejected, fingerprint

if TYPE_CHECKING:
    from collections.abc import Sequence

    from starlette.requests import Request

    from ...auth.tokens import Verifier
    from ...registry import Registry

METADATA_PATH = "/.well-known/oauth-protected-resource"
CACHE_SECONDS = 300.0
CACHE_ENTRIES = 4096
REFUSAL_SECONDS = 10.0
"""A refused token is refused again without asking for this long."""
VERIFY_RATE = 5.0
"""Tokens a second one client address may have verified (not answered from the cache), after VERIFY_BURST."""
VERIFY_BURST = 20
PEERS = 4096
"""Client addresses whose verification budget is remembered (beyond, all are forgotten: no memory grows)."""
MAX_TOKEN_CHARS = 8192
WARN_EVERY = 30.0  # seconds between two warnings that the issuer cannot be reached
_B64TOKEN = re.compile(r"[A-Za-z0-9\-._~+/]+=*")  # RFC 6750 section 2.1
_QUOTABLE = re.compile(r"[^\x20-\x7e]|[\"\\]")


class ResourceServer:
    """Authentication for one MCP endpoint. `authorization_servers` empty (the token-file mode) means no
    metadata to discover: challenges then carry no `resource_metadata`."""

    def __init__(self, verifier: Verifier, *, resource: str, authorization_servers: Sequence[str] = (),
                 scopes: Sequence[str] = SUPPORTED) -> None:
        self.verifier = verifier
        self.resource = resource
        self.authorization_servers = list(authorization_servers)
        self.scopes = list(scopes)
        self._verdicts: collections.OrderedDict[str, tuple[float, Principal]] = collections.OrderedDict()
        self._refused: collections.OrderedDict[str, tuple[float, TokenRejected]] = collections.OrderedDict()
        self._budgets: dict[str, tuple[float, float]] = {}  # client address -> (verifications left, when counted)
        self.server: Registry | None = None  # the server whose tools say what a 401 asks for (create_app sets it)
        self._generation = 0
        self._warned = -WARN_EVERY  # bumped by forget(): a verdict reached before it is not kept after it

    # -- Protected Resource Metadata (RFC 9728) -----------------------------------------------------------
    @property
    def discoverable(self) -> bool:
        return bool(self.authorization_servers)

    def metadata_paths(self) -> list[str]:
        """Where the metadata is served: the path-suffixed form for our resource, and the root form."""
        path = urlsplit(self.resource).path.rstrip("/")
        return [METADATA_PATH + path, METADATA_PATH] if path else [METADATA_PATH]

    @property
    def metadata_url(self) -> str:
        parts = urlsplit(self.resource)
        return f"{parts.scheme}://{parts.netloc}{self.metadata_paths()[0]}"

    def metadata(self) -> dict[str, Any]:
        return {"resource": self.resource, "authorization_servers": self.authorization_servers,
                "scopes_supported": self.scopes, "bearer_methods_supported": ["header"], "resource_name": "shipcode-mcp"}

    def metadata_response(self) -> Response:
        body = json.dumps(self.metadata(), separators=(",", ":")).encode()
        return Response(body, media_type="application/json",
                        headers={"Access-Control-Allow-Origin": "*", "Cache-Control": "max-age=3600"})

    # -- the bearer token of a request -----------------------------------------------------------------
    async def authenticate(self, request: Request) -> Principal | Response:
        """The caller of `request`, or the answer that refuses it."""
        if any(name == "access_token" for name, _ in parse_qsl(request.url.query, keep_blank_values=True)):
            return self.refusal(400, "invalid_request", "send the access token in the Authorization header, never in the URL")
        values = request.headers.getlist("authorization")
        if not values:
            return self.refusal(401)
        if len(values) > 1:
            return self.refusal(400, "invalid_request", "send one Authorization header")
        scheme, _, token = values[0].strip().partition(" ")
        if scheme.lower() != "bearer":
            return self.refusal(401)  # another scheme: as if no credentials were sent (RFC 6750 section 3.1)
        token = token.strip()
        if len(token) > MAX_TOKEN_CHARS or _B64TOKEN.fullmatch(token) is None:
            return self.refusal(401, "invalid_token", "the token is malformed")
        name = fingerprint(token)
        now = time.time()
        kept = self._verdicts.get(name)
        if kept is not None and kept[0] > now:
            self._verdicts.move_to_end(name)
            return kept[1]
        refused = self._refused.get(name)
        if refused is not None and refused[0] > now:
            return self.refusal(401, refused[1].error, refused[1].description)
        client = request.client
        if not self._may_verify(client.host if client is not None else "", time.monotonic()):
            body = {"error": "too_many_requests", "error_description": "too many new tokens from this address; try again later"}
            return Response(json.dumps(body).encode(), status_code=429, media_type="application/json",
                            headers={"Retry-After": "1"})
        generation = self._generation
        try:
            principal = await asyncio.to_thread(self.verifier.verify, token)
        except TokenRejected as err:
            log.info(f"a token refused: {err.description}")
            if generation == self._generation:
                self._refused[name] = (now + REFUSAL_SECONDS, err)
                while len(self._refused) > CACHE_ENTRIES:
                    self._refused.popitem(last=False)
            return self.refusal(401, err.error, err.description)
        except IssuerUnavailable as err:
            if time.monotonic() - self._warned >= WARN_EVERY:  # once in a while, not once per request
                self._warned = time.monotonic()
                log.warning(f"cannot verify tokens now: {err}")
            body = {"error": "temporarily_unavailable", "error_description": "the authorization server cannot be reached"}
            return Response(json.dumps(body).encode(), status_code=503, media_type="application/json",
                            headers={"Retry-After": "5"})
        except Exception as err:  # a verifier's bug must not let a token in, nor answer 500 with a traceback
            log.error(f"a token could not be verified ({type(err).__name__}: {err}); refused")
            return self.refusal(401, "invalid_token", "the token could not be verified")
        if generation != self._generation:
            return principal  # good when asked, but the tokens changed meanwhile: not kept
        until = now + CACHE_SECONDS if principal.expires_at is None else min(now + CACHE_SECONDS, principal.expires_at)
        self._verdicts[name] = (until, principal)
        while len(self._verdicts) > CACHE_ENTRIES:
            self._verdicts.popitem(last=False)
        return principal

    def _may_verify(self, peer: str, now: float) -> bool:
        """Whether `peer` may have one more token verified now (a token bucket: VERIFY_BURST, then VERIFY_RATE a second)."""
        left, counted = self._budgets.get(peer, (float(VERIFY_BURST), now))
        left = min(float(VERIFY_BURST), left + (now - counted) * VERIFY_RATE)
        if left < 1:
            return False
        if len(self._budgets) >= PEERS and peer not in self._budgets:
            self._budgets.clear()
        self._budgets[peer] = (left - 1, now)
        return True

    def check(self, principal: Principal | None, message: dict[str, Any] | None, server: Registry) -> Response | None:
        """403 when the caller's token lacks a scope the message needs (`auth.scopes.needed`; any request,
        a GET stream or a DELETE at all: `shipcode:read`), else None."""
        wanted = needed(server, message) if message is not None else (READ,)
        if principal is None or any(scope not in granted(principal.scopes) for scope in wanted):
            return self.insufficient(principal, wanted)
        return None

    def reload(self) -> None:
        """SIGHUP: a token file is read again and every verdict forgotten (a removed token stops working at
        once). An OAuth verifier has nothing to reload: its keys follow the issuer."""
        reload = getattr(self.verifier, "reload", None)
        if reload is not None and reload():
            self.forget()

    def forget(self) -> None:
        self._generation += 1
        self._verdicts.clear()
        self._refused.clear()

    # -- refusals --------------------------------------------------------------------------------------
    def insufficient(self, principal: Principal | None, wanted: Sequence[str]) -> Response:
        """403 for a token without the scopes a request needs; the challenge lists them all, so one
        re-authorization is enough (step-up)."""
        missing = [scope for scope in wanted if principal is None or scope not in granted(principal.scopes)]
        return self.refusal(403, "insufficient_scope", f"this request needs the scope {' and '.join(missing)}",
                            scope=" ".join(wanted))

    def refusal(self, status: int, error: str | None = None, description: str | None = None, *,
                scope: str | None = None) -> Response:
        """`status` with the Bearer challenge of RFC 6750 section 3 (and RFC 9728's `resource_metadata`); `scope`
        by default names what the server's tools need between them (`auth.scopes.offered`)."""
        if scope is None:
            scope = " ".join(offered(self.server)) if self.server is not None else READ
        params: list[tuple[str, str]] = []
        if error is not None:
            params.append(("error", error))
        if status == 403:
            params.append(("scope", scope))
        if self.discoverable:
            params.append(("resource_metadata", self.metadata_url))
        if status != 403:
            params.append(("scope", scope))
        if description is not None:
            params.append(("error_description", _QUOTABLE.sub("'", description)[:300]))
        challenge = "Bearer " + ", ".join(f'{key}="{value}"' for key, value in params)
        body: dict[str, str] = {}
        if error is not None:
            body["error"] = error
            if description is not None:
                body["error_description"] = description
        else:
            body = {"error": "unauthorized", "error_description": "this server needs a bearer token"}
        return Response(json.dumps(body).encode(), status_code=status, media_type="application/json",
                        headers={"WWW-Authenticate": challenge})

"""Support for the OAuth tests: a real authorization server (oidc-provider under Node 22, installed by
scripts/auth_server.sh, run by oidc_provider.mjs) as a child process, and the client side of its
authorization code flow with PKCE done by hand (registration, the auto-approving interaction, the token
request), for the tokens the tests need beside the ones the SDK client obtains itself."""

from __future__ import annotations

import base64
import hashlib
import os
import secrets
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urljoin, urlsplit

import httpx2

from interop.client_support import free_port
from support import installed, terminate

HERE = Path(__file__).resolve().parent
REDIRECT_URI = "http://127.0.0.1:9/callback"
"""Where the authorization server sends the browser back: nothing listens there, the tests read the
redirect's Location instead of following it."""
READ_WRITE = "shipcode:read shipcode:write"


@cache
def auth_server_cache() -> Path:
    """The cache folder of Node 22 and oidc-provider (scripts/auth_server.sh installs them the first
    time); the test skips, saying why, only when npm or its registry cannot be reached."""
    return installed("auth_server.sh", "the authorization server (oidc-provider)")


@contextmanager
def authorization_server(env: dict[str, str] | None = None) -> Iterator[str]:
    """oidc_provider.mjs on a free loopback port; yields its issuer URL once it listens (it prints it
    then), and stops it with SIGTERM at the end."""
    folder = auth_server_cache()
    node = folder / "node_modules" / "node" / "bin" / "node"
    port = free_port()
    with tempfile.TemporaryFile() as stderr:
        process = subprocess.Popen([str(node), str(HERE / "oidc_provider.mjs"), str(folder), str(port)],
                                   stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=stderr, text=True,
                                   env={**os.environ, **(env or {})})
        try:
            assert process.stdout is not None
            line = process.stdout.readline().strip()  # the issuer, once listening; empty if it died
            if not line:
                process.wait(10)
                stderr.seek(0)
                raise AssertionError(f"oidc_provider.mjs did not start ({process.returncode}): {stderr.read()[-3000:]!r}")
            yield line
        finally:
            terminate(process, 10)
            if process.stdout is not None:
                process.stdout.close()


def metadata(issuer: str) -> dict[str, Any]:
    answer = httpx2.get(f"{issuer}/.well-known/openid-configuration", timeout=10)
    assert answer.status_code == 200, answer.text
    document: dict[str, Any] = answer.json()
    return document


def register(issuer: str, *, client_name: str = "shipcode tests", confidential: bool = False,
             resource_server: bool = False, scope: str | None = None) -> dict[str, Any]:
    """A client registered at `issuer` by RFC 7591 dynamic registration: public (PKCE, no secret) by
    default, with a secret if `confidential`, or a resource server's introspection client; registered
    with `scope`, it may never ask for more (without, it may ask for any scope)."""
    body: dict[str, Any] = {"client_name": client_name,
                            "token_endpoint_auth_method": "client_secret_basic" if confidential or resource_server else "none"}
    if scope is not None:
        body["scope"] = scope
    if resource_server:
        body.update(grant_types=[], response_types=[], redirect_uris=[])
    else:
        body.update(grant_types=["authorization_code"], response_types=["code"], redirect_uris=[REDIRECT_URI])
    answer = httpx2.post(metadata(issuer)["registration_endpoint"], json=body, timeout=10)
    assert answer.status_code == 201, answer.text
    client: dict[str, Any] = answer.json()
    return client


def follow_authorization(url: str, redirect_uri: str = REDIRECT_URI) -> dict[str, str]:
    """Play the browser: follow `url` through the authorization server's (auto-approving) interaction,
    with its cookies, until it redirects to `redirect_uri`; the parameters of that redirect (a code, or
    an error). Each call is a new browser, so a new login and a new consent."""
    with httpx2.Client(timeout=10, follow_redirects=False) as browser:
        for _ in range(12):
            answer = browser.get(url)
            assert answer.status_code in (302, 303), f"{url} answered {answer.status_code}: {answer.text[:2000]}"
            url = urljoin(url, answer.headers["location"])
            if url.startswith(redirect_uri + "?"):
                return {name: values[0] for name, values in parse_qs(urlsplit(url).query).items()}
    raise AssertionError(f"the authorization never came back to {redirect_uri}")


def pkce_pair() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")
    return verifier, challenge


@dataclass(frozen=True)
class Grant:
    client: dict[str, Any]
    token: dict[str, Any]

    @property
    def access_token(self) -> str:
        value: str = self.token["access_token"]
        return value


def authorize(issuer: str, resource: str, scope: str = READ_WRITE, *, login_hint: str = "alice",
              client_name: str = "shipcode tests", consented: str | None = None) -> Grant:
    """A token from `issuer` for `resource` through the whole authorization code flow with PKCE S256:
    register a public client, authorize (as `login_hint`, who consents to `consented` of the resource
    scopes asked for, all by default), exchange the code with the verifier."""
    client = register(issuer, client_name=client_name)
    verifier, challenge = pkce_pair()
    state = secrets.token_urlsafe(16)
    endpoints = metadata(issuer)
    params = {"response_type": "code", "client_id": client["client_id"], "redirect_uri": REDIRECT_URI,
              "scope": scope, "resource": resource, "state": state, "code_challenge": challenge,
              "code_challenge_method": "S256", "login_hint": login_hint}
    if consented is not None:
        params["consented_scope"] = consented
    query = urlencode(params)
    back = follow_authorization(f"{endpoints['authorization_endpoint']}?{query}")
    assert back.get("state") == state and back.get("iss") == issuer and "code" in back, back
    answer = httpx2.post(endpoints["token_endpoint"], timeout=10,
                         data={"grant_type": "authorization_code", "code": back["code"], "redirect_uri": REDIRECT_URI,
                               "client_id": client["client_id"], "code_verifier": verifier, "resource": resource})
    assert answer.status_code == 200, answer.text
    return Grant(client, answer.json())

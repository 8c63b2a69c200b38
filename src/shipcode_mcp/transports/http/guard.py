"""DNS-rebinding protection: which `Host` and `Origin` headers an endpoint accepts, so that a web page cannot
reach a local server through a name it controls. Pure (no Starlette, no sockets): the endpoint asks
`HostGuard.refusal` of every request and answers 403 with what it says."""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from ...hosts import hostname, is_loopback
from .headers import shown

if TYPE_CHECKING:
    from collections.abc import Iterable

HOST_VERDICTS = 256  # Host header values whose verdict is remembered


class HostGuard:
    """`allowed_hosts` None accepts loopback Host names only; `allow_loopback` (default: when `allowed_hosts` is
    None) also accepts loopback names and origins beside `allowed_hosts`; "*" in either list accepts any.
    `allowed_origins` lists the browser origins allowed beside those of this machine."""

    def __init__(self, allowed_origins: Iterable[str] = (), allowed_hosts: Iterable[str] | None = None,
                 allow_loopback: bool | None = None) -> None:
        self.allowed_origins = frozenset(o.rstrip("/").lower() for o in allowed_origins)
        self.allowed_hosts = None if allowed_hosts is None else frozenset(h.lower() for h in allowed_hosts)
        self.allow_loopback = allowed_hosts is None if allow_loopback is None else allow_loopback
        self._verdicts: dict[str, bool] = {}  # Host header value -> allowed, at most HOST_VERDICTS

    def refusal(self, host: str, origin: str | None) -> str | None:
        """Why a request with these `Host` and `Origin` headers is refused (the 403's text), or None."""
        host = host.lower()
        allowed = self._verdicts.get(host)
        if allowed is None:
            allowed = self.host_allowed(host)
            if len(self._verdicts) >= HOST_VERDICTS:  # a client sending ever new names costs a lookup each, no memory
                self._verdicts.clear()
            self._verdicts[host] = allowed
        if not allowed:
            return f"Forbidden: Host {shown(host)} is not allowed"
        if origin is None or self.origin_allowed(origin):
            return None  # no Origin: not a browser, or a same-origin GET, which the Host check covers
        return f"Forbidden: Origin {shown(origin)} is not allowed"

    def host_allowed(self, host: str) -> bool:
        """The Host check proper (`refusal` remembers its verdicts, by header value)."""
        name = hostname(host)  # None: not a host[:port] at all (userinfo, junk after a bracket, ...)
        return name is not None and ((self.allow_loopback and is_loopback(name)) or (
            self.allowed_hosts is not None and (
                "*" in self.allowed_hosts or host in self.allowed_hosts or name in self.allowed_hosts)))

    def origin_allowed(self, origin: str) -> bool:
        """A listed origin, or (with `allow_loopback`) a page served from this machine."""
        normalized = origin.rstrip("/").lower()
        if "*" in self.allowed_origins or normalized in self.allowed_origins:
            return True
        parts = urlsplit(normalized)
        origin_host = hostname(parts.netloc) if parts.scheme in ("http", "https") and not (
            parts.path or parts.query or parts.fragment) else None
        return self.allow_loopback and origin_host is not None and is_loopback(origin_host)

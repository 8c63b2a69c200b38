"""Host names as HTTP carries them (Host, Origin) and which of them are this machine: the parsing the
DNS-rebinding checks, the start-up safety check and the authorization server's URL check share. Standard
library only, so the command line can ask before the HTTP stack loads."""

from __future__ import annotations

import ipaddress
import re

_HOST = re.compile(r"(\[[0-9a-f:.]+\]|[a-z0-9](?:[a-z0-9.-]*[a-z0-9])?)(?::[0-9]{1,5})?")
"""host[:port] as RFC 9110 allows it in Host (and an origin's authority): a bracketed IPv6 address or a
name / IPv4 address, then an optional port; nothing else (no userinfo `@`, nothing after the bracket)."""


def hostname(host: str) -> str | None:
    """'example.com:8080' -> 'example.com', '[::1]:80' -> '[::1]'; None for anything that is not a host
    and an optional port ('127.0.0.1:80@evil.com', '[::1]evil'), which no check may read leniently."""
    match = _HOST.fullmatch(host.lower())
    return match.group(1) if match is not None else None


def is_loopback(host: str) -> bool:
    """A name or address of this machine: localhost, an address of 127.0.0.0/8, or ::1 (bracketed or
    not). An address, not a prefix: 127.0.0.1.evil.com is somebody's name."""
    host = host.lower()
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False

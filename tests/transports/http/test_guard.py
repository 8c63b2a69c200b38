"""The Host and Origin rules of an endpoint (transports/http/guard.py), without sockets: what a web page on
another name may not reach (DNS rebinding), and what a deployment lets through. tests/transports/http/
test_endpoint.py checks the same answers over real HTTP."""

from __future__ import annotations

import pytest

from shipcode_mcp.transports.http.guard import HOST_VERDICTS, HostGuard


@pytest.mark.parametrize("host", ["127.0.0.1:8000", "localhost", "LOCALHOST:1", "[::1]:80", "127.9.9.9"])
def test_a_local_server_accepts_its_loopback_names(host: str) -> None:
    assert HostGuard().refusal(host, None) is None


@pytest.mark.parametrize("host", ["evil.com", "127.0.0.1.evil.com", "127.0.0.1:80@evil.com", "[::1]evil", "", "0.0.0.0"])
def test_a_local_server_refuses_any_other_host(host: str) -> None:
    assert HostGuard().refusal(host, None) == f"Forbidden: Host {host!r} is not allowed"


def test_allowed_hosts_replace_the_loopback_names_unless_told_to_keep_them() -> None:
    listed = HostGuard(allowed_hosts=["mcp.example.com"])
    assert listed.refusal("mcp.example.com:443", None) is None
    assert listed.refusal("localhost", None) is not None
    both = HostGuard(allowed_hosts=["mcp.example.com"], allow_loopback=True)
    assert both.refusal("localhost", None) is None and both.refusal("other.example.com", None) is not None
    assert HostGuard(allowed_hosts=["*"]).refusal("anything.example", None) is None
    assert HostGuard(allowed_hosts=["*"]).refusal("a@b", None) is not None  # still a host[:port], never junk


@pytest.mark.parametrize(("origin", "allowed"), [
    ("http://localhost:3000", True), ("https://127.0.0.1", True), ("http://[::1]:8080/", True),
    ("http://evil.com", False), ("null", False), ("http://localhost/path", False), ("file://localhost", False),
    ("http://localhost.evil.com", False)])
def test_a_browser_page_of_this_machine_may_call_a_local_server(origin: str, allowed: bool) -> None:
    refusal = HostGuard().refusal("localhost:8000", origin)
    assert (refusal is None) is allowed, refusal
    if not allowed:
        assert refusal == f"Forbidden: Origin {origin!r} is not allowed"


def test_listed_origins_and_the_wildcard() -> None:
    guard = HostGuard(allowed_origins=["https://app.example.com/"], allowed_hosts=["mcp.example.com"])
    assert guard.refusal("mcp.example.com", "HTTPS://APP.example.com") is None
    assert guard.refusal("mcp.example.com", "http://localhost:3000") is not None  # loopback pages: not here
    assert HostGuard(allowed_origins=["*"]).refusal("localhost", "https://anywhere.example") is None


def test_a_refused_header_is_shown_at_most_200_characters() -> None:
    refusal = HostGuard().refusal("h" * 15_000, None)
    assert refusal is not None and len(refusal) < 300


def test_remembered_verdicts_stay_bounded_and_right() -> None:
    """Each new Host value is judged once and remembered; a client sending ever new names costs a lookup each,
    never memory: the verdicts are forgotten at HOST_VERDICTS."""
    guard = HostGuard()
    for number in range(HOST_VERDICTS * 3):
        assert guard.refusal(f"name{number}.example", None) is not None
        assert len(guard._verdicts) <= HOST_VERDICTS
    assert guard.refusal("localhost", None) is None
    assert guard.refusal("name1.example", None) is not None

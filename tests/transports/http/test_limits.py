"""HttpLimits: every limit of an endpoint in one frozen object, filled from the command line, `limits=`, or the
fields by name; the endpoint applies what it holds."""

from __future__ import annotations

import dataclasses

import pytest

from shipcode_mcp import Server
from shipcode_mcp.cli import _app_limits, parse_args
from shipcode_mcp.transports.http import create_app
from shipcode_mcp.transports.http.limits import MAX_SESSIONS, HttpLimits, with_fields


def endpoint_limits(app: object) -> HttpLimits:
    limits = app.state.mcp.limits  # type: ignore[attr-defined]
    assert isinstance(limits, HttpLimits)
    return limits


def test_the_fields_given_by_name_replace_those_of_limits_and_the_rest_stay() -> None:
    server = Server("t", "1")
    assert endpoint_limits(create_app(server)) == HttpLimits()
    given = HttpLimits(max_sessions=5, keepalive=1.0)
    limits = endpoint_limits(create_app(server, limits=given, max_sessions=7, body_timeout=2.0))
    assert (limits.max_sessions, limits.keepalive, limits.body_timeout) == (7, 1.0, 2.0)
    assert given.max_sessions == 5  # the object given is not changed
    with pytest.raises(dataclasses.FrozenInstanceError):
        limits.max_sessions = 1  # type: ignore[misc]


def test_a_name_that_is_no_limit_is_refused() -> None:
    with pytest.raises(TypeError, match="no such limit: max_session"):
        create_app(Server("t", "1"), max_session=5)
    with pytest.raises(TypeError, match="no such limit"):
        with_fields(None, {"path": "/x"})


def test_sessions_per_caller_default_to_a_quarter_of_the_sessions_at_least_16() -> None:
    assert HttpLimits().sessions_per_caller() == MAX_SESSIONS // 4
    assert HttpLimits(max_sessions=20).sessions_per_caller() == 16
    assert HttpLimits(max_sessions=0).sessions_per_caller() == 0  # no cap, no quota
    assert HttpLimits(max_sessions_per_caller=3).sessions_per_caller() == 3


def test_the_command_line_fills_the_limits_it_names() -> None:
    settings = parse_args(["--http", "8765", "--max-sessions", "9", "--body-timeout", "0", "--max-json-values", "12"])
    assert _app_limits(settings) == HttpLimits(max_sessions=9, body_timeout=0.0, max_json_values=12)
    assert _app_limits(parse_args(["--http", "8765"])) == HttpLimits()

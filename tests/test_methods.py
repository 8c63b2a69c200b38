"""methods.METHODS is the one table of request methods: every method either era answers is in it, each
entry's era and step are what the session does with it, and a method not in it is not found."""

from __future__ import annotations

from typing import Any

import pytest

from core_support import Driver
from shipcode_mcp import era
from shipcode_mcp.methods import METHODS
from shipcode_mcp.primitives import Prompt, Resource, Tool
from shipcode_mcp.server import Server
from shipcode_mcp.session import Session

PARAMS: dict[str, dict[str, Any]] = {  # params each method accepts on `everything()` below
    "initialize": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    "subscriptions/listen": {"notifications": {"toolsListChanged": True}},
    "tools/call": {"name": "echo", "arguments": {}},
    "resources/read": {"uri": "test://a"},
    "resources/subscribe": {"uri": "test://a"},
    "resources/unsubscribe": {"uri": "test://a"},
    "prompts/get": {"name": "greet"},
    "logging/setLevel": {"level": "info"},
    "completion/complete": {"ref": {"type": "ref/prompt", "name": "greet"}, "argument": {"name": "a", "value": ""}},
}


def everything() -> Server:
    """A server that offers every capability, so that no method is refused for want of one."""
    server = Server("s", "1", logging=True, list_changed=True, subscribe=True)
    server.add_tool(Tool("echo", lambda ctx, args: "x", inline=True))
    server.add_resource(Resource("test://a", "a", reader=lambda ctx, uri: "A", inline=True))
    server.add_prompt(Prompt("greet", lambda ctx, args: "hi", inline=True))
    server.add_completer("ref/prompt", "greet", "a", lambda value, known: [])
    return server


def legacy_answer(method: str) -> dict[str, Any]:
    d = Driver(everything())
    d.handshake()
    return d.request(9, method, PARAMS.get(method, {}))


def modern_answer(method: str) -> dict[str, Any]:
    d = Driver(everything())
    envelope = {era.VERSION_KEY: era.MODERN_VERSION, era.CAPABILITIES_KEY: {}}
    d.receive({"jsonrpc": "2.0", "id": 9, "method": method, "params": {**PARAMS.get(method, {}), "_meta": envelope}})
    d.run_all()
    return next(m for m in d.sent if m.get("id") == 9  # an answer, or a listen's acknowledgement tagged with its id
                or m.get("params", {}).get("_meta", {}).get(era.SUBSCRIPTION_ID_KEY) == 9)


@pytest.mark.parametrize("method", sorted(METHODS))
def test_each_method_is_answered_in_the_eras_its_entry_says(method: str) -> None:
    entry = METHODS[method]
    legacy, modern_reply = legacy_answer(method), modern_answer(method)
    assert ("result" in legacy) is entry.legacy, legacy
    assert not entry.legacy or "error" not in legacy
    if method in era.MODERN_METHODS:
        assert "result" in modern_reply or modern_reply.get("method") == "notifications/subscriptions/acknowledged", (
            modern_reply)
    elif method in era.TASK_METHODS:  # the tasks extension's, to a client that did not declare it
        assert modern_reply["error"]["code"] == -32021, modern_reply
    else:
        assert modern_reply["error"]["code"] == -32601, modern_reply
    if not entry.legacy:
        assert legacy["error"] == {"code": -32601, "message": "Method not found"}


def test_the_table_holds_every_modern_method_and_the_session_every_step() -> None:
    assert era.MODERN_METHODS <= set(METHODS)
    assert {entry.step for entry in METHODS.values() if entry.step is not None} == set(Session.STEPS)


@pytest.mark.parametrize("method", ["sampling/createMessage", "roots/list", "tasks/list", "tools/frobnicate", "notify"])
def test_a_method_not_in_the_table_is_not_found_in_either_era(method: str) -> None:
    assert method not in METHODS
    assert legacy_answer(method)["error"]["code"] == -32601
    reply = modern_answer(method)
    assert reply["error"]["code"] in (-32601, -32021), reply  # tasks/*: the tasks extension is asked for first

"""RequestStates: the signed `requestState` of MCP 2026-07-28 multi round-trip requests.

The client carries the state between rounds and may be hostile, so every way a state could be
forged, altered, replayed elsewhere or kept too long must be refused with -32602, never half-trusted.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from shipcode_mcp import jsonrpc
from shipcode_mcp.request_state import MAX_STATE_CHARS, STATE_TTL, RequestStates, key_from_file

KEY = b"k" * 32
PARAMS = {"name": "deploy", "arguments": {"target": "prod"}}
ANSWERS = {"elicitation-1": {"action": "accept", "content": {"ok": True}}}


class Clock:
    """A clock the test moves by hand."""

    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def refused(states: RequestStates, state: Any, method: str = "tools/call", params: dict[str, Any] | None = None,
            principal: str | None = None) -> str:
    with pytest.raises(jsonrpc.JsonRpcError) as caught:
        states.open(state, method, PARAMS if params is None else params, principal)
    assert caught.value.code == jsonrpc.INVALID_PARAMS
    assert caught.value.message.startswith("Invalid requestState: ")
    return caught.value.message


def test_a_sealed_state_opens_to_its_answers() -> None:
    states = RequestStates(KEY)
    state = states.seal("tools/call", PARAMS, ANSWERS)
    assert isinstance(state, str) and state.count(".") == 1
    assert states.open(state, "tools/call", PARAMS) == ANSWERS
    assert RequestStates(KEY).open(state, "tools/call", PARAMS) == ANSWERS  # another process with the same key


def test_the_binding_ignores_what_changes_between_rounds_and_the_order_of_keys() -> None:
    states = RequestStates(KEY)
    state = states.seal("tools/call", {**PARAMS, "_meta": {"progressToken": 1}}, ANSWERS)
    retry = {"arguments": {"target": "prod"}, "name": "deploy", "requestState": state,
             "inputResponses": {"elicitation-2": {"action": "decline"}},
             "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "progressToken": 2}}
    assert states.open(state, "tools/call", retry) == ANSWERS


@pytest.mark.parametrize(("method", "params"), [
    ("tools/call", {"name": "deploy", "arguments": {"target": "staging"}}),  # other arguments
    ("tools/call", {"name": "other", "arguments": {"target": "prod"}}),  # another tool
    ("tools/call", {"name": "deploy"}),  # arguments dropped
    ("tools/call", {**PARAMS, "extra": 1}),  # a field added
    ("prompts/get", PARAMS),  # another method, same params
])
def test_a_state_replayed_on_another_request_is_refused(method: str, params: dict[str, Any]) -> None:
    states = RequestStates(KEY)
    state = states.seal("tools/call", PARAMS, ANSWERS)
    assert "belongs to another request" in refused(states, state, method, params)


def test_a_state_is_bound_to_its_caller() -> None:
    states = RequestStates(KEY)
    state = states.seal("tools/call", PARAMS, ANSWERS, principal="alice")
    assert states.open(state, "tools/call", PARAMS, "alice") == ANSWERS
    assert "another caller" in refused(states, state, principal="mallory")
    assert "another caller" in refused(states, state, principal=None)
    anonymous = states.seal("tools/call", PARAMS, ANSWERS)
    assert "another caller" in refused(states, anonymous, principal="alice")


def test_a_state_expires_after_its_ttl() -> None:
    clock = Clock()
    states = RequestStates(KEY, clock=clock)
    state = states.seal("tools/call", PARAMS, ANSWERS)
    clock.now += STATE_TTL - 1
    assert states.open(state, "tools/call", PARAMS) == ANSWERS
    clock.now += 2
    assert "expired" in refused(states, state)
    short = RequestStates(KEY, ttl=5, clock=clock)
    state = short.seal("tools/call", PARAMS, ANSWERS)
    clock.now += 6
    assert "expired" in refused(short, state)


def test_a_state_from_another_key_is_refused() -> None:
    state = RequestStates(b"a" * 32).seal("tools/call", PARAMS, ANSWERS)
    assert "signature" in refused(RequestStates(b"b" * 32), state)
    assert "signature" in refused(RequestStates(), RequestStates().seal("tools/call", PARAMS, ANSWERS))  # random keys


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def test_an_altered_state_is_refused() -> None:
    states = RequestStates(KEY)
    state = states.seal("tools/call", PARAMS, ANSWERS)
    body, mac = state.split(".")
    payload = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    payload["a"] = {"elicitation-1": {"action": "accept", "content": {"ok": False}}}  # the answer changed
    forged = _b64(json.dumps(payload, separators=(",", ":"), sort_keys=True).encode()) + "." + mac
    assert "signature" in refused(states, forged)
    payload["x"] += 10_000  # or the expiry pushed back
    assert "signature" in refused(states, _b64(json.dumps(payload).encode()) + "." + mac)
    flipped = body[:-1] + ("A" if body[-1] != "A" else "B") + "." + mac
    assert "signature" in refused(states, flipped)
    assert "signature" in refused(states, body + "." + mac[::-1])


@pytest.mark.parametrize("state", [
    None, 5, ["a.b"], {"s": "a.b"}, "", "nodot", "a.b.c", "..", "!!!.###", "é.é", ".", "a.",
    "x" * (MAX_STATE_CHARS + 1),
])
def test_garbage_is_refused(state: Any) -> None:
    message = refused(RequestStates(KEY), state)
    assert "not a state this server issued" in message or "signature does not match" in message


def test_an_oversized_state_is_refused_before_it_is_decoded() -> None:
    states = RequestStates(KEY)
    huge = _b64(b"x" * MAX_STATE_CHARS) + "." + _b64(b"y" * 32)
    assert len(huge) > MAX_STATE_CHARS
    assert "not a state this server issued" in refused(states, huge)


NOT_A_STATE = [
    b'{"v":2,"m":"tools/call"}',
    b'{"v":1,"m":"tools/call","d":"x"}',
    b"[]",
    b"null",
    b"not json",
]


@pytest.mark.parametrize("body", NOT_A_STATE)
def test_a_signed_body_that_is_not_a_state_is_refused_not_a_crash(body: bytes) -> None:
    """Only a key holder can sign, but a body of another format (an older version, say) must still be
    refused as -32602, not fail as a bug (-32603)."""
    import hashlib
    import hmac

    mac = hmac.new(KEY, body, hashlib.sha256).digest()
    assert "another request" in refused(RequestStates(KEY), _b64(body) + "." + _b64(mac))


def test_short_keys_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="16 bytes"):
        RequestStates(b"short")
    good = tmp_path / "key"
    good.write_bytes(b"  0123456789abcdef0123  \n")
    assert key_from_file(str(good)) == b"0123456789abcdef0123"
    short = tmp_path / "short"
    short.write_bytes(b"0123456789\n" + b" " * 40)  # whitespace does not count
    with pytest.raises(ValueError, match="16 bytes"):
        key_from_file(str(short))
    states = RequestStates(key_from_file(str(good)))
    assert RequestStates(b"0123456789abcdef0123").open(states.seal("m", {}, {}), "m", {}) == {}

"""The `requestState` of a multi round-trip request (MCP 2026-07-28): what a handler was told so far,
carried by the client between rounds, so that any process can resume the request.

The client may be hostile, so the state is signed (HMAC-SHA256) and bound to what it belongs to: the
method, a digest of the request's parameters (its arguments, not its `_meta`), the caller when one is
known, and an expiry. A state that fails any check is refused (-32602), never half-trusted. A state is
used by one request at a time, and once the request it resumed was answered it is spent: its last round
cannot be sent again to run the handler again (within one process; a round that asked again, or was
cancelled, may be retried). Processes
that share the key (`--state-key-file`, or the parent's key handed to `--workers`) accept each other's
states; without a key each process draws its own, so its states mean nothing elsewhere.

Loaded only when a request asks the client something on the modern path.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import os
import threading
import time

from . import jsonrpc

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

STATE_TTL = 900.0
"""How long a state stays good: long enough for a person to answer an elicitation, short enough to
bound a replay."""

MAX_STATE_CHARS = 4 * 1024 * 1024
"""A longer requestState is refused before anything is computed over it."""

MAX_HELD = 65536
"""States in use or spent that are remembered (until they expire); beyond, a new one is refused for now."""

KEY_ENV = "SHIPCODE_MCP_STATE_KEY"
"""Where a `--workers` parent hands its key (hex) to the worker processes it starts."""

_VERSION = 1
_NOT_BOUND = ("_meta", "inputResponses", "requestState")  # what changes between the rounds of one request


class RequestStates:
    """Seals and opens request states with one key; `clock` is the one clock of the core, injected."""

    def __init__(self, key: bytes | None = None, *, ttl: float = STATE_TTL, clock: Callable[[], float] = time.time) -> None:
        self.key = key if key is not None else os.urandom(32)
        if len(self.key) < 16:
            raise ValueError("a request-state key needs at least 16 bytes")
        self.ttl = ttl
        self.clock = clock
        self._lock = threading.Lock()
        self._held: dict[str, tuple[int, bool]] = {}  # a state's signature -> (its expiry, spent)

    def seal(self, method: str, params: dict[str, Any], answers: dict[str, Any], principal: str | None = None) -> str:
        """The state to hand the client: `answers` (input key -> the client's result) signed and bound."""
        payload = {"v": _VERSION, "m": method, "d": _digest(params), "p": principal,
                   "x": int(self.clock() + self.ttl), "a": answers}
        body = json.dumps(payload, separators=(",", ":"), ensure_ascii=True, sort_keys=True).encode("ascii")
        return f"{_b64(body)}.{_b64(self._mac(body))}"

    def open(self, state: Any, method: str, params: dict[str, Any], principal: str | None = None) -> dict[str, Any]:
        """The answers a state carries, if it is ours, unexpired and for this very request; else -32602."""
        if not isinstance(state, str) or len(state) > MAX_STATE_CHARS or state.count(".") != 1:
            raise _refused("it is not a state this server issued")
        body_text, _, mac_text = state.partition(".")
        try:
            body, mac = _unb64(body_text), _unb64(mac_text)
        except (ValueError, binascii.Error):
            raise _refused("it is not a state this server issued") from None
        if not hmac.compare_digest(mac, self._mac(body)):
            raise _refused("its signature does not match (altered, or issued with another key)")
        try:
            payload = json.loads(body)
        except ValueError:
            payload = None
        if not isinstance(payload, dict) or payload.get("v") != _VERSION:
            raise _refused("it belongs to another request")
        if payload.get("m") != method or payload.get("d") != _digest(params):
            raise _refused("it belongs to another request")
        if payload.get("p") != principal:
            raise _refused("it was issued to another caller")
        if not isinstance(payload.get("x"), int) or self.clock() > payload["x"]:
            raise _refused("it has expired; send the request again without it")
        self._hold(mac_text, payload["x"])
        answers = payload.get("a")
        return answers if isinstance(answers, dict) else {}

    def _hold(self, mac: str, expiry: int) -> None:
        """The state `mac` is in use now (-32602 if it is already, or spent)."""
        with self._lock:
            held = self._held.get(mac)
            if held is not None:
                raise _refused("its request was answered already; start it again without it" if held[1]
                               else "it is in use by a request in progress")
            if len(self._held) >= MAX_HELD:
                now = self.clock()
                self._held = {key: value for key, value in self._held.items() if value[0] >= now}
                if len(self._held) >= MAX_HELD:
                    raise _refused("too many requests are in rounds now; try again later")
            self._held[mac] = (expiry, False)

    def settle(self, state: str, *, answered: bool) -> None:
        """The request that `state` (which `open` accepted) resumed is over: answered, the state is spent until
        it expires; else (it asked again, or was cancelled) it may be sent again."""
        mac = state.partition(".")[2]
        with self._lock:
            held = self._held.get(mac)
            if held is not None and not held[1]:
                if answered:
                    self._held[mac] = (held[0], True)
                else:
                    del self._held[mac]

    def _mac(self, body: bytes) -> bytes:
        return hmac.new(self.key, body, hashlib.sha256).digest()


def key_from_file(path: str) -> bytes:
    """A key from `--state-key-file`: the file's bytes, surrounding whitespace stripped (at least 16 bytes)."""
    with open(path, "rb") as file:
        key = file.read().strip()
    if len(key) < 16:
        raise ValueError(f"{path}: a request-state key needs at least 16 bytes")
    return key


def _digest(params: dict[str, Any]) -> str:
    bound = {key: value for key, value in params.items() if key not in _NOT_BOUND}
    text = json.dumps(bound, separators=(",", ":"), ensure_ascii=True, sort_keys=True)
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def _refused(why: str) -> jsonrpc.JsonRpcError:
    return jsonrpc.JsonRpcError(jsonrpc.INVALID_PARAMS, f"Invalid requestState: {why}")


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))

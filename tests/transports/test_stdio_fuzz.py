"""Property-based fuzzing of the real server over its pipes.

Whatever arrives, the process stays up, every request gets exactly one response carrying its id,
notifications and responses get none, and every output line is valid JSON that fits the schema.
Starting a process per example would make the test ten times slower, so one process serves the examples
while each leaves nothing behind: it ends with a ping answered after its lines, and its assertions depend
on its own lines only. An example that may leave work in flight (a request it cancelled and that did not
answer) or that fails hands the next one a fresh process.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from support import HANDSHAKE, INITIALIZED, McpProcess

METHODS = ["initialize", "ping", "tools/list", "tools/call", "resources/list", "resources/read",
           "resources/templates/list", "prompts/list", "logging/setLevel", "completion/complete",
           "notifications/initialized", "notifications/cancelled", "server/discover", "x", ""]
SENTINEL = "the sentinel: longer than any id the strategies draw"

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2**63, 2**63) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


@st.composite
def messages(draw: st.DrawFn) -> Any:
    """Mostly request-shaped objects with random parts wrong, sometimes arbitrary JSON."""
    if draw(st.integers(0, 9)) == 0:
        return draw(json_values)
    message: dict[str, Any] = {}
    if draw(st.integers(0, 9)):
        message["jsonrpc"] = "2.0" if draw(st.integers(0, 9)) else draw(json_values)
    kind = draw(st.sampled_from(["request", "request", "request", "notification", "response"]))
    if kind == "request":
        choice = draw(st.integers(0, 5))
        if choice == 0:
            message["id"] = draw(json_values)
        else:
            number = draw(st.integers(0, 2**53))
            message["id"] = number if choice % 2 else f"id-{number}"
    if kind == "response":
        message["id"] = draw(st.integers(0, 2**53))
        message["result" if draw(st.booleans()) else "error"] = draw(json_values)
    else:
        message["method"] = draw(st.sampled_from(METHODS) | json_values)
        if draw(st.booleans()):
            message["params"] = draw(json_values | st.fixed_dictionaries(
                {}, optional={"name": st.sampled_from(["list_files", "read_file", "search_code", "git_log", "nope"]) | json_values,
                              "arguments": json_values, "uri": st.text(max_size=30) | json_values,
                              "cursor": json_values, "protocolVersion": json_values, "requestId": json_values,
                              "_meta": json_values}))
    return message


def mutate(line: bytes, data: st.DataObject) -> bytes:
    """Flip, drop or insert bytes of a valid line (never a newline, which would split it)."""
    raw = bytearray(line)
    for _ in range(data.draw(st.integers(0, 3))):
        if not raw:
            break
        position = data.draw(st.integers(0, len(raw) - 1))
        action = data.draw(st.integers(0, 2))
        if action == 0:
            del raw[position]
        else:
            byte = data.draw(st.integers(0, 255).filter(lambda b: b != 10))
            if action == 1:
                raw[position] = byte
            else:
                raw.insert(position, byte)
    return bytes(raw)


def _loads(line: bytes) -> Any:
    text = line.rstrip(b"\r")
    if not text.strip():
        return _BLANK
    try:
        return json.loads(text.decode("utf-8"), parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))
    except (ValueError, RecursionError):
        return _NOT_JSON


_BLANK = object()
_NOT_JSON = object()


def expectation(line: bytes) -> tuple[int, Any]:
    """How many responses a line must get (0 or 1) and, for requests with a valid id, that id."""
    value = _loads(line)
    if value is _BLANK:
        return 0, None
    if value is _NOT_JSON:
        return 1, None
    if isinstance(value, dict) and "method" in value and "id" not in value:
        return 0, None  # a notification, however malformed
    if isinstance(value, dict) and "method" not in value and ("result" in value or "error" in value):
        return 0, None  # a response: never answered
    msg_id = value.get("id") if isinstance(value, dict) else None
    valid = isinstance(msg_id, str) or (isinstance(msg_id, int) and not isinstance(msg_id, bool))
    return 1, msg_id if valid else None


def cancelled_ids(line: bytes) -> set[Any]:
    """The request a well-formed notifications/cancelled line names: its response may never come."""
    value = _loads(line)
    if isinstance(value, dict) and value.get("method") == "notifications/cancelled" and "id" not in value:
        params = value.get("params")
        if isinstance(params, dict) and isinstance(params.get("requestId"), (str, int)):
            return {params["requestId"]}
    return set()


class Servers:
    """The process the examples share, replaced after an example that may have left work in flight."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.process: McpProcess | None = None

    def get(self) -> McpProcess:
        if self.process is None:
            self.process = McpProcess(str(self.root))
            self.process.send(HANDSHAKE)
            self.process.read()
            self.process.send(INITIALIZED)
        return self.process

    def retire(self) -> None:
        """End the process through EOF, as a client does: it must exit cleanly."""
        process, self.process = self.process, None
        if process is not None:
            assert process.close() == 0

    def discard(self) -> None:
        """Kill the process after a failure, so what the failing example left cannot reach the next one."""
        process, self.process = self.process, None
        if process is not None:
            process.proc.kill()
            process.close()


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Servers]:
    root = tmp_path_factory.mktemp("fuzzroot")
    (root / "a.txt").write_text("hello\n")
    servers = Servers(root)
    yield servers
    servers.retire()


@settings(max_examples=300)
@given(data=st.data())
def test_fuzzed_lines(servers: Servers, data: st.DataObject) -> None:
    lines: list[bytes] = []
    for _ in range(data.draw(st.integers(1, 4))):
        source = data.draw(st.sampled_from(["message", "mutated", "bytes"]))
        if source == "bytes":
            line = data.draw(st.binary(max_size=60)).replace(b"\n", b" ")
        else:
            line = json.dumps(data.draw(messages()), separators=(",", ":")).encode()
            if source == "mutated":
                line = mutate(line, data)
        lines.append(line)
    expected_nulls = 0
    expected_ids: list[Any] = []
    cancelled: set[Any] = set()
    for line in lines:
        count, msg_id = expectation(line)
        if count and msg_id is None:
            expected_nulls += 1
        elif count:
            expected_ids.append(msg_id)
        cancelled |= cancelled_ids(line)
    # Ids are counted by repr, so that 1, 1.0 and "1" stay apart; a cancelled request may answer or not.
    required = Counter(repr(msg_id) for msg_id in expected_ids if msg_id not in cancelled)
    optional = Counter(repr(msg_id) for msg_id in expected_ids if msg_id in cancelled)
    server = servers.get()
    try:
        server.write(b"".join(line + b"\n" for line in lines) + json.dumps(
            {"jsonrpc": "2.0", "id": SENTINEL, "method": "ping"}).encode() + b"\n")
        got: Counter[str] = Counter()
        sentinel_seen = False
        # Deferred work may finish after the sentinel: read until the sentinel and every required reply came.
        while not sentinel_seen or any(got[msg_id] < count for msg_id, count in required.items()):
            reply = server.read(timeout=20)  # parses and validates the line
            if "method" in reply:
                continue  # a notification from the server (progress, list_changed): not a reply
            if reply["id"] == SENTINEL:
                sentinel_seen = True
            else:
                got[repr(reply["id"])] += 1
        nulls = got.pop("None", 0)
        assert nulls == expected_nulls, (lines, nulls)
        for msg_id, count in got.items():
            assert required[msg_id] <= count <= required[msg_id] + optional[msg_id], (lines, got)
        assert server.proc.poll() is None
    except BaseException:
        servers.discard()
        raise
    if any(got[msg_id] < required[msg_id] + count for msg_id, count in optional.items()):
        servers.retire()  # a cancelled request that did not answer may still: the next example gets a fresh process

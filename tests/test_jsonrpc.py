"""The framing layer: what is JSON, what is a valid id, and the exact bytes we write."""

from __future__ import annotations

import json

import pytest

from shipcode_mcp import jsonrpc
from shipcode_mcp.jsonrpc import JsonRpcError


@pytest.mark.parametrize("line", [b"", b"{", b"nul", b'{"a":NaN}', b"[Infinity]", b"-Infinity", b"\xff\xfe", b"{'a':1}"])
def test_not_json_is_a_parse_error(line: bytes) -> None:
    with pytest.raises(JsonRpcError) as caught:
        jsonrpc.parse(line)
    assert caught.value.code == jsonrpc.PARSE_ERROR
    assert caught.value.message == "Parse error"


def test_pathological_nesting_is_a_parse_error_not_a_crash() -> None:
    with pytest.raises(JsonRpcError) as caught:
        jsonrpc.parse(b"[" * 100_000)
    assert caught.value.code == jsonrpc.PARSE_ERROR
    with pytest.raises(JsonRpcError):
        jsonrpc.parse(b'{"a":' * 100_000)


def test_parse_keeps_unicode() -> None:
    assert jsonrpc.parse('{"t":"h\u00e9llo \u2603"}'.encode()) == {"t": "h\u00e9llo \u2603"}


@pytest.mark.parametrize(("value", "valid"), [
    (1, True), (0, True), (-5, True), (2**70, True), ("a", True), ("", True),
    (None, False), (True, False), (False, False), (1.0, False), ({}, False), ([], False),
])
def test_valid_ids(value: object, valid: bool) -> None:
    assert jsonrpc.is_valid_id(value) is valid


def test_encode_is_compact_ordered_utf8_and_one_line() -> None:
    message = jsonrpc.result(7, {"b": 1, "a": ["x\ny", "\u00e9"]})
    assert jsonrpc.encode(message) == '{"jsonrpc":"2.0","id":7,"result":{"b":1,"a":["x\\ny","\u00e9"]}}\n'.encode()


def test_encode_escapes_lone_surrogates_so_output_stays_valid_utf8() -> None:
    data = jsonrpc.encode(jsonrpc.result(1, {"t": "\ud800"}))
    assert data == b'{"jsonrpc":"2.0","id":1,"result":{"t":"\\ud800"}}\n'
    data.decode("utf-8")
    assert json.loads(data)["result"]["t"] == "\ud800"


def test_encode_refuses_nan() -> None:
    with pytest.raises(ValueError):
        jsonrpc.encode(jsonrpc.result(1, {"x": float("nan")}))


def test_error_shapes() -> None:
    assert jsonrpc.error(None, JsonRpcError(jsonrpc.PARSE_ERROR)) == {
        "jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}}
    err = JsonRpcError(jsonrpc.RESOURCE_NOT_FOUND, data={"uri": "x"})
    assert list(jsonrpc.error("a", err)["error"]) == ["code", "message", "data"]
    assert jsonrpc.error("a", err)["error"]["message"] == "Resource not found"


def test_request_and_notification_shapes() -> None:
    assert jsonrpc.encode(jsonrpc.request(3, "roots/list")) == b'{"jsonrpc":"2.0","id":3,"method":"roots/list"}\n'
    assert jsonrpc.encode(jsonrpc.notification("notifications/progress", {"progressToken": 1, "progress": 2})) == (
        b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":2}}\n')

"""The framing layer: what is JSON, what is a valid id, and the exact bytes we write."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20)


@settings(max_examples=500)
@given(JSON)
def test_the_reused_c_encoder_writes_exactly_what_json_does(value: object) -> None:
    """jsonrpc._reusable calls json.encoder.c_make_encoder, which is undocumented: on every Python CI
    runs, it must agree with JSONEncoder.encode to the byte."""
    assert jsonrpc._compact(value) == jsonrpc._COMPACT.encode(value)
    assert jsonrpc._compact_ascii(value) == jsonrpc._COMPACT_ASCII.encode(value)


@pytest.mark.parametrize("value", [float("nan"), float("inf"), {1, 2}, {"a": object()}, b"x", {(1, 2): 3}])
def test_the_reused_c_encoder_fails_where_json_fails(value: object) -> None:
    with pytest.raises((TypeError, ValueError)) as ours:
        jsonrpc._compact(value)
    with pytest.raises((TypeError, ValueError)) as theirs:
        jsonrpc._COMPACT.encode(value)
    assert type(ours.value) is type(theirs.value)


def test_the_reused_c_encoder_is_in_use_where_python_has_one() -> None:
    """So that the two tests above compare two different paths, not one with itself."""
    assert (jsonrpc._compact is not jsonrpc._COMPACT.encode) == (getattr(json.encoder, "c_make_encoder", None) is not None)


def _utf8_way(message: dict[str, object]) -> bytes:
    """What encode wrote before its ASCII-first path: the UTF-8 encoder, the ASCII one for lone surrogates."""
    try:
        return (json.dumps(message, separators=(",", ":"), ensure_ascii=False, allow_nan=False) + "\n").encode("utf-8")
    except UnicodeEncodeError:
        return (json.dumps(message, separators=(",", ":"), ensure_ascii=True, allow_nan=False) + "\n").encode("ascii")


@pytest.mark.parametrize("odd", ["", "\x00", "\x1f", "\x7f", "\u00e9", "\u2603", "\U0001f600", "\ud800", "\\u00e9", '"\\\n\t'])
@pytest.mark.parametrize("where", ["text", "structured", "key"])
def test_a_long_tool_result_is_written_to_the_byte_as_the_utf8_encoder_writes_it(odd: str, where: str) -> None:
    """The ASCII path (a long result of ASCII strings) must write what the UTF-8 way writes, whatever
    character the rest of the result holds: control characters, DEL, non-ASCII, astral, lone surrogates,
    a literal backslash-u."""
    long_text = "def f(x):\n    return x  # plain code\n" * 600
    assert len(long_text) >= jsonrpc.ASCII_FIRST_LENGTH and long_text.isascii()
    text = long_text + odd if where == "text" else long_text
    structured: dict[str, Any] = {"text": long_text, "path": "a" + (odd if where == "structured" else "") + ".py"}
    if where == "key":
        structured[odd or "k"] = 1
    message = jsonrpc.result(1, {"content": [{"type": "text", "text": text}], "structuredContent": structured,
                                 "isError": False})
    assert jsonrpc.encode(message) == _utf8_way(message)
    assert jsonrpc._plain_ascii(message, message["result"]) == (odd.isascii() and "\x7f" not in odd)  # the ASCII path, where it may go


def test_every_character_beside_a_long_ascii_text() -> None:
    long_text = "x" * jsonrpc.ASCII_FIRST_LENGTH
    for start in range(0, 0x110000, 0x800):
        chars = "".join(chr(code) for code in range(start, start + 0x800))
        message = jsonrpc.result(2, {"content": [{"type": "text", "text": long_text}], "structuredContent": {"t": chars}})
        assert jsonrpc.encode(message) == _utf8_way(message), hex(start)
        if start == 0:  # ASCII, but with DEL and control characters: not the ASCII path
            assert not jsonrpc._plain_ascii(message, message["result"])
    plain = jsonrpc.result(3, {"content": [{"type": "text", "text": long_text + "\n\t\"\\ \x01"}], "n": [1, True, None]})
    assert jsonrpc._plain_ascii(plain, plain["result"]) and jsonrpc.encode(plain) == _utf8_way(plain)
    wide = jsonrpc.result(4, {"content": [{"type": "text", "text": long_text}] * (jsonrpc.ASCII_WALK + 1)})
    assert not jsonrpc._plain_ascii(wide, wide["result"]) and jsonrpc.encode(wide) == _utf8_way(wide)


@pytest.mark.parametrize("result", [5, "content", ["content"], None, {}, {"content": "x" * 20000}, {"content": [5]}])
def test_any_result_is_written_as_before(result: object) -> None:
    message = {"jsonrpc": "2.0", "id": 1, "result": result}
    assert jsonrpc.encode(message) == _utf8_way(message)  # type: ignore[arg-type]


@pytest.mark.parametrize("document", [b'{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":[1,2.5e3,"x\\u00e9",true,null,{}]}}',
                                      b"[]", b'"text"', b"  7 ", '{"ключ": ["значение"]}'.encode()])
def test_parse_counted_reads_what_parse_reads(document: bytes) -> None:
    assert jsonrpc.parse_counted(document, 0) == jsonrpc.parse(document)


@pytest.mark.parametrize("document", [b"NaN", b"[1,", b"\xff", b"[" * 100_000 + b"]" * 100_000, b'{"a":1}x', b""])
def test_parse_counted_refuses_what_parse_refuses(document: bytes) -> None:
    for parse in (jsonrpc.parse, lambda data: jsonrpc.parse_counted(data, 0)):
        with pytest.raises(jsonrpc.JsonRpcError):
            parse(document)


def test_parse_counted_counts_every_value_inside_a_container() -> None:
    assert jsonrpc.parse_counted(b'{"a":[1,2,{"b":3}]}', 5) == {"a": [1, 2, {"b": 3}]}  # [...], 1, 2, {...}, 3
    with pytest.raises(jsonrpc.TooManyValues, match="more than 4 JSON values"):
        jsonrpc.parse_counted(b'{"a":[1,2,{"b":3}]}', 4)
    with pytest.raises(jsonrpc.TooManyValues):  # empty containers count too
        jsonrpc.parse_counted(b"[" + b",".join([b"[]"] * 10_000) + b"]", 9_999)
    assert len(jsonrpc.parse_counted(b"[" + b",".join([b"{}"] * 10_000) + b"]", 10_000)) == 10_000

"""JSON-RPC 2.0 framing for MCP: parse one line, classify it, encode replies byte-exact.

Standard library only: this module is on the start-up path of every server.
"""

from __future__ import annotations

import json
import json.decoder  # loaded by json itself: parse_counted's Python scanner
import json.scanner

TYPE_CHECKING = False  # typing stays out of the start-up path (see tests/test_startup.py)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypeGuard

    Id = str | int
    Message = dict[str, Any]

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
RESOURCE_NOT_FOUND = -32002  # 2025-06-18 only: the modern era answers a missing resource with -32602
# Our own code, in the JSON-RPC range reserved for implementation-defined server errors.
REQUEST_TIMEOUT = -32001
# The codes MCP 2026-07-28 defines (its reserved range, -32020 to -32099).
HEADER_MISMATCH = -32020
MISSING_REQUIRED_CLIENT_CAPABILITY = -32021
UNSUPPORTED_PROTOCOL_VERSION = -32022

MESSAGES = {
    PARSE_ERROR: "Parse error",
    INVALID_REQUEST: "Invalid Request",
    METHOD_NOT_FOUND: "Method not found",
    INVALID_PARAMS: "Invalid params",
    INTERNAL_ERROR: "Internal error",
    RESOURCE_NOT_FOUND: "Resource not found",
    REQUEST_TIMEOUT: "Request timed out",
    HEADER_MISMATCH: "Header mismatch",
    MISSING_REQUIRED_CLIENT_CAPABILITY: "Missing required client capability",
    UNSUPPORTED_PROTOCOL_VERSION: "Unsupported protocol version",
}


class JsonRpcError(Exception):
    """An error that becomes a JSON-RPC error response; raise it from any handler."""

    def __init__(self, code: int, message: str | None = None, data: Any = None) -> None:
        self.code = code
        self.message = message if message is not None else MESSAGES.get(code, "Server error")
        self.data = data
        super().__init__(self.message)

    def to_dict(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


_decoder = json.JSONDecoder(parse_constant=_reject_constant)

def _reusable(encoder: json.JSONEncoder) -> Callable[[Any], str]:
    """`encoder.encode`, minus the C encoder object that `JSONEncoder.encode` builds anew at every call.

    This is the one undocumented call of the package (`json.encoder.c_make_encoder`), kept because the
    benchmark shows it pays: pipelined tools/call 0.63x the floor without it (target 0.7x), see
    docs/performance.md. Without circular checks the scanner keeps no state between calls, so one serves
    all; tests/test_jsonrpc.py checks, on every Python CI runs, that it writes exactly what
    `encoder.encode` writes and fails where it fails. Where there is no C accelerator, `encoder.encode`.
    """
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:
        return encoder.encode
    strings = json.encoder.encode_basestring_ascii if encoder.ensure_ascii else json.encoder.encode_basestring
    scan = make(None, encoder.default, strings, None, encoder.key_separator, encoder.item_separator,
                encoder.sort_keys, encoder.skipkeys, encoder.allow_nan)
    return lambda value: "".join(scan(value, 0))


_COMPACT = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False, check_circular=False)
_COMPACT_ASCII = json.JSONEncoder(separators=(",", ":"), ensure_ascii=True, allow_nan=False, check_circular=False)
_compact = _reusable(_COMPACT)
_compact_ascii = _reusable(_COMPACT_ASCII)


def parse(line: bytes) -> Any:
    """Decode one line of UTF-8 JSON; raise JsonRpcError(PARSE_ERROR) for anything that is not JSON.

    NaN/Infinity are not JSON; pathological nesting raises RecursionError inside the C decoder,
    which is a parse error too rather than a crash.
    """
    try:
        return _decoder.decode(line.decode("utf-8"))
    except (ValueError, RecursionError):  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        raise JsonRpcError(PARSE_ERROR) from None


class TooManyValues(ValueError):
    """A document with more values than `parse_counted` was told to build."""


def parse_counted(data: bytes, max_values: int) -> Any:
    """`parse`, by json's Python scanner, refusing (TooManyValues) once more than `max_values` values are built
    (0: no limit; a container's values count when it closes). Slower than `parse` (whose C scanner holds the
    GIL until it is done): its Python steps let other threads, the event loop among them, run every
    switch interval, so a large body can be parsed on a worker thread without stalling the loop. Every
    value inside a container counts as it is read, so a refusal comes before the rest is built."""
    pieces: Any = json.decoder  # JSONObject and JSONArray, the Python scanner's steps (not in typeshed)
    scanner: Any = json.scanner
    built = [0]

    def counting(scan_once: Callable[[str, int], Any]) -> Callable[[str, int], Any]:
        def scan(string: str, index: int) -> Any:  # every value inside a container comes through here
            built[0] += 1
            if max_values and built[0] > max_values:
                raise TooManyValues(f"more than {max_values} JSON values")
            return scan_once(string, index)
        return scan

    def parse_object(s_and_end: Any, strict: bool, scan_once: Any, *rest: Any) -> tuple[Any, int]:
        return pieces.JSONObject(s_and_end, strict, counting(scan_once), *rest)  # type: ignore[no-any-return]

    def parse_array(s_and_end: Any, scan_once: Any, *rest: Any) -> tuple[Any, int]:
        return pieces.JSONArray(s_and_end, counting(scan_once), *rest)  # type: ignore[no-any-return]

    decoder: Any = json.JSONDecoder(parse_constant=_reject_constant)
    decoder.parse_object = parse_object
    decoder.parse_array = parse_array
    decoder.scan_once = scanner.py_make_scanner(decoder)
    try:
        return decoder.decode(data.decode("utf-8"))
    except TooManyValues:
        raise
    except (ValueError, RecursionError):
        raise JsonRpcError(PARSE_ERROR) from None


ASCII_FIRST_LENGTH = 16 * 1024
"""A tool result whose first text is at least this long may be written by the ASCII encoder."""
ASCII_WALK = 64
"""At most this many values of such a result are looked at; a larger one is written the usual way."""


def encode(message: Message) -> bytes:
    """One compact line, UTF-8, ending in a newline; property order is the dict's insertion order.

    CPython's encoder writes long ASCII text 1.5-2x faster with `ensure_ascii=True` than without (0.62
    against 0.99 ms for a 189 KB read_file answer), and for strings of ASCII without DEL (which only
    the ASCII encoder escapes) both write the same bytes. So a large tool result made only of such
    strings (source code mostly is; CPython knows a string is ASCII without reading it) is written
    that way; every other message the usual way.
    """
    result = message.get("result")
    if type(result) is dict and "content" in result and _plain_ascii(message, result):
        return (_compact_ascii(message) + "\n").encode("ascii")
    try:
        return (_compact(message) + "\n").encode("utf-8")
    except UnicodeEncodeError:
        # Lone surrogates (which json.loads accepts from "\ud800") cannot be UTF-8; escape them.
        return (_compact_ascii(message) + "\n").encode("ascii")


def _plain_ascii(message: Message, result: dict[str, Any]) -> bool:
    """A tool result (`result`, the message's) with a long first text (`result.content[0].text`) whose
    every key and string is ASCII without DEL, found within ASCII_WALK values; False for anything else."""
    content = result.get("content")
    if type(content) is not list or not content or type(content[0]) is not dict:
        return False
    text = content[0].get("text")
    if type(text) is not str or len(text) < ASCII_FIRST_LENGTH:
        return False
    pending: list[Any] = [message]
    seen = 0
    while pending:
        value = pending.pop()
        seen += 1
        if seen > ASCII_WALK:
            return False
        kind = type(value)
        if kind is str:
            if not value.isascii() or "\x7f" in value:
                return False
        elif kind is dict:
            for key in value:
                if type(key) is not str or not key.isascii() or "\x7f" in key:
                    return False
            pending.extend(value.values())
        elif kind is list:
            pending.extend(value)
        elif kind is not int and kind is not bool and value is not None:
            return False  # floats and anything else: the usual way, which judges them
    return True


def encode_or_substitute(message: Message) -> bytes | None:
    """`encode`, for a transport: a response holding a value JSON cannot carry (a set, NaN) becomes
    -32603, anything else such is dropped (None). Output never fails because a handler returned junk."""
    try:
        return encode(message)
    except (TypeError, ValueError, RecursionError):
        from . import log  # jsonrpc imports none of ours (the leaf of the core): log only for a dropped message

        log.error(f"unencodable message dropped: {message.get('method') or message.get('id')!r}")
        if "id" in message and ("result" in message or "error" in message):
            return encode(error(message["id"], JsonRpcError(INTERNAL_ERROR)))
        return None


def is_valid_id(value: Any) -> TypeGuard[Id]:
    """MCP ids are strings or integers, never null, floats or booleans."""
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def classify(message: Any) -> str:
    """"request", "notification", "response" or "invalid": the one check of a message's shape.

    A request or notification has jsonrpc "2.0", a string method and object params (when present); a
    request's id is a string or an integer. A response has jsonrpc "2.0", a valid id and an object
    result or error.
    """
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        return "invalid"
    if "method" in message:
        if not isinstance(message["method"], str) or not isinstance(message.get("params", {}), dict):
            return "invalid"
        if "id" not in message:
            return "notification"
        return "request" if is_valid_id(message["id"]) else "invalid"
    if is_valid_id(message.get("id")) and (isinstance(message.get("result"), dict) or isinstance(message.get("error"), dict)):
        return "response"
    return "invalid"


def invalid_request(message: Any) -> Message:
    """The -32600 answer to an invalid message: its id is echoed when it is a valid one."""
    msg_id = message.get("id") if isinstance(message, dict) else None
    return error(msg_id if is_valid_id(msg_id) else None, JsonRpcError(INVALID_REQUEST))


def result(id: Id, value: dict[str, Any]) -> Message:
    return {"jsonrpc": "2.0", "id": id, "result": value}


def error(id: Id | None, err: JsonRpcError) -> Message:
    return {"jsonrpc": "2.0", "id": id, "error": err.to_dict()}


def request(id: Id, method: str, params: dict[str, Any] | None = None) -> Message:
    message: Message = {"jsonrpc": "2.0", "id": id, "method": method}
    if params is not None:
        message["params"] = params
    return message


def notification(method: str, params: dict[str, Any] | None = None) -> Message:
    message: Message = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    return message

"""The rules of a modern (2026-07-28) request's HTTP headers, as pure functions of the headers and the
body: the routing headers must mirror the body (`header_mismatch`, -32020), header values may be
`=?base64?...?=` (`decode_header_value`), and a modern JSON answer's HTTP status follows from its error
code (`modern_status`, the envelope's judgement taken from envelope.py, not made again). Standard library
only: tested without Starlette or sockets."""

from __future__ import annotations

import base64
import binascii
import re

from ... import jsonrpc
from ...envelope import envelope_error
from ...era import VERSION_KEY, modern_meta

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    from ...jsonrpc import Message

VERSION_HEADER = "mcp-protocol-version"
METHOD_HEADER = "mcp-method"
NAME_HEADER = "mcp-name"
NAMED_BY = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri", "tasks/get": "taskId",
            "tasks/update": "taskId", "tasks/cancel": "taskId"}
"""The modern requests that carry `Mcp-Name`, and the parameter it mirrors."""
_HEADER_VALUE = re.compile(rb"[\x20-\x7e\t]*")  # what RFC 9110 and MCP allow in a header value, as bytes
_BASE64 = re.compile(r"=\?base64\?(.*)\?=", re.DOTALL)


def is_modern(message: Message) -> bool:
    """A request or notification whose `_meta` names a protocol version is of the 2026-07-28 era."""
    params = message.get("params")
    return isinstance(params, dict) and modern_meta(params) is not None


def header_mismatch(headers: Sequence[tuple[bytes, bytes]], message: Message,
                    input_schema: dict[str, Any] | None = None) -> str | None:
    """Why the routing headers of a modern request do not mirror its body (the -32020 message), or None.

    `headers` are the raw (lower-case name, value) pairs, so a header sent twice or a byte outside visible
    ASCII, space and tab is seen. `MCP-Protocol-Version` must equal the body's protocol version and
    `Mcp-Method` its method; `Mcp-Name` (decoded when it is `=?base64?...?=`) its name or uri, for the
    requests that carry one (a request without that parameter is left for the core to refuse). For a
    tools/call, `input_schema` is the tool's: each argument it marks `x-mcp-header: NAME` is mirrored in
    `Mcp-Param-NAME` when it has a value, and only then.
    """
    params = message.get("params")
    params = params if isinstance(params, dict) else {}
    meta = params.get("_meta")
    version = meta.get(VERSION_KEY) if isinstance(meta, dict) else None
    expected: list[tuple[str, Any]] = [
        ("MCP-Protocol-Version", version if isinstance(version, str) else None),  # None: the core refuses the body
        ("Mcp-Method", message.get("method"))]
    key = NAMED_BY.get(message.get("method", ""))
    if key is not None and isinstance(params.get(key), str):
        expected.append(("Mcp-Name", params[key]))
    for name, body_value in expected:
        value, problem = _one_header(headers, name, sentinel=name == "Mcp-Name")
        if problem is not None:
            return problem
        if value is None:
            return f"Header mismatch: the {name} header is required"
        if body_value is not None and value != body_value:
            return f"Header mismatch: {name} header value {shown(value)} does not match body value {shown(body_value)}"
    if input_schema is not None and message.get("method") == "tools/call":
        arguments = params.get("arguments")
        return _params_mismatch(headers, input_schema, arguments if isinstance(arguments, dict) else {})
    return None


def _params_mismatch(headers: Sequence[tuple[bytes, bytes]], schema: dict[str, Any],
                     arguments: dict[str, Any]) -> str | None:
    """The `Mcp-Param-*` half of `header_mismatch`: a header is expected exactly for a marked argument
    with a value, and must carry that value (integers and numbers compared as numbers, booleans as
    true/false); a header no argument is marked for is not ours to judge."""
    for name, path in _mirrored(schema):
        header = f"Mcp-Param-{name}"
        body_value: Any = arguments
        for key in path:
            body_value = body_value.get(key) if isinstance(body_value, dict) else None
        sent = any(field.lower() == header.lower().encode() for field, _ in headers)
        if body_value is None:
            if sent:
                return f"Header mismatch: the {header} header is sent but the argument has no value"
            continue
        value, problem = _one_header(headers, header, sentinel=True)
        if problem is not None:
            return problem
        if value is None:
            return f"Header mismatch: the {header} header is required"
        if not _same_value(value, body_value):
            return f"Header mismatch: {header} header value {shown(value)} does not match body value {shown(body_value)}"
    return None


_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
"""A JSON number, as a header may carry one."""


def _mirrored(schema: dict[str, Any], path: tuple[str, ...] = ()) -> list[tuple[str, tuple[str, ...]]]:
    """(header name, property path) of each property an input schema marks with `x-mcp-header`."""
    found: list[tuple[str, tuple[str, ...]]] = []
    properties = schema.get("properties")
    if isinstance(properties, dict):
        for key, sub in properties.items():
            if isinstance(sub, dict):
                name = sub.get("x-mcp-header")
                if isinstance(name, str):
                    found.append((name, (*path, key)))
                found += _mirrored(sub, (*path, key))
    return found


def _same_value(header: str, body: Any) -> bool:
    """Whether a header carries the body's value: text as is, booleans as true/false, numbers as numbers
    (`42.0` is 42), compared exactly (never through a float, which would let 2**53 + 1 pass as 2**53)."""
    if isinstance(body, bool):
        return header == ("true" if body else "false")
    if isinstance(body, (int, float)):
        if _NUMBER.fullmatch(header) is None:
            return False
        import decimal  # only a number in an Mcp-Param header needs it

        try:
            return decimal.Decimal(header) == decimal.Decimal(body if isinstance(body, int) else repr(body))
        except (ArithmeticError, ValueError):
            return False
    return isinstance(body, str) and header == body


def _one_header(headers: Sequence[tuple[bytes, bytes]], name: str, *, sentinel: bool) -> tuple[str | None, str | None]:
    """(the value of header `name`, None), decoded from `=?base64?...?=` when `sentinel`; (None, None) when
    it is absent; (None, why) when it is sent twice or cannot be read."""
    wanted = name.lower().encode()
    values = [value for field, value in headers if field.lower() == wanted]
    if not values:
        return None, None
    if len(values) > 1:
        return None, f"Header mismatch: the {name} header is sent {len(values)} times"
    if _HEADER_VALUE.fullmatch(values[0]) is None:
        return None, f"Header mismatch: the {name} header value contains invalid characters"
    text = values[0].decode("ascii")
    value = decode_header_value(text) if sentinel else text
    if value is None:
        return None, f"Header mismatch: the {name} header value is not valid =?base64?...?= (canonical base64 of UTF-8)"
    return value, None


def decode_header_value(value: str) -> str | None:
    """A header value as sent: `=?base64?B64?=` is the UTF-8 text B64 encodes (None if it is not canonical
    base64 of UTF-8); any other value is itself."""
    match = _BASE64.fullmatch(value)
    if match is None:
        return value
    payload = match.group(1)
    try:
        decoded = base64.b64decode(payload, validate=True)
        if base64.b64encode(decoded).decode("ascii") != payload:  # one encoding per value, or two could pass
            return None
        return decoded.decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None


def shown(value: Any) -> str:
    """A value in an error message: its repr, cut to 200 characters (a header may be 15 KB)."""
    text = repr(value)
    return text if len(text) <= 200 else text[:197] + "..."


def modern_status(response: Message, request: Message) -> int:
    """The HTTP status of a modern request's JSON answer: 400 for a request this server cannot take as
    sent (header mismatch, a missing capability, an unsupported version, no usable `_meta`), 404 for an
    unknown method, else 200 (the method ran; its error is its answer)."""
    error = response.get("error")
    code = error.get("code") if isinstance(error, dict) else None
    if code in (jsonrpc.HEADER_MISMATCH, jsonrpc.MISSING_REQUIRED_CLIENT_CAPABILITY, jsonrpc.UNSUPPORTED_PROTOCOL_VERSION):
        return 400
    if code == jsonrpc.METHOD_NOT_FOUND:
        return 404
    params = request.get("params")
    if code == jsonrpc.INVALID_PARAMS and envelope_error(params.get("_meta") if isinstance(params, dict) else None):
        return 400  # the core refused the request's envelope, not its method's parameters
    return 200

"""Tool schemas of library users: JSON Schema 2020-12 (MCP 2026-07-28's default dialect) is understood,
a declared older dialect is honoured, and a schema never makes the server reach out to a URI it names."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from typing import Any

import jsonschema_rs
import pytest

from core_support import INIT, INITIALIZED, Driver, req
from shipcode_mcp import Server, Tool


def _echo(ctx: Any, arguments: dict[str, Any]) -> str:
    return "called"


def call(schema: dict[str, Any], arguments: dict[str, Any]) -> dict[str, Any]:
    server = Server("schemas", "1")
    server.add_tool(Tool("t", _echo, schema, inline=True))
    driver = Driver(server)
    driver.receive(INIT)
    driver.receive(INITIALIZED)
    [answer] = driver.receive(req(2, "tools/call", {"name": "t", "arguments": arguments}))
    result: dict[str, Any] = answer["result"]
    return result


def text(result: dict[str, Any]) -> str:
    return "".join(block["text"] for block in result["content"])


def test_2020_12_keywords_are_understood() -> None:
    schema = {"type": "object", "$defs": {"name": {"type": "string", "minLength": 1}},
              "properties": {"who": {"$ref": "#/$defs/name"},
                             "pair": {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}],
                                      "items": False},
                             "x": {"type": "integer"}, "y": {"type": "integer"}},
              "dependentRequired": {"x": ["y"]}, "unevaluatedProperties": False}
    assert call(schema, {"who": "ann", "pair": [1, "a"], "x": 1, "y": 2}) == {
        "content": [{"type": "text", "text": "called"}], "isError": False}
    for wrong, said in (({"who": ""}, "who"), ({"pair": [1, 2]}, "pair/1"), ({"pair": [1, "a", 3]}, "pair"),
                        ({"x": 1}, "\"y\" is a required property"), ({"extra": 1}, "extra")):
        result = call(schema, wrong)
        assert result["isError"] is True, wrong
        assert said in text(result), (wrong, text(result))


def test_a_declared_draft_07_schema_is_read_as_draft_07() -> None:
    # In draft-07, `items` as an array is the tuple form (2020-12 calls it prefixItems).
    schema = {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
              "properties": {"pair": {"type": "array", "items": [{"type": "integer"}, {"type": "string"}]}}}
    assert call(schema, {"pair": [1, "a"]})["isError"] is False
    assert call(schema, {"pair": ["a", 1]})["isError"] is True


def test_an_unknown_dialect_is_a_clear_tool_error() -> None:
    result = call({"$schema": "https://example.com/my-dialect", "type": "object", "properties": {"a": {}}}, {"a": 1})
    assert result["isError"] is True
    assert "inputSchema is not usable here" in text(result)
    assert "example.com/my-dialect" in text(result)


class _Hits(http.server.BaseHTTPRequestHandler):
    hits: list[str] = []

    def do_GET(self) -> None:
        _Hits.hits.append(self.path)
        body = b'{"type": "integer"}'
        self.send_response(200)
        self.send_header("Content-Type", "application/schema+json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def schema_host() -> Iterator[str]:
    listener = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Hits)
    thread = threading.Thread(target=listener.serve_forever, daemon=True)
    thread.start()
    _Hits.hits.clear()
    try:
        yield f"http://127.0.0.1:{listener.server_address[1]}"
    finally:
        listener.shutdown()
        thread.join(10)


def test_a_remote_ref_is_never_fetched(schema_host: str) -> None:
    schema = {"type": "object", "properties": {"n": {"$ref": f"{schema_host}/number.json"}}}
    # The attack works without us: the validator, left to its defaults, fetches the URI.
    jsonschema_rs.validator_for(schema)
    assert _Hits.hits == ["/number.json"]
    _Hits.hits.clear()

    result = call(schema, {"n": "not a number"})
    assert result["isError"] is True
    assert "inputSchema is not usable here" in text(result)
    assert "Retrieval is disabled" in text(result)
    assert _Hits.hits == []


def test_an_optional_argument_that_may_be_null_is_refused_with_the_reason_of_its_type() -> None:
    """`anyOf: [T, null]` (how optional arguments are written, so that strict providers can express them)
    is reported as what is wrong with the value as a T, not as 'valid under none of the schemas'."""
    schema = {"type": "object", "properties": {
        "offset": {"anyOf": [{"type": "integer"}, {"type": "null"}], "minimum": 1},
        "glob": {"anyOf": [{"type": "string", "minLength": 1}, {"type": "null"}]}}}
    assert call(schema, {"offset": None, "glob": None})["isError"] is False
    for wrong, said in (({"offset": "2"}, 'offset: "2" is not of type "integer"'),
                        ({"offset": 0}, "offset: 0 is less than the minimum of 1"),
                        ({"glob": ""}, 'glob: "" is shorter than 1 character')):
        result = call(schema, wrong)
        assert result["isError"] is True and text(result) == f"Invalid arguments for tool t: {said}", text(result)

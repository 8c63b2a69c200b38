"""The validator-free path of Tool.check_arguments: it may only accept what jsonschema_rs accepts.

Plain schemas (typed properties, required, additionalProperties) are checked without loading
jsonschema_rs, to keep its memory and load time off servers whose tools never need it. The property
here is the safety one: whenever that path accepts, the schema is valid and the real validator agrees.
A plain schema checks each argument on its own, by the JSON kind of its value, so the exhaustive test
below covers every plain schema: each property type against a value of each kind, with every
combination of required, additionalProperties and absent or extra arguments.
"""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema_rs
from hypothesis import given, settings
from hypothesis import strategies as st

from shipcode_mcp.primitives import _plain_schema, _plainly_fits

NAMES = st.sampled_from(["a", "b", "text", "n"])
TYPES = st.sampled_from(["string", "integer", "number", "boolean", "null", "object", "array", "strin"]) | st.none() | st.lists(
    st.sampled_from(["string", "null"]), max_size=2)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=2), inner, max_size=2),
    max_leaves=4,
)
ANNOTATION = st.sampled_from(["title", "description", "$comment", "default", "examples"])
PROPERTY = st.dictionaries(st.sampled_from(["type", "title", "description", "minLength", "enum"]),
                           TYPES | JSON, max_size=2) | st.dictionaries(st.just("type"), TYPES, max_size=1)
SCHEMA = st.fixed_dictionaries(
    {"type": st.sampled_from(["object", "object", "string"])},
    optional={
        "properties": st.dictionaries(NAMES, PROPERTY, max_size=3),
        "required": st.lists(NAMES, max_size=3),
        "additionalProperties": st.booleans() | st.just({"type": "string"}),
        "minProperties": st.integers(0, 2),
        "title": st.text(max_size=2) | st.integers(),
        "$comment": st.text(max_size=2),
    },
)


@settings(max_examples=600)
@given(SCHEMA, st.dictionaries(NAMES, JSON, max_size=3))
def test_the_plain_path_accepts_only_what_the_validator_accepts(schema: dict[str, Any], arguments: dict[str, Any]) -> None:
    plain = _plain_schema(schema)
    if not isinstance(plain, tuple):
        return
    validator = jsonschema_rs.validator_for(schema)  # a plain schema is a valid schema
    if _plainly_fits(plain, arguments):
        assert validator.is_valid(arguments)
    elif not any(isinstance(value, float) for value in arguments.values()):
        assert not validator.is_valid(arguments)  # exact, but for 1.0 as an integer: left to the validator


KINDS = [None, True, False, 0, -(2 ** 63) - 1, 2 ** 64, 1.0, 1.5, "", "1", [], [1], {}, {"p": 1}]
"""A value of each kind the JSON decoder produces (bools, ints of any size, floats whole or not)."""


def test_the_plain_path_agrees_with_the_validator_on_every_kind_of_plain_schema() -> None:
    types_ = [None, "string", "integer", "number", "boolean", "null", "object", "array"]  # None: no type
    for kind, value, required, additional, present in itertools.product(
            types_, KINDS, [[], ["p"], ["q"], ["p", "q"]], [None, True, False], [(), ("p",), ("q",), ("p", "q")]):
        schema: dict[str, Any] = {"type": "object", "properties": {"p": {} if kind is None else {"type": kind}},
                                  "required": required, "title": "t", "$comment": "c"}
        if additional is not None:
            schema["additionalProperties"] = additional
        plain = _plain_schema(schema)
        assert isinstance(plain, tuple)
        arguments = {name: value for name in present}
        valid = jsonschema_rs.validator_for(schema).is_valid(arguments)
        assert _plainly_fits(plain, arguments) == valid or (valid and isinstance(value, float)), (schema, arguments)


def test_valid_plain_arguments_do_not_load_the_validator() -> None:
    code = """
import sys
from shipcode_mcp.primitives import Tool
tool = Tool("echo", lambda ctx, args: args["text"],
            {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]})
assert tool.check_arguments({"text": "hi"}) is None
assert "jsonschema_rs" not in sys.modules
problem = tool.check_arguments({"text": 1})
assert "jsonschema_rs" in sys.modules
print(problem)
"""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    assert done.stdout.startswith("Invalid arguments for tool echo: text: 1 is not of type")

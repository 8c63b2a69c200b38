"""Python functions as handlers: schemas from type hints and docstrings, binding, conversion, async."""

from __future__ import annotations

import collections.abc
import dataclasses
import enum
import threading
from typing import Annotated, Any, Literal, Optional, TypedDict, Union

import pydantic
import pytest

from shipcode_mcp import Cancelled, Context, Server
from shipcode_mcp.context import RequestContext
from shipcode_mcp.signature import Signature, jsonable
from support import validate_definition


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Point(TypedDict):
    x: int
    y: int


class Options(TypedDict, total=False):
    verbose: bool


@dataclasses.dataclass
class Box:
    width: float
    label: str = "box"
    tags: list[str] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class Node:
    children: list[Node]


class Model(pydantic.BaseModel):
    name: str
    point: Box | None = None


def schema_of(hint: Any) -> dict[str, Any]:
    def fn(value: Any) -> None: ...

    fn.__annotations__ = {"value": hint}
    return Signature(fn, "test").input_schema()["properties"]["value"]


@pytest.mark.parametrize(("hint", "schema"), [
    (str, {"type": "string"}), (int, {"type": "integer"}), (float, {"type": "number"}), (bool, {"type": "boolean"}),
    (type(None), {"type": "null"}), (Any, {}),
    (Optional[int], {"anyOf": [{"type": "integer"}, {"type": "null"}]}),  # noqa: UP045 (the older spelling on purpose)
    (int | str, {"anyOf": [{"type": "integer"}, {"type": "string"}]}),
    (Union[int, str], {"anyOf": [{"type": "integer"}, {"type": "string"}]}),  # noqa: UP007
    (Literal["a", "b"], {"type": "string", "enum": ["a", "b"]}), (Literal[1, "a"], {"enum": [1, "a"]}),
    (Color, {"type": "string", "enum": ["red", "green"]}),
    (list[int], {"type": "array", "items": {"type": "integer"}}), (list, {"type": "array"}),
    (set[str], {"type": "array", "items": {"type": "string"}, "uniqueItems": True}),
    (tuple[int, ...], {"type": "array", "items": {"type": "integer"}}),
    (tuple[int, str], {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}], "minItems": 2, "maxItems": 2}),
    (collections.abc.Sequence[float], {"type": "array", "items": {"type": "number"}}),
    (dict[str, int], {"type": "object", "additionalProperties": {"type": "integer"}}), (dict, {"type": "object"}),
    (dict[str, Any], {"type": "object"}),
    (Point, {"type": "object", "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}}, "required": ["x", "y"]}),
    (Options, {"type": "object", "properties": {"verbose": {"type": "boolean"}}}),
    (Box, {"type": "object", "properties": {"width": {"type": "number"}, "label": {"type": "string"},
                                            "tags": {"type": "array", "items": {"type": "string"}}}, "required": ["width"]}),
    (Annotated[int, "how many"], {"type": "integer", "description": "how many"}),
])
def test_schemas_of_type_hints(hint: Any, schema: dict[str, Any]) -> None:
    assert schema_of(hint) == schema


@pytest.mark.parametrize("hint", [bytes, complex, object.__class__, Node])
def test_types_without_a_schema_are_refused_at_registration(hint: Any) -> None:
    with pytest.raises(TypeError, match="explicitly"):
        schema_of(hint)


def test_a_pydantic_model_brings_its_schema_and_its_definitions_move_to_the_top() -> None:
    def fn(model: Model) -> None: ...

    schema = Signature(fn, "t").input_schema()
    assert schema["properties"]["model"]["properties"]["name"] == {"title": "Name", "type": "string"}
    assert "Box" in schema["$defs"]
    server = Server("s", "1")
    server.tool(fn)
    validate_definition("Tool", server.tools["fn"].to_dict())


def test_the_whole_input_schema_descriptions_defaults_and_required() -> None:
    def search(ctx: Context, query: Annotated[str, "what to look for"], limit: int = 10, *,
               case: bool = False, mode: Literal["fast", "full"] = "fast", since: Box | None = None) -> None:
        """Search the index.

        A longer explanation that stays in the description.

        Args:
            query: ignored, since Annotated says it
            limit: at most this many results,
                counted after filtering
            case (bool): match case
        Returns:
            nothing
        """

    signature = Signature(search, "tool search")
    assert signature.context_param == "ctx"
    assert signature.summary == "Search the index.\n\nA longer explanation that stays in the description."
    assert signature.input_schema() == {"type": "object", "properties": {
        "query": {"type": "string", "description": "what to look for"},
        "limit": {"type": "integer", "description": "at most this many results, counted after filtering", "default": 10},
        "case": {"type": "boolean", "description": "match case", "default": False},
        "mode": {"type": "string", "enum": ["fast", "full"], "default": "fast"},
        "since": {"anyOf": [schema_of(Box), {"type": "null"}], "default": None},
    }, "required": ["query"]}


def test_no_parameters_is_an_empty_object_schema_and_non_json_defaults_are_left_out() -> None:
    def nothing() -> None: ...

    def odd(when: object = object()) -> None: ...

    assert Signature(nothing, "t").input_schema() == {"type": "object"}
    assert Signature(odd, "t").input_schema() == {"type": "object", "properties": {"when": {}}}


def test_which_parameter_is_the_context() -> None:
    def by_annotation(c: Context, x: int) -> None: ...
    def by_name(ctx, x: int) -> None: ...  # type: ignore[no-untyped-def]
    def also_by_name(context, x: int) -> None: ...  # type: ignore[no-untyped-def]
    def an_argument_named_context(context: str) -> None: ...
    def by_full_name(c: RequestContext) -> None: ...

    assert Signature(by_annotation, "t").context_param == "c"
    assert Signature(by_name, "t").context_param == "ctx"
    assert Signature(also_by_name, "t").context_param == "context"
    assert Signature(an_argument_named_context, "t").context_param is None
    assert Signature(by_full_name, "t").context_param == "c"
    assert list(Signature(by_annotation, "t").params) == ["x"]


def test_positional_only_parameters_are_refused() -> None:
    def fn(a: int, /) -> None: ...

    with pytest.raises(TypeError, match="positional-only"):
        Signature(fn, "tool fn")


def test_calls_bind_by_name_convert_values_and_drop_unknown_arguments() -> None:
    calls: list[dict[str, Any]] = []

    def fn(ctx: Context, color: Color, box: Box, pair: tuple[int, int], maybe: Color | None = None) -> None:
        calls.append({"ctx": ctx, "color": color, "box": box, "pair": pair, "maybe": maybe})

    marker: Any = object()
    Signature(fn, "t").call(marker, {"color": "red", "box": {"width": 2}, "pair": [1, 2], "maybe": None, "extra": 1})
    assert calls == [{"ctx": marker, "color": Color.RED, "box": Box(2), "pair": (1, 2), "maybe": None}]


def test_var_keyword_takes_every_argument() -> None:
    def fn(a: int, **rest: Any) -> dict[str, Any]:
        return {"a": a, **rest}

    assert Signature(fn, "t").call(None, {"a": 1, "b": 2}) == {"a": 1, "b": 2}


def test_pydantic_arguments_are_validated_into_models() -> None:
    def fn(model: Model) -> Model:
        return model

    model = Signature(fn, "t").call(None, {"model": {"name": "n"}})
    assert isinstance(model, Model) and model.name == "n"
    assert jsonable(model) == {"name": "n", "point": None}


@pytest.mark.parametrize(("hint", "schema", "wrapped"), [
    (int, {"type": "object", "properties": {"result": {"type": "integer"}}, "required": ["result"]}, True),
    (list[float], {"type": "object", "properties": {"result": {"type": "array", "items": {"type": "number"}}},
                   "required": ["result"]}, True),
    (int | None, {"type": "object", "properties": {"result": {"anyOf": [{"type": "integer"}, {"type": "null"}]}},
                  "required": ["result"]}, True),
    (Color, {"type": "object", "properties": {"result": {"type": "string", "enum": ["red", "green"]}},
             "required": ["result"]}, True),
    (Point, schema_of(Point), False),
    (Box, schema_of(Box), False),
    (str, None, False), (None, None, False), (dict, None, False), (dict[str, Any], None, False),
    (dict[str, int], None, False), (list, None, False), (list[dict[str, Any]], None, False), (Any, None, False),
])
def test_output_schemas_only_for_return_types_that_name_a_shape(hint: Any, schema: Any, wrapped: bool) -> None:
    def fn() -> None: ...

    fn.__annotations__ = {"return": hint}
    assert Signature(fn, "t").output_schema() == (schema, wrapped)


def test_unannotated_returns_promise_nothing() -> None:
    def fn():  # type: ignore[no-untyped-def]
        return 1

    assert Signature(fn, "t").output_schema() == (None, False)


def test_jsonable_turns_python_values_into_json_values() -> None:
    value = {"box": Box(1.5, tags=["a"]), "colors": (Color.RED, {Color.GREEN}), "n": None}
    assert jsonable(value) == {"box": {"width": 1.5, "label": "box", "tags": ["a"]}, "colors": ["red", ["green"]], "n": None}


def test_coroutine_functions_run_on_the_shared_loop() -> None:
    import asyncio

    async def fn(n: int) -> tuple[int, str]:
        await asyncio.sleep(0)
        return n * 2, threading.current_thread().name

    assert Signature(fn, "t").call(None, {"n": 21}) == (42, "shipcode-mcp-async")


def test_cancelling_the_request_cancels_the_coroutine() -> None:
    import asyncio

    from shipcode_mcp.session import Session

    started = threading.Event()
    stopped = threading.Event()

    async def fn(ctx: Context) -> None:
        started.set()
        try:
            await asyncio.sleep(30)
        finally:
            stopped.set()

    context = RequestContext(Session(Server("s", "1")), 1, "tools/call", {})
    outcome: list[BaseException] = []

    def run() -> None:
        try:
            Signature(fn, "t").call(context, {})
        except BaseException as err:
            outcome.append(err)

    worker = threading.Thread(target=run)
    worker.start()
    assert started.wait(5)
    context.cancel()
    worker.join(5)
    assert len(outcome) == 1 and isinstance(outcome[0], Cancelled)
    assert stopped.wait(5)  # the coroutine itself was cancelled, on its loop

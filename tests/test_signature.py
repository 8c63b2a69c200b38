"""Python functions as handlers: schemas from type hints and docstrings, binding, conversion, async."""

from __future__ import annotations

import collections.abc
import dataclasses
import enum
import functools
import re
import threading
import types
from typing import Annotated, Any, Literal, Optional, TypedDict, Union

import jsonschema
import pydantic
import pytest
from hypothesis import assume, event, given, settings
from hypothesis import strategies as st

from shipcode_mcp import Cancelled, Context, Server
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


def test_a_nullable_parameters_description_goes_in_its_typed_branch() -> None:
    """Where google-genai's MCP conversion reads it (it keeps only the non-null branch of such an anyOf);
    a union that is not "a type or null" keeps its description beside, and validation is the same."""
    def find(name: str | None = None, kind: Annotated[Literal["a", "b"] | None, "which kind"] = None,
             size: Annotated[int | None, "how big"] = 3, key: int | str = 0) -> None:
        """Find.

        Args:
            name: the name to look for
            key: a number or a name
        """

    schema = Signature(find, "tool find").input_schema()
    assert schema["properties"] == {
        "name": {"anyOf": [{"type": "string", "description": "the name to look for"}, {"type": "null"}], "default": None},
        "kind": {"anyOf": [{"type": "string", "enum": ["a", "b"], "description": "which kind"}, {"type": "null"}],
                 "default": None},
        "size": {"anyOf": [{"type": "integer", "description": "how big"}, {"type": "null"}], "default": 3},
        "key": {"anyOf": [{"type": "integer"}, {"type": "string"}], "description": "a number or a name", "default": 0},
    }
    validator = jsonschema.Draft202012Validator(schema)
    assert validator.is_valid({"name": None, "kind": "a", "size": 2, "key": "k"})
    assert not validator.is_valid({"kind": "c"}) and not validator.is_valid({"size": "big"})


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
    def by_full_name(c: Context) -> None: ...

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

    started = threading.Event()
    stopped = threading.Event()

    async def fn(ctx: Context) -> None:
        started.set()
        try:
            await asyncio.sleep(30)
        finally:
            stopped.set()

    context = Context(None, 1, "tools/call", {})  # no channel: nothing is sent or asked
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


# -- the plain reading (no inspect, no typing) against the full one ------------------------------------
# Signature reads plain functions from their attributes (`_read_plain`); everything else goes through
# inspect and typing. Both must give the same Signature: these tests build each function both ways.
PLAIN_HINTS = ["str", "int", "float", "bool", "None", "list", "dict", "tuple", "set", "list[int]", "dict[str, float]",
               "tuple[int, ...]", "tuple[int, str]", "tuple[()]", "set[str]", "frozenset[int]", "int | None",
               "None | str", "list[str] | None", "str | int | None", "dict[str, list[int | None]]", "Context",
               "Context"]
OTHER_HINTS = ["Any", "object", "Optional[int]", "Annotated[int, 'how many']", "Literal['a', 'b']", "Color", "Box",
               "Point", "List[int]", "list['int']", "'int'", "'Undefined'", "bytes", "int | Color", "list[Box]",
               "collections.abc.Sequence[int]", "' int'", "f()"]
DEFAULTS = ["1", "'a'", "None", "[1, 2]", "()", "object()", "1.5", "True", "Color.RED"]
PRELUDE = ("import collections.abc\nfrom typing import Annotated, Any, List, Literal, Optional\n"
           "from shipcode_mcp import Context\nfrom shipcode_mcp.context import Context\n"
           "from test_signature import Box, Color, Point\ndef f():\n    return int\n")


def define(header: str, *, future: bool, where: str = "module", prelude: str = "") -> Any:
    """The function `fn` of `header` ('def fn(...):'), in a module of its own (with postponed annotations if
    `future`), defined at its top level, as a method of a class, or inside a function."""
    body = {"module": f"{header}\n    return locals()", "class": f"class K:\n    {header}\n        return locals()",
            "function": f"def outer():\n    {header}\n        return locals()\n    return fn\nfn = outer()"}[where]
    source = ("from __future__ import annotations\n" if future else "") + PRELUDE + prelude + body
    module = types.ModuleType("handlers")
    exec(compile(source, "<handlers>", "exec", dont_inherit=True), module.__dict__)  # not this module's __future__
    return module.K.fn if where == "class" else module.fn


def readings(fn: Any) -> tuple[Any, Any]:
    """What Signature makes of `fn` (the plain reading when it applies) and what the full reading makes."""
    from unittest import mock

    from shipcode_mcp import signature

    as_registered = outcome(lambda: described(Signature(fn, "tool t")))
    with mock.patch.object(signature, "_read_plain", lambda fn: None):
        return as_registered, outcome(lambda: described(Signature(fn, "tool t")))


def outcome(make: Any) -> Any:
    try:
        return make()
    except Exception as err:  # errors must agree too, message and all
        return type(err), str(err)


def described(sig: Signature) -> dict[str, Any]:
    arguments = {name: "red" if i % 2 else [1, 2] for i, name in enumerate([*sig.params, "extra"])}
    return {"is_async": sig.is_async, "hints": sig.hints, "summary": sig.summary, "param_docs": sig.param_docs,
            "context": sig.context_param, "params": sig.params, "var_keyword": sig.var_keyword,
            "required": sig.required(), "descriptions": {name: sig.description(name) for name in sig.params},
            "input": outcome(sig.input_schema), "output": outcome(sig.output_schema),
            "call": outcome(lambda: sig.call(None, arguments))}


def must_be_plain(hints: list[str], future: bool) -> bool:
    """Whether the plain reading must take a function with these hints; a string annotation with a call
    in it ("tuple[()]" under postponed annotations) it never evaluates."""
    return all(h in PLAIN_HINTS and not (future and "(" in h) for h in hints)


@pytest.mark.parametrize("future", [False, True])
@pytest.mark.parametrize("hint", PLAIN_HINTS + OTHER_HINTS)
def test_every_hint_reads_the_same_both_ways(hint: str, future: bool) -> None:
    """Each hint the property test below draws from: as a parameter, with and without a None default, and returned."""
    from shipcode_mcp.signature import _read_plain

    for default in ("", " = None"):
        fn = define(f"def fn(x: {hint}{default}) -> {hint}:", future=future)
        fast, full = readings(fn)
        assert fast == full
        assert _read_plain(fn) is not None or not must_be_plain([hint], future)


@st.composite
def functions(draw: st.DrawFn) -> tuple[Any, bool]:
    """(a function `fn`, whether the plain reading must take it)."""
    hints = st.sampled_from(PLAIN_HINTS + OTHER_HINTS) | st.sampled_from(PLAIN_HINTS)
    names = draw(st.lists(st.sampled_from(["ctx", "context", "text", "n", "uri", "items", "mode", "a", "b"]),
                          unique=True, max_size=6))
    any_kind = st.sampled_from(["posonly", "normal", "normal", "normal", "kwonly", "kwonly"])
    kinds = sorted(draw(st.lists(any_kind, min_size=len(names), max_size=len(names))), key=["posonly", "normal", "kwonly"].index)
    parts: list[str] = []
    used: list[str] = []
    positional_default = False
    for name, kind in zip(names, kinds, strict=True):
        if kind == "kwonly" and "*" not in parts and not any(p.startswith("*") for p in parts):
            star, star_hint = draw(st.sampled_from([("*", None), ("*args", None), ("*args", "int"), ("*args", "Any")]))
            parts.append(star + (f": {star_hint}" if star_hint else ""))
            used += [star_hint] if star_hint else []
        if kind != "posonly" and "/" not in parts and any(k == "posonly" for k in kinds):
            parts.append("/")
        hint = draw(st.none() | hints)
        used += [hint] if hint else []
        default = draw(st.none() | st.sampled_from(DEFAULTS))
        if kind != "kwonly":
            if positional_default and default is None:
                default = "0"
            positional_default = positional_default or default is not None
        parts.append(name + (f": {hint}" if hint else "") + (f" = {default}" if default else ""))
    if "/" not in parts and kinds and kinds[-1] == "posonly":
        parts.append("/")
    if draw(st.booleans()):
        hint = draw(st.none() | hints)
        used += [hint] if hint else []
        parts.append("**rest" + (f": {hint}" if hint else ""))
    returns = draw(st.none() | hints)
    used += [returns] if returns else []
    future = draw(st.booleans())
    header = f"{'async ' if draw(st.booleans()) else ''}def fn({', '.join(parts)}){f' -> {returns}' if returns else ''}:"
    try:
        fn = define(header, future=future, where=draw(st.sampled_from(["module", "class", "function"])),
                    prelude="float = int\n" if draw(st.booleans()) else "")
    except SyntaxError:  # a default before a required parameter and the like
        assume(False)
        raise
    return fn, must_be_plain(used, future)


@settings(max_examples=500)
@given(functions())
def test_the_plain_reading_agrees_with_inspect_and_typing(case: tuple[Any, bool]) -> None:
    from shipcode_mcp.signature import _read_plain

    fn, plain = case
    fast, full = readings(fn)
    assert fast == full
    event("read plainly" if _read_plain(fn) is not None else "read by inspect and typing")
    if plain:
        assert _read_plain(fn) is not None


def plain_echo(text: str) -> str:
    """Return the text you send."""
    return text


async def plain_async(ctx: Context, items: list[int], limit: int | None = None, *, unique: bool = False) -> list[int]:
    """Pick items.

    Args:
        items: the items
        limit: at most this many
    """
    return items[:limit]


def plain_everything(context, n, /, *rest: int, tags: dict[str, float] = {}, **more: str) -> None:  # type: ignore[no-untyped-def]  # noqa: B006
    """Nothing."""


def not_plain_hint(mode: Literal["a", "b"]) -> None:
    """A Literal needs typing."""


def not_plain_wrapper(n: int) -> int:
    """Its __wrapped__ says what it takes."""
    return n


not_plain_wrapper.__wrapped__ = plain_echo  # type: ignore[attr-defined]


@pytest.mark.parametrize(("fn", "plain"), [
    (plain_echo, True), (plain_async, True), (plain_everything, True), (lambda ctx, text: text, True),
    (not_plain_hint, False), (not_plain_wrapper, False),
    (print, False), (functools.partial(plain_echo), False), (Box, False),
])
def test_which_functions_are_read_plainly_and_that_both_readings_agree(fn: Any, plain: bool) -> None:
    from shipcode_mcp.signature import _read_plain

    assert (_read_plain(fn) is not None) == plain
    fast, full = readings(fn)
    assert fast == full


@settings(max_examples=500)
@given(st.text(alphabet=st.sampled_from(" \t\na:\r\x0c\xa0")) | st.text())
def test_docstrings_are_cleaned_as_inspect_cleans_them(doc: str) -> None:
    """For every docstring whose whitespace is spaces, tabs and newlines: inspect's result for other
    whitespace changes between Python versions, and a description should not."""
    import inspect

    from shipcode_mcp.signature import _cleandoc

    if not re.search(r"[^\S \t\n]", doc):
        assert _cleandoc(doc) == inspect.cleandoc(doc)

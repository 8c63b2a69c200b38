"""Python functions as MCP handlers: a JSON Schema from the type hints, a description from the
docstring, and a call that binds arguments by name.

Used by the `Server` decorators at registration, that is at a library server's start-up. A plain
function (builtin scalar and container hints, `X | None`, the Context type) is read from its own
attributes, without `inspect`, `typing` or `dataclasses`, whose imports would take a large part of a
small server's cold start (docs/performance.md); anything else goes through `inspect.signature` and
`typing.get_type_hints`, imported then. Both readings give the same `Signature`: tests/test_signature.py
compares them on every hint they read. The docstring is read one way for every callable.
"""

from __future__ import annotations

import enum  # free: `re`, which the core imports, imports it
import re
import sys
import threading
import types

from .context import Cancelled, Context
from .primitives import described

TYPE_CHECKING = False
if TYPE_CHECKING:
    import asyncio
    from collections.abc import Callable, Coroutine
    from typing import Any

_CONTEXT_NAMES = ("ctx", "context")
_PRIMITIVES: dict[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean", type(None): "null"}
_ARRAYS = {list: False, tuple: False, set: True, frozenset: True}  # type -> uniqueItems
_ABC_ARRAYS = ("Sequence", "MutableSequence", "Iterable", "Collection", "Set", "MutableSet", "AbstractSet")
_ABC_MAPPINGS = ("Mapping", "MutableMapping")
_SCALARS = frozenset({str, int, float, bool, type(None)})  # exact types: a str Enum is not one
# get_origin of unions, Literal and Annotated, named without importing typing (see _origin_and_args)
_UNION, _LITERAL, _ANNOTATED = "union", "literal", "annotated"


class _Required:
    """The default of a parameter that has none (inspect's `Parameter.empty`, without inspect)."""

    def __repr__(self) -> str:
        return "<required>"


_REQUIRED: Any = _Required()


class Signature:
    """How to call `fn` with the arguments of a request, and what its hints say about them."""

    def __init__(self, fn: Callable[..., Any], what: str) -> None:
        self.fn = fn
        self.what = what  # for error messages: "tool add"
        self.hints: dict[str, Any]
        parameters: list[tuple[str, str, Any]]  # (name, inspect's kind name, default or _REQUIRED)
        plain = _read_plain(fn)
        if plain is not None:
            self.is_async, self.hints, parameters = plain
        else:
            import inspect  # heavy at start (module docstring): only what _read_plain cannot read

            self.is_async = inspect.iscoroutinefunction(fn)
            self.hints = _hints(fn)
            parameters = [(p.name, p.kind.name, _REQUIRED if p.default is p.empty else p.default)
                          for p in inspect.signature(fn).parameters.values()]
        doc = getattr(fn, "__doc__", None)
        self.summary, self.param_docs = _parse_docstring(_cleandoc(doc) if isinstance(doc, str) else None)
        self.context_param: str | None = None
        self.params: dict[str, Any] = {}  # name -> default, or _REQUIRED
        self.var_keyword = False
        for name, kind, default in parameters:
            if kind == "VAR_KEYWORD":
                self.var_keyword = True
            elif kind == "VAR_POSITIONAL":
                continue
            elif self.context_param is None and _is_context(name, self.hints):
                self.context_param = name
            elif kind == "POSITIONAL_ONLY":
                raise TypeError(f"{what}: parameter {name!r} is positional-only; arguments are passed by name")
            else:
                self.params[name] = default
        self._converters = {name: _converter(self.hints.get(name, object)) for name in self.params}

    # -- calling ----------------------------------------------------------------------------------
    def call(self, context: Context | None, arguments: dict[str, Any]) -> Any:
        """Call the function: arguments by name (converted to Enums, dataclasses, models), the context
        where it asks for one. A coroutine function runs on the shared event loop of async handlers."""
        kwargs = self._kwargs(context, arguments)
        if self.is_async:
            return run_coroutine(self.fn(**kwargs), context)
        return self.fn(**kwargs)

    async def acall(self, context: Context | None, arguments: dict[str, Any]) -> Any:
        """`call` of a coroutine function, awaited on the caller's event loop (an asyncio runner's)."""
        return await self.fn(**self._kwargs(context, arguments))

    def _kwargs(self, context: Context | None, arguments: dict[str, Any]) -> dict[str, Any]:
        kwargs: dict[str, Any] = {}
        for name, value in arguments.items():
            if name in self.params:
                convert = self._converters[name]
                kwargs[name] = convert(value) if convert is not None else value
            elif self.var_keyword:
                kwargs[name] = value
        if self.context_param is not None:
            kwargs[self.context_param] = context
        return kwargs

    def required(self) -> list[str]:
        return [name for name, default in self.params.items() if default is _REQUIRED]

    def description(self, name: str) -> str | None:
        return _annotated_description(self.hints.get(name, object)) or self.param_docs.get(name)

    # -- schemas ----------------------------------------------------------------------------------
    def input_schema(self) -> dict[str, Any]:
        """The tool's inputSchema: one property per parameter, required when it has no default."""
        builder = _SchemaBuilder(self.what)
        properties: dict[str, Any] = {}
        for name, default in self.params.items():
            hint = self.hints.get(name, object)  # no hint: like Any, no constraint
            prop = builder.schema(hint)  # with the Annotated description, if any
            description = self.param_docs.get(name)
            if description and not _annotated_description(hint) and "description" not in prop:
                prop = described(prop, description)
            if default is not _REQUIRED and _is_json(default):
                prop = {**prop, "default": default}
            properties[name] = prop
        schema: dict[str, Any] = {"type": "object"}
        if properties:
            schema["properties"] = properties
        required = self.required()
        if required:
            schema["required"] = required
        if builder.defs:
            schema["$defs"] = builder.defs
        return schema

    def output_schema(self) -> tuple[dict[str, Any] | None, bool]:
        """(outputSchema, wrapped) from the return type, when it names a structured shape.

        Objects (TypedDict, dataclass, pydantic model) are the schema; numbers, lists and
        the like are wrapped as {"result": ...}, since structuredContent must be an object. str, None,
        dicts (content blocks are dicts), bare lists and Any promise no shape: those stay plain content.
        """
        returned = self.hints.get("return", object)
        if not _is_structured(returned):
            return None, False
        builder = _SchemaBuilder(self.what)
        schema = builder.schema(returned)
        wrapped = schema.get("type") != "object"
        if wrapped:
            schema = {"type": "object", "properties": {"result": schema}, "required": ["result"]}
        if builder.defs:
            schema = {**schema, "$defs": builder.defs}
        return schema, wrapped


def jsonable(value: Any) -> Any:
    """Dataclasses, pydantic models, Enums, tuples and sets as the JSON values they stand for."""
    if type(value) in _SCALARS:  # most results: returned as they are, without the checks below
        return value
    if isinstance(value, enum.Enum):
        return jsonable(value.value)
    if not isinstance(value, type) and hasattr(type(value), "__dataclass_fields__"):  # dataclasses.is_dataclass
        import dataclasses  # not at start (module docstring); loaded already: the value's class is a dataclass

        return {f.name: jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if hasattr(value, "model_dump") and not isinstance(value, type):
        return value.model_dump(mode="json")
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [jsonable(v) for v in value]
    return value


# -- async handlers -----------------------------------------------------------------------------------
_loop: asyncio.AbstractEventLoop | None = None
_loop_lock = threading.Lock()


def _event_loop() -> asyncio.AbstractEventLoop:
    """One event loop, on its own thread, shared by every async handler (started on first use)."""
    global _loop
    with _loop_lock:
        if _loop is None:
            import asyncio  # heavy at start: only async handlers need the loop

            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name="shipcode-mcp-async", daemon=True).start()
            _loop = loop
        return _loop


def run_coroutine(coroutine: Coroutine[Any, Any, Any], context: Context | None) -> Any:
    """Run `coroutine` on the async handlers' loop and wait for it; cancelling the request cancels it."""
    # heavy at start: only async handlers need these
    import asyncio
    import concurrent.futures

    future = asyncio.run_coroutine_threadsafe(coroutine, _event_loop())
    if context is not None:
        def cancel() -> None:
            future.cancel()

        context.on_cancel(cancel)
    try:
        return future.result()
    except concurrent.futures.CancelledError:
        if context is None or context.cancelled:
            raise Cancelled() from None
        raise RuntimeError("the handler's coroutine was cancelled, but not by its client") from None


# -- reading a plain function without inspect and typing ---------------------------------------------
_CO_VARARGS, _CO_VARKEYWORDS, _CO_COROUTINE = 0x04, 0x08, 0x80  # code flags, as in inspect
_PLAIN_CLASSES = frozenset({str, int, float, bool, type(None), list, tuple, set, frozenset, dict})
_PLAIN_ANNOTATION = re.compile(r"[\w\s.,|\[\]]+")  # names, subscripts, unions: evaluated with no call


def _read_plain(fn: Callable[..., Any]) -> tuple[bool, dict[str, Any], list[tuple[str, str, Any]]] | None:
    """(is_async, hints, parameters) of a plain function, exactly as `inspect` and `_hints` give them,
    or None when `fn` is not one this can read exactly: another callable, a wrapper (its `__dict__`
    holds `__wrapped__` or `__signature__`), or hints beyond `_is_plain`."""
    if type(fn) is not types.FunctionType or fn.__dict__:
        return None
    hints = _plain_hints(fn)
    if hints is None:
        return None
    code = fn.__code__
    names, positional, keyword_only = code.co_varnames, code.co_argcount, code.co_kwonlyargcount
    defaults, kwdefaults = fn.__defaults__ or (), fn.__kwdefaults__ or {}
    first_default = positional - len(defaults)
    if first_default < 0:
        return None
    parameters = [(names[i], "POSITIONAL_ONLY" if i < code.co_posonlyargcount else "POSITIONAL_OR_KEYWORD",
                   defaults[i - first_default] if i >= first_default else _REQUIRED) for i in range(positional)]
    index = positional + keyword_only
    if code.co_flags & _CO_VARARGS:
        parameters.append((names[index], "VAR_POSITIONAL", _REQUIRED))
        index += 1
    parameters += [(name, "KEYWORD_ONLY", kwdefaults.get(name, _REQUIRED)) for name in names[positional:positional + keyword_only]]
    if code.co_flags & _CO_VARKEYWORDS:
        parameters.append((names[index], "VAR_KEYWORD", _REQUIRED))
    return bool(code.co_flags & _CO_COROUTINE), hints, parameters


def _plain_hints(fn: Callable[..., Any]) -> dict[str, Any] | None:
    """`_hints(fn)` when every annotation is plain, written or as a string; else None."""
    hints: dict[str, Any] = {}
    for name, hint in fn.__annotations__.items():
        if isinstance(hint, str):  # as get_type_hints evaluates it: in the function's globals
            if not _PLAIN_ANNOTATION.fullmatch(hint):
                return None
            try:
                hint = eval(compile(hint, "<string>", "eval"), fn.__globals__)  # compiled as ForwardRef does
            except Exception:
                return None
        if hint is None:
            hint = type(None)
        if not _is_plain(hint, outermost=True):
            return None
        hints[name] = hint
    return hints


def _is_plain(hint: Any, outermost: bool = False) -> bool:
    """Whether get_type_hints returns `hint` as it is and its schema needs nothing from typing: the
    builtin scalars and containers, list[...], dict[...], tuple[..., ...] and X | Y of those, and
    (outermost) the Context type."""
    if type(hint) is type:
        return hint in _PLAIN_CLASSES or (outermost and issubclass(hint, Context))
    if type(hint) is types.GenericAlias and _is_plain(hint.__origin__) and not getattr(hint, "__unpacked__", False):
        args = hint.__args__
        if hint.__origin__ is tuple and len(args) == 2 and args[1] is Ellipsis:
            args = args[:1]
        return all(_is_plain(a) for a in args)
    if type(hint) is types.UnionType:
        return all(_is_plain(a) for a in hint.__args__)
    return False


def _cleandoc(doc: str) -> str:
    """inspect.cleandoc (the same for docstrings whose only whitespace is spaces, tabs and newlines;
    inspect's own result for other whitespace changes between Python versions)."""
    lines = doc.expandtabs().split("\n")
    margin = min((len(line) - len(line.lstrip()) for line in lines[1:] if line.lstrip()), default=None)
    lines[0] = lines[0].lstrip()
    if margin is not None:
        lines[1:] = [line[margin:] for line in lines[1:]]
    while lines and not lines[-1]:
        lines.pop()
    while lines and not lines[0]:
        lines.pop(0)
    return "\n".join(lines)


# -- type hints ---------------------------------------------------------------------------------------
def _hints(fn: Callable[..., Any]) -> dict[str, Any]:
    """typing.get_type_hints, as Python 3.11 and later read them: 3.10 makes the hint of a parameter
    whose default is None Optional, unless it is given the annotations without the defaults."""
    import typing  # heavy at start (module docstring): only hints _read_plain cannot read

    annotated: Any = fn
    if sys.version_info < (3, 11) and isinstance(fn, (types.FunctionType, types.MethodType)):
        annotated = types.SimpleNamespace(__annotations__=fn.__annotations__, __wrapped__=fn)  # globals: fn's
    try:
        return typing.get_type_hints(annotated, include_extras=True)
    except Exception:  # an unresolvable forward reference: fall back to what is written
        return dict(getattr(fn, "__annotations__", {}))


def _is_context(name: str, hints: dict[str, Any]) -> bool:
    if name not in hints:
        return name in _CONTEXT_NAMES
    hint = hints[name]
    if hint is Context or (isinstance(hint, type) and issubclass(hint, Context)):
        return True
    if isinstance(hint, str):
        return hint.rsplit(".", 1)[-1] == "Context"
    return False


def _origin_and_args(hint: Any) -> tuple[Any, tuple[Any, ...]]:
    """typing.get_origin and get_args, but _UNION, _LITERAL and _ANNOTATED for the origins of unions,
    Literal and Annotated. typing is imported only for hints that are not classes, list[int] or X | Y."""
    if type(hint) is types.GenericAlias:
        return hint.__origin__, hint.__args__
    if isinstance(hint, types.UnionType):
        return _UNION, hint.__args__
    if isinstance(hint, type) and hint.__module__ != "typing":  # typing.get_origin(Generic) is Generic
        return None, ()
    import typing  # heavy at start: only hints that are not classes, list[int] or X | Y

    origin = typing.get_origin(hint)
    special = {typing.Union: _UNION, types.UnionType: _UNION, typing.Literal: _LITERAL, typing.Annotated: _ANNOTATED}
    return special.get(origin, origin), typing.get_args(hint)


def _is_any(hint: Any) -> bool:
    """`hint is typing.Any`, without importing typing: until it is imported, nothing can be typing.Any."""
    typing = sys.modules.get("typing")
    return typing is not None and hint is typing.Any


def _constrains_nothing(hint: Any) -> bool:
    return hint is object or _is_any(hint)


def _strip_annotated(hint: Any) -> Any:
    origin, args = _origin_and_args(hint)
    while origin is _ANNOTATED:
        hint = args[0]
        origin, args = _origin_and_args(hint)
    return hint


def _annotated_description(hint: Any) -> str | None:
    origin, args = _origin_and_args(hint)
    if origin is _ANNOTATED:
        return next((m for m in args[1:] if isinstance(m, str)), None)
    return None


def _abc_name(origin: Any) -> str | None:
    return origin.__name__ if getattr(origin, "__module__", None) in ("collections.abc", "typing") else None


def _is_typeddict(hint: Any) -> bool:
    return isinstance(hint, type) and issubclass(hint, dict) and hasattr(hint, "__required_keys__")


def _is_model(hint: Any) -> bool:
    return isinstance(hint, type) and hasattr(hint, "model_json_schema") and hasattr(hint, "model_validate")


def _is_object_type(hint: Any) -> bool:
    return _is_typeddict(hint) or _is_model(hint) or _is_dataclass(hint)


def _is_dataclass(hint: Any) -> bool:
    """dataclasses.is_dataclass for a class, without importing dataclasses."""
    return isinstance(hint, type) and hasattr(hint, "__dataclass_fields__")


def _is_structured(hint: Any) -> bool:
    """Whether a return type names a shape precise enough to promise an outputSchema."""
    hint = _strip_annotated(hint)
    origin, args = _origin_and_args(hint)
    if hint in (int, float, bool) or _is_object_type(hint):
        return True
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return True
    if origin is _LITERAL:
        return True
    if origin is _UNION:
        options = [a for a in args if a is not type(None)]
        return bool(options) and all(_is_structured(a) or a is str for a in options) and any(_is_structured(a) for a in options)
    if origin in _ARRAYS or _abc_name(origin) in _ABC_ARRAYS:
        return bool(args) and all(a is Ellipsis or a is str or _is_structured(a) for a in args)
    return False  # dicts too: a content block is a dict, so a dict return type promises nothing


def _converter(hint: Any) -> Callable[[Any], Any] | None:
    """How to turn a JSON argument into what the parameter's type asks for, if anything."""
    hint = _strip_annotated(hint)
    origin, args = _origin_and_args(hint)
    if origin is _UNION:
        options = [a for a in args if a is not type(None)]
        if len(options) != 1:
            return None
        inner = _converter(options[0])
        return None if inner is None else (lambda value: None if value is None else inner(value))
    if isinstance(hint, type):
        if issubclass(hint, enum.Enum):
            return hint
        if _is_model(hint):
            return hint.model_validate  # type: ignore[attr-defined, no-any-return]
        if _is_dataclass(hint):
            cls = hint
            return lambda value: cls(**value) if isinstance(value, dict) else value
    if origin in (tuple, set, frozenset):
        return lambda value: origin(value) if isinstance(value, list) else value
    return None


def _is_json(value: Any) -> bool:
    if value is None or isinstance(value, (str, int, float, bool)):
        return True
    if isinstance(value, (list, tuple)):
        return all(_is_json(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _is_json(v) for k, v in value.items())
    return False


class _SchemaBuilder:
    """JSON Schema for a type hint; nested objects are inlined, which LLM clients read best."""

    def __init__(self, what: str) -> None:
        self.what = what
        self.defs: dict[str, Any] = {}  # from pydantic models, hoisted to the top level
        self._seen: list[Any] = []

    def schema(self, hint: Any) -> dict[str, Any]:
        description = _annotated_description(hint)
        out = self._schema(_strip_annotated(hint))
        if description:
            out = described(out, description)
        return out

    def _schema(self, hint: Any) -> dict[str, Any]:
        if _constrains_nothing(hint):
            return {}
        if hint in _PRIMITIVES:
            return {"type": _PRIMITIVES[hint]}
        origin, args = _origin_and_args(hint)
        if origin is _UNION:
            return {"anyOf": [self.schema(a) for a in args]}
        if origin is _LITERAL:
            return _enum_schema(list(args))
        if isinstance(hint, type) and issubclass(hint, enum.Enum):
            return _enum_schema([member.value for member in hint])
        if hint in _ARRAYS or origin in _ARRAYS or _abc_name(origin) in _ABC_ARRAYS:
            return self._array(origin or hint, args)
        if hint is dict or origin is dict or _abc_name(origin) in _ABC_MAPPINGS:
            out: dict[str, Any] = {"type": "object"}
            if len(args) == 2 and not _is_any(args[1]):
                out["additionalProperties"] = self.schema(args[1])
            return out
        if _is_object_type(hint):
            if hint in self._seen:
                raise TypeError(f"{self.what}: {hint.__name__} refers to itself; pass the JSON Schema explicitly")
            self._seen.append(hint)
            try:
                return self._object(hint)
            finally:
                self._seen.pop()
        raise TypeError(f"{self.what}: no JSON Schema for the type {hint!r}; pass the schema explicitly")

    def _array(self, origin: Any, args: tuple[Any, ...]) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "array"}
        if origin is tuple and args and not (len(args) == 2 and args[1] is Ellipsis):
            out["prefixItems"] = [self.schema(a) for a in args]
            out["minItems"] = out["maxItems"] = len(args)
            return out
        if args and not _is_any(args[0]):
            out["items"] = self.schema(args[0])
        if _ARRAYS.get(origin) or _abc_name(origin) in ("Set", "MutableSet", "AbstractSet"):
            out["uniqueItems"] = True
        return out

    def _object(self, hint: type) -> dict[str, Any]:
        if _is_model(hint):
            schema = dict(hint.model_json_schema())  # type: ignore[attr-defined]
            self.defs.update(schema.pop("$defs", {}))
            return schema
        # heavy at start (module docstring): only a TypedDict or dataclass hint needs these
        import dataclasses
        import typing

        properties: dict[str, Any] = {}
        required: list[str] = []
        hints = typing.get_type_hints(hint, include_extras=True)
        if _is_typeddict(hint):
            for name, field_hint in hints.items():
                properties[name] = self.schema(field_hint)
            required = [name for name in hints if name in hint.__required_keys__]  # type: ignore[attr-defined]
        else:
            for field in dataclasses.fields(hint):
                properties[field.name] = self.schema(hints.get(field.name, typing.Any))
                if field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING:
                    required.append(field.name)
        out: dict[str, Any] = {"type": "object", "properties": properties}
        if required:
            out["required"] = required
        return out


def _enum_schema(values: list[Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    kinds = {_PRIMITIVES.get(type(v)) for v in values}
    if len(kinds) == 1 and None not in kinds:
        out["type"] = kinds.pop()
    out["enum"] = values
    return out


# -- docstrings ---------------------------------------------------------------------------------------
_SECTION = re.compile(r"^(Args|Arguments|Parameters|Params|Returns?|Raises|Yields|Examples?|Notes?)\s*:?\s*$")
_PARAM_LINE = re.compile(r"^(\*{0,2}\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")


def _parse_docstring(doc: str | None) -> tuple[str | None, dict[str, str]]:
    """The description (everything before the first section) and the Google-style `Args:` entries."""
    if not doc:
        return None, {}
    summary: list[str] = []
    params: dict[str, str] = {}
    section: str | None = None
    entry_indent: int | None = None  # indentation of the entries of the current section
    current: str | None = None
    for line in doc.splitlines():
        indent = len(line) - len(line.lstrip())
        heading = _SECTION.match(line.strip())
        if heading and indent == 0:
            section, entry_indent, current = heading.group(1).lower(), None, None
            continue
        if section is None:
            summary.append(line)
            continue
        if section not in ("args", "arguments", "parameters", "params") or not line.strip():
            continue
        if entry_indent is None:
            entry_indent = indent
        entry = _PARAM_LINE.match(line.strip())
        if entry and indent == entry_indent:
            current = entry.group(1).lstrip("*")
            params[current] = entry.group(2).strip()
        elif current is not None:
            params[current] = (params[current] + " " + line.strip()).strip()
    text = "\n".join(summary).strip()
    return (text or None), params

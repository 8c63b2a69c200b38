"""Python functions as MCP handlers: a JSON Schema from the type hints, a description from the
docstring, and a call that binds arguments by name.

Used by the `Server` decorators at registration time only, so `inspect` and `typing` load when a
library server registers its first handler, never on the start-up path of the core.
"""

from __future__ import annotations

import dataclasses
import enum
import inspect
import re
import threading
import types
import typing
from typing import Any

from .context import Cancelled, RequestContext

if typing.TYPE_CHECKING:
    import asyncio
    from collections.abc import Callable, Coroutine

_CONTEXT_NAMES = ("ctx", "context")
_PRIMITIVES: dict[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean", type(None): "null"}
_ARRAYS = {list: False, tuple: False, set: True, frozenset: True}  # type -> uniqueItems
_ABC_ARRAYS = ("Sequence", "MutableSequence", "Iterable", "Collection", "Set", "MutableSet", "AbstractSet")
_ABC_MAPPINGS = ("Mapping", "MutableMapping")
_UNION_TYPES: tuple[Any, ...] = (typing.Union, types.UnionType)
_SCALARS = frozenset({str, int, float, bool, type(None)})  # exact types: a str Enum is not one


class Signature:
    """How to call `fn` with the arguments of a request, and what its hints say about them."""

    def __init__(self, fn: Callable[..., Any], what: str) -> None:
        self.fn = fn
        self.what = what  # for error messages: "tool add"
        self.is_async = inspect.iscoroutinefunction(fn)
        self.hints = _hints(fn)
        self.summary, self.param_docs = _parse_docstring(inspect.getdoc(fn))
        self.context_param: str | None = None
        self.params: dict[str, inspect.Parameter] = {}
        self.var_keyword = False
        for param in inspect.signature(fn).parameters.values():
            if param.kind is param.VAR_KEYWORD:
                self.var_keyword = True
            elif param.kind is param.VAR_POSITIONAL:
                continue
            elif self.context_param is None and _is_context(param, self.hints.get(param.name, param.empty)):
                self.context_param = param.name
            elif param.kind is param.POSITIONAL_ONLY:
                raise TypeError(f"{what}: parameter {param.name!r} is positional-only; arguments are passed by name")
            else:
                self.params[param.name] = param
        self._converters = {name: _converter(self.hints.get(name)) for name in self.params}

    # -- calling ----------------------------------------------------------------------------------
    def call(self, context: RequestContext | None, arguments: dict[str, Any]) -> Any:
        """Call the function: arguments by name (converted to Enums, dataclasses, models), the context
        where it asks for one. A coroutine function runs on the shared event loop of async handlers."""
        kwargs: dict[str, Any] = {}
        for name, value in arguments.items():
            if name in self.params:
                convert = self._converters[name]
                kwargs[name] = convert(value) if convert is not None else value
            elif self.var_keyword:
                kwargs[name] = value
        if self.context_param is not None:
            kwargs[self.context_param] = context
        if self.is_async:
            return run_coroutine(self.fn(**kwargs), context)
        return self.fn(**kwargs)

    def required(self) -> list[str]:
        return [name for name, p in self.params.items() if p.default is p.empty]

    def description(self, name: str) -> str | None:
        return _annotated_description(self.hints.get(name)) or self.param_docs.get(name)

    # -- schemas ----------------------------------------------------------------------------------
    def input_schema(self) -> dict[str, Any]:
        """The tool's inputSchema: one property per parameter, required when it has no default."""
        builder = _SchemaBuilder(self.what)
        properties: dict[str, Any] = {}
        for name, param in self.params.items():
            prop = builder.schema(self.hints.get(name, Any))
            description = self.description(name)
            if description and "description" not in prop:
                prop = {**prop, "description": description}
            if param.default is not param.empty and _is_json(param.default):
                prop = {**prop, "default": param.default}
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
        returned = self.hints.get("return", Any)
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
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
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
            import asyncio

            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name="shipcode-mcp-async", daemon=True).start()
            _loop = loop
        return _loop


def run_coroutine(coroutine: Coroutine[Any, Any, Any], context: RequestContext | None) -> Any:
    """Run `coroutine` on the async handlers' loop and wait for it; cancelling the request cancels it."""
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
        raise Cancelled() from None


# -- type hints ---------------------------------------------------------------------------------------
def _hints(fn: Callable[..., Any]) -> dict[str, Any]:
    try:
        return typing.get_type_hints(fn, include_extras=True)
    except Exception:  # an unresolvable forward reference: fall back to what is written
        return dict(getattr(fn, "__annotations__", {}))


def _is_context(param: inspect.Parameter, hint: Any) -> bool:
    if hint is RequestContext or (isinstance(hint, type) and issubclass(hint, RequestContext)):
        return True
    if isinstance(hint, str):
        return hint.rsplit(".", 1)[-1] in ("Context", "RequestContext")
    return hint is param.empty and param.name in _CONTEXT_NAMES


def _strip_annotated(hint: Any) -> Any:
    while typing.get_origin(hint) is typing.Annotated:
        hint = typing.get_args(hint)[0]
    return hint


def _annotated_description(hint: Any) -> str | None:
    if typing.get_origin(hint) is typing.Annotated:
        return next((m for m in typing.get_args(hint)[1:] if isinstance(m, str)), None)
    return None


def _abc_name(origin: Any) -> str | None:
    return origin.__name__ if getattr(origin, "__module__", None) in ("collections.abc", "typing") else None


def _is_typeddict(hint: Any) -> bool:
    return isinstance(hint, type) and issubclass(hint, dict) and hasattr(hint, "__required_keys__")


def _is_model(hint: Any) -> bool:
    return isinstance(hint, type) and hasattr(hint, "model_json_schema") and hasattr(hint, "model_validate")


def _is_object_type(hint: Any) -> bool:
    return _is_typeddict(hint) or _is_model(hint) or (isinstance(hint, type) and dataclasses.is_dataclass(hint))


def _is_structured(hint: Any) -> bool:
    """Whether a return type names a shape precise enough to promise an outputSchema."""
    hint = _strip_annotated(hint)
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if hint in (int, float, bool) or _is_object_type(hint):
        return True
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return True
    if origin is typing.Literal:
        return True
    if origin in _UNION_TYPES:
        options = [a for a in args if a is not type(None)]
        return bool(options) and all(_is_structured(a) or a is str for a in options) and any(_is_structured(a) for a in options)
    if origin in _ARRAYS or _abc_name(origin) in _ABC_ARRAYS:
        return bool(args) and all(a is Ellipsis or a is str or _is_structured(a) for a in args)
    return False  # dicts too: a content block is a dict, so a dict return type promises nothing


def _converter(hint: Any) -> Callable[[Any], Any] | None:
    """How to turn a JSON argument into what the parameter's type asks for, if anything."""
    hint = _strip_annotated(hint)
    if typing.get_origin(hint) in _UNION_TYPES:
        options = [a for a in typing.get_args(hint) if a is not type(None)]
        if len(options) != 1:
            return None
        inner = _converter(options[0])
        return None if inner is None else (lambda value: None if value is None else inner(value))
    if isinstance(hint, type):
        if issubclass(hint, enum.Enum):
            return hint
        if _is_model(hint):
            return hint.model_validate  # type: ignore[attr-defined, no-any-return]
        if dataclasses.is_dataclass(hint):
            cls = hint
            return lambda value: cls(**value) if isinstance(value, dict) else value
    origin = typing.get_origin(hint)
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
            out = {**out, "description": description}
        return out

    def _schema(self, hint: Any) -> dict[str, Any]:
        if hint is Any or hint is inspect.Parameter.empty or hint is object:
            return {}
        if hint in _PRIMITIVES:
            return {"type": _PRIMITIVES[hint]}
        origin = typing.get_origin(hint)
        args = typing.get_args(hint)
        if origin in _UNION_TYPES:
            return {"anyOf": [self.schema(a) for a in args]}
        if origin is typing.Literal:
            return _enum_schema(list(args))
        if isinstance(hint, type) and issubclass(hint, enum.Enum):
            return _enum_schema([member.value for member in hint])
        if hint in _ARRAYS or origin in _ARRAYS or _abc_name(origin) in _ABC_ARRAYS:
            return self._array(origin or hint, args)
        if hint is dict or origin is dict or _abc_name(origin) in _ABC_MAPPINGS:
            out: dict[str, Any] = {"type": "object"}
            if len(args) == 2 and args[1] is not Any:
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
        if args and args[0] is not Any:
            out["items"] = self.schema(args[0])
        if _ARRAYS.get(origin) or _abc_name(origin) in ("Set", "MutableSet", "AbstractSet"):
            out["uniqueItems"] = True
        return out

    def _object(self, hint: type) -> dict[str, Any]:
        if _is_model(hint):
            schema = dict(hint.model_json_schema())  # type: ignore[attr-defined]
            self.defs.update(schema.pop("$defs", {}))
            return schema
        properties: dict[str, Any] = {}
        required: list[str] = []
        hints = typing.get_type_hints(hint, include_extras=True)
        if _is_typeddict(hint):
            for name, field_hint in hints.items():
                properties[name] = self.schema(field_hint)
            required = [name for name in hints if name in hint.__required_keys__]  # type: ignore[attr-defined]
        else:
            for field in dataclasses.fields(hint):
                properties[field.name] = self.schema(hints.get(field.name, Any))
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

"""What a server offers: tools, resources, resource templates, prompts, and the shapes they return.

Each class knows how to render itself in the spec's property order, so the wire output is exact.
"""

from __future__ import annotations

import json
import re

from . import jsonrpc
from .validation import schema_validator

TYPE_CHECKING = False  # typing is not imported at start
if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Iterable
    from typing import Any

    from .context import Context

    PlainSchema = tuple[dict[str, Callable[[Any], bool] | None], tuple[str, ...], bool]

    Content = dict[str, Any]
    ToolHandler = Callable[[Context, dict[str, Any]], Any]
    ReadResult = str | bytes | Content | list[Content]
    ResourceReader = Callable[[Context, str], ReadResult]
    TemplateReader = Callable[[Context, str, dict[str, str]], ReadResult]
    Completer = Callable[[str, dict[str, str]], list[str]]
    PromptResult = str | list[Any] | dict[str, Any]
    PromptHandler = Callable[[Context, dict[str, str]], PromptResult]


class Completion(list[str]):
    """A completer's values when it stopped collecting before the end (a folder of a million names): `total`
    is how many there are in all, or None when it did not count them (the answer then leaves `total` out and
    says `hasMore` as soon as more than 100 came)."""

    def __init__(self, values: Iterable[str], total: int | None = None) -> None:
        super().__init__(values)
        self.total = total


class ToolError(Exception):
    """A tool failed in a way the model should see and may correct: becomes an `isError` result."""


class ResourceNotFound(jsonrpc.JsonRpcError):
    """-32002 with the URI as data; the same answer whatever the reason, so nothing leaks."""

    def __init__(self, uri: str) -> None:
        super().__init__(jsonrpc.RESOURCE_NOT_FOUND, data={"uri": uri})


def _causes(err: Any) -> list[Any]:
    """What to tell the model of a validation error: for an optional argument written as
    `anyOf: [T, null]` (so that every provider can express it), the reasons its value is not a T, not
    that it matches none of the branches."""
    branches = getattr(err.kind, "context", None) if type(err.kind).__name__ == "AnyOf" else None
    if branches:
        for branch in branches:
            if not all('of type "null"' in inner.message for inner in branch):
                return list(branch)
    return [err]


def described(schema: dict[str, Any], description: str) -> dict[str, Any]:
    """`schema` with `description`: in the typed branch when it is nullable (`anyOf` of a type and null),
    else beside. google-genai's MCP conversion unwraps such an `anyOf` and keeps that branch only, so a
    description beside it never reached Gemini; every other converter reads it in the branch as well."""
    branches = schema.get("anyOf")
    if type(branches) is list and len(branches) == 2 and {"type": "null"} in branches:
        typed = 1 - branches.index({"type": "null"})
        if type(branches[typed]) is dict and "description" not in branches[typed]:
            inner = list(branches)
            inner[typed] = {**branches[typed], "description": description}
            return {**schema, "anyOf": inner}
    return {**schema, "description": description}


def _put(target: dict[str, Any], key: str, value: Any) -> None:
    if value is not None:
        target[key] = value


# -- content blocks -------------------------------------------------------------------------------
def text_content(text: str) -> Content:
    return {"type": "text", "text": text}


def image_content(data: bytes, mime_type: str) -> Content:
    return {"type": "image", "data": _base64(data), "mimeType": mime_type}


def audio_content(data: bytes, mime_type: str) -> Content:
    return {"type": "audio", "data": _base64(data), "mimeType": mime_type}


def _base64(data: bytes) -> str:
    import base64  # off the start-up budget: only binary content needs it

    return base64.b64encode(data).decode("ascii")


def resource_link(uri: str, name: str, *, title: str | None = None, description: str | None = None,
                  mime_type: str | None = None, size: int | None = None) -> Content:
    block: Content = {"type": "resource_link", "uri": uri, "name": name}
    _put(block, "title", title)
    _put(block, "description", description)
    _put(block, "mimeType", mime_type)
    _put(block, "size", size)
    return block


def text_resource(uri: str, text: str, mime_type: str | None = None) -> Content:
    contents: Content = {"uri": uri}
    _put(contents, "mimeType", mime_type)
    contents["text"] = text
    return contents


def blob_resource(uri: str, data: bytes, mime_type: str | None = None) -> Content:
    contents: Content = {"uri": uri}
    _put(contents, "mimeType", mime_type)
    contents["blob"] = _base64(data)
    return contents


def embedded_resource(uri: str, data: str | bytes, mime_type: str | None = None) -> Content:
    """A `resource` content block: text for a str, base64 `blob` for bytes."""
    contents = text_resource(uri, data, mime_type) if isinstance(data, str) else blob_resource(uri, data, mime_type)
    return {"type": "resource", "resource": contents}


# -- tools --------------------------------------------------------------------------------------
class ToolResult:
    __slots__ = ("content", "is_error", "structured")

    def __init__(self, content: list[Content] | None = None, structured: dict[str, Any] | None = None,
                 is_error: bool = False) -> None:
        self.content = content if content is not None else []
        self.structured = structured
        self.is_error = is_error

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"content": self.content}
        _put(out, "structuredContent", self.structured)
        out["isError"] = self.is_error
        return out

    @classmethod
    def error(cls, message: str) -> ToolResult:
        return cls([text_content(message)], is_error=True)


class Tool:
    """A tool; `inline` ones are quick and never block, so they run on the reading loop."""

    _plain: PlainSchema | bool | None = None  # see check_arguments: set on its first call, False if not plain

    def __init__(self, name: str, handler: ToolHandler, input_schema: dict[str, Any] | None = None, *,
                 description: str | None = None, title: str | None = None,
                 output_schema: dict[str, Any] | None = None, annotations: dict[str, Any] | None = None,
                 meta: dict[str, Any] | None = None, inline: bool = False, task_support: str | None = None) -> None:
        if task_support not in (None, "optional", "required"):
            raise ValueError(f"tool {name}: task_support is 'optional', 'required' or None, not {task_support!r}")
        if task_support is not None and inline:
            raise ValueError(f"tool {name}: a tool that runs on the reading loop cannot become a task")
        self.name = name
        self.handler = handler
        self.input_schema = input_schema if input_schema is not None else {"type": "object"}
        self.description = description
        self.title = title
        self.output_schema = output_schema
        self.annotations = annotations
        self.meta = meta
        self.inline = inline
        # "optional" or "required": a call may become a task (tasks extension) when its handler says so
        # (Context.run_as_task); "required": a modern client that did not declare the extension is refused.
        self.task_support = task_support
        # Set for an output schema derived from a return type that is not an object: the value is
        # then sent as structuredContent {"result": value}.
        self.wrap_output = False
        # The coroutine version of `handler`, for an `async def` tool: an asyncio runner awaits it on its
        # own loop, where a threaded runner calls `handler` on a worker.
        self.async_handler: Callable[[Context, dict[str, Any]], Awaitable[Any]] | None = None
        self._validator: Any = None
        self._output_validator: Any = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name}
        _put(out, "title", self.title)
        _put(out, "description", self.description)
        out["inputSchema"] = self.input_schema
        _put(out, "outputSchema", self.output_schema)
        _put(out, "annotations", self.annotations)
        _put(out, "_meta", self.meta)
        return out

    def check_arguments(self, arguments: dict[str, Any]) -> str | None:
        """None when the arguments fit the input schema, else what is wrong, for the model to read.

        Arguments that plainly fit a plain schema (typed properties, `required`, `additionalProperties`)
        are accepted without loading jsonschema_rs, which would double a small server's memory at rest
        (docs/performance.md); any other schema, and every rejection with its message, is the validator's.
        tests/test_plain_arguments.py checks the two agree on every kind of plain schema and argument.
        """
        if self._validator is None:
            if self._plain is None:
                self._plain = _plain_schema(self.input_schema)
            plain = self._plain
            if isinstance(plain, tuple) and _plainly_fits(plain, arguments):
                return None
            try:
                self._validator = schema_validator(self.input_schema)
            except ValueError as unusable:
                return f"Tool {self.name} cannot check its arguments: its inputSchema is not usable here ({unusable})"
        problems = []
        for err in self._validator.iter_errors(arguments):
            for cause in _causes(err):
                where = "/".join(str(part) for part in cause.instance_path)
                problems.append(f"{where}: {cause.message}" if where else cause.message)
        if not problems:
            return None
        return f"Invalid arguments for tool {self.name}: " + "; ".join(sorted(problems))

    def check_output(self, structured: Any) -> str | None:
        """None when `structured` fits the output schema, else what is wrong (a bug in the tool)."""
        if self.output_schema is None:
            return None
        if self._output_validator is None:
            try:
                self._output_validator = schema_validator(self.output_schema)
            except ValueError as err:
                return f"Tool {self.name} cannot check its output: its outputSchema is not usable here ({err})"
        problems = [err.message for err in self._output_validator.iter_errors(structured)]
        if not problems:
            return None
        return f"Tool {self.name} returned output that does not fit its outputSchema: " + "; ".join(sorted(problems))

    def result(self, value: Any) -> dict[str, Any]:
        """Turn what a handler returned into a CallToolResult."""
        if self.wrap_output and not isinstance(value, ToolResult):
            return ToolResult([text_content(json.dumps(value, ensure_ascii=False))], {"result": value}).to_dict()
        if isinstance(value, ToolResult):
            return value.to_dict()
        if value is None:
            return ToolResult().to_dict()
        if isinstance(value, str):
            return ToolResult([text_content(value)]).to_dict()
        if isinstance(value, dict) and value.get("type") in _CONTENT_TYPES:
            return ToolResult([value]).to_dict()
        if isinstance(value, list) and all(isinstance(v, dict) and v.get("type") in _CONTENT_TYPES for v in value):
            return ToolResult(value).to_dict()
        if isinstance(value, dict):
            # Structured output, with its JSON as text for clients that predate structuredContent.
            return ToolResult([text_content(json.dumps(value, ensure_ascii=False))], value).to_dict()
        if self.output_schema is not None:
            return ToolResult([text_content(json.dumps(value, ensure_ascii=False))], {"result": value}).to_dict()
        return ToolResult([text_content(json.dumps(value, ensure_ascii=False))]).to_dict()


# JSON Schema types, as the C JSON decoder produces them (a bool is no integer; 1.0 is left to the validator).
_PLAIN_TYPES: dict[str, Callable[[Any], bool]] = {
    "string": lambda value: isinstance(value, str),
    "integer": lambda value: type(value) is int,
    "number": lambda value: type(value) in (int, float),
    "boolean": lambda value: isinstance(value, bool),
    "null": lambda value: value is None,
    "object": lambda value: isinstance(value, dict),
    "array": lambda value: isinstance(value, list),
}
_PLAIN_TEXT = ("title", "description", "$comment")  # annotations, which the meta-schema wants as strings


def _plain_schema(schema: Any) -> PlainSchema | bool:
    """(type check of each property, None for any value; required names; closed) or False.

    Only object schemas whose every keyword is one of `properties` (each holding only a `type` from
    _PLAIN_TYPES), `required`, a boolean `additionalProperties` and string annotations: they are
    valid schemas in every draft, and an instance fits them exactly when `_plainly_fits` says so.
    """
    if not isinstance(schema, dict) or schema.get("type") != "object":
        return False
    if not set(schema) <= {"type", "properties", "required", "additionalProperties", *_PLAIN_TEXT}:
        return False
    properties = schema.get("properties", {})
    required = schema.get("required", [])
    closed = schema.get("additionalProperties", True) is False
    if (not isinstance(properties, dict) or not isinstance(required, list)
            or not all(isinstance(name, str) for name in required) or len(set(required)) != len(required)
            or not isinstance(schema.get("additionalProperties", True), bool)
            or not all(isinstance(schema.get(key, ""), str) for key in _PLAIN_TEXT)):
        return False
    checks: dict[str, Callable[[Any], bool] | None] = {}
    for name, sub in properties.items():
        if (not isinstance(sub, dict) or not set(sub) <= {"type", *_PLAIN_TEXT}
                or not all(isinstance(sub.get(key, ""), str) for key in _PLAIN_TEXT)):
            return False
        if "type" not in sub:
            checks[name] = None
        elif isinstance(sub["type"], str) and sub["type"] in _PLAIN_TYPES:
            checks[name] = _PLAIN_TYPES[sub["type"]]
        else:  # a list of types, or not a type at all (null is not): the validator's
            return False
    return checks, tuple(required), closed


def _plainly_fits(plain: PlainSchema, arguments: dict[str, Any]) -> bool:
    checks, required, closed = plain
    for name, value in arguments.items():
        if name not in checks:
            if closed:
                return False
            continue
        check = checks[name]
        if check is not None and not check(value):
            return False
    return all(name in arguments for name in required)


_CONTENT_TYPES = frozenset({"text", "image", "audio", "resource_link", "resource"})


# -- resources ------------------------------------------------------------------------------------
class Resource:
    """A resource with a fixed URI; `inline` readers are quick and run on the reading loop."""

    __slots__ = ("annotations", "description", "inline", "meta", "mime_type", "name", "reader", "size", "title", "uri")

    def __init__(self, uri: str, name: str, *, title: str | None = None, description: str | None = None,
                 mime_type: str | None = None, size: int | None = None, annotations: dict[str, Any] | None = None,
                 meta: dict[str, Any] | None = None, reader: ResourceReader | None = None, inline: bool = False) -> None:
        self.uri = uri
        self.name = name
        self.title = title
        self.description = description
        self.mime_type = mime_type
        self.size = size
        self.annotations = annotations
        self.meta = meta
        self.reader = reader
        self.inline = inline

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"uri": self.uri, "name": self.name}
        _put(out, "title", self.title)
        _put(out, "description", self.description)
        _put(out, "mimeType", self.mime_type)
        _put(out, "size", self.size)
        _put(out, "annotations", self.annotations)
        _put(out, "_meta", self.meta)
        return out


def read_contents(uri: str, value: ReadResult, mime_type: str | None) -> list[Content]:
    """Normalise a reader's return value to the `contents` list of a ReadResourceResult."""
    if isinstance(value, str):
        return [text_resource(uri, value, mime_type)]
    if isinstance(value, (bytes, bytearray)):
        return [blob_resource(uri, bytes(value), mime_type)]
    if isinstance(value, dict):
        return [value]
    return list(value)


_EXPRESSION = re.compile(r"\{([+#./;?&]?)([A-Za-z0-9_]+)\*?\}")


def template_variables(template: str) -> list[str]:
    """The names of the variables of an RFC 6570 URI template, in order."""
    return [match.group(2) for match in _EXPRESSION.finditer(template)]


def compile_template(template: str) -> re.Pattern[str]:
    """A matcher for the RFC 6570 templates resource URIs use: {var} is one segment, {+var} any text."""
    pattern = []
    position = 0
    for match in _EXPRESSION.finditer(template):
        pattern.append(re.escape(template[position:match.start()]))
        operator, name = match.groups()
        if operator in ("+", "#"):
            pattern.append(f"(?P<{name}>.*)")
        elif operator == "/":
            pattern.append(f"/(?P<{name}>[^/?#]*)")
        else:
            pattern.append(f"(?P<{name}>[^/?#]*)")
        position = match.end()
    pattern.append(re.escape(template[position:]))
    return re.compile("".join(pattern) + r"\Z", re.DOTALL)


class ResourceTemplate:
    def __init__(self, uri_template: str, name: str, reader: TemplateReader, *, title: str | None = None,
                 description: str | None = None, mime_type: str | None = None,
                 annotations: dict[str, Any] | None = None, meta: dict[str, Any] | None = None,
                 completers: dict[str, Completer] | None = None, inline: bool = False) -> None:
        self.uri_template = uri_template
        self.name = name
        self.reader = reader
        self.title = title
        self.description = description
        self.mime_type = mime_type
        self.annotations = annotations
        self.meta = meta
        self.completers = completers if completers is not None else {}
        self.inline = inline
        self._matcher: re.Pattern[str] | None = None

    def match(self, uri: str) -> dict[str, str] | None:
        """The template's variables if `uri` fits it; {var} values are percent-decoded, {+var} kept."""
        if self._matcher is None:
            self._matcher = compile_template(self.uri_template)
        found = self._matcher.match(uri)
        if found is None:
            return None
        from urllib.parse import unquote  # off the start-up budget: only a template's match needs it

        return {name: value if self._reserved(name) else unquote(value) for name, value in found.groupdict().items()}

    def _reserved(self, name: str) -> bool:
        return "{+" + name + "}" in self.uri_template or "{#" + name + "}" in self.uri_template

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"uriTemplate": self.uri_template, "name": self.name}
        _put(out, "title", self.title)
        _put(out, "description", self.description)
        _put(out, "mimeType", self.mime_type)
        _put(out, "annotations", self.annotations)
        _put(out, "_meta", self.meta)
        return out


# -- prompts --------------------------------------------------------------------------------------
class PromptArgument:
    __slots__ = ("complete", "description", "name", "required", "title")

    def __init__(self, name: str, description: str | None = None, required: bool = False, *,
                 title: str | None = None, complete: Completer | None = None) -> None:
        self.name = name
        self.description = description
        self.required = required
        self.title = title
        self.complete = complete

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name}
        _put(out, "title", self.title)
        _put(out, "description", self.description)
        if self.required:
            out["required"] = True
        return out


class Prompt:
    """A prompt template; `inline` ones are quick and run on the reading loop."""

    __slots__ = ("arguments", "description", "handler", "inline", "meta", "name", "title")

    def __init__(self, name: str, handler: PromptHandler, *, title: str | None = None,
                 description: str | None = None, arguments: list[PromptArgument] | None = None,
                 meta: dict[str, Any] | None = None, inline: bool = False) -> None:
        self.name = name
        self.handler = handler
        self.title = title
        self.description = description
        self.arguments = arguments if arguments is not None else []
        self.meta = meta
        self.inline = inline

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name}
        _put(out, "title", self.title)
        _put(out, "description", self.description)
        if self.arguments:
            out["arguments"] = [argument.to_dict() for argument in self.arguments]
        _put(out, "_meta", self.meta)
        return out

    def result(self, value: PromptResult) -> dict[str, Any]:
        """A GetPromptResult from a string (one user message), a list, or a full result.

        In a list, a string is a user text message and a bare content block a user message.
        What comes out is checked, so a handler's mistake is a clear error rather than a bad reply.
        """
        if isinstance(value, str):
            value = [value]
        if isinstance(value, list):
            out: dict[str, Any] = {}
            _put(out, "description", self.description)
            out["messages"] = [_prompt_message(item) for item in value]
        else:
            out = value
        messages = out.get("messages") if isinstance(out, dict) else None
        if not isinstance(messages, list) or not all(
            isinstance(m, dict) and m.get("role") in ("user", "assistant")
            and isinstance(m.get("content"), dict) and m["content"].get("type") in _CONTENT_TYPES
            for m in messages
        ):
            raise TypeError(f"prompt {self.name} returned {value!r:.200}, not messages of a role and a content block")
        return out


def _prompt_message(item: Any) -> Any:
    if isinstance(item, str):
        return {"role": "user", "content": text_content(item)}
    if isinstance(item, dict) and "role" not in item and item.get("type") in _CONTENT_TYPES:
        return {"role": "user", "content": item}
    return item


def inside(path: str, folder: str) -> bool:
    """Whether `path` is `folder` or lies beneath it, in a '/'-separated hierarchy: the one test of
    "inside" in the package, for paths in a root and for resource URIs in a subscribed one.

    Both are normalised ('..' already undone); they are compared as written, so no link is resolved.
    Whole components only (/a/bc is not inside /a/b); everything is inside /; a trailing '/' on either
    changes nothing.
    """
    base = folder.rstrip("/")
    return path.rstrip("/") == base or path.startswith(base + "/")

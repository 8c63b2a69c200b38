"""What a server offers: tools, resources, resource templates, prompts, and the shapes they return.

Each class knows how to render itself in the spec's property order, so the wire output is exact.
"""

from __future__ import annotations

import base64
import json
import re

from . import jsonrpc

TYPE_CHECKING = False  # typing is not imported at run time: start-up time counts
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from .context import RequestContext

    Content = dict[str, Any]
    ToolHandler = Callable[[RequestContext, dict[str, Any]], Any]
    ReadResult = str | bytes | Content | list[Content]
    ResourceReader = Callable[[RequestContext, str], ReadResult]
    TemplateReader = Callable[[RequestContext, str, dict[str, str]], ReadResult]
    Completer = Callable[[str, dict[str, str]], list[str]]
    PromptResult = str | list[dict[str, Any]] | dict[str, Any]
    PromptHandler = Callable[[RequestContext, dict[str, str]], PromptResult]


class ToolError(Exception):
    """A tool failed in a way the model should see and may correct: becomes an `isError` result."""


class ResourceNotFound(jsonrpc.JsonRpcError):
    """-32002 with the URI as data; the same answer whatever the reason, so nothing leaks."""

    def __init__(self, uri: str) -> None:
        super().__init__(jsonrpc.RESOURCE_NOT_FOUND, data={"uri": uri})


def _put(target: dict[str, Any], key: str, value: Any) -> None:
    if value is not None:
        target[key] = value


# -- content blocks -------------------------------------------------------------------------------
def text_content(text: str) -> Content:
    return {"type": "text", "text": text}


def image_content(data: bytes, mime_type: str) -> Content:
    return {"type": "image", "data": base64.b64encode(data).decode("ascii"), "mimeType": mime_type}


def audio_content(data: bytes, mime_type: str) -> Content:
    return {"type": "audio", "data": base64.b64encode(data).decode("ascii"), "mimeType": mime_type}


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
    contents["blob"] = base64.b64encode(data).decode("ascii")
    return contents


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

    def __init__(self, name: str, handler: ToolHandler, input_schema: dict[str, Any] | None = None, *,
                 description: str | None = None, title: str | None = None,
                 output_schema: dict[str, Any] | None = None, annotations: dict[str, Any] | None = None,
                 meta: dict[str, Any] | None = None, inline: bool = False) -> None:
        self.name = name
        self.handler = handler
        self.input_schema = input_schema if input_schema is not None else {"type": "object"}
        self.description = description
        self.title = title
        self.output_schema = output_schema
        self.annotations = annotations
        self.meta = meta
        self.inline = inline
        self._validator: Any = None

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
        """None when the arguments fit the input schema, else what is wrong, for the model to read."""
        if self._validator is None:
            import jsonschema_rs  # lazily: start-up does not pay for it

            self._validator = jsonschema_rs.validator_for(self.input_schema)
        problems = []
        for err in self._validator.iter_errors(arguments):
            where = "/".join(str(part) for part in err.instance_path)
            problems.append(f"{where}: {err.message}" if where else err.message)
        if not problems:
            return None
        return f"Invalid arguments for tool {self.name}: " + "; ".join(sorted(problems))

    def result(self, value: Any) -> dict[str, Any]:
        """Turn what a handler returned into a CallToolResult."""
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


_CONTENT_TYPES = frozenset({"text", "image", "audio", "resource_link", "resource"})


# -- resources ------------------------------------------------------------------------------------
class Resource:
    __slots__ = ("annotations", "description", "meta", "mime_type", "name", "reader", "size", "title", "uri")

    def __init__(self, uri: str, name: str, *, title: str | None = None, description: str | None = None,
                 mime_type: str | None = None, size: int | None = None, annotations: dict[str, Any] | None = None,
                 meta: dict[str, Any] | None = None, reader: ResourceReader | None = None) -> None:
        self.uri = uri
        self.name = name
        self.title = title
        self.description = description
        self.mime_type = mime_type
        self.size = size
        self.annotations = annotations
        self.meta = meta
        self.reader = reader

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
                 completers: dict[str, Completer] | None = None) -> None:
        self.uri_template = uri_template
        self.name = name
        self.reader = reader
        self.title = title
        self.description = description
        self.mime_type = mime_type
        self.annotations = annotations
        self.meta = meta
        self.completers = completers if completers is not None else {}
        self._matcher: re.Pattern[str] | None = None

    def match(self, uri: str) -> dict[str, str] | None:
        """The template's variables if `uri` fits it; {var} values are percent-decoded, {+var} kept."""
        if self._matcher is None:
            self._matcher = compile_template(self.uri_template)
        found = self._matcher.match(uri)
        if found is None:
            return None
        from urllib.parse import unquote

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
    __slots__ = ("arguments", "description", "handler", "meta", "name", "title")

    def __init__(self, name: str, handler: PromptHandler, *, title: str | None = None,
                 description: str | None = None, arguments: list[PromptArgument] | None = None,
                 meta: dict[str, Any] | None = None) -> None:
        self.name = name
        self.handler = handler
        self.title = title
        self.description = description
        self.arguments = arguments if arguments is not None else []
        self.meta = meta

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name}
        _put(out, "title", self.title)
        _put(out, "description", self.description)
        if self.arguments:
            out["arguments"] = [argument.to_dict() for argument in self.arguments]
        _put(out, "_meta", self.meta)
        return out

    def result(self, value: PromptResult) -> dict[str, Any]:
        """A GetPromptResult from a string (one user message), a message list, or a full result."""
        if isinstance(value, str):
            value = [{"role": "user", "content": text_content(value)}]
        if isinstance(value, list):
            out: dict[str, Any] = {}
            _put(out, "description", self.description)
            out["messages"] = value
            return out
        return value

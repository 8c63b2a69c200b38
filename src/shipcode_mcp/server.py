"""The server: registries of what it offers, capabilities derived from them, and the MCP methods.

`REQUEST_HANDLERS` at the bottom maps every MCP request method to the function that answers it.
"""

from __future__ import annotations

import base64
import binascii
import weakref

from . import jsonrpc
from .jsonrpc import JsonRpcError
from .primitives import (
    Prompt,
    Resource,
    ResourceNotFound,
    ResourceTemplate,
    Tool,
    ToolError,
    ToolResult,
    read_contents,
)
from .session import LOG_LEVELS, Deferred

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any, TypeVar

    from .context import RequestContext
    from .session import Session

    T = TypeVar("T")
    ResourceSource = Callable[[], Sequence[Resource]]
    NotificationHandler = Callable[[Session, dict[str, Any]], None]
    RequestHandler = Callable[[Session, RequestContext, dict[str, Any]], dict[str, Any] | Deferred]
    MethodHandler = Callable[["Server", Session, RequestContext, dict[str, Any]], dict[str, Any] | Deferred]


def _invalid(message: str = "Invalid params") -> JsonRpcError:
    return JsonRpcError(jsonrpc.INVALID_PARAMS, message)


def paginate(items: Sequence[T], cursor: Any, page_size: int, key: Callable[[T], str]) -> tuple[Sequence[T], str | None]:
    """One page of `items` and the cursor of the next, if any.

    A cursor is an offset plus a fingerprint of the item just before it, so it stays valid while the
    list is unchanged and a stale or forged one is refused (-32602) rather than silently skipping.
    """
    start = 0
    if cursor is not None:
        if not isinstance(cursor, str):
            raise _invalid("Invalid cursor")
        try:
            offset_text, _, fingerprint = base64.urlsafe_b64decode(cursor.encode("ascii")).decode("ascii").partition(":")
            start = int(offset_text)
        except (ValueError, UnicodeError, binascii.Error):
            raise _invalid("Invalid cursor") from None
        if not 0 < start <= len(items) or _fingerprint(key(items[start - 1])) != fingerprint:
            raise _invalid("Invalid cursor")
    end = start + page_size
    page = items[start:end]
    if end >= len(items):
        return page, None
    token = f"{end}:{_fingerprint(key(items[end - 1]))}"
    return page, base64.urlsafe_b64encode(token.encode("ascii")).decode("ascii")


def _fingerprint(text: str) -> str:
    # crc32, not hash(): cursors must mean the same in every process of a stateless deployment.
    return format(binascii.crc32(text.encode("utf-8", "surrogatepass")), "08x")


class Server:
    """Everything one MCP server offers; shared by all its sessions."""

    def __init__(self, name: str, version: str, *, title: str | None = None, instructions: str | None = None,
                 page_size: int = 100) -> None:
        self.name = name
        self.version = version
        self.title = title
        self.instructions = instructions
        self.page_size = page_size
        self.tools: dict[str, Tool] = {}
        self.resources: dict[str, Resource] = {}
        self.resource_sources: list[ResourceSource] = []
        self.new_listing_hooks: list[Callable[[], None]] = []  # see add_resource_source
        self.resource_templates: list[ResourceTemplate] = []
        self.prompts: dict[str, Prompt] = {}
        self.logging_enabled = False
        self.default_log_level = "info"
        # Optional capability flags; a feature turns them on when it can honour them.
        self.tools_list_changed = False
        self.resources_list_changed = False
        self.prompts_list_changed = False
        self.resources_subscribe = False
        self.subscribe_handler: Callable[[Session, str, bool], None] | None = None
        self.notification_handlers: dict[str, list[NotificationHandler]] = {}
        self.sessions: weakref.WeakSet[Session] = weakref.WeakSet()

    # -- registration ---------------------------------------------------------------------------
    def add_tool(self, tool: Tool) -> Tool:
        self.tools[tool.name] = tool
        self._changed("tools", self.tools_list_changed)
        return tool

    def remove_tool(self, name: str) -> None:
        if self.tools.pop(name, None) is not None:
            self._changed("tools", self.tools_list_changed)

    def add_resource(self, resource: Resource) -> Resource:
        self.resources[resource.uri] = resource
        self._changed("resources", self.resources_list_changed)
        return resource

    def remove_resource(self, uri: str) -> None:
        if self.resources.pop(uri, None) is not None:
            self._changed("resources", self.resources_list_changed)

    def add_resource_source(self, source: ResourceSource, *, on_new_listing: Callable[[], None] | None = None) -> None:
        """A callable that lists resources when asked (a directory tree, say) rather than up front.

        It is called for every page of resources/list, and cursors index its result. `on_new_listing`
        runs when a client starts a listing (no cursor), so a source that keeps its result between
        pages (rather than walk a big tree once per page) knows when to look afresh.
        """
        self.resource_sources.append(source)
        if on_new_listing is not None:
            self.new_listing_hooks.append(on_new_listing)

    def add_resource_template(self, template: ResourceTemplate) -> ResourceTemplate:
        self.resource_templates.append(template)
        return template

    def add_prompt(self, prompt: Prompt) -> Prompt:
        self.prompts[prompt.name] = prompt
        self._changed("prompts", self.prompts_list_changed)
        return prompt

    def remove_prompt(self, name: str) -> None:
        if self.prompts.pop(name, None) is not None:
            self._changed("prompts", self.prompts_list_changed)

    def on_notification(self, method: str, handler: NotificationHandler) -> None:
        self.notification_handlers.setdefault(method, []).append(handler)

    def _changed(self, registry: str, announce: bool) -> None:
        if announce:
            self.broadcast(f"notifications/{registry}/list_changed")

    def broadcast(self, method: str, params: dict[str, Any] | None = None) -> None:
        """Send a notification to every initialized session."""
        for session in list(self.sessions):
            if session.ready:
                session.notify(method, params)

    # -- capabilities ---------------------------------------------------------------------------
    @property
    def has_resources(self) -> bool:
        return bool(self.resources or self.resource_sources or self.resource_templates)

    @property
    def has_completions(self) -> bool:
        return any(a.complete for p in self.prompts.values() for a in p.arguments) or any(
            t.completers for t in self.resource_templates
        )

    def capabilities(self) -> dict[str, Any]:
        """Exactly what is registered and enabled, never more: the spec makes this a MUST."""
        caps: dict[str, Any] = {}
        if self.tools:
            caps["tools"] = {"listChanged": True} if self.tools_list_changed else {}
        if self.has_resources:
            resources: dict[str, Any] = {}
            if self.resources_subscribe:
                resources["subscribe"] = True
            if self.resources_list_changed:
                resources["listChanged"] = True
            caps["resources"] = resources
        if self.prompts:
            caps["prompts"] = {"listChanged": True} if self.prompts_list_changed else {}
        if self.logging_enabled:
            caps["logging"] = {}
        if self.has_completions:
            caps["completions"] = {}
        return caps

    def initialize_result(self, protocol_version: str) -> dict[str, Any]:
        info: dict[str, Any] = {"name": self.name, "version": self.version}
        if self.title is not None:
            info["title"] = self.title
        out: dict[str, Any] = {"protocolVersion": protocol_version, "capabilities": self.capabilities(), "serverInfo": info}
        if self.instructions is not None:
            out["instructions"] = self.instructions
        return out

    # -- dispatch ---------------------------------------------------------------------------------
    def request_handler(self, method: str) -> RequestHandler | None:
        """The handler of `method`, or None when it is unknown or its capability is not offered."""
        entry = REQUEST_HANDLERS.get(method)
        if entry is None:
            return None
        handler, capability = entry
        if capability is not None and not capability(self):
            return None
        return lambda session, context, params: handler(self, session, context, params)

    def notification_handler(self, method: str) -> NotificationHandler | None:
        handlers = self.notification_handlers.get(method)
        if not handlers:
            return None

        def run_all(session: Session, params: dict[str, Any]) -> None:
            for handler in handlers:
                handler(session, params)

        return run_all

    def all_resources(self) -> list[Resource]:
        items = list(self.resources.values())
        for source in self.resource_sources:
            items.extend(source())
        return items

    def find_template(self, uri: str) -> tuple[ResourceTemplate, dict[str, str]] | None:
        for template in self.resource_templates:
            variables = template.match(uri)
            if variables is not None:
                return template, variables
        return None


# -- the MCP methods --------------------------------------------------------------------------------
def _string(params: dict[str, Any], key: str) -> str:
    value = params.get(key)
    if not isinstance(value, str):
        raise _invalid(f"Invalid params: {key} must be a string")
    return value


def _initialize(server: Server, session: Session, context: RequestContext, params: dict[str, Any]) -> dict[str, Any]:
    server.sessions.add(session)
    return session.negotiate(params)


def _ping(server: Server, session: Session, context: RequestContext, params: dict[str, Any]) -> dict[str, Any]:
    return {}


def _list_tools(server: Server, session: Session, context: RequestContext, params: dict[str, Any]) -> dict[str, Any]:
    page, next_cursor = paginate(list(server.tools.values()), params.get("cursor"), server.page_size, lambda t: t.name)
    return _listed("tools", [tool.to_dict() for tool in page], next_cursor)


def _listed(key: str, items: list[dict[str, Any]], next_cursor: str | None) -> dict[str, Any]:
    out: dict[str, Any] = {key: items}
    if next_cursor is not None:
        out["nextCursor"] = next_cursor
    return out


def _call_tool(server: Server, session: Session, context: RequestContext, params: dict[str, Any]) -> dict[str, Any] | Deferred:
    name = _string(params, "name")
    tool = server.tools.get(name)
    if tool is None:
        raise _invalid(f"Unknown tool: {name}")
    arguments = params.get("arguments")
    if arguments is None:
        arguments = {}
    elif not isinstance(arguments, dict):
        raise _invalid("Invalid params: arguments must be an object")

    def work() -> dict[str, Any]:
        problem = tool.check_arguments(arguments)
        if problem is not None:
            return ToolResult.error(problem).to_dict()
        try:
            return tool.result(tool.handler(context, arguments))
        except ToolError as err:
            return ToolResult.error(str(err)).to_dict()

    return work() if tool.inline else Deferred(work)


def _list_resources(server: Server, session: Session, context: RequestContext, params: dict[str, Any]) -> dict[str, Any]:
    if params.get("cursor") is None:
        for hook in server.new_listing_hooks:
            hook()
    page, next_cursor = paginate(server.all_resources(), params.get("cursor"), server.page_size, lambda r: r.uri)
    return _listed("resources", [resource.to_dict() for resource in page], next_cursor)


def _list_resource_templates(server: Server, session: Session, context: RequestContext, params: dict[str, Any]) -> dict[str, Any]:
    page, next_cursor = paginate(server.resource_templates, params.get("cursor"), server.page_size, lambda t: t.uri_template)
    return _listed("resourceTemplates", [template.to_dict() for template in page], next_cursor)


def _read_resource(server: Server, session: Session, context: RequestContext, params: dict[str, Any]) -> Deferred:
    uri = _string(params, "uri")

    def work() -> dict[str, Any]:
        resource = server.resources.get(uri)
        if resource is not None and resource.reader is not None:
            return {"contents": read_contents(uri, resource.reader(context, uri), resource.mime_type)}
        found = server.find_template(uri)
        if found is None:
            raise ResourceNotFound(uri)
        template, variables = found
        return {"contents": read_contents(uri, template.reader(context, uri, variables), template.mime_type)}

    return Deferred(work)


def _subscribe(server: Server, session: Session, context: RequestContext, params: dict[str, Any]) -> dict[str, Any]:
    uri = _string(params, "uri")
    if server.subscribe_handler is not None:
        server.subscribe_handler(session, uri, context.method == "resources/subscribe")
    return {}


def _list_prompts(server: Server, session: Session, context: RequestContext, params: dict[str, Any]) -> dict[str, Any]:
    page, next_cursor = paginate(list(server.prompts.values()), params.get("cursor"), server.page_size, lambda p: p.name)
    return _listed("prompts", [prompt.to_dict() for prompt in page], next_cursor)


def _get_prompt(server: Server, session: Session, context: RequestContext, params: dict[str, Any]) -> Deferred:
    name = _string(params, "name")
    prompt = server.prompts.get(name)
    if prompt is None:
        raise _invalid(f"Unknown prompt: {name}")
    arguments = params.get("arguments") or {}
    if not isinstance(arguments, dict) or not all(isinstance(v, str) for v in arguments.values()):
        raise _invalid("Invalid params: prompt arguments must be an object of strings")
    missing = [a.name for a in prompt.arguments if a.required and a.name not in arguments]
    if missing:
        raise _invalid(f"Missing required argument: {', '.join(missing)}")
    return Deferred(lambda: prompt.result(prompt.handler(context, arguments)))


def _set_log_level(server: Server, session: Session, context: RequestContext, params: dict[str, Any]) -> dict[str, Any]:
    level = params.get("level")
    if level not in LOG_LEVELS:
        raise _invalid(f"Invalid params: level must be one of {', '.join(LOG_LEVELS)}")
    session.log_level = level
    return {}


def _complete(server: Server, session: Session, context: RequestContext, params: dict[str, Any]) -> dict[str, Any]:
    ref = params.get("ref")
    argument = params.get("argument")
    if not isinstance(ref, dict) or not isinstance(argument, dict):
        raise _invalid("Invalid params: ref and argument are required")
    name = argument.get("name")
    value = argument.get("value")
    if not isinstance(name, str) or not isinstance(value, str):
        raise _invalid("Invalid params: argument needs a name and a value")
    extra = params.get("context", {})
    known = extra.get("arguments", {}) if isinstance(extra, dict) else {}
    if not isinstance(known, dict):
        raise _invalid("Invalid params: context.arguments must be an object")
    completer: Callable[[str, dict[str, str]], list[str]] | None = None
    if ref.get("type") == "ref/prompt":
        prompt = server.prompts.get(str(ref.get("name")))
        if prompt is None:
            raise _invalid(f"Unknown prompt: {ref.get('name')}")
        completer = next((a.complete for a in prompt.arguments if a.name == name), None)
    elif ref.get("type") == "ref/resource":
        template = next((t for t in server.resource_templates if t.uri_template == ref.get("uri")), None)
        if template is None:
            raise _invalid(f"Unknown resource template: {ref.get('uri')}")
        completer = template.completers.get(name)
    else:
        raise _invalid("Invalid params: ref.type must be ref/prompt or ref/resource")
    values = list(completer(value, known)) if completer is not None else []
    completion: dict[str, Any] = {"values": values[:100], "total": len(values), "hasMore": len(values) > 100}
    return {"completion": completion}


REQUEST_HANDLERS: dict[str, tuple[MethodHandler, Callable[[Server], bool] | None]] = {
    "initialize": (_initialize, None),
    "ping": (_ping, None),
    "tools/list": (_list_tools, lambda s: bool(s.tools)),
    "tools/call": (_call_tool, lambda s: bool(s.tools)),
    "resources/list": (_list_resources, lambda s: s.has_resources),
    "resources/templates/list": (_list_resource_templates, lambda s: s.has_resources),
    "resources/read": (_read_resource, lambda s: s.has_resources),
    "resources/subscribe": (_subscribe, lambda s: s.resources_subscribe),
    "resources/unsubscribe": (_subscribe, lambda s: s.resources_subscribe),
    "prompts/list": (_list_prompts, lambda s: bool(s.prompts)),
    "prompts/get": (_get_prompt, lambda s: bool(s.prompts)),
    "logging/setLevel": (_set_log_level, lambda s: s.logging_enabled),
    "completion/complete": (_complete, lambda s: s.has_completions),
}
"""Every MCP request method: (handler, the condition under which its capability is offered)."""

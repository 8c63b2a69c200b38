"""The MCP methods: what answers each request. `REQUEST_HANDLERS` at the bottom is the one table from
every request method to its handler; `Server.request_handler` looks it up.

A handler takes the server, the session, the request's context and its params, and returns the result,
or a `Deferred` whose work runs off the reading loop. It reads the server through its public methods.
"""

from __future__ import annotations

from . import jsonrpc, log
from .context import LOG_LEVELS, ClientRequestError
from .jsonrpc import JsonRpcError
from .primitives import ResourceNotFound, ToolError, ToolResult, read_contents
from .session import Deferred

TYPE_CHECKING = False  # typing stays out of the start-up path (see tests/test_startup.py)
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any, TypeVar

    from .context import Context
    from .primitives import Completer, Tool
    from .server import Server
    from .session import Session

    T = TypeVar("T")
    MethodHandler = Callable[[Server, Session, Context, dict[str, Any]], dict[str, Any] | Deferred]


def _invalid(message: str = "Invalid params") -> JsonRpcError:
    return JsonRpcError(jsonrpc.INVALID_PARAMS, message)


def paginate(items: Sequence[T], cursor: Any, page_size: int, key: Callable[[T], str]) -> tuple[Sequence[T], str | None]:
    """One page of `items` and the cursor of the next, if any.

    A cursor is an offset plus a fingerprint of the item just before it, so it stays valid while the
    list is unchanged and a stale or forged one is refused (-32602) rather than silently skipping.
    """
    # off the start-up budget (tests/test_startup.py): only paging needs these
    import base64
    import binascii

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
    import binascii  # off the start-up budget, as in paginate

    return format(binascii.crc32(text.encode("utf-8", "surrogatepass")), "08x")


# -- the MCP methods --------------------------------------------------------------------------------
def _string(params: dict[str, Any], key: str) -> str:
    value = params.get(key)
    if not isinstance(value, str):
        raise _invalid(f"Invalid params: {key} must be a string")
    return value


def _initialize(server: Server, session: Session, context: Context, params: dict[str, Any]) -> dict[str, Any]:
    return session.negotiate(params)


def _ping(server: Server, session: Session, context: Context, params: dict[str, Any]) -> dict[str, Any]:
    return {}


def _list_tools(server: Server, session: Session, context: Context, params: dict[str, Any]) -> dict[str, Any]:
    tools = list(server.tools.values())
    if session.may_call is not None:  # the caller's token does not cover every tool: it sees what it may call
        tools = [tool for tool in tools if session.may_call(tool)]
    page, next_cursor = paginate(tools, params.get("cursor"), server.page_size, lambda t: t.name)
    return _listed("tools", [tool.to_dict() for tool in page], next_cursor)


def _listed(key: str, items: list[dict[str, Any]], next_cursor: str | None) -> dict[str, Any]:
    out: dict[str, Any] = {key: items}
    if next_cursor is not None:
        out["nextCursor"] = next_cursor
    return out


def _call_tool(server: Server, session: Session, context: Context, params: dict[str, Any]) -> dict[str, Any] | Deferred:
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
            return _tool_result(tool, tool.handler(context, arguments))
        except (ToolError, ClientRequestError) as err:
            return _tool_failure(tool, err)

    if tool.inline:
        return work()
    if tool.async_handler is None:
        return Deferred(work)
    handler = tool.async_handler

    async def awork() -> dict[str, Any]:
        problem = tool.check_arguments(arguments)
        if problem is not None:
            return ToolResult.error(problem).to_dict()
        try:
            return _tool_result(tool, await handler(context, arguments))
        except (ToolError, ClientRequestError) as err:
            return _tool_failure(tool, err)

    return Deferred(work, awork=awork)


def _tool_result(tool: Tool, value: Any) -> dict[str, Any]:
    result = tool.result(value)
    if tool.output_schema is not None and not result.get("isError"):
        problem = tool.check_output(result.get("structuredContent"))
        if problem is not None:
            log.error(problem)
            return ToolResult.error(problem).to_dict()
    return result


def _tool_failure(tool: Tool, err: ToolError | ClientRequestError) -> dict[str, Any]:
    if isinstance(err, ClientRequestError) and err.error.code == jsonrpc.MISSING_REQUIRED_CLIENT_CAPABILITY:
        raise err  # modern: a request the client cannot serve is refused as such (-32021), as the spec says
    if isinstance(err, ClientRequestError):  # the client refused, failed or never answered: the model should know
        return ToolResult.error(f"Tool {tool.name} needed the client, which could not answer: {err}").to_dict()
    return ToolResult.error(str(err)).to_dict()


def _list_resources(server: Server, session: Session, context: Context,
                    params: dict[str, Any]) -> dict[str, Any] | Deferred:
    cursor = params.get("cursor")

    def work() -> dict[str, Any]:
        page, next_cursor, meta = server.resources_page(cursor)  # a cursor pins its listing (listings.py)
        out = _listed("resources", [resource.to_dict() for resource in page], next_cursor)
        if meta:
            out["_meta"] = meta
        return out

    # A source may walk a tree (a million files, say): that must never hold up the reading loop.
    return Deferred(work) if server.lists_on_demand else work()


def _list_resource_templates(server: Server, session: Session, context: Context, params: dict[str, Any]) -> dict[str, Any]:
    page, next_cursor = paginate(server.resource_templates(), params.get("cursor"), server.page_size, lambda t: t.uri_template)
    return _listed("resourceTemplates", [template.to_dict() for template in page], next_cursor)


def _read_resource(server: Server, session: Session, context: Context, params: dict[str, Any]) -> dict[str, Any] | Deferred:
    uri = _string(params, "uri")
    resource = server.resources.get(uri)
    found = None if resource is not None and resource.reader is not None else server.find_template(uri)

    def read() -> dict[str, Any]:
        if resource is not None and resource.reader is not None:
            return {"contents": read_contents(uri, resource.reader(context, uri), resource.mime_type)}
        if found is None:
            raise ResourceNotFound(uri)
        template, variables = found
        return {"contents": read_contents(uri, template.reader(context, uri, variables), template.mime_type)}

    target = resource if found is None else found[0]
    return read() if target is not None and target.inline else Deferred(read)


def _subscribe(server: Server, session: Session, context: Context,
               params: dict[str, Any]) -> dict[str, Any] | Deferred:
    """resources/subscribe and unsubscribe. The server's subscribe check (see `Server.on_subscribe`) may walk
    a tree, so a subscribe runs off the reading loop; it is recorded only if no later subscribe or
    unsubscribe of the URI came meanwhile, so the client's last word stands whatever order the work
    finishes in. Unsubscribing is quick and inline."""
    uri = _string(params, "uri")
    turn = session.subscription_turn(uri)
    check = server.subscribe_check
    if context.method == "resources/unsubscribe" or check is None:
        session.settle_subscription(uri, turn, context.method == "resources/subscribe")
        return {}
    kept: list[Any] = []

    def work() -> dict[str, Any]:
        kept.append(check(context, uri))
        return {}

    def settle(session: Session, ok: bool | None) -> None:  # refused: not subscribed; cancelled: as it was
        session.settle_subscription(uri, turn, ok, kept[0] if ok else None)

    return Deferred(work, settle)


def _list_prompts(server: Server, session: Session, context: Context, params: dict[str, Any]) -> dict[str, Any]:
    page, next_cursor = paginate(list(server.prompts.values()), params.get("cursor"), server.page_size, lambda p: p.name)
    return _listed("prompts", [prompt.to_dict() for prompt in page], next_cursor)


def _get_prompt(server: Server, session: Session, context: Context, params: dict[str, Any]) -> dict[str, Any] | Deferred:
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

    def render() -> dict[str, Any]:
        return prompt.result(prompt.handler(context, arguments))

    return render() if prompt.inline else Deferred(render)


def _set_log_level(server: Server, session: Session, context: Context, params: dict[str, Any]) -> dict[str, Any]:
    level = params.get("level")
    if level not in LOG_LEVELS:
        raise _invalid(f"Invalid params: level must be one of {', '.join(LOG_LEVELS)}")
    session.log_level = level
    return {}


def _complete(server: Server, session: Session, context: Context, params: dict[str, Any]) -> dict[str, Any] | Deferred:
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
    completer: Completer | None = None
    ref_type = ref.get("type")
    if ref_type == "ref/prompt":
        prompt = server.prompts.get(str(ref.get("name")))
        if prompt is None:
            raise _invalid(f"Unknown prompt: {ref.get('name')}")
        completer = server.completer(ref_type, prompt.name, name) or next(
            (a.complete for a in prompt.arguments if a.name == name), None)
    elif ref_type == "ref/resource":
        template = next((t for t in server.resource_templates() if t.uri_template == ref.get("uri")), None)
        if template is None:
            raise _invalid(f"Unknown resource template: {ref.get('uri')}")
        completer = server.completer(ref_type, template.uri_template, name) or template.completers.get(name)
    else:
        raise _invalid("Invalid params: ref.type must be ref/prompt or ref/resource")
    if completer is None:
        return _completion([])
    found = completer

    def work() -> dict[str, Any]:
        values = list(found(value, known))
        if not all(isinstance(v, str) for v in values):
            raise TypeError(f"a completer for {name!r} returned values that are not all strings")
        return _completion(values)

    return Deferred(work)


def _completion(values: list[str]) -> dict[str, Any]:
    """At most 100 values, as the spec allows; `total` and `hasMore` tell the client there are more."""
    return {"completion": {"values": values[:100], "total": len(values), "hasMore": len(values) > 100}}


REQUEST_HANDLERS: dict[str, tuple[MethodHandler, tuple[str, ...]]] = {
    "initialize": (_initialize, ()),
    "ping": (_ping, ()),
    "tools/list": (_list_tools, ("tools",)),
    "tools/call": (_call_tool, ("tools",)),
    "resources/list": (_list_resources, ("resources",)),
    "resources/templates/list": (_list_resource_templates, ("resources",)),
    "resources/read": (_read_resource, ("resources",)),
    "resources/subscribe": (_subscribe, ("resources", "subscribe")),
    "resources/unsubscribe": (_subscribe, ("resources", "subscribe")),
    "prompts/list": (_list_prompts, ("prompts",)),
    "prompts/get": (_get_prompt, ("prompts",)),
    "logging/setLevel": (_set_log_level, ("logging",)),
    "completion/complete": (_complete, ("completions",)),
}
"""Every MCP request method: (handler, the capability, and sub-capability, that must be offered for it)."""

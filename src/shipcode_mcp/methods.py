"""The MCP methods: what answers each request. `METHODS` at the bottom is the one table from every
request method to its handler, the capability it needs and the session step it takes, if any.

A handler is a function of (registry, context, params) that returns the result, or a `Deferred` whose
work runs off the reading loop; it reads the registry and changes nothing. The few methods that change
the session (initialize, logging/setLevel, resources/(un)subscribe, subscriptions/listen) name their
step: the handler returns what the step needs, and `Session` (session.py, "every state change in one
file") makes the change and the answer. Notifications change only the session: `Session._receive_notification`.
"""

from __future__ import annotations

from functools import partial

from . import era, jsonrpc, log
from .actions import Deferred
from .context import LOG_LEVELS, PROTOCOL_VERSION, ClientRequestError
from .envelope import declares_tasks, needs_tasks
from .jsonrpc import JsonRpcError
from .paging import paginate
from .primitives import Completion, ResourceNotFound, ToolError, ToolResult, read_contents

TYPE_CHECKING = False  # typing stays out of the start-up path (see tests/test_startup.py)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from .context import Context
    from .primitives import Completer, Tool
    from .registry import ExtensionHandler, Registry

    Handler = Callable[[Registry, Context, dict[str, Any]], dict[str, Any] | Deferred]


def _invalid(message: str = "Invalid params") -> JsonRpcError:
    return JsonRpcError(jsonrpc.INVALID_PARAMS, message)


# -- the MCP methods --------------------------------------------------------------------------------
def _string(params: dict[str, Any], key: str) -> str:
    value = params.get(key)
    if not isinstance(value, str):
        raise _invalid(f"Invalid params: {key} must be a string")
    return value


def _initialize(registry: Registry, context: Context, params: dict[str, Any]) -> dict[str, Any]:
    """We speak one version and offer it whatever the client asked for (the step records the client)."""
    if not isinstance(params.get("capabilities", {}), dict) or not isinstance(params.get("clientInfo", {}), dict):
        raise JsonRpcError(jsonrpc.INVALID_PARAMS)
    return registry.initialize_result(PROTOCOL_VERSION)


def _discover(registry: Registry, context: Context, params: dict[str, Any]) -> dict[str, Any]:
    return registry.discover_result()


def _ping(registry: Registry, context: Context, params: dict[str, Any]) -> dict[str, Any]:
    return {}


def _list_tools(registry: Registry, context: Context, params: dict[str, Any]) -> dict[str, Any]:
    tools = list(registry.tools.values())
    may_call = context.may_call
    if may_call is not None:  # the caller's token does not cover every tool: it sees what it may call
        tools = [tool for tool in tools if may_call(tool)]
    page, next_cursor = paginate(tools, params.get("cursor"), registry.page_size, lambda t: t.name)
    return _listed("tools", [tool.to_dict() for tool in page], next_cursor)


def _listed(key: str, items: list[dict[str, Any]], next_cursor: str | None) -> dict[str, Any]:
    out: dict[str, Any] = {key: items}
    if next_cursor is not None:
        out["nextCursor"] = next_cursor
    return out


def _call_tool(registry: Registry, context: Context, params: dict[str, Any]) -> dict[str, Any] | Deferred:
    name = _string(params, "name")
    tool = registry.tools.get(name)
    if tool is None:
        raise _invalid(f"Unknown tool: {name}")
    arguments = params.get("arguments")
    if arguments is None:
        arguments = {}
    elif not isinstance(arguments, dict):
        raise _invalid("Invalid params: arguments must be an object")
    if tool.task_support is None:
        context.task_offer = None
    elif tool.task_support == "required" and context.task_offer is None and context.task is None \
            and context.protocol_version != PROTOCOL_VERSION:
        raise needs_tasks()  # the extension's word for a task-only tool called by a client that has no tasks

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


def _list_resources(registry: Registry, context: Context,
                    params: dict[str, Any]) -> dict[str, Any] | Deferred:
    cursor = params.get("cursor")

    def work() -> dict[str, Any]:
        page, next_cursor, meta = registry.resources_page(cursor)  # a cursor pins its listing (listings.py)
        out = _listed("resources", [resource.to_dict() for resource in page], next_cursor)
        if meta:
            out["_meta"] = meta
        return out

    # A source may walk a tree (a million files, say): that must never hold up the reading loop.
    return Deferred(work) if registry.lists_on_demand else work()


def _list_resource_templates(registry: Registry, context: Context, params: dict[str, Any]) -> dict[str, Any]:
    page, next_cursor = paginate(registry.resource_templates(), params.get("cursor"), registry.page_size, lambda t: t.uri_template)
    return _listed("resourceTemplates", [template.to_dict() for template in page], next_cursor)


def _read_resource(registry: Registry, context: Context, params: dict[str, Any]) -> dict[str, Any] | Deferred:
    uri = _string(params, "uri")
    resource = registry.resources.get(uri)
    found = None if resource is not None and resource.reader is not None else registry.find_template(uri)

    def read() -> dict[str, Any]:
        if resource is not None and resource.reader is not None:
            return {"contents": read_contents(uri, resource.reader(context, uri), resource.mime_type)}
        if found is None:
            raise ResourceNotFound(uri)
        template, variables = found
        return {"contents": read_contents(uri, template.reader(context, uri, variables), template.mime_type)}

    target = resource if found is None else found[0]
    return read() if target is not None and target.inline else Deferred(read)


def _subscribe(registry: Registry, context: Context, params: dict[str, Any]) -> dict[str, Any] | Deferred:
    """resources/subscribe and unsubscribe: {"subscribed", "kept"} for the session's step. The server's
    subscribe check (see `Server.on_subscribe`) may walk a tree, so a subscribe runs off the reading loop;
    unsubscribing is quick and inline."""
    uri = _string(params, "uri")
    check = registry.subscribe_check
    subscribe = context.method == "resources/subscribe"
    if not subscribe or check is None:
        return {"subscribed": subscribe, "kept": None}
    return Deferred(lambda: {"subscribed": True, "kept": check(context, uri)})


def _listen(registry: Registry, context: Context, params: dict[str, Any]) -> dict[str, Any] | Deferred:
    """subscriptions/listen: {"agreed", "kept"} for the session's step, which opens the subscription: the
    list changes it opted in to that the server announces, and the resources it may subscribe to (the
    server's check runs off the reading loop; a resource it refuses is left out)."""
    wanted = params.get("notifications")
    uris = wanted.get("resourceSubscriptions", []) if type(wanted) is dict else None
    if type(uris) is not list or not all(isinstance(uri, str) for uri in uris):
        raise _invalid("Invalid params: notifications must be an object; resourceSubscriptions a list of URIs")
    assert type(wanted) is dict
    if "taskIds" in wanted and not declares_tasks(context.client_capabilities):
        raise needs_tasks()
    offered = registry.capabilities()
    agreed: dict[str, Any] = {key: True for key, name in era.LIST_FILTERS.items()
                              if wanted.get(key) is True and offered.get(name, {}).get("listChanged")}
    check = registry.subscribe_check
    if not uris or not offered.get("resources", {}).get("subscribe"):
        return {"agreed": agreed, "kept": {}}
    if check is None:
        return {"agreed": agreed, "kept": dict.fromkeys(uris)}

    def work() -> dict[str, Any]:  # the server's check may walk a tree: off the reading loop
        kept: dict[str, Any] = {}
        for uri in uris:
            context.check_cancelled()
            try:
                kept[uri] = check(context, uri)
            except JsonRpcError:  # refused (not found, outside the roots): left out of the acknowledgement
                continue
        return {"agreed": agreed, "kept": kept}

    return Deferred(work)


def _list_prompts(registry: Registry, context: Context, params: dict[str, Any]) -> dict[str, Any]:
    page, next_cursor = paginate(list(registry.prompts.values()), params.get("cursor"), registry.page_size, lambda p: p.name)
    return _listed("prompts", [prompt.to_dict() for prompt in page], next_cursor)


def _get_prompt(registry: Registry, context: Context, params: dict[str, Any]) -> dict[str, Any] | Deferred:
    name = _string(params, "name")
    prompt = registry.prompts.get(name)
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


def _set_log_level(registry: Registry, context: Context, params: dict[str, Any]) -> dict[str, Any]:
    level = params.get("level")
    if level not in LOG_LEVELS:
        raise _invalid(f"Invalid params: level must be one of {', '.join(LOG_LEVELS)}")
    return {"level": level}


def _complete(registry: Registry, context: Context, params: dict[str, Any]) -> dict[str, Any] | Deferred:
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
        prompt = registry.prompts.get(str(ref.get("name")))
        if prompt is None:
            raise _invalid(f"Unknown prompt: {ref.get('name')}")
        completer = registry.completer(ref_type, prompt.name, name) or next(
            (a.complete for a in prompt.arguments if a.name == name), None)
    elif ref_type == "ref/resource":
        template = next((t for t in registry.resource_templates() if t.uri_template == ref.get("uri")), None)
        if template is None:
            raise _invalid(f"Unknown resource template: {ref.get('uri')}")
        completer = registry.completer(ref_type, template.uri_template, name) or template.completers.get(name)
    else:
        raise _invalid("Invalid params: ref.type must be ref/prompt or ref/resource")
    if completer is None:
        return _completion([], 0)
    found = completer

    def work() -> dict[str, Any]:
        given = found(value, known)
        values = list(given)
        if not all(isinstance(v, str) for v in values):
            raise TypeError(f"a completer for {name!r} returned values that are not all strings")
        return _completion(values, given.total if isinstance(given, Completion) else len(values))

    return Deferred(work)


def _extension(handler: ExtensionHandler, registry: Registry, context: Context, params: dict[str, Any]) -> Deferred:
    """A method of an extension (Registry.add_extension): its handler, off the reading loop."""
    return Deferred(partial(handler, context, params))


def _completion(values: list[str], total: int | None = None) -> dict[str, Any]:
    """At most 100 values, as the spec allows; `total` (left out when unknown: a Completion that stopped early)
    and `hasMore` tell the client there are more."""
    out: dict[str, Any] = {"values": values[:100]}
    if total is not None:
        out["total"] = total
    out["hasMore"] = len(values) > 100 or (total is not None and total > 100)
    return {"completion": out}


# -- the tasks extension (io.modelcontextprotocol/tasks, tasks.py) ------------------------------------
def _get_task(registry: Registry, context: Context, params: dict[str, Any]) -> dict[str, Any]:
    """tasks/get: the caller's task, its result, error or questions inlined (-32602 for any other id)."""
    return registry.tasks.detailed(registry.tasks.find(params, context.principal))


def _update_task(registry: Registry, context: Context, params: dict[str, Any]) -> Any:
    """tasks/update: the answers to a task's questions; the task to run again once none is open (the session's
    step starts it), else None."""
    responses = params.get("inputResponses")
    if type(responses) is not dict or not all(type(answer) is dict for answer in responses.values()):
        raise _invalid("Invalid params: inputResponses must map keys to results")
    task = registry.tasks.find(params, context.principal)
    name = task.params.get("name")  # (none once the task ended: nothing runs again)
    tool = registry.tools.get(name) if isinstance(name, str) else None
    if tool is not None and context.may_call is not None and not context.may_call(tool):
        raise _invalid(f"Invalid params: this caller's token does not cover {tool.name}, which the task would run again")
    return task if registry.tasks.answer(task, responses) else None


def _cancel_task(registry: Registry, context: Context, params: dict[str, Any]) -> Any:
    """tasks/cancel: the task ends cancelled (a finished one stays as it is); the run to stop, if any (the
    session's step stops it)."""
    return registry.tasks.cancel(registry.tasks.find(params, context.principal))


class Method:
    """A request method: its handler; the capability (and sub-capability) that must be offered for it; the
    session step it takes (session.py, `Session.STEPS`); whether a legacy session may call it (the modern
    era's methods are `era.MODERN_METHODS`); whether its result is already in its final modern shape."""

    __slots__ = ("handler", "legacy", "needs", "shaped", "step")

    def __init__(self, handler: Handler, needs: tuple[str, ...] = (), *, step: str | None = None,
                 legacy: bool = True, shaped: bool = False) -> None:
        self.handler = handler
        self.needs = needs
        self.step = step
        self.legacy = legacy
        self.shaped = shaped


METHODS: dict[str, Method] = {
    "initialize": Method(_initialize, step="initialize"),
    "ping": Method(_ping),
    "server/discover": Method(_discover, legacy=False, shaped=True),
    "subscriptions/listen": Method(_listen, step="listen", legacy=False),
    "tools/list": Method(_list_tools, ("tools",)),
    "tools/call": Method(_call_tool, ("tools",)),
    "resources/list": Method(_list_resources, ("resources",)),
    "resources/templates/list": Method(_list_resource_templates, ("resources",)),
    "resources/read": Method(_read_resource, ("resources",)),
    "resources/subscribe": Method(_subscribe, ("resources", "subscribe"), step="subscription"),
    "resources/unsubscribe": Method(_subscribe, ("resources", "subscribe"), step="subscription"),
    "prompts/list": Method(_list_prompts, ("prompts",)),
    "prompts/get": Method(_get_prompt, ("prompts",)),
    "logging/setLevel": Method(_set_log_level, ("logging",), step="log level"),
    "completion/complete": Method(_complete, ("completions",)),
    "tasks/get": Method(_get_task, legacy=False),
    "tasks/update": Method(_update_task, step="task update", legacy=False),
    "tasks/cancel": Method(_cancel_task, step="task cancel", legacy=False),
}
"""Every MCP request method, in both eras."""


def lookup(registry: Registry, method: str, capabilities: dict[str, Any] | None = None, *,
           modern: bool = False) -> Method | None:
    """The method `method` names, or None when it is unknown, not of the era, or its capability is not offered.

    `capabilities` are those a legacy session negotiated: once declared, a capability stays (tools/list
    of an emptied registry is an empty list) and one not declared stays out, as the spec requires.
    Without them (before initialize, stateless, modern), what is registered now decides.
    """
    entry = METHODS.get(method)
    if entry is None and modern:
        handler = registry.extension_method(method)
        return None if handler is None else Method(partial(_extension, handler), legacy=False)
    if entry is None or not ((method in era.MODERN_METHODS or method in era.TASK_METHODS) if modern else entry.legacy):
        return None
    needs = entry.needs
    if needs:
        if capabilities is None:
            if not registry.offers(*needs):
                return None
        else:
            offered = capabilities.get(needs[0])
            if offered is None or (len(needs) > 1 and not offered.get(needs[1])):
                return None
    return entry

"""The registry: what one MCP server offers (tools, resources, templates, prompts, completers), the
capabilities derived from it, and the clients to tell when it changes. Shared by all sessions; it
knows none of them: a session reads it, a runner joins it as a client (`Client`).

`Server` (server.py) is the registry with the library's decorators and its ways to run.
"""

from __future__ import annotations

import bisect
import threading
import types
import weakref

from . import era, log

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from typing import Any, Protocol, overload

    from .context import Context
    from .listings import PinnedListings
    from .primitives import Completer, Prompt, Resource, ResourceTemplate, Tool
    from .request_state import RequestStates
    from .tasks import Tasks

    ResourceSource = Callable[[], Sequence[Resource]]
    TemplateSource = Callable[[], Sequence[ResourceTemplate]]
    SubscribeCheck = Callable[[Context, str], Any]
    # The first argument of these is the client's session (session.Session), which the registry passes on unread.
    RootsCallback = Callable[[Any, list[dict[str, Any]]], None]
    NotificationHandler = Callable[[Any, dict[str, Any]], None]
    ExtensionHandler = Callable[[Context, dict[str, Any]], dict[str, Any]]

    class Client(Protocol):
        """A connected client, as its runner shows it to the registry."""

        def listening(self) -> bool:
            """Ready (legacy), or listening (modern `subscriptions/listen`): it hears changes."""

        def subscribed(self) -> dict[str, Any]:
            """Every URI it subscribed to, with what the subscribe check kept for it."""

        def announce(self, method: str, params: dict[str, Any] | None = None, within: bool = True) -> None:
            """A list change or a resource update, for whoever in its session asked for it."""


CACHE_HINTS: dict[str, tuple[int, str]] = {
    "server/discover": (300_000, "public"),
    "tools/list": (300_000, "public"),
    "prompts/list": (300_000, "public"),
    "resources/templates/list": (300_000, "public"),
    "resources/list": (0, "private"),
    "resources/read": (0, "private"),
}
"""The caching hints (`ttlMs`, `cacheScope`) of modern results, by method. What is offered is the same for
every caller and changes only when the server says so (list changes); what the resources hold is the
user's and may change at any moment."""


_CAPABILITIES = ("tools", "resources", "prompts", "logging", "completions")
"""What a server may offer, in the order its capabilities are written."""
_FLAGS = {"tools": ("listChanged",), "resources": ("subscribe", "listChanged"), "prompts": ("listChanged",)}
"""The flags each capability may carry, in the order they are written."""


class Registry:
    """Everything one MCP server offers; shared by all its sessions."""

    def __init__(self, name: str, version: str, *, title: str | None = None, instructions: str | None = None,
                 page_size: int = 100, logging: bool = False, list_changed: bool = False, subscribe: bool = False,
                 state_key: bytes | None = None) -> None:
        """`logging` offers the logging capability (handlers' `ctx.log` reaches the client);
        `list_changed` announces changes of the tool, resource and prompt lists to clients;
        `subscribe` lets clients subscribe to resources (see `resource_updated`);
        `state_key` signs the state of modern multi round-trip requests (random per process if not
        given: give the same key to every process that may serve a client's retry).
        """
        self.name = name
        self.version = version
        self.title = title
        self.instructions = instructions
        self.about: dict[str, Any] = {}
        """What `server/discover` says of the server besides its name, version and title, as the spec's
        Implementation does (`description`, `websiteUrl`, `icons`): modern clients only, so that the 2025-06-18
        initialize answer stays as it is, and not in every modern result's `_meta`, which names the server only."""
        self.discover_instructions: str | None = None
        """`instructions` for modern clients only (server/discover), where `instructions` (both eras) is None."""
        self.page_size = page_size
        self.logging_enabled = logging
        self.default_log_level = "info"
        self._tools: dict[str, Tool] = {}
        self._resources: dict[str, Resource] = {}
        self._prompts: dict[str, Prompt] = {}
        # Read-only views, made once (they follow the dicts): tools/call looks a tool up in one per call.
        self._views = (types.MappingProxyType(self._tools), types.MappingProxyType(self._resources),
                       types.MappingProxyType(self._prompts))
        self._resource_sources: list[ResourceSource] = []
        self._new_listing_hooks: list[Callable[[], None]] = []  # see add_resource_source
        self._resource_templates: list[ResourceTemplate] = []
        self._template_sources: list[TemplateSource] = []
        self._completers: dict[tuple[str, str, str], Completer] = {}  # (ref type, prompt name or URI template, argument)
        self._extensions: dict[str, dict[str, Any]] = {}  # identifier -> its settings (add_extension)
        self._extension_methods: dict[str, ExtensionHandler] = {}
        self._notification_handlers: dict[str, list[NotificationHandler]] = {}
        self._roots_callbacks: list[RootsCallback] = []
        self._list_changed = {"tools": list_changed, "resources": list_changed, "prompts": list_changed}
        self._subscribe = subscribe
        self._subscribe_check: SubscribeCheck | None = None
        self._clients: weakref.WeakSet[Client] = weakref.WeakSet()
        self._clients_lock = threading.Lock()  # clients connect on the reading loop, notices go out from any thread
        self.cache_hints = dict(CACHE_HINTS)
        self._server_info: tuple[tuple[str, str, str | None], dict[str, Any]] | None = None
        self._state_key = state_key
        self._request_states: RequestStates | None = None
        self._tasks: Tasks | None = None
        # A task lives in the process that made it: a server whose requests several processes serve (--workers)
        # sets this False, and offers no tasks (a poll landing on another process would not find its task).
        self.tasks_offered = True
        self._listings: PinnedListings | None = None  # made by the first resources/list (listings.py)
        self._first_use_lock = threading.Lock()  # what is made on first use (listings, tasks) is made once

    # -- what is registered (read-only views) -------------------------------------------------------
    @property
    def tools(self) -> Mapping[str, Tool]:
        return self._views[0]

    @property
    def resources(self) -> Mapping[str, Resource]:
        return self._views[1]

    @property
    def prompts(self) -> Mapping[str, Prompt]:
        return self._views[2]

    def completer(self, ref_type: str, ref: str, argument: str) -> Completer | None:
        """The completer registered with `add_completer` (or a decorator) for this argument, if any."""
        return self._completers.get((ref_type, ref, argument))

    @property
    def subscribe_check(self) -> SubscribeCheck | None:
        return self._subscribe_check

    @property
    def lists_on_demand(self) -> bool:
        """Some resources come from sources, which may walk a tree: listing them runs off the reading loop."""
        return bool(self._resource_sources)

    def start_listing(self) -> None:
        """A client starts a resources/list (no cursor): sources that keep a walk between pages look afresh."""
        for hook in self._new_listing_hooks:
            hook()

    def resource_templates(self) -> list[ResourceTemplate]:
        """The registered templates, then each template source's (which may follow the roots)."""
        out = list(self._resource_templates)
        for source in self._template_sources:
            out.extend(source())
        return out

    # -- registration ---------------------------------------------------------------------------
    def add_tool(self, tool: Tool) -> Tool:
        self._tools[tool.name] = tool
        self.list_changed("tools")
        return tool

    def remove_tool(self, name: str) -> None:
        if self._tools.pop(name, None) is not None:
            self.list_changed("tools")

    def add_resource(self, resource: Resource) -> Resource:
        self._resources[resource.uri] = resource
        self.list_changed("resources")
        return resource

    def remove_resource(self, uri: str) -> None:
        if self._resources.pop(uri, None) is not None:
            self.list_changed("resources")

    def add_resource_source(self, source: ResourceSource, *, on_new_listing: Callable[[], None] | None = None) -> None:
        """A callable that lists resources when asked (a directory tree, say) rather than up front.

        It is called off the reading loop when a client starts a resources/list (no cursor), and that
        listing's cursors index its result, kept (pinned, listings.py) until the client has paged through
        it: any sequence, so a big one can make its resources only for the page asked for. A result
        with a `meta` attribute (a dict, e.g. saying the list was cut) adds it to the page's `_meta`.
        `on_new_listing` runs just before, so a source that keeps a walk knows when to look afresh. (A
        cursor another process made calls it again, and is read against what it gives.)
        """
        self._resource_sources.append(source)
        if on_new_listing is not None:
            self._new_listing_hooks.append(on_new_listing)

    def add_resource_template(self, template: ResourceTemplate) -> ResourceTemplate:
        self._resource_templates = [t for t in self._resource_templates if t.uri_template != template.uri_template]
        self._resource_templates.append(template)
        self.list_changed("resources")
        return template

    def remove_resource_template(self, uri_template: str) -> None:
        kept = [t for t in self._resource_templates if t.uri_template != uri_template]
        if len(kept) != len(self._resource_templates):
            self._resource_templates = kept
            self.list_changed("resources")

    def add_template_source(self, source: TemplateSource) -> None:
        """A callable that gives resource templates when asked: templates that follow the roots, say.
        Call `list_changed("resources")` when what it gives changes."""
        self._template_sources.append(source)

    def add_prompt(self, prompt: Prompt) -> Prompt:
        self._prompts[prompt.name] = prompt
        self.list_changed("prompts")
        return prompt

    def remove_prompt(self, name: str) -> None:
        if self._prompts.pop(name, None) is not None:
            self.list_changed("prompts")

    def add_completer(self, ref_type: str, ref: str, argument: str, completer: Completer) -> None:
        """Complete `argument` of the prompt (ref_type "ref/prompt") or resource template ("ref/resource") `ref`."""
        if ref_type not in ("ref/prompt", "ref/resource"):
            raise ValueError(f"ref_type must be ref/prompt or ref/resource, not {ref_type!r}")
        self._completers[(ref_type, ref, argument)] = completer

    def on_notification(self, method: str, handler: NotificationHandler) -> None:
        self._notification_handlers.setdefault(method, []).append(handler)

    def on_roots(self, callback: RootsCallback) -> None:
        """Follow the client's roots: `callback(session, roots)` runs, off the reading loop, once the
        client is initialized and again whenever it says its roots changed (clients with `roots` only)."""
        self._roots_callbacks.append(callback)

    def on_subscribe(self, check: SubscribeCheck) -> None:
        """Offer resources/subscribe: `check(ctx, uri)` runs off the reading loop before anything is
        recorded, raises (ResourceNotFound, say) to refuse the URI, and returns what to keep with the
        subscription (see `subscriptions`). The client's last word on a URI stands whatever order the
        checks finish in."""
        self._subscribe = True
        self._subscribe_check = check

    def add_extension(self, identifier: str, settings: dict[str, Any], methods: Mapping[str, ExtensionHandler],
                      cache_hints: Mapping[str, tuple[int, str]] | None = None) -> None:
        """Offer the extension `identifier` (say "io.modelcontextprotocol/skills") to modern clients: declared with
        its `settings` under `capabilities.extensions` in server/discover, its `methods` answered for 2026-07-28
        requests only (`handler(context, params)` off the reading loop, its result completed as every modern
        result is, with `cache_hints`: method -> (ttlMs, cacheScope)). The 2025-06-18 initialize answer is
        unchanged: that revision has no extensions."""
        clash = [method for method in methods if method in era.MODERN_METHODS or method in self._extension_methods]
        if clash:
            raise ValueError(f"methods already answered: {', '.join(clash)}")
        self._extensions[identifier] = dict(settings)
        self._extension_methods.update(methods)
        self.cache_hints.update(cache_hints or {})

    def extension_method(self, method: str) -> ExtensionHandler | None:
        """The handler of an extension's method (add_extension), if one was added."""
        return self._extension_methods.get(method)

    def enable_list_changed(self, *registries: str) -> None:
        """Announce changes of these lists ("tools", "resources", "prompts") to clients that connect from now on."""
        for registry in registries:
            if registry not in self._list_changed:
                raise ValueError(f"no list named {registry!r}: use tools, resources or prompts")
            self._list_changed[registry] = True

    # -- telling clients ----------------------------------------------------------------------------
    def connect(self, client: Client) -> None:
        """A runner joins: list changes and updates reach it once its client is ready (legacy) or listens
        (modern `subscriptions/listen`)."""
        with self._clients_lock:
            self._clients.add(client)

    def disconnect(self, client: Client) -> None:
        with self._clients_lock:
            self._clients.discard(client)

    def clients(self) -> list[Client]:
        """The connected clients that sent notifications/initialized or listen (and whose runner still lives)."""
        with self._clients_lock:
            clients = list(self._clients)
        return [client for client in clients if client.listening()]

    def list_changed(self, registry: str) -> None:
        """Send notifications/REGISTRY/list_changed ("tools", "resources" or "prompts") to the clients
        whose initialize result declared `listChanged` for it or who listen for it: registering calls
        it, and so may a feature whose dynamic list changed (a resource source)."""
        if registry not in self._list_changed:
            raise ValueError(f"no list named {registry!r}: use tools, resources or prompts")
        for client in self.clients():
            client.announce(f"notifications/{registry}/list_changed")

    def resource_updated(self, uri: str, *, within: bool = True) -> None:
        """Send notifications/resources/updated to the clients subscribed to `uri` or (`within`) to a
        resource containing it (a folder, a prefix of `uri` up to a '/')."""
        for client in self.clients():
            client.announce("notifications/resources/updated", {"uri": uri}, within)

    def subscriptions(self) -> dict[str, Any]:
        """Every URI a ready or listening client subscribed to, with what the subscribe check kept for it."""
        found: dict[str, Any] = {}
        for client in self.clients():
            found.update(client.subscribed())
        return found

    def roots_changed(self, session: Any, roots: list[dict[str, Any]]) -> None:
        """The client of `session` listed its roots: tell the callbacks, in the order the lists came."""
        for callback in self._roots_callbacks:
            try:
                callback(session, roots)
            except Exception:
                import traceback  # off the start-up budget: only a failing callback needs it

                log.error(f"roots callback failed\n{traceback.format_exc()}")

    @property
    def follows_roots(self) -> bool:
        return bool(self._roots_callbacks)

    # -- capabilities ---------------------------------------------------------------------------
    @property
    def has_resources(self) -> bool:
        return bool(self._resources or self._resource_sources or self._resource_templates or self._template_sources)

    @property
    def has_completions(self) -> bool:
        return bool(self._completers) or any(a.complete for p in self._prompts.values() for a in p.arguments) or any(
            t.completers for t in self.resource_templates()
        )

    def capabilities(self, *, modern: bool = False) -> dict[str, Any]:
        """Exactly what is registered and enabled, never more: the spec makes this a MUST. Made of `offers`,
        the one place that says what is offered; `modern` (server/discover) adds the extensions."""
        caps: dict[str, Any] = {}
        for capability in _CAPABILITIES:
            if self.offers(capability):
                caps[capability] = {flag: True for flag in _FLAGS.get(capability, ()) if self.offers(capability, flag)}
        if modern and self._extensions:
            caps["extensions"] = {identifier: dict(settings) for identifier, settings in self._extensions.items()}
        if modern and self.offers_tasks:
            caps.setdefault("extensions", {})[era.TASKS_EXTENSION] = {}
        return caps

    def cache_hint(self, method: str) -> tuple[int, str] | None:
        """(`ttlMs`, `cacheScope`) for a modern result of `method`, from `cache_hints`; templates that follow
        the roots change with them unannounced, so while the server follows the client's roots they are
        never fresh."""
        hint = self.cache_hints.get(method)
        if hint is not None and method == "resources/templates/list" and self._template_sources and self.follows_roots:
            return 0, hint[1]
        return hint

    def server_info(self) -> dict[str, Any]:
        """{"name", "version", "title"?}: made again only when one of them changed (every modern result
        carries it)."""
        known = self._server_info
        if known is None or known[0] != (self.name, self.version, self.title):
            info: dict[str, Any] = {"name": self.name, "version": self.version}
            if self.title is not None:
                info["title"] = self.title
            known = self._server_info = ((self.name, self.version, self.title), info)
        return known[1]

    def initialize_result(self, protocol_version: str) -> dict[str, Any]:
        out: dict[str, Any] = {"protocolVersion": protocol_version, "capabilities": self.capabilities(),
                               "serverInfo": self.server_info()}
        if self.instructions is not None:
            out["instructions"] = self.instructions
        return out

    def discover_result(self) -> dict[str, Any]:
        """What `server/discover` answers (modern era), in the order of the spec's example."""
        info = {**self.server_info(), **self.about} if self.about else self.server_info()
        out: dict[str, Any] = {"resultType": "complete", "supportedVersions": list(era.SUPPORTED_VERSIONS),
                               "capabilities": self.capabilities(modern=True), "_meta": {era.SERVER_INFO_KEY: info}}
        instructions = self.instructions if self.instructions is not None else self.discover_instructions
        if instructions is not None:
            out["instructions"] = instructions
        out["ttlMs"], out["cacheScope"] = self.cache_hints["server/discover"]
        return out

    @property
    def request_states(self) -> RequestStates:
        """Signs and checks the state of modern multi round-trip requests (made when first needed)."""
        if self._request_states is None:
            from .request_state import RequestStates  # off the start-up budget (hmac): only modern multi-round requests

            self._request_states = RequestStates(self._state_key)
        return self._request_states

    @property
    def tasks(self) -> Tasks:
        """The tasks of the tasks extension, whichever request or transport made them (made when first needed)."""
        if self._tasks is None:
            with self._first_use_lock:
                if self._tasks is None:
                    from .tasks import Tasks  # off the start-up budget: only a client of the tasks extension

                    self._tasks = Tasks()
        return self._tasks

    @property
    def offers_tasks(self) -> bool:
        """A tool offers tasks (`task_support`), and one process serves every request: the tasks extension is
        offered to modern clients."""
        return self.tasks_offered and any(tool.task_support is not None for tool in self._tools.values())

    # -- what a request reads -------------------------------------------------------------------
    def offers(self, capability: str, sub: str | None = None) -> bool:
        """Whether this server offers `capability` (and its `sub` flag: resources' subscribe, a list's
        listChanged), without building `capabilities()`: a stateless or modern request asks on every call."""
        if capability == "tools":
            offered = bool(self._tools)
        elif capability == "prompts":
            offered = bool(self._prompts)
        elif capability == "resources":
            offered = self.has_resources
        elif capability == "logging":
            offered = self.logging_enabled
        elif capability == "completions":
            offered = self.has_completions
        else:
            return False
        if not offered or sub is None:
            return offered
        if sub == "subscribe":
            return capability == "resources" and self._subscribe
        return sub == "listChanged" and self._list_changed.get(capability, False)

    def notification_handlers(self, method: str) -> list[NotificationHandler]:
        return self._notification_handlers.get(method, [])

    def all_resources(self) -> Sequence[Resource]:
        """The registered resources, then each source's: joined without copying, since a source may be big."""
        parts: list[Sequence[Resource]] = [list(self._resources.values())] if self._resources else []
        parts.extend(source() for source in self._resource_sources)
        if len(parts) == 1:
            return parts[0]
        return _Joined(parts)

    def resource_listings(self) -> PinnedListings:
        """The listings resources/list cursors point at, pinned while clients page (listings.py)."""
        if self._listings is None:
            with self._first_use_lock:
                if self._listings is None:
                    from .listings import PinnedListings  # off the start-up budget: from the first resources/list

                    self._listings = PinnedListings()
        return self._listings

    def resources_page(self, cursor: Any) -> tuple[Sequence[Resource], str | None, dict[str, Any] | None]:
        """One page of resources/list, its next cursor and the listing's `_meta`. A listing (no cursor) asks
        the sources once and is pinned: its later pages never ask them again (listings.py)."""
        from .listings import page  # off the start-up budget: from the first resources/list

        shown, next_cursor, items = page(self.resource_listings(), self.all_resources, self.start_listing, cursor,
                                         self.page_size)
        return shown, next_cursor, getattr(items, "meta", None)

    def find_template(self, uri: str) -> tuple[ResourceTemplate, dict[str, str]] | None:
        for template in self.resource_templates():
            variables = template.match(uri)
            if variables is not None:
                return template, variables
        return None


if TYPE_CHECKING:
    _ResourceSequence = Sequence[Resource]
else:
    _ResourceSequence = object  # collections.abc stays out of start-up: paginate needs len, index and slice only


class ResourceParts(_ResourceSequence):
    """Resources kept in parts and read as one sequence (length, index and slice: what `paginate` needs),
    so that a page makes only its own resources. `_starts` holds where each part starts, then the total;
    a subclass says how to get an item of a part (`_item`). `meta` is what a listing result carries."""

    __slots__ = ("_starts", "meta")

    def __init__(self) -> None:
        self._starts: list[int] = [0]
        self.meta: dict[str, Any] | None = None

    def __len__(self) -> int:
        return self._starts[-1]

    if TYPE_CHECKING:
        @overload
        def __getitem__(self, index: int) -> Resource: ...
        @overload
        def __getitem__(self, index: slice) -> Sequence[Resource]: ...

    def __getitem__(self, index: int | slice) -> Resource | Sequence[Resource]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(index)
        part = bisect.bisect_right(self._starts, index) - 1
        return self._item(part, index - self._starts[part])

    def _item(self, part: int, offset: int) -> Resource:
        raise NotImplementedError


class _Joined(ResourceParts):
    """Several sequences read as one, for `paginate`; nothing is copied but the page."""

    __slots__ = ("_parts",)

    def __init__(self, parts: list[Sequence[Resource]]) -> None:
        super().__init__()
        self._parts = parts
        self._starts = []
        total = 0
        meta: dict[str, Any] = {}
        for part in parts:
            self._starts.append(total)
            total += len(part)
            meta.update(getattr(part, "meta", None) or {})
        self._starts.append(total)
        self.meta = meta or None

    def _item(self, part: int, offset: int) -> Resource:
        return self._parts[part][offset]




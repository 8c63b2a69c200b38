"""The two eras of MCP, told apart per request, and what a modern (2026-07-28) answer carries.

A legacy client (2025-06-18) opens a session with `initialize`. A modern one (2026-07-28) opens
nothing: every request carries its protocol version, capabilities and identity in `_meta`, so any
process can serve it. A dual-era server looks at each request: one whose `_meta` names a protocol
version is served statelessly by the modern rules; anything else is served as it always was.

Standard library only and no imports at all: `session` loads this at start-up.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing stays out of the start-up path (see tests/test_startup.py)
if TYPE_CHECKING:
    from typing import Any

MODERN_VERSION = "2026-07-28"
LEGACY_VERSION = "2025-06-18"
SUPPORTED_VERSIONS = (MODERN_VERSION, LEGACY_VERSION)
"""What `server/discover` and an unsupported-version error list, newest first."""

VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities"
CLIENT_INFO_KEY = "io.modelcontextprotocol/clientInfo"
LOG_LEVEL_KEY = "io.modelcontextprotocol/logLevel"
SERVER_INFO_KEY = "io.modelcontextprotocol/serverInfo"
SUBSCRIPTION_ID_KEY = "io.modelcontextprotocol/subscriptionId"
ENVELOPE_KEYS = (VERSION_KEY, CAPABILITIES_KEY, CLIENT_INFO_KEY, LOG_LEVEL_KEY)
"""The per-request fields of 2026-07-28's `_meta`: a request that carries any of them is modern, complete or not."""
TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
"""The tasks extension (SEP-2663): offered when a tool offers tasks; its methods need the client to declare it."""

TASK_METHODS = frozenset(("tasks/get", "tasks/update", "tasks/cancel"))
"""The methods of the tasks extension (its first version's tasks/result and tasks/list are gone: -32601)."""

MODERN_METHODS = frozenset((
    "server/discover", "subscriptions/listen", "tools/list", "tools/call", "resources/list",
    "resources/templates/list", "resources/read", "prompts/list", "prompts/get", "completion/complete"))
"""What a modern request may call. initialize, ping, logging/setLevel and resources/(un)subscribe are
legacy only: 2026-07-28 removed them (per-request `_meta` and `subscriptions/listen` replace them)."""

ASKING_METHODS = frozenset(("tools/call", "resources/read", "prompts/get"))
"""The requests that may answer `input_required` (a multi round-trip request); no other may."""

LIST_FILTERS = {"toolsListChanged": "tools", "promptsListChanged": "prompts", "resourcesListChanged": "resources"}
"""The list-change opt-ins of `subscriptions/listen`, and the list each names."""


def modern_meta(params: dict[str, Any]) -> dict[str, Any] | None:
    """The request's `_meta` if it makes the request modern (it holds a per-request field, the protocol
    version or another: one without the version is a modern request missing it, refused -32602), else None."""
    meta = params.get("_meta")
    if type(meta) is dict and any(key in meta for key in ENVELOPE_KEYS):
        return meta
    return None


def complete(result: dict[str, Any], server_info: dict[str, Any], cache: tuple[int, str] | None = None) -> dict[str, Any]:
    """A handler's result as a modern one: `resultType` first, the server's identity in `_meta`, and the
    caching hints (`ttlMs`, `cacheScope`) where the spec requires them."""
    out: dict[str, Any] = {"resultType": "complete"}
    out.update(result)
    out["resultType"] = "complete"
    meta = out.pop("_meta", None)
    out["_meta"] = {**meta, SERVER_INFO_KEY: server_info} if isinstance(meta, dict) else {SERVER_INFO_KEY: server_info}
    if cache is not None:
        out["ttlMs"], out["cacheScope"] = cache
    return out

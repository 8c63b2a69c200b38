"""The scopes shipcode-mcp understands and what each request needs: reading needs `shipcode:read`; a tool
that is not marked read-only (`write_file`, `edit_file`, `apply_patch`, `move_path`, ...) also needs `shipcode:write`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..registry import Registry

READ = "shipcode:read"
WRITE = "shipcode:write"
SUPPORTED = (READ, WRITE)


def needed(server: Registry, message: dict[str, Any]) -> tuple[str, ...]:
    """The scopes a JSON-RPC message needs. A tools/call of a tool whose annotations do not say
    `readOnlyHint: true` needs WRITE too (an unknown tool needs only READ: the call fails on its own)."""
    if message.get("method") == "tools/call":
        params = message.get("params")
        name = params.get("name") if isinstance(params, dict) else None
        tool = server.tools.get(name) if isinstance(name, str) else None
        if tool is not None:
            return calling(tool)
    return (READ,)


def calling(tool: Any) -> tuple[str, ...]:
    """The scopes a call of `tool` needs: WRITE too unless its annotations say `readOnlyHint: true`."""
    return (READ,) if (tool.annotations or {}).get("readOnlyHint", False) else (READ, WRITE)


def may_call(scopes: frozenset[str]) -> Callable[[Any], bool]:
    """Whether a token with `scopes` may call a tool (what tools/list shows it: only what it may call)."""
    allowed = granted(scopes)
    return lambda tool: all(scope in allowed for scope in calling(tool))


def missing(granted: frozenset[str], wanted: tuple[str, ...]) -> tuple[str, ...]:
    """The wanted scopes a token was not granted."""
    return tuple(scope for scope in wanted if scope not in granted)


def offered(server: Registry) -> tuple[str, ...]:
    """The scopes the server's tools need between them: what a 401 asks a client to get, so that one
    authorization covers every tool offered (a server with write tools asks for WRITE too; the person
    who consents may still grant less, and a write then gets 403 and a step-up challenge)."""
    if any(WRITE in calling(tool) for tool in server.tools.values()):
        return (READ, WRITE)
    return (READ,)


def granted(scopes: frozenset[str]) -> frozenset[str]:
    """What a token's scopes allow: WRITE implies READ (a broader scope covers the narrower one)."""
    return scopes | {READ} if WRITE in scopes else scopes

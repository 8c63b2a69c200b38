"""Streamable HTTP (the `http` extra: Starlette and uvicorn), a module per idea:

- endpoint.py: the ASGI endpoint, both eras behind one path (`create_app`, `StreamableHttp`)
- runner.py: the asyncio runner of a session (`HttpSession`)
- sessions.py: an endpoint's sessions, who makes room for whom (an injected clock, no sockets)
- headers.py: a modern request's headers against its body, and its HTTP status (pure)
- guard.py: which Host and Origin headers an endpoint accepts (DNS-rebinding protection, pure)
- limits.py: `HttpLimits`, every limit of an endpoint, each documented once
- lanes.py: the worker threads shared fairly by sessions and callers
- auth.py: the HTTP face of authorization (Protected Resource Metadata, bearer tokens)
- front.py: what a connection must do before the app hears of it (uvicorn's h11 protocol)
- serving.py: serving with uvicorn (signals, supervised workers)
- request_log.py: one line per request at `--log-level debug`

Host and Origin are read by shipcode_mcp/hosts.py, standard library only, so the command line checks them
before this package (and Starlette) loads.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .endpoint import SESSION_HEADER, StreamableHttp, create_app
    from .runner import HttpSession

__all__ = ["SESSION_HEADER", "HttpSession", "StreamableHttp", "create_app"]
_HOMES = {"SESSION_HEADER": "endpoint", "StreamableHttp": "endpoint", "create_app": "endpoint", "HttpSession": "runner"}


def __getattr__(name: str) -> Any:
    """The package's face, loaded on first use: the modules that need no Starlette (headers, sessions, limits,
    lanes) import without it."""
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f"{__name__}.{_HOMES[name]}"), name)

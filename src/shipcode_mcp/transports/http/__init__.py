"""Streamable HTTP (the `http` extra: Starlette and uvicorn), a module per idea:

- endpoint.py: the ASGI endpoint, both eras behind one path (`create_app`, `StreamableHttp`)
- runner.py: the asyncio runner of a session (`HttpSession`)
- sessions.py: an endpoint's sessions, who makes room for whom (an injected clock, no sockets)
- headers.py: a modern request's headers against its body, and its HTTP status (pure)
- limits.py: `HttpLimits`, every limit of an endpoint, each documented once
- lanes.py: the worker threads shared fairly by sessions and callers
- auth.py: the HTTP face of authorization (Protected Resource Metadata, bearer tokens)
- front.py: what a connection must do before the app hears of it (uvicorn's h11 protocol)
- serving.py: serving with uvicorn (signals, supervised workers)
- request_log.py: one line per request at `--log-level debug`

Host and Origin are read by shipcode_mcp/hosts.py, standard library only, so the command line checks them
before this package (and Starlette) loads.
"""

from .endpoint import SESSION_HEADER, StreamableHttp, create_app
from .runner import HttpSession

__all__ = ["SESSION_HEADER", "HttpSession", "StreamableHttp", "create_app"]

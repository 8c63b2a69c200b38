"""A stateless server for the several-workers test: `uvicorn worker_app:app --workers 2`.

`whoami` is inline and holds its worker's event loop for a moment, so a request sent meanwhile can
only be served by another worker: the pids it answers prove that both serve.
"""

from __future__ import annotations

import os
import time

from shipcode_mcp import Server

server = Server("workers", "1.0.0")


@server.tool(inline=True)
def whoami(hold: float = 0.0) -> int:
    """The pid of the worker process that serves this call, after holding its loop `hold` seconds."""
    time.sleep(hold)
    return os.getpid()


app = server.http_app(stateless=True)

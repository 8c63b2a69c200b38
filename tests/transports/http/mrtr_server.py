"""A stateless Streamable HTTP server for the scale-out test, one process of several behind a proxy.

    python mrtr_server.py KEY_FILE

It binds 127.0.0.1 on a port of the kernel's choosing before it prints that port (one line on
stdout), so the test never races another process for a port, and serves until SIGTERM. The key in
KEY_FILE signs the requestState of multi round-trip requests (`Server(state_key=...)`): processes
given the same file accept each other's states, as a deployment behind a load balancer must.
Every tool that completes reports the pid of the process that ran it.
"""

from __future__ import annotations

import os
import socket
import sys
from typing import Any

import uvicorn

from shipcode_mcp import Context, Server
from shipcode_mcp.request_state import key_from_file
from shipcode_mcp.transports.http.serving import uvicorn_server

NAME_SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
COLOUR_SCHEMA = {"type": "object", "properties": {"colour": {"type": "string"}}, "required": ["colour"]}


def build_server(key: bytes) -> Server:
    server = Server("mrtr", "1.0.0", state_key=key)

    @server.tool(inline=True)
    def whoami() -> int:
        """The pid of the process that serves this call."""
        return os.getpid()

    @server.tool
    def two_questions(ctx: Context, greeting: str) -> dict[str, Any]:
        """Ask the user twice, so that the third round carries a requestState with the first answer.

        The questions are the same in every process (an answer holds only for the question it answered);
        the result names the pid that finished, and the proxy's log shows where the other rounds ran.
        """
        name = ctx.elicit("Your name?", NAME_SCHEMA)
        colour = ctx.elicit("Your colour?", COLOUR_SCHEMA)
        return {"pid": os.getpid(), "text": f"{greeting}, {name['content']['name']} in {colour['content']['colour']}"}

    return server


def main(argv: list[str]) -> int:
    key = key_from_file(argv[1])
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(128)  # connections wait in the backlog until uvicorn accepts them: no readiness race
    print(listener.getsockname()[1], flush=True)
    app = build_server(key).http_app(stateless=True)
    server = uvicorn_server(uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=1))
    server.run(sockets=[listener])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

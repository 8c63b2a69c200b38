"""The HTTP floor: a bare Starlette endpoint on the same uvicorn, answering what shipcode-mcp answers.

`python bench/http_floor.py PORT WORKERS CALL.json`: POST /mcp parses the JSON-RPC body and returns, for
ping, `{"result": {}}`, and for tools/call the very result our server gave for the same call (recorded
by the bench in CALL.json), with the request's id. No session, no validation, no MCP: what is left is
uvicorn, Starlette and json, so ours ÷ this is what the MCP layer costs over HTTP.
"""

from __future__ import annotations

import json
import os
import socket
import sys
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

CALL_RESULT: Any = json.loads(open(os.environ["BENCH_CALL_RESULT"]).read()) if "BENCH_CALL_RESULT" in os.environ else {}


async def mcp(request: Request) -> Response:
    message = json.loads(await request.body())
    result = CALL_RESULT if message.get("method") == "tools/call" else {}
    body = json.dumps({"jsonrpc": "2.0", "id": message.get("id"), "result": result}, separators=(",", ":"))
    return Response(body, media_type="application/json")


app = Starlette(routes=[Route("/mcp", mcp, methods=["POST"])])

def listening_socket(port: int) -> socket.socket:
    """The socket bound here, with TCP_NODELAY, which accepted connections inherit (Linux).

    With workers, uvicorn hands its workers a socket whose `proto` reads 0, so asyncio's own TCP_NODELAY
    (set only where proto is IPPROTO_TCP) never applies and every response waits for a delayed ACK: a bare
    `uvicorn --workers 2` answers one client 23 times a second. A floor must not carry that defect.
    """
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind(("127.0.0.1", port))
    sock.set_inheritable(True)
    return sock


if __name__ == "__main__":
    port, workers = int(sys.argv[1]), int(sys.argv[2])
    os.environ["BENCH_CALL_RESULT"] = sys.argv[3]
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    listener = listening_socket(port)
    uvicorn.run("http_floor:app", fd=listener.fileno(), workers=workers, log_level="warning", access_log=False)

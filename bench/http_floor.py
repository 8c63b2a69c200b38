"""The HTTP floor: a bare Starlette endpoint on the same uvicorn, answering what shipcode-mcp answers.

`python bench/http_floor.py PORT WORKERS CALL.json`: POST /mcp parses the JSON-RPC body and returns, for
ping, `{"result": {}}`, and for tools/call the very result our server gave for the same call (recorded
by the bench in CALL.json), with the request's id. No session, no validation, no MCP: what is left is
uvicorn, Starlette and json, so ours ÷ this is what the MCP layer costs over HTTP.
"""

from __future__ import annotations

import json
import os
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

if __name__ == "__main__":
    port, workers = int(sys.argv[1]), int(sys.argv[2])
    os.environ["BENCH_CALL_RESULT"] = sys.argv[3]
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    uvicorn.run("http_floor:app", host="127.0.0.1", port=port, workers=workers, log_level="warning", access_log=False)

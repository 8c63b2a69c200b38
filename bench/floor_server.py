"""The floor: the least a Python MCP server over stdio can do per message.

readline, json.loads, dispatch, json.dumps, write and flush, nothing else: no validation, no
threads, no framework. Every server in the benchmark is compared with this loop run by the same
interpreter, so the ratios say what a server costs beyond Python itself.
"""

from __future__ import annotations

import json
import sys

TYPE_CHECKING = False  # typing is not imported: the floor's start-up is part of the baseline
if TYPE_CHECKING:
    from typing import Any

ECHO_TOOL = {
    "name": "echo",
    "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
}


def answer(method: str, params: dict[str, Any]) -> dict[str, Any]:
    """The result of one request; the floor knows only what the benchmark sends."""
    if method == "ping":
        return {}
    if method == "tools/call":
        return {"content": [{"type": "text", "text": params["arguments"]["text"]}], "isError": False}
    if method == "initialize":
        return {
            "protocolVersion": "2025-06-18",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "floor", "version": "1"},
        }
    if method == "tools/list":
        return {"tools": [ECHO_TOOL]}
    raise KeyError(method)


def main() -> None:
    read = sys.stdin.buffer.readline
    out = sys.stdout.buffer
    while True:
        line = read()
        if not line:
            return
        message = json.loads(line)
        if "id" not in message:
            continue  # a notification
        try:
            reply = {"jsonrpc": "2.0", "id": message["id"], "result": answer(message["method"], message.get("params", {}))}
        except KeyError:
            reply = {"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32601, "message": "Method not found"}}
        out.write(json.dumps(reply, separators=(",", ":")).encode() + b"\n")
        out.flush()


if __name__ == "__main__":
    main()

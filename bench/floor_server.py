"""The floor: the least a Python MCP server over stdio can do per message.

batched reads, json.loads, dispatch, json.dumps, one write per batch, nothing else: no validation, no
threads, no framework. Every server in the benchmark is compared with this loop run by the same
interpreter, so the ratios say what a server costs beyond Python itself.
"""

from __future__ import annotations

import json
import os
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
    """Read stdin in batches (whatever the pipe holds, up to 64 KiB), answer every whole line, write the answers
    of a batch at once: what our stdio transport does, so the floor is a floor for pipelined work too."""
    stdin, stdout = sys.stdin.buffer.fileno(), sys.stdout.buffer.fileno()
    pending = b""
    while True:
        chunk = os.read(stdin, 1 << 16)
        if not chunk:
            return
        *lines, pending = (pending + chunk).split(b"\n")
        replies = []
        for line in lines:
            if not line.strip():
                continue
            message = json.loads(line)
            if "id" not in message:
                continue  # a notification
            try:
                reply = {"jsonrpc": "2.0", "id": message["id"], "result": answer(message["method"], message.get("params", {}))}
            except KeyError:
                reply = {"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32601, "message": "Method not found"}}
            replies.append(json.dumps(reply, separators=(",", ":")).encode() + b"\n")
        view = memoryview(b"".join(replies))
        while view:
            view = view[os.write(stdout, view):]


if __name__ == "__main__":
    main()

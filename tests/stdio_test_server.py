"""A server built on the core alone, with tools that exercise the stdio transport's edges."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

from shipcode_mcp.context import Context
from shipcode_mcp.primitives import Tool
from shipcode_mcp.server import Server
from shipcode_mcp.transports.stdio import serve_stdio


def sleep(ctx: Context, args: dict[str, Any]) -> str:
    if ctx.wait_cancelled(float(args.get("seconds", 1))):
        ctx.check_cancelled()
    return f"slept {args.get('seconds', 1)}"


def noisy(ctx: Context, args: dict[str, Any]) -> str:
    print("a stray print")
    os.write(1, b"a raw write to fd 1\n")
    subprocess.run([sys.executable, "-c", "print('a child process')"], check=True)
    return "quiet"


def progress(ctx: Context, args: dict[str, Any]) -> str:
    for step in range(1, 4):
        ctx.report_progress(step, 3, f"step {step}")
    return "progressed"


def deep(ctx: Context, args: dict[str, Any]) -> dict[str, Any]:
    value: list[Any] = []
    for _ in range(100_000):  # deeper than any JSON encoder recurses
        value = [value]
    return {"v": value}


def main() -> int:
    server = Server("stdio-test", "0.0.1")
    server.add_tool(Tool("sleep", sleep, {"type": "object", "properties": {"seconds": {"type": "number"}}}))
    server.add_tool(Tool("echo", lambda ctx, args: args.get("text", ""), inline=True))
    server.add_tool(Tool("big", lambda ctx, args: "x" * int(args["size"])))
    server.add_tool(Tool("noisy", noisy))
    server.add_tool(Tool("progress", progress))
    server.add_tool(Tool("exit", lambda ctx, args: sys.exit(2)))
    server.add_tool(Tool("exit_inline", lambda ctx, args: sys.exit(2), inline=True))
    server.add_tool(Tool("deep", deep))
    server.add_tool(Tool("deep_inline", deep, inline=True))
    return serve_stdio(server)


if __name__ == "__main__":
    sys.exit(main())

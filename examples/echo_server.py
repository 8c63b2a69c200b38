"""A one-tool MCP server: `echo` returns its `text` argument. The benchmark's server under test."""

from __future__ import annotations

from shipcode_mcp.primitives import Tool
from shipcode_mcp.server import Server
from shipcode_mcp.transports.stdio import serve_stdio

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from shipcode_mcp.context import RequestContext


def echo(context: RequestContext, arguments: dict[str, Any]) -> str:
    return str(arguments["text"])


server = Server("echo", "1.0.0")
server.add_tool(Tool(
    "echo",
    echo,
    {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    description="Return the text you send.",
    inline=True,  # quick and never blocks: answered on the reading loop
))

if __name__ == "__main__":
    raise SystemExit(serve_stdio(server))

"""The official Python SDK's Streamable HTTP server (mcp 2.x `MCPServer`) with a `read_file`-shaped small tool.

`python mcp_sdk_http_echo.py PORT`: JSON responses (not SSE), stateful, as its docs show it.
"""

import sys

from mcp.server.mcpserver import MCPServer

server = MCPServer("echo")


@server.tool()
def echo(text: str) -> str:
    """Return the text you send."""
    return text


if __name__ == "__main__":
    server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[1]), json_response=True)

"""The same `echo` tool on the official Python SDK's high-level server (mcp 2.x `MCPServer`), over stdio."""

from mcp.server.mcpserver import MCPServer

server = MCPServer("echo")


@server.tool()
def echo(text: str) -> str:
    """Return the text you send."""
    return text


if __name__ == "__main__":
    server.run("stdio")

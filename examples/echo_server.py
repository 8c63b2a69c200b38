"""A one-tool MCP server on the public API: `echo` returns its `text`. The benchmark's server under test."""

from shipcode_mcp import Server

server = Server("echo", "1.0.0")


@server.tool(inline=True)  # quick and never blocks: answered on the reading loop, no thread hand-off
def echo(text: str) -> str:
    """Return the text you send."""
    return text


if __name__ == "__main__":
    raise SystemExit(server.run())

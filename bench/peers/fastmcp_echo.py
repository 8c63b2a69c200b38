"""The same `echo` tool on fastmcp, over stdio."""

from fastmcp import FastMCP

server = FastMCP("echo")


@server.tool
def echo(text: str) -> str:
    """Return the text you send."""
    return text


if __name__ == "__main__":
    server.run(transport="stdio", show_banner=False)

"""The echo server of examples/echo_server.py on our default tool path (no `inline=True`): each call runs on a
worker thread, as every tool of a real server does. Measured beside the inline example, it shows what the
thread hand-off costs."""

from shipcode_mcp import Server

server = Server("echo", "1.0.0")


@server.tool()
def echo(text: str) -> str:
    """Return the text you send."""
    return text


if __name__ == "__main__":
    raise SystemExit(server.run())

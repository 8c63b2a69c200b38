"""A server for tests/test_logging.py: `python logging_server.py LEVEL FORMAT (stdio | http PORT)`.

Its tools answer, fail and wait to be cancelled, so each outcome of a request shows in the debug log;
the log level and format are set as the command line sets them.
"""

from __future__ import annotations

import sys

from shipcode_mcp import Context, Server, log
from shipcode_mcp.transports.stdio import serve_stdio


def main(argv: list[str]) -> int:
    level, form, transport = argv[:3]
    log.set_level(level)
    log.set_format(form)
    server = Server("logging-test", "0.0.1")

    @server.tool(inline=True)
    def echo(text: str) -> str:
        """Answered at once."""
        return text

    @server.tool
    def wait(ctx: Context) -> str:
        """Waits to be cancelled."""
        ctx.wait_cancelled(30)
        ctx.check_cancelled()
        return "never cancelled"

    if transport == "stdio":
        return serve_stdio(server)
    from shipcode_mcp.transports.http.serving import serve_http

    return serve_http(server, port=int(argv[3]), log_level=level)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

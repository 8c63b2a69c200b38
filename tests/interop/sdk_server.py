"""The official Python SDK's own dual-era server (`mcp` 2.x `MCPServer`), as a known-good modern peer.

It proves that the interop harness can tell the eras apart: the same client code that drives
shipcode-mcp negotiates 2026-07-28 with this server and completes an MRTR round trip.

    python sdk_server.py                 # stdio
    python sdk_server.py --http PORT     # Streamable HTTP at http://127.0.0.1:PORT/mcp
"""

from __future__ import annotations

import sys

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import ElicitRequest, ElicitRequestFormParams, ElicitResult, InputRequiredResult
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}

server = MCPServer("sdk-proof")


@server.tool()
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@server.resource("file:///proof/hello.txt")
def hello() -> str:
    """A fixed text resource."""
    return "hello\n"


@server.tool()
async def confirm(question: str, ctx: Context) -> str | InputRequiredResult:
    """Ask the user a yes/no question: MRTR on 2026-07-28, an elicitation/create request before."""
    if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
        answer = (ctx.input_responses or {}).get("ask")
        if answer is None:
            ask = ElicitRequest(params=ElicitRequestFormParams(message=question, requested_schema=SCHEMA))
            return InputRequiredResult(input_requests={"ask": ask}, request_state="round-1")
        assert isinstance(answer, ElicitResult)
        return f"{answer.action}: {answer.content}"
    result = await ctx.request_context.session.elicit_form(message=question, requested_schema=SCHEMA)
    return f"{result.action}: {result.content}"


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()

"""The echo server with an explicit `Tool` and schema: our core without type-hint introspection.

examples/echo_server.py registers its tool with the decorator, which derives the schema from the type
hints at start-up; this variant, measured in the same run, shows how much of the cold start that
costs. Not a target of the issue: a diagnostic column.
"""

from __future__ import annotations

from shipcode_mcp import Server, Tool

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from shipcode_mcp import Context


def echo(context: Context, arguments: dict[str, Any]) -> str:
    return str(arguments["text"])


server = Server("echo", "1.0.0")
server.add_tool(Tool("echo", echo, {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
                     description="Return the text you send.", inline=True))

if __name__ == "__main__":
    raise SystemExit(server.run())

"""A server built on our library whose one tool asks the user a question: an elicitation written once.

On a 2025-06-18 session the question goes out as an `elicitation/create` request; on a 2026-07-28
request the library turns it into an MRTR round trip (`input_required`, then the client's retry with
`inputResponses`). The interop tests drive it with the official SDK clients of both eras.

    python mrtr_server.py                           # stdio
    python mrtr_server.py --http PORT [--stateless]  # Streamable HTTP at http://127.0.0.1:PORT/mcp
"""

from __future__ import annotations

import sys

from shipcode_mcp import Context, Server

SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}

server = Server("mrtr-test", "1.0.0")


@server.tool
def confirm(question: str, ctx: Context) -> str:
    """Ask the user a yes/no question and say what they answered.

    Args:
        question: What to ask
    """
    answer = ctx.elicit(question, SCHEMA)
    content = answer.get("content") or {}
    return f"{answer['action']}: ok={content.get('ok')}"


if __name__ == "__main__":
    arguments = sys.argv[1:]
    if arguments[:1] == ["--http"]:
        sys.exit(server.run("http", port=int(arguments[1]), stateless="--stateless" in arguments))
    sys.exit(server.run())

"""Run by the `mcp` 1.x SDK's own interpreter (a separate venv): a 2025-era client of the real server.

    python sdk1_client.py stdio PYTHON ROOT     spawn `PYTHON -m shipcode_mcp ROOT` and talk over its pipes
    python sdk1_client.py http URL              talk Streamable HTTP to URL

Prints one JSON object: what the client negotiated and saw.
"""

import json
import sys

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamablehttp_client  # type: ignore[attr-defined]  # mcp 1.x's name; mypy sees 2.x


async def exercise(session):
    init = await session.initialize()
    await session.send_ping()
    tools = await session.list_tools()
    called = await session.call_tool("read_file", {"path": "hello.txt"})
    resources = await session.list_resources()
    read = await session.read_resource(resources.resources[0].uri)
    return {
        "sdk": __import__("importlib.metadata").metadata.version("mcp"),
        "protocolVersion": init.protocolVersion,
        "server": init.serverInfo.name,
        "tools": sorted(tool.name for tool in tools.tools),
        "read_file": called.structuredContent,
        "isError": called.isError,
        "resources": [str(resource.uri) for resource in resources.resources],
        "read": read.contents[0].text,
    }


async def main():
    if sys.argv[1] == "stdio":
        params = StdioServerParameters(command=sys.argv[2], args=["-m", "shipcode_mcp", sys.argv[3]],
                                       env={"PYTHONPATH": sys.argv[4]})
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            print(json.dumps(await exercise(session)))
    else:
        async with streamablehttp_client(sys.argv[2]) as (read, write, _), ClientSession(read, write) as session:
            print(json.dumps(await exercise(session)))


anyio.run(main)

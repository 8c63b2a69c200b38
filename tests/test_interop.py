"""The official MCP Python SDK (2.x) as a real client of the real process."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
from mcp import Client, ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from support import REPO


def params(root: Path) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "shipcode_mcp", str(root)],
                                 env={"PYTHONPATH": str(REPO / "src")})


def test_client_session_initializes_and_pings(tmp_path: Path) -> None:
    async def main() -> None:
        async with stdio_client(params(tmp_path)) as (read, write), ClientSession(read, write) as session:
            result = await session.initialize()
            assert result.protocol_version == "2025-06-18"
            assert result.server_info.name == "shipcode-mcp" and result.server_info.version == "1.0.0"
            assert result.capabilities.tools is not None and result.capabilities.resources is not None
            assert result.capabilities.prompts is None and result.capabilities.logging is None
            await session.send_ping()

    anyio.run(main)


def test_high_level_client_in_default_mode_speaks_2026_07_28(tmp_path: Path) -> None:
    async def main() -> None:
        async with Client(params(tmp_path)) as client:
            # The 2.x client probes with server/discover: we answer it, so it stays modern.
            assert client.protocol_version == "2026-07-28"
            assert client.server_info is not None and client.server_info.name == "shipcode-mcp"
            tools = await client.list_tools()
            assert "read_file" in {tool.name for tool in tools.tools}

    anyio.run(main)

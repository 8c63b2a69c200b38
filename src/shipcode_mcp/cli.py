"""The `shipcode-mcp` command: parse arguments, build the server, run a transport."""

from __future__ import annotations

import argparse
import os
import sys

from . import __version__, log
from .server import Server

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

SERVER_NAME = "shipcode-mcp"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="shipcode-mcp",
        description="An MCP server (protocol 2025-06-18) that gives AI assistants fast, exact and "
        "safe access to a code workspace: its files, a code search and its git history. It speaks "
        "newline-delimited JSON-RPC on stdin/stdout; diagnostics go to stderr.",
    )
    parser.add_argument("roots", nargs="*", metavar="ROOT",
                        help="workspace folder(s) to serve; every path is confined to them (default: the current directory)")
    parser.add_argument("--allow-write", action="store_true", help="also offer the tools that change files")
    parser.add_argument("--watch", action="store_true",
                        help="watch the roots and notify subscribed clients of changes (needs the 'watch' extra)")
    parser.add_argument("--log-level", choices=("debug", "info", "warning", "error", "off"), default="warning",
                        help="what to write to stderr (default: warning)")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    return parser


def build_server(roots: Sequence[str], *, allow_write: bool = False, watch: bool = False) -> Server:
    from .workspace import install

    server = Server(SERVER_NAME, __version__)
    install(server, list(roots) or [os.getcwd()], allow_write=allow_write, watch=watch)
    return server


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    log.set_level(args.log_level)
    try:
        server = build_server(args.roots, allow_write=args.allow_write, watch=args.watch)
    except ValueError as err:
        print(f"shipcode-mcp: {err}", file=sys.stderr)
        return 2
    from .transports.stdio import serve_stdio

    return serve_stdio(server)

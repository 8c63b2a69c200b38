"""Support for the interop tests: real servers as child processes (stdio parameters for the SDK's own
launcher, or a Streamable HTTP process on a free loopback port), a recording elicitation callback, and
the official TypeScript client installed by scripts/node_clients.sh."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import mcp_types as types
from mcp.client.session import ClientRequestContext
from mcp.client.stdio import StdioServerParameters

from support import REPO, installed, terminate

HERE = Path(__file__).resolve().parent
SHIPCODE = ["-m", "shipcode_mcp"]
MRTR_SERVER = [str(HERE / "mrtr_server.py")]
SDK_SERVER = [str(HERE / "sdk_server.py")]
MODERN = "2026-07-28"
LEGACY = "2025-06-18"
SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO / "src") + os.pathsep + env.get("PYTHONPATH", "")
    return env


def stdio_params(server: Sequence[str], *args: str) -> StdioServerParameters:
    """The SDK's launcher spawns `python SERVER ARGS` and speaks to it over its stdin and stdout."""
    return StdioServerParameters(command=sys.executable, args=[*server, *args],
                                 env={"PYTHONPATH": str(REPO / "src")})


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def http_server(server: Sequence[str], *args: str, http_flag: str = "--http", port_form: str = "{port}") -> Iterator[str]:
    """`python SERVER --http PORT ARGS` on a free loopback port; yields its /mcp URL once it accepts
    connections, and stops it with SIGTERM at the end. Its stderr goes to a file (an unread pipe
    could fill and stall it) and is shown if it fails to start."""
    port = free_port()
    with tempfile.TemporaryFile() as stderr:
        process = subprocess.Popen([sys.executable, *server, http_flag, port_form.format(port=port), *args],
                                   env=_env(), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr)
        try:
            deadline = time.monotonic() + 30
            while True:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                except OSError:
                    if process.poll() is not None or time.monotonic() > deadline:
                        stderr.seek(0)
                        raise AssertionError(f"{server} did not listen on {port}: {stderr.read()[-3000:]!r}") from None
                    time.sleep(0.05)  # polls a condition: returns as soon as the port accepts
            yield f"http://127.0.0.1:{port}/mcp"
        finally:
            terminate(process)


def shipcode_http(*args: str, stateless: bool = False) -> Any:
    """shipcode-mcp over Streamable HTTP: `--http 127.0.0.1:PORT [--stateless] ARGS`."""
    return http_server(SHIPCODE, *(["--stateless"] if stateless else []), *args, port_form="127.0.0.1:{port}")


@dataclass
class Elicitations:
    """An elicitation callback that answers every question with {"ok": true} and records how it was asked.

    The SDK client hands an MRTR input request to the callback under the key the server gave it in
    `inputRequests` (a string), and a legacy `elicitation/create` request under its JSON-RPC id (this
    client numbers its requests): `asked_by` tells the two apart."""

    asked: list[tuple[types.RequestId | None, str]] = field(default_factory=list)

    async def __call__(self, context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        assert isinstance(params, types.ElicitRequestFormParams), params
        assert params.requested_schema == SCHEMA, params.requested_schema
        self.asked.append((context.request_id, params.message))
        return types.ElicitResult(action="accept", content={"ok": True})

    def asked_by(self) -> list[str]:
        """"mrtr" for each question that came in an input_required result, "request" for each server request."""
        return ["mrtr" if isinstance(request_id, str) else "request" for request_id, _ in self.asked]


@cache
def node_clients() -> Path:
    """The cache folder of Node 22 and @modelcontextprotocol/client (scripts/node_clients.sh installs them
    the first time); the test skips, saying why, only when npm or its registry cannot be reached."""
    return installed("node_clients.sh", "the TypeScript client")


def run_ts_client(url: str, plan: dict[str, Any]) -> dict[str, Any]:
    """Run tests/interop/modern_client.mjs against `url` with `plan`; its JSON report (see the script)."""
    folder = node_clients()
    node = folder / "node_modules" / "node" / "bin" / "node"
    done = subprocess.run([str(node), str(HERE / "modern_client.mjs"), str(folder), url, json.dumps(plan)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip(), f"node exited {done.returncode}: {done.stderr[-3000:]}"
    report: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return report

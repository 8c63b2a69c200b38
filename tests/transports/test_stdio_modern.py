"""Modern (2026-07-28) requests over the real stdio transport: what only a process shows."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from support import REPO

SLOW_ROOTS = textwrap.dedent("""
    import time
    from shipcode_mcp import Server

    server = Server("slow-roots", "1")
    server.on_roots(lambda session, roots: time.sleep(7))  # longer than the wait for roots (ROOTS_WAIT, 5 s)

    @server.tool
    def hello() -> str:
        return "hello"

    server.run()
""")


def test_a_request_held_for_slow_roots_is_still_answered_at_end_of_input(tmp_path: Path) -> None:
    """The client sends a request with its roots and closes stdin at once: the roots callback outlasts
    the wait, and the request is answered all the same, then the server exits 0."""
    script = tmp_path / "server.py"
    script.write_text(SLOW_ROOTS)
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"roots": {}}}
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "hello", "inputResponses": {"roots": {"roots": [{"uri": tmp_path.as_uri()}]}}, "_meta": meta}}
    done = subprocess.run([sys.executable, str(script)], input=json.dumps(call).encode() + b"\n",
                          capture_output=True, timeout=60, env={"PYTHONPATH": str(REPO / "src")})
    assert done.returncode == 0, done.stderr
    [line] = done.stdout.splitlines()
    answer = json.loads(line)
    assert answer["id"] == 1 and answer["result"]["content"] == [{"type": "text", "text": "hello"}]

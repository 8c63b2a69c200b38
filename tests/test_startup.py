"""The start-up budget: every module `shipcode-mcp ROOT` imports to answer initialize and ping.

A module that is not below fails the test by name. Growing the list is a decision, with a cold-start
figure in docs/performance.md behind it: a heavy import at start (typing, inspect, dataclasses,
argparse, asyncio, subprocess, the validator, Starlette, watchfiles...) belongs on the path that needs it.
What the interpreter imports by itself (site, encodings, a .pth file's imports) is not counted: the
budget is what we add to it, measured with the interpreter that runs the tests (the venv's).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from support import McpProcess

STDLIB = {
    "__future__",  # `from __future__ import annotations`
    "re", "_sre", "copyreg", "enum", "functools", "_functools", "operator", "_operator", "types", "keyword",
    "collections", "_collections", "itertools", "reprlib",  # re and what it stands on
    "re._casefix", "re._compiler", "re._constants", "re._parser",  # re on Python 3.11+
    "sre_compile", "sre_constants", "sre_parse", "_locale",  # re on Python 3.10
    "json", "json.decoder", "json.encoder", "json.scanner", "_json",  # the wire
    "threading", "_weakrefset", "weakref", "warnings", "contextlib",  # the reading loop and the worker threads
    "signal", "errno",  # stdio: a broken pipe, an interrupted read
    "bisect", "_bisect",  # the core's runner
    # the sandbox check for the start-up line: 100 ms after start, at exit, or before another line (cli._check_sandbox_soon)
    "ctypes", "_ctypes", "ctypes._endian", "struct", "_struct", "importlib", "importlib._abc", "importlib.util", "resource",
}
OURS = {
    "shipcode_mcp", "shipcode_mcp.cli", "shipcode_mcp.log",
    "shipcode_mcp.jsonrpc", "shipcode_mcp.session", "shipcode_mcp.context", "shipcode_mcp.server", "shipcode_mcp.methods",
    "shipcode_mcp.runner", "shipcode_mcp.era",  # era: which era a request speaks (no imports of its own)
    # the core's layers (issue 24): code split out of session, server and methods, no new imports
    "shipcode_mcp.actions", "shipcode_mcp.envelope", "shipcode_mcp.paging", "shipcode_mcp.registry", "shipcode_mcp.validation",
    "shipcode_mcp.settings",  # the command line, read once (no imports of its own)
    "shipcode_mcp.primitives", "shipcode_mcp.transports", "shipcode_mcp.transports.stdio",
    # the workspace's definitions; the work (files, search, git, writes, process, listing, mime) loads on first use
    "shipcode_mcp.workspace", "shipcode_mcp.workspace.tools", "shipcode_mcp.workspace.resources",
    "shipcode_mcp.workspace.roots", "shipcode_mcp.workspace.uris", "shipcode_mcp.workspace.text",
    "shipcode_mcp.workspace.resource_limits",  # the resources' limits, apart so that the listing and the watcher share them
    "shipcode_mcp.workspace.sandbox",  # the sandbox check
}


def imported(stderr: bytes) -> set[str]:
    """The modules of an `-X importtime` report."""
    lines = stderr.decode(errors="replace").splitlines()
    return {line.rsplit("|", 1)[-1].strip() for line in lines if line.startswith("import time:") and "|" in line} - {
        "imported package"}


def test_the_cli_imports_only_its_budget_at_start(tmp_path: Path) -> None:
    script = Path(sys.executable).parent / "shipcode-mcp"  # the console script pip installs beside the interpreter
    command = [str(script)] if script.exists() else [sys.executable, "-c", "import sys; from shipcode_mcp.cli import main; "
                                                                            "sys.exit(main())"]
    with McpProcess(str(tmp_path), command=command, env={"PYTHONPROFILEIMPORTTIME": "1"}) as server:
        assert server.initialize()["result"]["serverInfo"]["name"] == "shipcode-mcp"
        assert server.request("ping")["result"] == {}
        assert server.close() == 0
    bare = subprocess.run([sys.executable, "-c", "pass"], capture_output=True, check=True,
                          env={**os.environ, "PYTHONPROFILEIMPORTTIME": "1"})
    loaded = imported(server.stderr) - imported(bare.stderr)
    assert "shipcode_mcp.workspace.tools" in loaded  # the report is read right
    beyond = sorted(loaded - STDLIB - OURS)
    assert not beyond, f"imported at start, beyond the budget: {', '.join(beyond)}"

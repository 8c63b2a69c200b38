"""What runs: our servers, the floors and the peers, installed pinned into the bench cache."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from .driver import BENCH, REPO, BenchError, Echo, Target, output_of

# Pinned peers: a benchmark that compares against "latest" measures a different thing every month.
MCP_PIN = "mcp==2.3.0"
FASTMCP_PIN = "fastmcp==4.1.6"
NODE_PIN = "@modelcontextprotocol/server-everything@2026.8.31"
TOOLS_PINS = ("matplotlib==3.11.2", "py-spy==0.4.3")  # the chart, and profiling by hand


def ensure_venv(cache: Path, requirements: tuple[str, ...], log: Callable[[str], None]) -> Path:
    """A virtual environment under the cache with exactly these pins; made once, reused after."""
    folder = cache / "venvs" / "+".join(r.replace("==", "-") for r in requirements)
    python = folder / "bin" / "python"
    stamp = folder / ".pins"
    wanted = "\n".join(requirements)
    if python.exists() and stamp.exists() and stamp.read_text() == wanted:
        return python
    log(f"installing {' '.join(requirements)} into {folder}")
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(folder)], check=True, capture_output=True)
    done = subprocess.run([str(python), "-m", "pip", "install", "--disable-pip-version-check", "-q", *requirements],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise BenchError(f"pip install {' '.join(requirements)} failed: {done.stderr.strip()[-500:]}")
    stamp.write_text(wanted)
    return python


def ensure_node_server(cache: Path, log: Callable[[str], None]) -> Path:
    """The Node reference server, installed with npm under the cache; returns its entry point."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        raise BenchError("node and npm are not installed")
    prefix = cache / "node"
    entry = prefix / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
    stamp = prefix / ".pins"
    if entry.exists() and stamp.exists() and stamp.read_text() == NODE_PIN:
        return entry
    log(f"installing {NODE_PIN} into {prefix}")
    prefix.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["npm", "install", "--prefix", str(prefix), "--no-audit", "--no-fund", NODE_PIN],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0 or not entry.exists():
        raise BenchError(f"npm install {NODE_PIN} failed: {done.stderr.strip()[-500:]}")
    stamp.write_text(NODE_PIN)
    return entry


def our_env(src: Path) -> dict[str, str]:
    """Our servers run from `src` (this checkout's src/ by default), whichever interpreter runs them."""
    return {"PYTHONPATH": str(src)}


def cli_command(python: str) -> list[str]:
    """The `shipcode-mcp` command as installed beside `python`, else `python -m shipcode_mcp`."""
    script = Path(python).parent / "shipcode-mcp"
    return [str(script)] if script.exists() else [python, "-m", "shipcode_mcp"]


def python_version(python: str) -> str:
    return output_of([python, "-c", "import platform; print(platform.python_version())"])


def make_targets(python: str, src: Path, cache: Path, wanted: set[str], install: bool,
                 log: Callable[[str], None]) -> list[Target]:
    """The servers of the issue, in the order of the table; peers are installed (or found) here."""
    ours = our_env(src)
    version = output_of([python, "-c", "import shipcode_mcp; print(shipcode_mcp.__version__)"], ours)
    cli = cli_command(python)
    plain = f"Python {python_version(python)}"
    targets = [
        Target("python", "python -c 'import json'", [python, "-c", "import json"], server=False, version=plain),
        Target("floor", "floor (stdlib loop)", [python, str(BENCH / "floor_server.py")], Echo(), version=plain),
        Target("shipcode-echo", "shipcode-mcp echo example", [python, str(REPO / "examples" / "echo_server.py")], Echo(),
               env=ours, version=version, modern=True),
        Target("shipcode-mcp", "shipcode-mcp (CLI)", [*cli, str(REPO)], env=ours, version=version),
        Target("shipcode-echo-default", "echo, default tool path (thread)", [python, str(BENCH / "echo_default.py")], Echo(),
               env=ours, version=version),
        Target("shipcode-explicit", "echo, explicit Tool", [python, str(BENCH / "echo_explicit.py")], Echo(),
               env=ours, version=version),
    ]
    peers: list[tuple[str, str, str, Callable[[], list[str]]]] = [
        ("mcp-sdk", f"official SDK {MCP_PIN.split('==')[1]}", MCP_PIN,
         lambda: [str(ensure_venv(cache, (MCP_PIN,), log)), str(BENCH / "peers" / "mcp_sdk_echo.py")]),
        ("fastmcp", f"fastmcp {FASTMCP_PIN.split('==')[1]}", FASTMCP_PIN,
         lambda: [str(ensure_venv(cache, (FASTMCP_PIN,), log)), str(BENCH / "peers" / "fastmcp_echo.py")]),
        ("node-everything", "Node server-everything", NODE_PIN,
         lambda: ["node", str(ensure_node_server(cache, log)), "stdio"]),
    ]
    for key, label, pin, command in peers:
        if key not in wanted:
            continue
        target = Target(key, label, [], Echo("message", "Echo: {}") if key == "node-everything" else Echo(), version=pin)
        if not install and not (cache / ("node" if key == "node-everything" else "venvs")).exists():
            target.unavailable = "not installed (--no-install)"
        else:
            try:
                target.command = command()
            except (BenchError, OSError, subprocess.SubprocessError) as err:
                target.unavailable = str(err)
        if key == "node-everything" and target.unavailable is None:
            target.version += f" on Node {output_of(['node', '--version'])}"
        targets.append(target)
    return [t for t in targets if t.key in wanted]


ALL_KEYS = ("python", "floor", "shipcode-echo", "shipcode-mcp", "shipcode-echo-default", "shipcode-explicit",
            "mcp-sdk", "fastmcp", "node-everything")
PEER_KEYS = ("mcp-sdk", "fastmcp", "node-everything")


# -- the tools' peers: what a user would otherwise pick for the same task ------------------------------------
NODE_VERSION = "22.23.3"  # the npm package `node`, as scripts/node_clients.sh and scripts/conformance.sh pin it
FILESYSTEM_PIN = "@modelcontextprotocol/server-filesystem@2026.8.31"
RIPGREP_PIN = "mcp-ripgrep@0.4.0"
GIT_PIN = "mcp-server-git==2026.10.19"
AST_GREP_PIN = "ast-grep-cli==0.51.1"  # the floor of search_structure: `ast-grep run -p PATTERN | head -N`


def ensure_npm(cache: Path, log: Callable[[str], None]) -> Path:
    """Node 22 (the npm package `node`) and the Node peers of the tools, under the cache; returns the prefix.

    Node comes from npm like the peers, so the figures do not depend on whichever Node the machine has.
    """
    if shutil.which("npm") is None:
        raise BenchError("npm is not installed")
    pins = (f"node@{NODE_VERSION}", FILESYSTEM_PIN, RIPGREP_PIN)
    prefix = cache / "node-tools"
    stamp = prefix / ".pins"
    if stamp.exists() and stamp.read_text() == "\n".join(pins):
        return prefix
    log(f"installing {' '.join(pins)} into {prefix}")
    prefix.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["npm", "install", "--prefix", str(prefix), "--no-audit", "--no-fund", *pins],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0 or not node_of(prefix).exists():
        raise BenchError(f"npm install {' '.join(pins)} failed: {done.stderr.strip()[-500:]}")
    stamp.write_text("\n".join(pins))
    return prefix


def node_of(prefix: Path) -> Path:
    return prefix / "node_modules" / "node" / "bin" / "node"


def npm_entry(prefix: Path, package: str) -> Path:
    """The `bin` script a package declares (its first), as npm would run it."""
    folder = prefix / "node_modules" / package
    declared = json.loads((folder / "package.json").read_text()).get("bin")
    script = declared if isinstance(declared, str) else next(iter(declared.values()))
    return folder / script

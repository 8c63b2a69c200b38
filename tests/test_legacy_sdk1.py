"""The legacy contract with a 2025-era client: the official Python SDK 1.x (`mcp` 1.30.0, the last
1.x), which knows nothing of 2026-07-28, over stdio and Streamable HTTP.

The 1.x SDK cannot share a venv with the 2.x one the other tests use, so it lives in a venv of its own,
made once in a cache folder (SHIPCODE_PEER_CACHE, else $XDG_CACHE_HOME/shipcode-mcp/peers) and reused; the
client is a separate process, so its interpreter need not be the one under test.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from interop.client_support import shipcode_http
from support import REPO, peer_venv

SDK1 = "1.30.0"
CLIENT = Path(__file__).parent / "peers" / "sdk1_client.py"


def _python(folder: Path) -> Path:
    return folder / "bin" / "python"


@pytest.fixture(scope="session")
def sdk1() -> Path:
    """The interpreter of a venv holding mcp==SDK1, made on first use."""
    return _python(peer_venv(f"mcp-{SDK1}", f"mcp=={SDK1}"))


def _workspace(tmp_path: Path) -> Path:
    (tmp_path / "hello.txt").write_text("hello from the workspace\n")
    return tmp_path


def _check(seen: dict[str, Any]) -> None:
    assert seen["sdk"] == SDK1
    assert seen["protocolVersion"] == "2025-06-18"
    assert seen["server"] == "shipcode-mcp"
    assert {"read_file", "list_files", "search_code", "git_log"} <= set(seen["tools"])
    assert seen["isError"] is False
    assert seen["read_file"] == {"path": "hello.txt", "text": "hello from the workspace", "start_line": 1,
                                 "end_line": 1, "total_lines": 1, "next_offset": None, "size": 25,
                                 "sha256": hashlib.sha256(b"hello from the workspace\n").hexdigest()}
    assert seen["read"] == "hello from the workspace\n"


def test_sdk1_client_session_over_stdio(sdk1: Path, tmp_path: Path) -> None:
    root = _workspace(tmp_path)
    done = subprocess.run([str(sdk1), str(CLIENT), "stdio", sys.executable, str(root), str(REPO / "src")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    _check(json.loads(done.stdout))


@pytest.mark.parametrize("stateless", [False, True], ids=["sessions", "stateless"])
def test_sdk1_client_session_over_http(sdk1: Path, tmp_path: Path, stateless: bool) -> None:
    root = _workspace(tmp_path)
    with shipcode_http(str(root), stateless=stateless) as url:
        done = subprocess.run([str(sdk1), str(CLIENT), "http", url], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    _check(json.loads(done.stdout))


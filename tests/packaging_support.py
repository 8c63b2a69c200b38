"""The installers the packaging tests and docs/install.md's commands use: PyPI `build`, `uv` and `pipx`,
pinned, in a venv made once in a cache folder (support.PEER_CACHE), as
in tests/test_legacy_sdk1.py; and the environment uv runs in, whose cache outlives the tests."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from support import PEER_CACHE, peer_venv

BUILD = "1.6.1"
UV = "0.13.9"
PIPX = "1.18.4"
CACHE = PEER_CACHE


def installers() -> Path:
    """The bin folder of a venv holding build==BUILD, uv==UV and pipx==PIPX, made on first use."""
    return peer_venv(f"packaging-build-{BUILD}-uv-{UV}-pipx-{PIPX}", f"build=={BUILD}", f"uv=={UV}", f"pipx=={PIPX}") / "bin"


def uv_env(tmp_path: Path) -> dict[str, str]:
    """uv with tools and environments in `tmp_path`, this interpreter, and a cache that outlives the test."""
    return {**os.environ, "UV_CACHE_DIR": str(CACHE / "uv-cache"), "UV_TOOL_DIR": str(tmp_path / "uv-tools"),
            "UV_TOOL_BIN_DIR": str(tmp_path / "uv-bin"), "UV_PYTHON": sys.executable, "UV_PYTHON_DOWNLOADS": "never",
            "UV_NO_CONFIG": "1", "VIRTUAL_ENV": ""}

"""The installers the packaging tests and docs/install.md's commands use: PyPI `build`, `uv` and `pipx`,
pinned, in a venv made once in a cache folder (SHIPCODE_PEER_CACHE, else ~/.cache/shipcode-mcp/peers), as
in tests/test_legacy_sdk1.py; and the environment uv runs in, whose cache outlives the tests."""

from __future__ import annotations

import os
import subprocess
import sys
import venv
from pathlib import Path

BUILD = "1.6.1"
UV = "0.13.9"
PIPX = "1.18.4"
CACHE = Path(os.environ.get("SHIPCODE_PEER_CACHE") or Path.home() / ".cache" / "shipcode-mcp" / "peers")


def installers() -> Path:
    """The bin folder of a venv holding build==BUILD, uv==UV and pipx==PIPX, made on first use."""
    folder = CACHE / f"packaging-build-{BUILD}-uv-{UV}-pipx-{PIPX}"
    python = folder / "bin" / "python"
    wanted = (BUILD, UV, PIPX)
    check = [str(python), "-c",
             f"import importlib.metadata as m; assert (m.version('build'), m.version('uv'), m.version('pipx')) == {wanted!r}"]
    if not python.exists() or subprocess.run(check, capture_output=True).returncode != 0:
        venv.create(folder, with_pip=True, clear=True)
        subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                        f"build=={BUILD}", f"uv=={UV}", f"pipx=={PIPX}"], check=True, timeout=600)
        subprocess.run(check, check=True)
    return folder / "bin"


def uv_env(tmp_path: Path) -> dict[str, str]:
    """uv with tools and environments in `tmp_path`, this interpreter, and a cache that outlives the test."""
    return {**os.environ, "UV_CACHE_DIR": str(CACHE / "uv-cache"), "UV_TOOL_DIR": str(tmp_path / "uv-tools"),
            "UV_TOOL_BIN_DIR": str(tmp_path / "uv-bin"), "UV_PYTHON": sys.executable, "UV_PYTHON_DOWNLOADS": "never",
            "UV_NO_CONFIG": "1", "VIRTUAL_ENV": ""}

"""Fixtures of the workspace tool tests."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from workspace_support import Tools


@pytest.fixture(scope="module")
def tools(repo: Path) -> Iterator[Tools]:
    """One read-only server over the module's `repo` fixture, shared by the module's tests."""
    with Tools(repo) as server:
        yield server


@pytest.fixture(autouse=True, scope="module")
def _no_parse_workers_left() -> Iterator[None]:
    """Parse workers started in this process (code/parsers.py keeps them for later requests) are stopped
    after each module: a later module that counts the fork server's children counts only its own."""
    yield
    parsers = sys.modules.get("shipcode_mcp.workspace.code.parsers")
    if parsers is not None:
        parsers.POOL.clear()

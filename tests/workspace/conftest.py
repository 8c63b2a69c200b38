"""Fixtures of the workspace tool tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from workspace_support import Tools


@pytest.fixture(scope="module")
def tools(repo: Path) -> Iterator[Tools]:
    """One read-only server over the module's `repo` fixture, shared by the module's tests."""
    with Tools(repo) as server:
        yield server

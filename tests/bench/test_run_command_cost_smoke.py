"""run_command's benchmark, smoke run (2 rounds, 50 MB, no test suite), so that bench/run_command_cost.py never
rots. Nothing here asserts a timing (the machine is shared): the run exits 0, every part was measured, every
answer checked (the command's output all counted, every ping answered)."""

from __future__ import annotations

from typing import Any

import pytest

from shipcode_mcp.workspace.command_sandbox import unavailable_reason
from support import REPO, bench_smoke

SCRIPT = REPO / "bench" / "run_command_cost.py"
pytestmark = pytest.mark.skipif(unavailable_reason() is not None, reason=f"no sandbox here: {unavailable_reason()}")


@pytest.fixture(scope="module")
def smoke(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], str]:
    return bench_smoke(SCRIPT, tmp_path_factory.mktemp("run-command-cost"), 120)


def test_the_start_and_the_pings_were_measured(smoke: tuple[dict[str, Any], str]) -> None:
    report, _ = smoke
    assert report["start"]["sandboxed_ms"] > 0 and report["start"]["plain_ms"] > 0
    assert report["ping"]["output_mb"] == 50 and report["ping"]["pings"] >= 1
    assert "tests" not in report  # the suite is the full run's

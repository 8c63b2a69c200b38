"""The `measures` mark (conftest.py): under the coverage run of scripts/test.sh, the servers of a test that
bounds their memory or latency run without the tracer, and every other test's servers are measured. Outside a
coverage run there is no tracer to leave out, and the first test skips."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

CHILD = "import sys; print('coverage' in sys.modules)"


def tracer_in_child() -> bool:
    return subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, check=True,
                          timeout=60).stdout.strip() == "True"


def test_a_child_of_an_unmarked_test_is_measured() -> None:
    if "COVERAGE_PROCESS_CONFIG" not in os.environ:
        pytest.skip("not a coverage run (scripts/test.sh measures the 3.12 run)")
    assert tracer_in_child()


@pytest.mark.measures
def test_a_child_of_a_measuring_test_runs_without_the_tracer() -> None:
    assert "COVERAGE_PROCESS_CONFIG" not in os.environ
    assert not tracer_in_child()

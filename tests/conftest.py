import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

# What the property tests check is never how fast an example runs: a loaded machine must not fail them.
settings.register_profile("shipcode", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("shipcode")


def pytest_configure(config: object) -> None:
    """The `install` mark: tests that install the package from the index as docs/install.md says (a minute or
    two cold): `-m "not install"` leaves them out. The `one_python` mark: a measurement of the tools against real
    language servers on real projects, or a benchmark's smoke run, minutes each, whose answer no Python version
    changes (the code it runs is run on every Python by the other tests): scripts/test.sh runs it on the main
    Python only, which keeps CI within its time."""
    config.addinivalue_line("markers", "install: installs the package with pip, pipx or uv, as docs/install.md says")  # type: ignore[attr-defined]
    config.addinivalue_line("markers", "measures: bounds a server's memory or latency; its servers run without the "  # type: ignore[attr-defined]
                                       "coverage tracer")
    config.addinivalue_line("markers", "one_python: measures real projects, minutes long; scripts/test.sh runs it "  # type: ignore[attr-defined]
                                       "on the main Python only")


COVERAGE_VARIABLES = ("COVERAGE_PROCESS_CONFIG", "COVERAGE_PROCESS_START")
"""What makes coverage.py start in a new Python process (`patch = ["subprocess"]` sets the first for the
processes the tests start, scripts/test.sh)."""


@pytest.fixture(autouse=True)
def untraced_when_measured(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """A test marked `measures` bounds what a server it starts costs (memory, the latency of a ping): that server
    runs as users run it, without the coverage tracer, whose own memory and time are not the server's. Autouse,
    so it comes before the test's own function-scoped fixtures, which start those servers."""
    if request.node.get_closest_marker("measures") is not None:
        for name in COVERAGE_VARIABLES:
            monkeypatch.delenv(name, raising=False)

import sys
from pathlib import Path

from hypothesis import HealthCheck, settings

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

# What the property tests check is never how fast an example runs: a loaded machine must not fail them.
settings.register_profile("shipcode", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("shipcode")


def pytest_configure(config: object) -> None:
    """The `install` mark: tests that install the package from the index as docs/install.md says (a minute or
    two cold): `-m "not install"` leaves them out."""
    config.addinivalue_line("markers", "install: installs the package with pip, pipx or uv, as docs/install.md says")  # type: ignore[attr-defined]

import sys
from pathlib import Path

from hypothesis import HealthCheck, settings

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

# What the property tests check is never how fast an example runs: a loaded machine must not fail them.
settings.register_profile("shipcode", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("shipcode")

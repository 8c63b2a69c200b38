"""bench/ on sys.path, so the bench's package (bench/shipcode_bench) imports as itself in these tests."""

import sys
from pathlib import Path

BENCH = str(Path(__file__).resolve().parents[2] / "bench")
if BENCH not in sys.path:
    sys.path.insert(0, BENCH)

"""The benchmark: shipcode-mcp against the floor, the official SDK, fastmcp and the Node reference server.

Every server runs as a child process over real pipes, driven by this script (standard library only,
so that it measures the servers and not a client library). Repetitions are interleaved (each round
visits every server, in a rotated order) and the table shows medians, so a burst of load from
elsewhere on the machine spreads over all servers instead of landing on one. Ratios compare figures
of the same run only. Every response is checked (id, no error, the echoed text); a server that fails
a check has no figure for that phase.

    .venv/bin/python bench/run.py             # everything; peers install under .bench-cache/
    .venv/bin/python bench/run.py --smoke     # tiny counts, our server and the floor: about 2 s

Peers install into their own virtual environments (and npm prefix) under the cache folder, pinned.
The chart is drawn by bench/chart.py with matplotlib from a cache venv, so nothing here needs it.
"""

from __future__ import annotations

import sys

# The package lives beside this file; `python bench/run.py` puts bench/ first on sys.path already, and so do
# the scripts that `import run as harness` (bench/code_intel.py, bench/sandbox_cost.py, bench/start_ab.py).
from shipcode_bench.cli import *  # noqa: F403
from shipcode_bench.cli import main
from shipcode_bench.driver import *  # noqa: F403
from shipcode_bench.protocol import *  # noqa: F403
from shipcode_bench.report import *  # noqa: F403
from shipcode_bench.servers import *  # noqa: F403
from shipcode_bench.tools import *  # noqa: F403
from shipcode_bench.workspaces import *  # noqa: F403

if __name__ == "__main__":
    sys.exit(main())

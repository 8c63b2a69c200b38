"""The server of the accept-burst test with its defence off: `python front_burst_server.py PORT ROOT`.

What `shipcode-mcp --http PORT ROOT --header-timeout 0` served before the accept batch was bounded: asyncio's
default backlog (2048 connections accepted at one loop turn) and the cap that left a quarter of the descriptors
free. Run it with a low RLIMIT_NOFILE.
"""

from __future__ import annotations

import resource
import sys

from shipcode_mcp.cli import build_server
from shipcode_mcp.transports.http import create_app
from shipcode_mcp.transports.http.front import FrontLimits
from shipcode_mcp.transports.http.serving import run_uvicorn

if __name__ == "__main__":
    port, root = int(sys.argv[1]), sys.argv[2]
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    app = create_app(build_server([root]), host="127.0.0.1")
    limits = FrontLimits(header_timeout=0, max_connections=max(16, soft - max(64, soft // 4)))
    sys.exit(run_uvicorn(app, host="127.0.0.1", port=port, log_level="warning", front=limits, backlog=2048,
                         loop="asyncio"))

"""The server of the bounds tests (issue 22), with any defence turned off:
`python front_bounds_server.py PORT ROOT [front.FIELD=JSON] [app.OPTION=JSON] [http.NAME=JSON]`.

`front.*` are `FrontLimits` fields, `app.*` `create_app` options, `http.*` constants of transports/http/endpoint.py (all as
JSON values): e.g. `front.min_chunk=0` serves what the front served before tiny chunks were refused.
"""

from __future__ import annotations

import json
import sys

from shipcode_mcp.cli import build_server
from shipcode_mcp.transports.http import create_app
from shipcode_mcp.transports.http import endpoint as http
from shipcode_mcp.transports.http.front import FrontLimits
from shipcode_mcp.transports.http.serving import run_uvicorn

if __name__ == "__main__":
    port, root = int(sys.argv[1]), sys.argv[2]
    front: dict[str, object] = {}
    app: dict[str, object] = {}
    for argument in sys.argv[3:]:
        name, _, value = argument.partition("=")
        where, _, field = name.partition(".")
        if where == "http":
            setattr(http, field, json.loads(value))
        else:
            (front if where == "front" else app)[field] = json.loads(value)
    # No cap on results: these tests need answers larger than the socket's buffers, which a client never reads.
    served = create_app(build_server([root], max_result_tokens=0), host="127.0.0.1", stateless=True,
                        **app)  # type: ignore[arg-type]
    sys.exit(run_uvicorn(served, host="127.0.0.1", port=port, log_level="warning",
                         front=FrontLimits(**front)))  # type: ignore[arg-type]

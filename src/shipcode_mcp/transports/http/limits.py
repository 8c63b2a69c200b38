"""What one Streamable HTTP endpoint allows a request, a session and a caller: `HttpLimits`, each limit's one
home. The command line's options (cli.py), `create_app`'s and `serve_http`'s keywords all fill its fields;
the connection-level limits (request heads, open connections) are `front.FrontLimits`."""

from __future__ import annotations

import dataclasses
from typing import Any

from .lanes import PER_LANE

MAX_BODY_BYTES = 64 * 1024 * 1024
"""A larger request body gets 413."""
BODY_TIMEOUT = 60.0  # seconds a request body may go without a byte (and the grace before BODY_MIN_RATE counts)
BODY_MIN_RATE = 16 * 1024
"""Bytes a second a body must average after its first BODY_TIMEOUT seconds: a 64 MiB upload on a 1 Mbit/s link
(~122 KiB/s) passes with room to spare, a client that trickles a byte now and then does not."""
BODY_BUDGET = 256 * 1024 * 1024
"""Bytes of request bodies an endpoint holds at once, read or being read (503 beyond): 100 clients each holding a
62 MiB body 1 KiB short of its end took a server to 6 GB. Bodies up to SMALL_BODY are not counted (the
connection cap bounds them)."""
MAX_JSON_VALUES = 100_000
"""JSON values a request body may hold (413 beyond): 5.6 million keys in 67 MB took 22 s and 1.1 GB to parse."""
MAX_REQUESTS_PER_CALLER = 128
"""Requests one caller (a token's subject, else a client address) has open at once, its streams included (429
beyond): each holds a connection, and one read-only token took every connection with 704 listens."""
MAX_STREAMS_PER_CALLER = 32
"""GET streams and subscriptions/listen one caller holds open at once (429 beyond)."""
MAX_SESSIONS = 1000
"""Sessions kept at once; at the cap the least recently used idle one makes room."""


@dataclasses.dataclass(frozen=True)
class HttpLimits:
    """Every limit of an endpoint (0 lifts a limit that says so)."""

    max_body_bytes: int = MAX_BODY_BYTES
    """A larger request body gets 413."""
    body_timeout: float = BODY_TIMEOUT
    """Seconds a body may go without a byte (408 after; 0: no limit)."""
    body_min_rate: int = BODY_MIN_RATE
    """Bytes a second a body averages after its first `body_timeout` seconds (0: no minimum)."""
    body_budget: int = BODY_BUDGET
    """Bytes of bodies over SMALL_BODY held at once, across requests (503 beyond; 0: no budget)."""
    max_json_values: int = MAX_JSON_VALUES
    """JSON values a body over SMALL_BODY may hold, counted as it is parsed off the event loop (413 beyond; 0: no limit)."""
    max_sessions: int = MAX_SESSIONS
    """Sessions kept; at the cap the least recently used idle one makes room for a new one (0: no cap)."""
    max_sessions_per_caller: int | None = None
    """With tokens checked, the sessions one caller holds (None: a quarter of `max_sessions`, at least 16; 0: no quota)."""
    session_idle_timeout: float = 3600.0
    """Seconds a session may go unused (no request, no open stream) before it ends (0: never)."""
    max_concurrent_calls: int = PER_LANE
    """Handler calls of a session (or of a caller, without one) that run at once; the rest wait their turn (0: no limit)."""
    max_workers: int = 64
    """Threads that run handlers, shared fairly by sessions and callers (lanes.py)."""
    max_requests_per_caller: int = MAX_REQUESTS_PER_CALLER
    """Requests one caller (a token's subject, else a client address) has open at once (429 beyond; 0: no cap)."""
    max_streams_per_caller: int = MAX_STREAMS_PER_CALLER
    """Of them, GET streams and subscriptions/listen (429 beyond; 0: no cap)."""
    keepalive: float = 15.0
    """Seconds between the comments an idle GET or listen stream carries."""

    def sessions_per_caller(self) -> int:
        """`max_sessions_per_caller`, its default worked out."""
        if self.max_sessions_per_caller is not None:
            return self.max_sessions_per_caller
        return max(16, self.max_sessions // 4) if self.max_sessions > 0 else 0


def with_fields(limits: HttpLimits | None, given: dict[str, Any]) -> HttpLimits:
    """`limits` (or the defaults) with the fields `given` by name replaced; TypeError names a field that is not one."""
    unknown = set(given) - {field.name for field in dataclasses.fields(HttpLimits)}
    if unknown:
        raise TypeError(f"no such limit: {', '.join(sorted(unknown))} (see HttpLimits)")
    return dataclasses.replace(limits or HttpLimits(), **given)

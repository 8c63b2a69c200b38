"""The connection front of the HTTP server: what a connection must do before the app hears of it.

uvicorn gives a connection all the time it wants to send its request head (its keep-alive timeout stops
at the first byte), and its `limit_concurrency` answers 503 only once a head is complete. So a client
that sends a header byte now and then (slowloris) holds a connection, and a file descriptor, for good;
once descriptors run out, accept() fails and nobody else is served. `FrontProtocol`, uvicorn's h11
protocol with two rules added, holds:

- a head deadline: a connection that has not sent a whole request head within `header_timeout` seconds
  of connecting, or on a kept-alive connection of the first byte of its next request, is closed (an
  idle kept-alive connection is uvicorn's keep-alive timeout's);
- a connection cap: at `max_connections`, a new connection evicts the one that has waited longest for
  its request head (or idled longest between requests); if none does, the one that has spent longest
  sending a request body (a client that uploads slowly on purpose); if none does either, the new one is
  closed: connections whose requests are being served are never cut. The default cap sits well below
  RLIMIT_NOFILE (which `raise_file_limit` lifts to its hard limit), so accept() never runs out of
  descriptors: a fresh client always gets in and slow ones make room.

A stalled body is the app's to refuse (`StreamableHttp`'s body timeout: 408).

Why h11 only: uvicorn picks httptools when it is installed; these rules hook into the protocol's parsing
state (h11's `their_state`), and one implementation, present wherever uvicorn is, is one to harden and
to test. httptools' speed does not matter here: a request's cost is its tool's work.

`protocol(limits)` is what `uvicorn.Config(http=...)` takes; it pickles, so `--workers` processes get it
too. An app served by another uvicorn command line gets these rules with `--http` pointing at a module
attribute made with `protocol(...)`.
"""

from __future__ import annotations

import asyncio
import functools
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import h11
from uvicorn.config import Config
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.server import ServerState

HEADER_TIMEOUT = 10.0
"""Seconds a connection has to send a request head."""
CONNECTIONS_CEILING = 16384
"""The default cap never goes above this, however many descriptors the process may open."""


@dataclass(frozen=True)
class FrontLimits:
    """`header_timeout` seconds for a request head (0: no deadline); `max_connections` open connections
    (None: sized from RLIMIT_NOFILE, see `default_max_connections`; 0: no cap)."""

    header_timeout: float = HEADER_TIMEOUT
    max_connections: int | None = None


def protocol(limits: FrontLimits = FrontLimits()) -> Callable[..., asyncio.Protocol]:
    """The `http` of a uvicorn Config that applies `limits` (a partial of a module class: it pickles)."""
    return functools.partial(FrontProtocol, limits=limits)


def default_max_connections() -> int:
    """Three quarters of the descriptors this process may open (at least 64 are left for files, pipes to
    rg and git, and the listening sockets), at most `CONNECTIONS_CEILING`, at least 16."""
    soft = _file_limit()
    if soft is None:
        return CONNECTIONS_CEILING
    return max(16, min(CONNECTIONS_CEILING, soft - max(64, soft // 4)))


def raise_file_limit() -> int | None:
    """Lift the soft RLIMIT_NOFILE to the hard one where the system lets us; the limit now in force
    (None where there is no such limit, e.g. on Windows)."""
    try:
        import resource
    except ImportError:
        return None
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = hard if hard != resource.RLIM_INFINITY else max(soft, 1 << 20)
    if soft != resource.RLIM_INFINITY and soft < wanted:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
        except (ValueError, OSError):  # e.g. above the kernel's nr_open: keep what we have
            pass
    return _file_limit()


def _file_limit() -> int | None:
    try:
        import resource
    except ImportError:
        return None
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    return None if soft == resource.RLIM_INFINITY else int(soft)


class _Front:
    """What the connections of one uvicorn server share: how many are open, and, oldest first, those
    waiting for a request head and those sending a body (the candidates for eviction)."""

    def __init__(self, limits: FrontLimits) -> None:
        cap = limits.max_connections
        self.cap = default_max_connections() if cap is None else cap
        self.open = 0
        self.heads: dict[FrontProtocol, None] = {}  # insertion order: longest waiting first
        self.bodies: dict[FrontProtocol, None] = {}
        self.evicted = 0
        self.timed_out = 0

    def victim(self, newcomer: FrontProtocol) -> FrontProtocol | None:
        for waiting in (self.heads, self.bodies):
            for connection in waiting:
                if connection is not newcomer:
                    return connection
        return None


_FRONTS: weakref.WeakKeyDictionary[ServerState, _Front] = weakref.WeakKeyDictionary()


def front_of(server_state: ServerState) -> _Front | None:
    """The shared state of a server's front (for tests and diagnostics), once a connection has come."""
    return _FRONTS.get(server_state)


class FrontProtocol(H11Protocol):
    """uvicorn's h11 protocol with a deadline for request heads and a cap on open connections."""

    def __init__(self, config: Config, server_state: ServerState, app_state: dict[str, Any],
                 _loop: asyncio.AbstractEventLoop | None = None, *, limits: FrontLimits) -> None:
        super().__init__(config, server_state, app_state, _loop)
        self.limits = limits
        front = _FRONTS.get(server_state)
        if front is None:
            front = _FRONTS[server_state] = _Front(limits)
        self.front = front
        self._deadline: asyncio.TimerHandle | None = None
        self._counted = False

    # -- uvicorn's protocol, with the front's bookkeeping around it ---------------------------------
    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        front = self.front
        if front.cap > 0 and front.open >= front.cap:
            victim = front.victim(self)
            if victim is None:  # every open connection is being served: this one cannot be
                front.evicted += 1
                transport.abort()
                return
            victim._drop()
            front.evicted += 1
        front.open += 1
        self._counted = True
        self._track(arm=True)

    def data_received(self, data: bytes) -> None:
        waiting_idle = self._deadline is None and self.conn.their_state is h11.IDLE
        super().data_received(data)
        self._track(arm=waiting_idle)  # the first byte of a kept-alive connection's next request

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._track(arm=False)  # idle between requests: uvicorn's keep-alive timeout, until a byte comes

    def connection_lost(self, exc: Exception | None) -> None:
        self._forget()
        super().connection_lost(exc)

    # -- the front ------------------------------------------------------------------------------------
    def _track(self, *, arm: bool) -> None:
        """File the connection by what it is doing now: waiting for a head, sending a body, or served."""
        if not self._counted or self.transport.is_closing():
            return
        front = self.front
        state = self.conn.their_state
        if state is h11.IDLE:
            front.bodies.pop(self, None)
            if self not in front.heads:
                front.heads[self] = None
            if arm and self._deadline is None and self.limits.header_timeout > 0:
                self._deadline = self.loop.call_later(self.limits.header_timeout, self._head_overdue)
            return
        self._disarm()
        front.heads.pop(self, None)
        if state is h11.SEND_BODY and not (self.cycle is not None and self.cycle.response_started):
            if self not in front.bodies:
                front.bodies[self] = None
        else:
            front.bodies.pop(self, None)

    def _head_overdue(self) -> None:
        self._deadline = None
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            self.front.timed_out += 1
            self._drop()

    def _drop(self) -> None:
        """Close at once (abort: nothing of ours is waiting to be written), and make room now."""
        self._forget()
        self.transport.abort()

    def _forget(self) -> None:
        self._disarm()
        if self._counted:
            self._counted = False
            self.front.open -= 1
            self.front.heads.pop(self, None)
            self.front.bodies.pop(self, None)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

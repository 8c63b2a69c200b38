"""The asyncio runner of a sans-IO session over HTTP: the event loop receives, routes and writes, async tools
run as tasks on it, other handlers on worker threads taking turns in lanes (lanes.py). The endpoint
(endpoint.py) makes one per MCP session (legacy) or per request (modern) and reads what it routes: each open
POST exchange is a queue, ended by `DONE`; messages that belong to no request wait for the GET stream."""

from __future__ import annotations

import asyncio
import collections
import threading
import time
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol

from ... import jsonrpc
from ...jsonrpc import JsonRpcError
from ...runner import Runner

if TYPE_CHECKING:
    from collections.abc import Callable, Hashable

    from ...actions import Job, Outcome
    from ...jsonrpc import Id, Message
    from ...registry import Registry
    from .lanes import Call, Lanes

STANDALONE_BUFFER = 1000  # messages kept for a session's GET stream while none is open
DONE = object()  # a request's work has finished (after its response, if any): the end of its exchange's queue


class Endpoint(Protocol):
    """What a runner needs of the endpoint that made it (endpoint.StreamableHttp), and no more: the runner
    module stands below the endpoint and never imports it."""

    server: Registry
    loop: asyncio.AbstractEventLoop | None  # the event loop serving the endpoint, once it runs

    def on_loop(self, fn: Any, *args: Any) -> None:
        """Call `fn(*args)` on the event loop, from any thread."""

    def lanes(self) -> Lanes:
        """The worker threads, shared fairly by the sessions and callers."""


def is_response(message: Any) -> bool:
    return isinstance(message, dict) and "method" not in message


class _Here(threading.local):
    """Per thread: the job `HttpSession._run` runs here, where the messages of its end go, and, while
    `finish_job` ends it, the runner whose messages go there."""

    job: Job | None = None
    ending: list[tuple[Message, Id | None]] | None = None
    collect: tuple[HttpSession, list[tuple[Message, Id | None]]] | None = None


_here = _Here()


class HttpSession(Runner):
    """One MCP session over HTTP, the asyncio runner of the sans-IO session: the event loop receives,
    routes and writes and runs async tools as tasks; other handlers run on worker threads. It holds the
    open POST streams and the GET stream."""

    def __init__(self, transport: Endpoint, session_id: str | None) -> None:
        super().__init__(transport.server, stateless=session_id is None)
        self.transport = transport
        self.id = session_id
        self.owner: str | None = None  # the caller (Principal.key) a session belongs to, when tokens are checked
        self.requests: dict[Id, asyncio.Queue[Any]] = {}  # open POST exchanges, by request id
        self._standalone: collections.deque[Message] | None = None  # made with the first message for the GET stream
        self._wake: asyncio.Event | None = None  # made when first needed: most sessions never open a GET stream
        self.get_open = False
        self.closed = False
        self.last_seen = time.monotonic()
        self.tasks: set[asyncio.Task[None]] = set()  # async handlers running on the loop
        self.lane: Hashable = self  # whose turn its handler calls take (lanes.py): the session, or the caller

    @property
    def standalone(self) -> collections.deque[Message]:
        """Messages for the GET stream, waiting for it (at most STANDALONE_BUFFER, oldest dropped first)."""
        if self._standalone is None:
            self._standalone = collections.deque(maxlen=STANDALONE_BUFFER)
        return self._standalone

    @property
    def wake(self) -> asyncio.Event:
        """Set when the GET stream has something to do: a message waits, or the session ended."""
        if self._wake is None:
            self._wake = asyncio.Event()
        return self._wake

    # -- the runner's duties: messages are routed on the event loop, whichever thread sends them ---------
    def write(self, message: Message, related: Id | None) -> None:
        collect = _here.collect
        if collect is not None and collect[0] is self:  # the end of a job `_run` runs: it goes with that (one hop)
            collect[1].append((message, related))
            return
        self.transport.on_loop(self.route, message, related)

    def start(self, job: Job) -> None:
        # The exchange the job answers, fixed now: once it is over, the client may reuse the id.
        exchange = self.requests.get(job.context.request_id)
        if job.deferred.awork is not None:  # an async handler: a task on this loop, no thread
            self.transport.on_loop(self._start_task, job, exchange)
        else:  # a thread, when the lane has room and its turn comes (lanes.py)
            call = self.transport.lanes().submit(self.lane, partial(self._run, job, exchange))
            job.context.on_cancel(partial(self._withdrawn, call, job, exchange))

    def _withdrawn(self, call: Call, job: Job, exchange: asyncio.Queue[Any] | None) -> None:
        """The request was cancelled: if its call still waits in the lane, it never runs its work; it is
        finished here and now (a cancelled job's `run` returns at once), so the session forgets it."""
        if self.transport.lanes().withdraw(call):
            self._run(job, exchange)

    def _start_task(self, job: Job, exchange: asyncio.Queue[Any] | None) -> None:
        loop = self.transport.loop
        assert loop is not None
        task = loop.create_task(self._run_task(job, exchange))
        self.tasks.add(task)  # a strong reference while it runs (the loop keeps weak ones only)
        task.add_done_callback(self.tasks.discard)

    async def _run_task(self, job: Job, exchange: asyncio.Queue[Any] | None) -> None:
        outcome: Outcome = JsonRpcError(jsonrpc.INTERNAL_ERROR)
        try:
            # Here, not where the task is made: a task cancelled before its first step would never
            # run this body, and its request would stay in flight for good.
            task = asyncio.current_task()
            assert task is not None
            job.context.on_cancel(lambda: self.transport.on_loop(task.cancel))
            outcome = await job.arun()
        finally:
            self.finish_job(job, outcome)
            self._done(job.context.request_id, exchange)

    def background(self, work: Callable[[], None]) -> None:
        """Roots refresh and adoption: a lane of their own (the session runs one at a time), so they never wait
        behind the session's own calls when its lane is full; still on the pool, taking turns."""
        self.transport.lanes().submit(("background", self.lane), work)

    def later(self, seconds: float, call: Callable[[], None]) -> Callable[[], None]:
        """On the loop itself (what the runner calls later never blocks), so a busy pool delays no timeout."""
        handles: list[asyncio.TimerHandle] = []
        cancelled: list[bool] = []

        def schedule() -> None:
            if not cancelled and self.transport.loop is not None:
                handles.append(self.transport.loop.call_later(seconds, call))

        def cancel() -> None:
            cancelled.append(True)
            self.transport.on_loop(_cancel_all, handles)

        self.transport.on_loop(schedule)
        return cancel

    def _run(self, job: Job, exchange: asyncio.Queue[Any] | None) -> None:
        """The job, then one hop back to the loop with what its end sent (its response) and the end of its
        exchange, rather than a hop for each: from a worker thread, a hop is a wake-up of the loop."""
        ending: list[tuple[Message, Id | None]] = []
        outer = _here.job, _here.ending
        _here.job, _here.ending = job, ending
        try:
            self.run_job(job)  # its `finish_job` (below) keeps what it sends in `ending`
        finally:
            _here.job, _here.ending = outer
            self.transport.on_loop(self._ended, ending, job.context.request_id, exchange)

    def finish_job(self, job: Job, outcome: Outcome) -> None:
        """The end of a job `_run` runs here: what it sends waits in `_run`'s list for the hop that also ends
        the exchange. The messages the handler sent while it worked went at once, on hops queued before that
        one, so the order is kept. Any other end (an async handler's) sends as always."""
        if _here.job is not job or _here.ending is None:
            super().finish_job(job, outcome)
            return
        outer = _here.collect
        _here.collect = (self, _here.ending)
        try:
            super().finish_job(job, outcome)
        finally:
            _here.collect = outer

    def _ended(self, ending: list[tuple[Message, Id | None]], request_id: Id,
               exchange: asyncio.Queue[Any] | None) -> None:
        """On the loop: the messages a job's end sent, in order, then the end of its exchange."""
        for message, related in ending:
            self.route(message, related)
        self._done(request_id, exchange)

    def _done(self, request_id: Id, exchange: asyncio.Queue[Any] | None) -> None:
        """On the loop: the job's work is over; its exchange, if still open (and not a new one under the same
        id), ends, unless the work opened a subscription (subscriptions/listen stays open until it ends)."""
        if exchange is not None and self.requests.get(request_id) is exchange and not self.read(
                lambda session: request_id in session.listeners):
            exchange.put_nowait(DONE)

    def event_loop(self) -> asyncio.AbstractEventLoop | None:
        return self.transport.loop

    def route(self, message: Any, related: Id | None) -> None:
        """On the loop: to the POST exchange of `related` if it is still open, else to the GET stream.

        A response whose exchange is gone is dropped: the GET stream must not carry responses.
        """
        queue = self.requests.get(related) if related is not None else None
        if queue is not None:
            queue.put_nowait(message)
        elif message is not DONE and not is_response(message) and not self.closed and self.id is not None:
            self.standalone.append(message)
            self.wake.set()

    def end(self) -> None:
        """End the session: cancel its work, fail its requests to the client, end its streams."""
        self.closed = True
        self.cancel_all()
        self.close()
        for queue in self.requests.values():
            queue.put_nowait(DONE)
        if self._wake is not None:  # a GET stream may be waiting on it (one that opens later sees `closed`)
            self._wake.set()


def _cancel_all(handles: list[asyncio.TimerHandle]) -> None:
    for handle in handles:
        handle.cancel()

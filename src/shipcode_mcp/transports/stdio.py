"""Newline-delimited JSON-RPC over stdin/stdout: the threaded runner of the sans-IO session.

The reading loop parses each line and hands it to the session; quick handlers answer inline (no
thread hand-off, which would cost more than the work), deferred ones run on worker threads. The loop
never waits on work for long: after handing a job to a thread it waits briefly (`order_grace`) for
it, so that a request that finishes quickly is answered before anything read after it, but only
when no other job is under way (a slow one ahead has given up the order already) and only while a
small budget lasts (`order_budget`, refilled as time passes). So 500 queued slow calls cost `ping`
one grace, not 500 of them, and nothing the client sends waits behind work.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time

from .. import jsonrpc, log
from ..actions import Cancel
from ..jsonrpc import JsonRpcError
from ..runner import ThreadRunner
from ..session import ROOTS_WAIT

TYPE_CHECKING = False  # typing stays out of the start-up path (see tests/test_startup.py)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from ..actions import Action, Job
    from ..context import Context
    from ..jsonrpc import Id, Message
    from ..registry import Registry

MAX_MESSAGE_BYTES = 64 * 1024 * 1024
"""A line longer than this is refused (-32600) and the rest of it skipped: memory stays bounded by the limit."""

READ_SIZE = 1 << 16

ORDER_GRACE = 0.05
"""How long the loop waits for a job handed to a thread when nothing else is under way."""
ORDER_BUDGET = 0.2
"""The most the loop spends waiting for jobs in a row; it refills at this many seconds per second
(a fifth of the time), so a stream of medium jobs cannot hold back what follows them either."""


class _Terminated(BaseException):
    """SIGTERM: a BaseException, so that no handler's `except Exception` keeps the server running."""


class PeerGone(BaseException):
    """The client closed our stdout: nothing more can be said, so serving stops (exit status 0)."""


class _WorkerPool:
    """Threads for deferred handlers; grows on demand so a slow handler never starves the others."""

    def __init__(self, max_workers: int, run: Callable[[Job], None], done: Callable[[Job], None]) -> None:
        import queue  # servers whose handlers are all inline never need it

        self._run = run
        self._done = done  # told of each job that has finished
        self._max = max_workers
        self._jobs: queue.SimpleQueue[Job] = queue.SimpleQueue()
        self._lock = threading.Condition()
        self._workers = 0
        self._pending = 0  # submitted and not finished: running or queued

    def submit(self, job: Job) -> None:
        with self._lock:
            self._pending += 1
            # Every worker beyond the running jobs is free; start one only when none is.
            start = self._pending > self._workers and self._workers < self._max
            if start:
                self._workers += 1
        self._jobs.put(job)
        if start:
            threading.Thread(target=self._work, name="shipcode-mcp-worker", daemon=True).start()

    def _work(self) -> None:
        while True:
            job = self._jobs.get()
            try:
                self._run(job)
            except BaseException:  # the request was answered already; the worker must live on
                log.error(f"worker: {job.context.method} escaped its handler")
            finally:
                self._done(job)
                with self._lock:
                    self._pending -= 1
                    self._lock.notify_all()

    def drain(self) -> None:
        """Wait until every submitted job has finished."""
        with self._lock:
            while self._pending:
                self._lock.wait()


class StdioTransport(ThreadRunner):
    def __init__(self, server: Registry, *, order_grace: float = ORDER_GRACE, order_budget: float = ORDER_BUDGET,
                 max_workers: int = 32, max_message_bytes: int = MAX_MESSAGE_BYTES) -> None:
        super().__init__(server)
        self.order_grace = order_grace
        self.order_budget = order_budget
        self._budget = order_budget  # what is left of it: see start
        self._budget_at = time.monotonic()
        self._unsettled: set[Context] = set()  # jobs handed to threads and not yet answered
        self._unsettled_lock = threading.Lock()
        self.max_message_bytes = max_message_bytes
        self.max_workers = max_workers
        self._pool: _WorkerPool | None = None
        self._write_lock = threading.Lock()
        self._out_fd = 1
        self._gone = False  # the client closed our stdout
        self._reading_thread: int | None = None
        self._interruptible = False  # serve's SIGTERM handler stops the reading thread
        self._traced: dict[Any, tuple[str, float]] | None = None
        """--log-level debug (TracedStdioTransport): the requests under way, id -> (method, when read), for one
        line each when they end."""

    def _trace_end(self, request_id: Any, outcome: str, code: int | None = None) -> None:
        assert self._traced is not None
        try:
            begun = self._traced.pop(request_id, None)
        except TypeError:  # an id no request could have had (a list): answered with id null
            begun = None
        if begun is not None:
            log.request(begun[0], request_id, time.monotonic() - begun[1], outcome, code)
        elif outcome == "error":  # a line that was no request (unparsable, too long, invalid)
            log.request("(invalid)", request_id, 0.0, outcome, code)

    # -- output ---------------------------------------------------------------------------------
    def write(self, message: Message, related: Id | None = None) -> None:
        data = jsonrpc.encode_or_substitute(message)
        if data is None or self._gone:
            return
        with self._write_lock:
            try:
                view = memoryview(data)
                while view:
                    written = os.write(self._out_fd, view)
                    view = view[written:]
            except OSError:  # EPIPE and friends: the client is gone
                self._peer_gone()
        if self._traced is not None and "method" not in message and ("result" in message or "error" in message):
            outcome, code = log.outcome_of(message)
            self._trace_end(message.get("id"), outcome, code)

    def _peer_gone(self) -> None:
        """Stop serving: in-flight work is cancelled and `serve` returns 0. On the reading thread that
        is an exception; from a worker, a SIGTERM to the reading thread when `serve` handles it (the
        main thread), else the loop stops at the next line it reads."""
        first, self._gone = not self._gone, True
        if first:
            log.debug("stdout closed by the client; stopping")
        if threading.get_ident() == self._reading_thread:
            raise PeerGone()
        if first and self._interruptible and self._reading_thread is not None:
            signal.pthread_kill(self._reading_thread, signal.SIGTERM)

    # -- work -----------------------------------------------------------------------------------
    def start(self, job: Job) -> None:
        """Hand `job` to a thread; wait a little for it only when that keeps order cheaply (see the module)."""
        context = job.context
        with self._unsettled_lock:
            if self._pool is None:
                self._pool = _WorkerPool(self.max_workers, self.run_job, self._job_done)
            busy = bool(self._unsettled)
            self._unsettled.add(context)
        self._pool.submit(job)
        if busy or self.order_grace <= 0 or threading.get_ident() != self._reading_thread:
            return  # only the reading loop waits (work released by a timer or the roots does not)
        now = time.monotonic()
        self._budget = min(self.order_budget, self._budget + (now - self._budget_at) * self.order_budget)
        self._budget_at = now
        wait = min(self.order_grace, self._budget)
        if wait <= 0:
            return
        settled = context.settled.wait(wait)
        self._budget -= time.monotonic() - now
        if settled:  # answered (or waiting on the client): the next job may wait its turn
            self._job_done(job)

    def _job_done(self, job: Job) -> None:
        with self._unsettled_lock:
            self._unsettled.discard(job.context)

    def _handle_line(self, line: bytes) -> None:
        if line.endswith(b"\r"):
            line = line[:-1]
        if not line.strip():
            return
        try:
            message = jsonrpc.parse(line)
        except JsonRpcError as err:
            self.write(jsonrpc.error(None, err))
            return
        self.receive(message)

    def _too_long(self) -> None:
        self.write(jsonrpc.error(None, JsonRpcError(
            jsonrpc.INVALID_REQUEST, data=f"message longer than {self.max_message_bytes} bytes")))

    # -- the loop -------------------------------------------------------------------------------
    def serve(self, in_fd: int = 0, out_fd: int = 1) -> int:
        """Serve until EOF (answer everything read, exit status 0) or SIGTERM (stop promptly)."""
        stdout = None
        if out_fd == 1:
            # Keep the real stdout for protocol messages; anything else that writes to fd 1 (a
            # stray print, a child process) lands on stderr instead of corrupting the stream.
            stdout = sys.stdout
            out_fd = os.dup(1)
            os.dup2(2, 1)
            sys.stdout = sys.stderr
        self._out_fd = out_fd
        self._reading_thread = threading.get_ident()
        sigterm = None
        if threading.current_thread() is threading.main_thread():
            sigterm = signal.signal(signal.SIGTERM, _raise_terminated)
            self._interruptible = True
        try:
            self._serve(in_fd)
        finally:  # the process is the embedder's again: its SIGTERM handler, its stdout
            self._interruptible = False
            if sigterm is not None:
                signal.signal(signal.SIGTERM, sigterm)
            if stdout is not None:
                os.dup2(out_fd, 1)
                os.close(out_fd)
                sys.stdout = stdout
        return 0

    def _serve(self, in_fd: int) -> None:
        try:
            self._read_loop(in_fd)
        except (_Terminated, KeyboardInterrupt, PeerGone):
            self.cancel_all()
            self.close()
            return
        self.close()
        try:
            self.join_background(ROOTS_WAIT)
            self._step(self.session.release_held)  # roots that took longer: what waited for them runs now
            if not self._gone:
                self.wait_answered()  # every request read is answered (work a timer released included)
            if self._pool is not None and not self._gone:
                self._pool.drain()
        except (_Terminated, KeyboardInterrupt, PeerGone):
            self.cancel_all()

    def _read_loop(self, fd: int) -> None:
        limit = self.max_message_bytes
        parts: list[bytes] = []  # the start of a line not yet ended
        size = 0
        skipping = False  # inside a line that went over the limit
        handle = self._handle_line
        while not self._gone:
            chunk = os.read(fd, READ_SIZE)
            if not chunk:
                break
            end = chunk.rfind(b"\n")
            if end < 0:
                if not skipping:
                    parts.append(chunk)
                    size += len(chunk)
                    if size > limit:
                        parts, size, skipping = [], 0, True
                        self._too_long()
                continue
            head, tail = chunk[:end], chunk[end + 1:]
            lines = head.split(b"\n")
            if skipping:
                lines[0] = b""
                skipping = False
            elif parts:
                lines[0] = b"".join(parts) + lines[0]
                parts, size = [], 0
                if len(lines[0]) > limit:
                    lines[0] = b""
                    self._too_long()
            for line in lines:
                if len(line) > limit:
                    self._too_long()
                else:
                    handle(line)
            if tail:
                parts, size = [tail], len(tail)
                if size > limit:
                    parts, size, skipping = [], 0, True
                    self._too_long()
        if parts and not skipping:
            handle(b"".join(parts))  # a last message without its newline still counts (size checked above)


def _raise_terminated(signum: int, frame: Any) -> None:
    raise _Terminated()


class TracedStdioTransport(StdioTransport):
    """StdioTransport at --log-level debug: one line per request when it ends (log.request). A class of its own,
    chosen at construction (`serve_stdio`), so the usual transport pays nothing for it on any message."""

    def __init__(self, server: Registry, **options: Any) -> None:
        super().__init__(server, **options)
        self._traced = {}

    def receive(self, message: Any) -> None:
        traced = self._traced
        if traced is not None and isinstance(message, dict) and isinstance(message.get("method"), str):
            request_id = message.get("id")
            if isinstance(request_id, (int, str)) and not isinstance(request_id, bool) and request_id not in traced:
                traced[request_id] = (message["method"], time.monotonic())
        super().receive(message)

    def perform(self, actions: list[Action]) -> None:
        for action in actions:
            if isinstance(action, Cancel):  # no response will follow (see Runner.finish_job)
                self._trace_end(action.context.request_id, "cancelled")
        super().perform(actions)


def serve_stdio(server: Registry, **options: Any) -> int:
    transport = TracedStdioTransport if log.enabled("debug") else StdioTransport
    return transport(server, **options).serve()

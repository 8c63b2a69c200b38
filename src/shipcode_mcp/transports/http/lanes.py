"""Fair use of the HTTP server's worker threads: a lane per caller, each with a limit of its own.

All sessions share one pool of threads for their blocking handlers. Handed straight to a
ThreadPoolExecutor, 70 slow calls of one session fill its threads and queue before everyone else's
`ping`. Here each call goes to its lane (one per session, or per caller for requests without a session)
and waits there, never in the pool's queue: a lane runs at most `per_lane` calls at once, and a free
thread takes the next call of the next lane in turn (round robin). So one lane's backlog delays another
lane's call by nothing while threads are free, and by at most one turn when they are all busy.

A call still waiting in its lane can be withdrawn (its request was cancelled): it then never runs.

The threads are the lanes' own, not a ThreadPoolExecutor's: a call taken from its lane goes to an idle
thread through one queue, with no Future, no work item and no executor locks. Handing a call over is the
one cost every blocking handler pays on the event loop, so it is kept to a queue put (and a wake-up).
"""

from __future__ import annotations

import collections
import queue
import threading
import weakref
from collections.abc import Callable, Hashable
from functools import partial

PER_LANE = 8
"""Calls of one lane that run at once, by default: a few parallel tool calls, and room for seven more lanes
as busy as that in the 64 threads of the pool."""


_ALL: weakref.WeakSet[Lanes] = weakref.WeakSet()


def _at_exit() -> None:
    """The interpreter is exiting: idle threads stop (a running call is let finish), so the exit, which waits
    for non-daemon threads, does not wait for ever on lanes nobody shut down."""
    for lanes in list(_ALL):
        lanes._stop_threads()


threading._register_atexit(_at_exit)  # type: ignore[attr-defined]  # what concurrent.futures' pools use (3.9+)


class Call:
    """A call waiting in, or taken from, its lane."""

    __slots__ = ("key", "state", "work")

    def __init__(self, key: Hashable, work: Callable[[], None]) -> None:
        self.key = key
        self.work = work
        self.state = "waiting"  # then "running", or "withdrawn"


class Lanes:
    """Runs calls on at most `workers` threads, at most `per_lane` of a lane at once (0: no limit),
    lanes taking turns. Thread-safe: calls come from the event loop and from worker threads."""

    def __init__(self, workers: int, per_lane: int = PER_LANE, *, thread_name_prefix: str = "shipcode-mcp-worker") -> None:
        self.workers = workers
        self.per_lane = per_lane
        self._lock = threading.Lock()
        self._queues: dict[Hashable, collections.deque[Call]] = {}
        self._running: dict[Hashable, int] = {}
        self._turns: collections.OrderedDict[Hashable, None] = collections.OrderedDict()  # lanes that may start one
        self._busy = 0
        self._closed = False
        self._prefix = thread_name_prefix
        self._threads: list[threading.Thread] = []  # started as calls need them, up to `workers`; never fewer than `_busy`
        self._handed: queue.SimpleQueue[Call | None] = queue.SimpleQueue()  # calls taken, for the next idle thread; None: stop
        # The threads hold the lanes weakly: lanes nobody shut down, once forgotten, stop their threads too.
        self._myself = weakref.ref(self, partial(_forgotten, self._handed))
        _ALL.add(self)

    def submit(self, key: Hashable, work: Callable[[], None]) -> Call:
        """Queue `work` in lane `key`; it runs when the lane and a thread are free."""
        call = Call(key, work)
        with self._lock:
            if self._closed:
                call.state = "withdrawn"
                return call
            queue = self._queues.get(key)
            if queue is None:  # not setdefault: that would make a deque for every call
                queue = self._queues[key] = collections.deque()
            queue.append(call)
            self._ready(key)
            started = self._take()
        self._launch(started)
        return call

    def withdraw(self, call: Call) -> bool:
        """Take a call that has not started out of its lane; False if it started already (or was withdrawn)."""
        with self._lock:
            if call.state != "waiting":
                return False
            call.state = "withdrawn"
            queue = self._queues.get(call.key)
            if queue is not None:
                queue.remove(call)
                if not queue:
                    self._turns.pop(call.key, None)
                    self._tidy(call.key)
            return True

    def waiting(self, key: Hashable) -> int:
        with self._lock:
            return len(self._queues.get(key, ()))

    def running(self, key: Hashable) -> int:
        with self._lock:
            return self._running.get(key, 0)

    def shutdown(self) -> None:
        """No more calls: those still waiting are dropped, those running finish on their own."""
        with self._lock:
            self._closed = True
            for queue in self._queues.values():
                for call in queue:
                    call.state = "withdrawn"
            self._queues.clear()
            self._turns.clear()
        self._stop_threads()

    # -- under the lock ---------------------------------------------------------------------------
    def _ready(self, key: Hashable) -> None:
        """Give lane `key` a turn if it has a call waiting and room to run it."""
        if self._queues.get(key) and (self.per_lane <= 0 or self._running.get(key, 0) < self.per_lane):
            self._turns.setdefault(key, None)

    def _take(self) -> list[Call]:
        """The calls to start now: one per turn, lanes in order, while threads are free."""
        started: list[Call] = []
        while self._turns and self._busy < self.workers:
            key, _ = self._turns.popitem(last=False)
            call = self._queues[key].popleft()
            call.state = "running"
            self._running[key] = self._running.get(key, 0) + 1
            self._busy += 1
            started.append(call)
            self._ready(key)  # its next call, if any, at the back of the line
            self._tidy(key)
        return started

    def _tidy(self, key: Hashable) -> None:
        if not self._queues.get(key, True):
            del self._queues[key]
        if self._running.get(key, None) == 0:
            del self._running[key]

    # -- off the lock -----------------------------------------------------------------------------
    def _launch(self, calls: list[Call]) -> None:
        """Hand calls just taken to the threads, starting one for each call no thread is free for (`_busy` counts
        the calls taken and not finished, so with as many threads as that, every call handed over finds one)."""
        for call in calls:
            self._handed.put(call)
        if not calls or len(self._threads) >= self._busy:  # enough threads (read off the lock: they only grow,
            return  # and whoever took more calls since checks again after its own `_take`)
        with self._lock:
            missing = 0 if self._closed else min(self._busy, self.workers) - len(self._threads)
            new = [threading.Thread(target=_serve, args=(self._myself, self._handed),
                                    name=f"{self._prefix}_{len(self._threads) + n}") for n in range(max(0, missing))]
            self._threads += new
        for thread in new:
            thread.start()

    def _stop_threads(self) -> None:
        self._handed.put(None)  # each thread passes it on and stops once its current call (if any) is over

    def _finished(self, call: Call) -> None:
        with self._lock:
            self._busy -= 1
            self._running[call.key] -= 1
            self._ready(call.key)
            self._tidy(call.key)
            started = [] if self._closed else self._take()
        self._launch(started)


def _forgotten(handed: queue.SimpleQueue[Call | None], _: object) -> None:
    handed.put(None)  # the lanes are gone: their threads stop


def _serve(myself: weakref.ref[Lanes], handed: queue.SimpleQueue[Call | None]) -> None:
    """A worker thread: the calls handed over, one at a time, until told to stop (None, passed on to the next
    thread). Not a daemon: a call under way when the process exits is let finish, as a pool's would be."""
    while True:
        call = handed.get()
        lanes = myself() if call is not None else None
        if call is None or lanes is None:
            handed.put(None)
            return
        try:
            if not lanes._closed:  # shut down while it waited for a thread: it never runs
                call.work()
        except BaseException:  # the call's own business, as a pool's future would keep it
            pass
        finally:
            lanes._finished(call)
        del lanes, call  # nothing held while idle: forgotten lanes can go

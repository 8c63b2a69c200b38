"""Runners: what drives the sans-IO `Session` and performs the actions it returns.

`Runner` holds everything the two runners share: one lock around the session (which, like h11's
Connection, takes one call at a time), the futures of our requests to the client, and the meaning of
each action. A runner says how to write a message, start a job, run something in the background
and call something later: `transports/stdio.py` with threads, `transports/http/runner.py` from an asyncio
event loop. Handlers ask the client through the runner: `ctx.request` blocks a worker thread on the
future, `await ctx.arequest` awaits it.
"""

from __future__ import annotations

import threading
import time
from functools import partial

from . import jsonrpc, log
from .actions import AdoptRoots, Answer, Cancel, FollowRoots, Release, Report, Send, Start
from .context import ASK_BACKSTOP, Cancelled, Channel, ClientRequestError, answer_of
from .session import Session

TYPE_CHECKING = False  # typing stays out of the start-up path (see tests/test_startup.py)
if TYPE_CHECKING:
    from collections.abc import Callable
    from concurrent.futures import Future
    from typing import Any, TypeVar

    from .actions import Action, Job, Outcome
    from .context import Context
    from .jsonrpc import Id, Message
    from .registry import Registry

    T = TypeVar("T")

ROOTS_TIMEOUT = 60.0
"""How long a roots/list may take; work that waits for the roots waits only `session.ROOTS_WAIT`."""


class Runner(Channel):
    """Drives one `Session`; subclasses implement `write`, `start`, `background` and `later`."""

    def __init__(self, server: Registry, *, stateless: bool = False) -> None:
        self.server = server
        self.session = Session(server, self, stateless=stateless)
        self._lock = threading.RLock()  # reentrant: an inline handler may register a tool, which tells every client
        self._work_over = threading.Condition(self._lock)  # notified whenever a request's work is over
        self._waiting: dict[int, _Waiting] = {}
        self._connected = not stateless  # a stateless runner joins the server's clients only while it listens
        if not stateless:
            server.connect(self)

    # -- what a transport provides ----------------------------------------------------------------
    def write(self, message: Message, related: Id | None) -> None:
        """Put `message` on the wire; `related` is the id of the client request it belongs to."""
        raise NotImplementedError

    def start(self, job: Job) -> None:
        """Run `self.run_job(job)` off the reading loop."""
        raise NotImplementedError

    def background(self, work: Callable[[], None]) -> None:
        """Run `work` off the reading loop (it may wait on the client)."""
        raise NotImplementedError

    def later(self, seconds: float, call: Callable[[], None]) -> Callable[[], None]:
        """Call `call` after `seconds`, from any thread; returns what cancels that."""
        raise NotImplementedError

    # -- driving the session ------------------------------------------------------------------------
    def receive(self, message: Any) -> None:
        """One parsed message from the client."""
        with self._lock:
            actions = self.session.receive(message)
        self.perform(actions)
        self._join_while_listening()

    def run_job(self, job: Job) -> None:
        """Run deferred work and answer its request, whatever the work raised."""
        outcome: Outcome = jsonrpc.JsonRpcError(jsonrpc.INTERNAL_ERROR)
        try:
            outcome = job.run()
        finally:
            self.finish_job(job, outcome)

    def finish_job(self, job: Job, outcome: Outcome) -> None:
        """The work of `job` is over: answer its request (unless it was cancelled), report what failed."""
        with self._lock:
            actions = self.session.finish(job, outcome)
            self._work_over.notify_all()
        response: list[Action] = [action for action in actions if isinstance(action, Send)]
        job.context.finish(lambda: self.perform(response))  # never after the request was cancelled
        self.perform([action for action in actions if not isinstance(action, Send)])
        self._join_while_listening()

    def _join_while_listening(self) -> None:
        """A stateless runner whose request opened a subscription joins the server's clients, to hear changes."""
        if not self._connected and self.session.listeners:
            self._connected = True
            self.server.connect(self)

    def wait_answered(self) -> None:
        """Wait until no request read is still under way (each has been answered, or cancelled)."""
        with self._work_over:
            while self.session.in_flight:
                self._work_over.wait()

    def close(self) -> None:
        """No more input: our requests to the client fail, so no handler waits forever; subscriptions end."""
        self._step(self.session.close)
        self.server.disconnect(self)

    def cancel_all(self) -> None:
        self._step(self.session.cancel_all)
        if self.session.stateless:
            self.server.disconnect(self)

    def _step(self, step: Callable[..., list[Action]], *args: Any) -> None:
        """One call into the session, made with its other calls, then what it says to do."""
        with self._lock:
            actions = step(*args)
        self.perform(actions)

    def perform(self, actions: list[Action]) -> None:
        for action in actions:
            if isinstance(action, Send):
                self.write(action.message, action.related)
            elif isinstance(action, Start):
                self.start(action.job)
            elif isinstance(action, Cancel):
                action.context.cancel()
            elif isinstance(action, Answer):
                self._answered(action.request_id, action.response)
            elif isinstance(action, FollowRoots):
                self.background(self._follow_roots)
            elif isinstance(action, AdoptRoots):
                self.background(partial(self._adopt_roots, action.roots))
            elif isinstance(action, Release):
                self.later(action.seconds, partial(self._release_held, action.hold))
            elif isinstance(action, Report):
                log.error(action.text)

    def read(self, look: Callable[[Session], T]) -> T:
        """`look(session)`, made with the session's other calls: how another thread reads its state."""
        with self._lock:
            return look(self.session)

    # -- the registry's view of this client (registry.Client) ---------------------------------------
    def listening(self) -> bool:
        """Its client is ready (legacy) or listens (modern): list changes and updates reach it."""
        with self._lock:
            return self.session.ready or bool(self.session.listeners)

    def subscribed(self) -> dict[str, Any]:
        with self._lock:
            return self.session.subscribed()

    # -- output -----------------------------------------------------------------------------------
    def send(self, message: Message, related: Id | None) -> None:
        """Channel: a handler's progress, log message or notification."""
        self.write(message, related)

    def announce(self, method: str, params: dict[str, Any] | None = None, within: bool = True) -> None:
        """A list change or a resource update: the session says who here gets it (see `Session.announce`)."""
        self._step(self.session.announce, method, params, within)

    # -- our requests to the client -----------------------------------------------------------------
    def ask(self, method: str, params: dict[str, Any] | None, timeout: float,
            parent: Context | None) -> Future[dict[str, Any]]:
        """Channel: send our request; the future holds the client's result, or its error. Cancelling
        the future (an async handler that stopped awaiting it) gives the request up."""
        from concurrent.futures import Future  # only servers that ask the client pay for it

        future: Future[dict[str, Any]] = Future()
        waiting = _Waiting(future, method)
        with self._lock:
            message = self.session.ask(method, params, parent)
            request_id = message["id"]
            self._waiting[request_id] = waiting
        self.write(message, parent.request_id if parent is not None else None)
        timed_out = ClientRequestError(jsonrpc.JsonRpcError(
            jsonrpc.REQUEST_TIMEOUT, f"The client did not answer {method} within {timeout:g} s"))
        waiting.stop_timer = self.later(timeout, lambda: self._give_up(request_id, f"Timed out after {timeout:g} s", timed_out))
        if future.done():  # answered meanwhile
            waiting.stop_timer()
        if parent is not None:
            parent.on_cancel(lambda: self._give_up(request_id, "The request that needed it was cancelled", Cancelled()))

        def abandoned(done: Future[dict[str, Any]]) -> None:
            if done.cancelled():
                self._give_up(request_id, "The request that needed it was cancelled", Cancelled())

        future.add_done_callback(abandoned)
        return future

    def _answered(self, request_id: int, response: Message | None) -> None:
        with self._lock:
            waiting = self._waiting.pop(request_id, None)
        if waiting is not None:
            waiting.stop_timer()
            waiting.resolve(answer_of(waiting.method, response))

    def _give_up(self, request_id: int, reason: str, error: Exception) -> None:
        with self._lock:
            waiting = self._waiting.pop(request_id, None)
            actions = self.session.give_up(request_id, reason) if waiting is not None else []
        self.perform(actions)  # the client hears that we gave up before the handler goes on
        if waiting is not None:
            waiting.stop_timer()
            waiting.resolve(error)

    # -- the client's roots -------------------------------------------------------------------------
    def _follow_roots(self) -> None:
        import concurrent.futures  # off the start-up budget; loaded already by ask

        roots: list[dict[str, Any]] | None = None
        try:
            listed = self.ask("roots/list", None, ROOTS_TIMEOUT, None).result(ROOTS_TIMEOUT + ASK_BACKSTOP).get("roots")
            if isinstance(listed, list):
                roots = [root for root in listed if isinstance(root, dict) and isinstance(root.get("uri"), str)]
            else:
                log.warning("roots/list answered without a roots array; keeping the previous roots")
        except ClientRequestError as err:
            log.warning(f"roots/list failed: {err}")
        except concurrent.futures.TimeoutError:
            log.warning("roots/list was never answered")
        finally:  # whatever happened, the work waiting for the roots goes on
            if roots is not None:
                self.server.roots_changed(self.session, roots)
            self._step(self.session.roots_listed, roots)

    def _adopt_roots(self, roots: list[dict[str, Any]]) -> None:
        try:
            self.server.roots_changed(self.session, roots)
        finally:  # the work waiting for the roots goes on
            self._step(self.session.roots_adopted)

    def _release_held(self, hold: int) -> None:
        self._step(self.session.release_held, hold)


class _Waiting:
    """Our request to the client, as the runner waits for it."""

    __slots__ = ("future", "method", "stop_timer")

    def __init__(self, future: Future[dict[str, Any]], method: str) -> None:
        self.future = future
        self.method = method
        self.stop_timer: Callable[[], None] = _nothing

    def resolve(self, answer: dict[str, Any] | Exception) -> None:
        """Settle the future, unless its waiter gave up on it already (cancelled it)."""
        if self.future.done():
            return
        try:
            if isinstance(answer, dict):
                self.future.set_result(answer)
            else:
                self.future.set_exception(answer)
        except Exception:  # cancelled between the look and the set: nobody waits for it
            pass


def _nothing() -> None:
    pass


class ThreadRunner(Runner):
    """The threaded runner: jobs, background work and timers on threads; `write` is given.

    The stdio transport is one (with a pool of workers and its ordering rule); it also serves to
    embed a server in-process, and the tests of asking the client.
    """

    def __init__(self, server: Registry, write: Callable[[Message, Id | None], None] | None = None, *,
                 stateless: bool = False) -> None:
        super().__init__(server, stateless=stateless)
        self._write = write
        self._background: set[threading.Thread] = set()

    def write(self, message: Message, related: Id | None) -> None:
        if self._write is not None:
            self._write(message, related)

    def start(self, job: Job) -> None:
        self.background(lambda: self.run_job(job))

    def background(self, work: Callable[[], None]) -> None:
        def run() -> None:
            try:
                work()
            finally:
                self._background.discard(thread)

        thread = threading.Thread(target=run, name="shipcode-mcp-background", daemon=True)
        self._background.add(thread)
        thread.start()

    def join_background(self, timeout: float) -> None:
        """Wait (at most `timeout`) for the background work under way: at the end of input, roots a client
        gave are still on their way to the server, and the work that waits for them starts after."""
        deadline = time.monotonic() + timeout
        for thread in list(self._background):
            thread.join(max(0.0, deadline - time.monotonic()))

    def later(self, seconds: float, call: Callable[[], None]) -> Callable[[], None]:
        timer = threading.Timer(seconds, call)
        timer.daemon = True
        timer.start()
        return timer.cancel

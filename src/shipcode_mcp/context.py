"""What a handler sees of the request it serves: cancellation, progress, logging, asking the client."""

from __future__ import annotations

import threading

from . import jsonrpc

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from .session import Session


class Cancelled(Exception):
    """Raised inside a handler whose request the client cancelled; no response is sent."""


class _Flag:
    """`threading.Event` at a fraction of the cost: the Event (a Condition and its lock) is made only
    when somebody waits, which a request answered on the reading loop never does. Allocating two
    Events per request took a third of the reading loop's time in a pipelined ping benchmark."""

    __slots__ = ("_set", "_event")
    _creating = threading.Lock()

    def __init__(self) -> None:
        self._set = False
        self._event: threading.Event | None = None

    def is_set(self) -> bool:
        return self._set

    def set(self) -> None:
        self._set = True
        event = self._event
        if event is not None:
            event.set()

    def wait(self, timeout: float | None = None) -> bool:
        if self._set:
            return True
        with _Flag._creating:
            if self._event is None:
                self._event = threading.Event()
            event = self._event
        if self._set:  # set() ran before the event existed, so it could not set it
            event.set()
        return event.wait(timeout)


class RequestContext:
    """One in-flight request.

    The lock orders the response against progress: once `finish` has run, nothing more about this
    request goes out, so progress can never follow the response (a MUST of the spec).
    """

    def __init__(self, session: Session, request_id: jsonrpc.Id, method: str, params: dict[str, Any]) -> None:
        self.session = session
        self.request_id = request_id
        self.method = method
        self.params = params
        meta = params.get("_meta")
        token = meta.get("progressToken") if isinstance(meta, dict) else None
        self.progress_token: str | int | None = token if jsonrpc.is_valid_id(token) else None
        self._cancelled = _Flag()
        # Set when the handler finishes or starts waiting on the client, so a transport that waits
        # for quick handlers (to keep responses in request order) stops waiting.
        self.settled = _Flag()
        self._lock = threading.Lock()
        self._done = False
        self._last_progress: float | None = None
        self._cancel_callbacks: list[Callable[[], None]] = []

    # -- cancellation -------------------------------------------------------------------------
    @property
    def cancelled(self) -> bool:
        return self._cancelled.is_set()

    def check_cancelled(self) -> None:
        """Call between steps of long work; raises Cancelled once the client gave up on it."""
        if self._cancelled.is_set():
            raise Cancelled()

    def on_cancel(self, callback: Callable[[], None]) -> None:
        """Run `callback` when the request is cancelled (at once if it already is): kill a child process, say."""
        with self._lock:
            if not self._cancelled.is_set():
                self._cancel_callbacks.append(callback)
                return
        callback()

    def wait_cancelled(self, timeout: float | None = None) -> bool:
        return self._cancelled.wait(timeout)

    def cancel(self) -> None:
        with self._lock:
            if self._done or self._cancelled.is_set():
                return
            self._cancelled.set()
            callbacks, self._cancel_callbacks = self._cancel_callbacks, []
        for callback in callbacks:
            try:
                callback()
            except Exception:  # a failing cleanup must not take the reading loop down
                self.session.log_exception("cancel callback failed")

    # -- progress -----------------------------------------------------------------------------
    def report_progress(self, progress: float, total: float | None = None, message: str | None = None) -> bool:
        """Send notifications/progress if the client asked for it; returns whether it was sent.

        Values that do not increase are dropped, since the spec requires progress to go up.
        """
        if self.progress_token is None:
            return False
        with self._lock:
            if self._done or self._cancelled.is_set():
                return False
            if self._last_progress is not None and progress <= self._last_progress:
                return False
            self._last_progress = progress
            params: dict[str, Any] = {"progressToken": self.progress_token, "progress": progress}
            if total is not None:
                params["total"] = total
            if message is not None:
                params["message"] = message
            self.session.send(jsonrpc.notification("notifications/progress", params))
        return True

    # -- logging and requests to the client ------------------------------------------------------
    def log(self, level: str, data: Any, logger: str | None = None) -> bool:
        """Send notifications/message to the client, if logging is on and `level` passes its threshold."""
        return self.session.log(level, data, logger)

    def request(self, method: str, params: dict[str, Any] | None = None, timeout: float = 60.0) -> dict[str, Any]:
        """Ask the client (sampling/createMessage, elicitation/create, roots/list) and wait for its result."""
        self.settled.set()
        return self.session.request(method, params, timeout=timeout, parent=self)

    # -- completion ----------------------------------------------------------------------------
    def finish(self, message: jsonrpc.Message | None) -> None:
        """Send the response, unless the request was cancelled; later progress is dropped."""
        with self._lock:
            if self._done:
                return
            self._done = True
            self._cancel_callbacks.clear()
            if message is not None and not self._cancelled.is_set():
                self.session.send(message)
        self.settled.set()

"""The sans-IO MCP session: takes parsed messages, returns the messages to send.

It never touches a pipe or a socket. Replies that are ready at once are returned by `receive`;
work that a handler defers (a `Deferred`) is handed to the transport's `spawn` and its messages,
like progress and requests to the client, leave through the `send` callable the transport gave.
"""

from __future__ import annotations

import itertools
import threading
import time

from . import jsonrpc, log
from .context import Cancelled, ClientRequestError, RequestContext
from .jsonrpc import JsonRpcError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from .jsonrpc import Message
    from .server import Server

PROTOCOL_VERSION = "2025-06-18"

# RFC 5424 severities, least to most severe, as MCP names them.
LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")

ROOTS_WAIT = 5.0
"""How long deferred work waits for a roots/list under way, so it runs in the roots the client gave."""

# Which client capability each server->client request needs.
_CLIENT_CAPABILITY_FOR = {
    "roots/list": "roots",
    "sampling/createMessage": "sampling",
    "elicitation/create": "elicitation",
}


class Deferred:
    """Returned by a handler whose work must run off the reading loop (a tool that takes time)."""

    __slots__ = ("work",)

    def __init__(self, work: Callable[[], dict[str, Any]]) -> None:
        self.work = work


class Job:
    """Deferred work bound to its request; the transport runs `run()` on a worker thread."""

    __slots__ = ("_session", "_work", "context")

    def __init__(self, session: Session, context: RequestContext, work: Callable[[], dict[str, Any]]) -> None:
        self._session = session
        self.context = context
        self._work = work

    def run(self) -> None:
        """Never leaves the request unanswered, whatever the work raised (SystemExit included)."""
        message: Message | None = jsonrpc.error(self.context.request_id, JsonRpcError(jsonrpc.INTERNAL_ERROR))
        try:
            message = self._session.complete(self.context, self._work)
        finally:
            self.context.finish(message)  # None only when the request was cancelled


def _run_inline(job: Job) -> None:
    job.run()


def _start_thread(work: Callable[[], None]) -> None:
    threading.Thread(target=work, name="shipcode-mcp-background", daemon=True).start()


class _Outgoing:
    """A request we sent to the client, waiting for its answer."""

    __slots__ = ("event", "response")

    def __init__(self) -> None:
        self.event = threading.Event()
        self.response: Message | None = None


class Session:
    """One client's view of a `Server`: lifecycle, negotiated state, in-flight requests."""

    def __init__(
        self,
        server: Server,
        send: Callable[[Message], None] | None = None,
        spawn: Callable[[Job], None] = _run_inline,
        *,
        send_related: Callable[[Message, jsonrpc.Id], None] | None = None,
        background: Callable[[Callable[[], None]], None] = _start_thread,
        stateless: bool = False,
    ) -> None:
        """`send` takes every outgoing message; a transport that can say which request a message is
        about (Streamable HTTP answers each POST on its own stream) also passes `send_related`, which
        then takes progress, logs, requests to the client and responses of in-flight requests.
        `background` runs the session's own work that must not block the reading loop (roots/list).
        A `stateless` session serves one message alone: no handshake, no requests to the client.
        """
        self.server = server
        self._send = send
        self._send_related = send_related
        self._spawn = spawn
        self._background = background
        self.stateless = stateless
        self.initialized = stateless  # initialize answered
        self.ready = stateless  # notifications/initialized received
        self.client_info: dict[str, Any] = {}
        self.client_capabilities: dict[str, Any] = {}
        self.capabilities: dict[str, Any] = {}  # what our first initialize result declared
        self.log_level: str | None = None
        self.closed = False  # no more input: requests to the client can no longer be answered
        self._lock = threading.Lock()
        self._in_flight: dict[jsonrpc.Id, RequestContext] = {}
        self._outgoing: dict[int, _Outgoing] = {}
        self._next_id = itertools.count(1)
        self.data: dict[str, Any] = {}  # per-session state that features keep (subscriptions, roots)
        self.subscriptions: set[str] = set()  # resource URIs this client subscribed to
        self._subscription_turns: dict[str, int] = {}  # URI -> the turn of its latest subscribe/unsubscribe under way
        self._turns = itertools.count(1)
        self.roots: list[dict[str, Any]] | None = None  # the client's roots, once listed
        self._roots_lock = threading.Lock()
        self._roots_listing: threading.Event | None = None  # set once a listing under way is over
        self._roots_stale = False  # roots changed again while a listing was under way

    # -- input ----------------------------------------------------------------------------------
    def receive(self, message: Any) -> list[Message]:
        """Take one parsed JSON value; return the replies to send now, in order."""
        if not isinstance(message, dict):
            return [jsonrpc.error(None, JsonRpcError(jsonrpc.INVALID_REQUEST))]
        if "method" not in message:
            if "result" in message or "error" in message:
                self._receive_response(message)
                return []
            msg_id = message.get("id")
            return [jsonrpc.error(msg_id if jsonrpc.is_valid_id(msg_id) else None, JsonRpcError(jsonrpc.INVALID_REQUEST))]
        if "id" not in message:
            self._receive_notification(message)
            return []
        msg_id = message["id"]
        if not jsonrpc.is_valid_id(msg_id):
            return [jsonrpc.error(None, JsonRpcError(jsonrpc.INVALID_REQUEST))]
        method = message["method"]
        params = message.get("params", {})
        if message.get("jsonrpc") != "2.0" or not isinstance(method, str) or not isinstance(params, dict):
            return [jsonrpc.error(msg_id, JsonRpcError(jsonrpc.INVALID_REQUEST))]
        reply = self._receive_request(msg_id, method, params)
        return [] if reply is None else [reply]

    def _receive_request(self, msg_id: jsonrpc.Id, method: str, params: dict[str, Any]) -> Message | None:
        negotiated = self.capabilities if self.initialized and not self.stateless else None
        handler = self.server.request_handler(method, negotiated)
        if handler is None:
            return jsonrpc.error(msg_id, JsonRpcError(jsonrpc.METHOD_NOT_FOUND))
        context = RequestContext(self, msg_id, method, params)
        with self._lock:
            if msg_id in self._in_flight:
                return jsonrpc.error(msg_id, JsonRpcError(jsonrpc.INVALID_REQUEST, data="id is in use by a request in progress"))
        context.on_loop = True
        try:
            outcome = handler(self, context, params)
        except JsonRpcError as err:
            return jsonrpc.error(msg_id, err)
        except (Exception, SystemExit):  # a handler's sys.exit() is a bug, not a shutdown
            self.log_exception(f"{method} failed")
            return jsonrpc.error(msg_id, JsonRpcError(jsonrpc.INTERNAL_ERROR))
        if isinstance(outcome, Deferred):
            context.on_loop = False
            with self._lock:
                self._in_flight[msg_id] = context
            self._spawn(Job(self, context, outcome.work))
            return None
        return jsonrpc.result(msg_id, outcome)

    def complete(self, context: RequestContext, work: Callable[[], dict[str, Any]]) -> Message | None:
        """Run deferred work and build its response (None when it was cancelled)."""
        try:
            listing = self._roots_listing
            if listing is not None:  # work that follows the client's roots waits for them, briefly
                deadline = time.monotonic() + ROOTS_WAIT
                while not listing.wait(0.05) and not context.cancelled and time.monotonic() < deadline:
                    pass
            if context.cancelled:  # cancelled while it waited for a worker or for the roots
                return None
            return jsonrpc.result(context.request_id, work())
        except Cancelled:
            return None
        except JsonRpcError as err:
            return jsonrpc.error(context.request_id, err)
        except (Exception, SystemExit):  # a handler's sys.exit() is a bug, not a shutdown
            self.log_exception(f"{context.method} failed")
            return jsonrpc.error(context.request_id, JsonRpcError(jsonrpc.INTERNAL_ERROR))
        finally:
            with self._lock:
                self._in_flight.pop(context.request_id, None)

    def _receive_notification(self, message: Message) -> None:
        method = message.get("method")
        params = message.get("params", {})
        if message.get("jsonrpc") != "2.0" or not isinstance(method, str) or not isinstance(params, dict):
            return  # malformed notifications are dropped: there is nobody to tell
        if method == "notifications/cancelled":
            request_id = params.get("requestId")
            if not jsonrpc.is_valid_id(request_id):
                return
            with self._lock:
                context = self._in_flight.get(request_id)
            if context is not None:
                context.cancel()
            return
        if method == "notifications/initialized":
            self.ready = True
            self._follow_roots()
        elif method == "notifications/roots/list_changed" and self.ready:
            self._follow_roots()
        handler = self.server.notification_handler(method)
        if handler is not None:
            try:
                handler(self, params)
            except Exception:
                self.log_exception(f"{method} failed")

    def _receive_response(self, message: Message) -> None:
        msg_id = message.get("id")
        with self._lock:
            waiting = self._outgoing.pop(msg_id, None) if isinstance(msg_id, int) and not isinstance(msg_id, bool) else None
        if waiting is not None:
            waiting.response = message
            waiting.event.set()

    # -- lifecycle ------------------------------------------------------------------------------
    def negotiate(self, params: dict[str, Any]) -> dict[str, Any]:
        """Answer initialize; we speak one version and offer it whatever the client asked for."""
        capabilities = params.get("capabilities", {})
        client_info = params.get("clientInfo", {})
        if not isinstance(capabilities, dict) or not isinstance(client_info, dict):
            raise JsonRpcError(jsonrpc.INVALID_PARAMS)
        result = self.server.initialize_result(PROTOCOL_VERSION)
        if not self.initialized:
            self.client_capabilities = capabilities
            self.client_info = client_info
            self.capabilities = result["capabilities"]
            self.initialized = True
        return result

    def _follow_roots(self) -> None:
        """List the client's roots in the background, if anything on the server follows them."""
        if not (self.server.roots_callbacks and "roots" in self.client_capabilities and not self.stateless):
            return
        with self._lock:
            if self._roots_listing is not None:
                # One refresh at a time: a flood of list_changed costs one more listing, not a thread each.
                self._roots_stale = True
                return
            listing = self._roots_listing = threading.Event()

        def refresh() -> None:
            try:
                while True:
                    self.refresh_roots()
                    with self._lock:
                        if not self._roots_stale:
                            return
                        self._roots_stale = False
            finally:
                with self._lock:
                    self._roots_listing = None
                    self._roots_stale = False
                listing.set()

        self._background(refresh)

    def refresh_roots(self) -> None:
        """Ask the client for its roots and hand them to the server's roots callbacks.

        Refreshes run one at a time, so callbacks see the lists in the order the client gave them.
        """
        with self._roots_lock:
            try:
                result = self.request("roots/list")
            except ClientRequestError as err:
                log.warning(f"roots/list failed: {err}")
                return
            listed = result.get("roots")
            if not isinstance(listed, list):
                log.warning("roots/list answered without a roots array; keeping the previous roots")
                return
            roots = [root for root in listed if isinstance(root, dict) and isinstance(root.get("uri"), str)]
            self.roots = roots
            for callback in self.server.roots_callbacks:
                try:
                    callback(self, roots)
                except Exception:
                    self.log_exception("roots callback failed")

    # -- subscriptions ----------------------------------------------------------------------------
    def subscription_turn(self, uri: str) -> int:
        """Note, on the reading loop, that a subscribe or unsubscribe of `uri` arrived: its turn."""
        with self._lock:
            turn = self._subscription_turns[uri] = next(self._turns)
        return turn

    def settle_subscription(self, uri: str, turn: int, subscribed: bool | None, change: Callable[[], None] | None) -> bool:
        """End `turn`: if it is still the latest for `uri`, record the subscription (`subscribed`, None to
        leave it as it is) and run `change`, atomically; a turn overtaken by a later one changes nothing."""
        with self._lock:
            if self._subscription_turns.get(uri) != turn:
                return False
            del self._subscription_turns[uri]
            if subscribed is None:
                return False
            if subscribed:
                self.subscriptions.add(uri)
            else:
                self.subscriptions.discard(uri)
            if change is not None:
                change()
        return True

    def in_flight(self) -> list[RequestContext]:
        with self._lock:
            return list(self._in_flight.values())

    def close(self) -> None:
        """No more input will come: fail our pending requests so no handler waits forever.

        Output still flows, so requests already read are answered.
        """
        with self._lock:  # with `request`'s registration, so no request slips in after the sweep
            self.closed = True
            outgoing, self._outgoing = self._outgoing, {}
        for waiting in outgoing.values():
            waiting.event.set()

    def cancel_all(self) -> None:
        for context in self.in_flight():
            context.cancel()

    # -- output ---------------------------------------------------------------------------------
    def send(self, message: Message, related: jsonrpc.Id | None = None) -> None:
        """Send `message`; `related` is the id of the client request it belongs to, if any."""
        if related is not None and self._send_related is not None:
            self._send_related(message, related)
        elif self._send is not None:
            self._send(message)

    def log(self, level: str, data: Any, logger: str | None = None, related: jsonrpc.Id | None = None) -> bool:
        if not self.server.logging_enabled or level not in LOG_LEVELS:
            return False
        threshold = self.log_level or self.server.default_log_level
        if LOG_LEVELS.index(level) < LOG_LEVELS.index(threshold):
            return False
        params: dict[str, Any] = {"level": level}
        if logger is not None:
            params["logger"] = logger
        params["data"] = data
        self.send(jsonrpc.notification("notifications/message", params), related)
        return True

    def notify(self, method: str, params: dict[str, Any] | None = None, related: jsonrpc.Id | None = None) -> None:
        self.send(jsonrpc.notification(method, params), related)

    def request(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        timeout: float = 60.0,
        parent: RequestContext | None = None,
    ) -> dict[str, Any]:
        """Send a request to the client and block until it answers; call it off the reading loop."""
        if self.stateless:
            raise ClientRequestError(JsonRpcError(
                jsonrpc.INVALID_REQUEST, f"Cannot send {method}: a stateless server has no session to carry the answer"))
        if parent is not None and parent.on_loop:
            raise ClientRequestError(JsonRpcError(
                jsonrpc.INTERNAL_ERROR, f"Cannot send {method} from an inline handler: it would block the reading loop"))
        needed = _CLIENT_CAPABILITY_FOR.get(method)
        if needed is not None and needed not in self.client_capabilities:
            raise ClientRequestError(JsonRpcError(jsonrpc.METHOD_NOT_FOUND, f"The client does not support {method}"))
        if method != "ping" and not self.ready:
            raise ClientRequestError(JsonRpcError(jsonrpc.INVALID_REQUEST, "The client has not finished initialization"))
        if self.closed or self._send is None:
            raise ClientRequestError(JsonRpcError(jsonrpc.INTERNAL_ERROR, "The client is gone"))
        request_id = next(self._next_id)
        related = parent.request_id if parent is not None else None
        waiting = _Outgoing()
        with self._lock:
            if self.closed:
                raise ClientRequestError(JsonRpcError(jsonrpc.INTERNAL_ERROR, "The client is gone"))
            self._outgoing[request_id] = waiting
        self.send(jsonrpc.request(request_id, method, params), related)
        if parent is not None:
            parent.on_cancel(waiting.event.set)
        waiting.event.wait(timeout)
        with self._lock:
            self._outgoing.pop(request_id, None)
        response = waiting.response
        if response is None:
            if parent is not None and parent.cancelled:
                self.notify("notifications/cancelled", {"requestId": request_id, "reason": "The request that needed it was cancelled"},
                            related)
                raise Cancelled()
            if self.closed:
                raise ClientRequestError(JsonRpcError(jsonrpc.INTERNAL_ERROR, "The client is gone"))
            self.notify("notifications/cancelled", {"requestId": request_id, "reason": f"Timed out after {timeout:g} s"}, related)
            raise ClientRequestError(JsonRpcError(jsonrpc.REQUEST_TIMEOUT, f"The client did not answer {method} within {timeout:g} s"))
        if "error" in response:
            err = response["error"] if isinstance(response["error"], dict) else {}
            code = err.get("code")
            raise ClientRequestError(
                JsonRpcError(code if isinstance(code, int) else jsonrpc.INTERNAL_ERROR, str(err.get("message", "Error")), err.get("data"))
            )
        value = response.get("result")
        return value if isinstance(value, dict) else {}

    def log_exception(self, what: str) -> None:
        """Tracebacks go to stderr, never to the client."""
        import traceback

        log.error(f"{what}\n{traceback.format_exc()}")

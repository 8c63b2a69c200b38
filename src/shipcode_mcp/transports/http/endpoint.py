"""Streamable HTTP on Starlette and uvicorn: both eras of MCP behind one endpoint.

A POST whose body carries a per-request field in `params._meta`, or whose `MCP-Protocol-Version` header is
2026-07-28 (but for initialize), is modern: it is served alone, with no session (see "Modern requests"
below), in either mode; without a complete `_meta` it is refused with -32602 and its id. Everything else is
2025-06-18:

- POST carries one JSON-RPC message. A notification or a response gets 202. A request is answered
  with `application/json`, unless its handler sends something first (progress, a log message, a
  request to the client): the answer then becomes an SSE stream of those messages that ends with
  the response. An `async def` tool is a task on the event loop; other handlers run on worker
  threads; the event loop parses, routes and writes.
- GET opens the session's own SSE stream for messages that belong to no request (list changes,
  resource updates, roots/list); they wait in a bounded buffer until a stream is open.
- DELETE ends the session: in-flight work is cancelled, later requests get 404.
- `Mcp-Session-Id` is issued with the initialize result and required afterwards (400 without it,
  404 for an unknown one); `MCP-Protocol-Version` must be 2025-06-18 when sent (400 otherwise).
- `Origin` and `Host` are checked against DNS rebinding (403): a loopback server accepts only
  loopback names unless told otherwise.
- Stateless mode: no session id, every POST served by a fresh session, GET and DELETE 405. Any worker
  can serve any request, so several uvicorn workers or machines can share one deployment.

Modern requests (2026-07-28): no `Mcp-Session-Id` is read, minted or echoed; each request gets a runner of
its own. `MCP-Protocol-Version`, `Mcp-Method` and (for tools/call, resources/read, prompts/get) `Mcp-Name`
must mirror the body (400, -32020 otherwise; `header_mismatch`). The answer is JSON, or an SSE stream of the
request's own notifications ending with its response; closing that stream cancels the request. A
modern error that says the request cannot be served here has an HTTP status of its own (`modern_status`).
`subscriptions/listen` is a stream that stays open, with a comment every `keepalive` seconds, until the
client closes it or the server shuts down (which ends it with a result).

Starlette and uvicorn come with the `http` extra and load only when this module does.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import secrets
import threading
import weakref
from typing import TYPE_CHECKING, Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from ... import jsonrpc
from ...context import PROTOCOL_VERSION
from ...envelope import no_envelope
from ...era import MODERN_VERSION
from ...hosts import is_loopback
from ...jsonrpc import JsonRpcError
from .guard import HostGuard
from .headers import VERSION_HEADER, header_mismatch, is_modern, modern_status
from .lanes import Lanes
from .limits import HttpLimits, with_fields
from .runner import DONE, HttpSession, is_response
from .sessions import Full, SessionTable

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable, Hashable, Iterable

    from starlette.types import Receive, Scope, Send

    from ...auth.tokens import Principal
    from ...jsonrpc import Id, Message
    from ...registry import Registry
    from .auth import ResourceServer

SESSION_HEADER = "mcp-session-id"

SMALL_BODY = 64 * 1024
"""A body this small is never refused for the budget, and is parsed on the event loop (by json's C scanner:
well under a millisecond). A larger one is parsed on a worker thread, counting its values (`MAX_JSON_VALUES`)."""
RETRY_AFTER = 10  # seconds, when every session is busy and none can make room
_ENDPOINTS: weakref.WeakSet[StreamableHttp] = weakref.WeakSet()  # for the server's shutdown: see uvicorn_server
_STREAMING = "shipcode.stream"  # set in a request's scope when it holds one of its caller's streams
_GONE = object()  # the client closed the connection before the answer began



class StreamableHttp:
    """The ASGI endpoint: validation, sessions, and the mapping of MCP exchanges onto HTTP."""

    def __init__(self, server: Registry, *, stateless: bool = False, allowed_origins: Iterable[str] = (),
                 allowed_hosts: Iterable[str] | None = None, allow_loopback: bool | None = None,
                 auth: ResourceServer | None = None, limits: HttpLimits | None = None) -> None:
        """`allowed_origins`, `allowed_hosts` and `allow_loopback`: which Host and Origin headers are accepted
        (guard.HostGuard). With `auth`, every request needs a bearer token it accepts (docs/http.md, "Securing
        a remote server").
        `limits`: what a request, a session and a caller may take (limits.py)."""
        self.server = server
        self.auth = auth
        self.stateless = stateless
        self.guard = HostGuard(allowed_origins, allowed_hosts, allow_loopback)  # DNS-rebinding protection (guard.py)
        self.limits = limits = limits or HttpLimits()
        self.bodies_held = 0  # bytes of bodies over SMALL_BODY held now (`_Held`), on the loop
        self.held: collections.Counter[Hashable] = collections.Counter()  # open requests, by caller (`_lane_of`)
        self.streams: collections.Counter[Hashable] = collections.Counter()  # open GET streams and listens, by caller
        self.sessions: SessionTable[HttpSession] = SessionTable(limits)
        self.listens: set[HttpSession] = set()  # the runners of open subscriptions/listen streams
        self.loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: int | None = None
        self._lanes: Lanes | None = None
        self._reaper: asyncio.Task[None] | None = None
        _ENDPOINTS.add(self)

    # -- plumbing ---------------------------------------------------------------------------------
    def _bind_loop(self) -> None:
        if self.loop is None:
            self.loop = asyncio.get_running_loop()
            self._loop_thread = threading.get_ident()
            if not self.stateless and self.limits.session_idle_timeout > 0:
                self._reaper = self.loop.create_task(self._reap_idle())

    def on_loop(self, fn: Any, *args: Any) -> None:
        """Run `fn(*args)` on the event loop: now if called there (keeping order), else soon."""
        if threading.get_ident() == self._loop_thread:
            fn(*args)
            return
        loop = self.loop
        if loop is not None:
            try:
                loop.call_soon_threadsafe(fn, *args)
            except RuntimeError:  # the loop is closed: the server is shutting down
                pass

    def lanes(self) -> Lanes:
        """The worker threads, shared fairly by the sessions and callers (lanes.py)."""
        if self._lanes is None:
            self._lanes = Lanes(self.limits.max_workers, self.limits.max_concurrent_calls)
        return self._lanes

    async def _reap_idle(self) -> None:
        """End sessions nobody used for `session_idle_timeout` seconds (no request, no open stream)."""
        period = max(1.0, min(60.0, self.limits.session_idle_timeout / 4))
        while True:
            await asyncio.sleep(period)
            self.sessions.end_idle()

    def shutdown(self) -> None:
        self.end_listens()
        self.sessions.end_all()
        if self._reaper is not None:
            self._reaper.cancel()
        if self._lanes is not None:
            self._lanes.shutdown()

    # -- ASGI ---------------------------------------------------------------------------------------
    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        self._bind_loop()
        request = Request(scope, receive)
        refused = self.guard.refusal(request.headers.get("host", ""), request.headers.get("origin"))
        response = None if refused is None else _error(403, refused)
        if response is None and self.auth is not None:
            found = await self.auth.authenticate(request)
            if isinstance(found, Response):
                response = found
            else:
                scope["auth"] = found
                response = self.auth.check(found, None, self.server)  # nothing here without shipcode:read
        if response is not None:
            await response(scope, receive, send)
            return
        caller = _lane_of(request)
        if self.limits.max_requests_per_caller > 0 and self.held[caller] >= self.limits.max_requests_per_caller:
            await _error(429, f"Too Many Requests: this caller has {self.held[caller]} requests open (at most "
                         f"{self.limits.max_requests_per_caller}); try again later", headers={"Retry-After": "1"})(scope, receive, send)
            return
        self.held[caller] += 1
        try:
            if request.method == "POST":
                response = await self._post(request)
            elif request.method == "GET":
                response = self._get(request)
            elif request.method == "DELETE":
                response = self._delete(request)
            else:
                response = _error(405, "Method Not Allowed", headers={"Allow": self._allowed_methods()})
            await response(scope, receive, send)
        finally:
            _forget(self.held, caller)
            if scope.get(_STREAMING):
                _forget(self.streams, caller)

    def _stream_refused(self, request: Request) -> Response | None:
        """A long-lived stream (the GET stream, a listen) for the request's caller, counted until the request
        ends (`__call__`), or 429 when the caller holds `max_streams_per_caller` already."""
        caller = _lane_of(request)
        if self.limits.max_streams_per_caller > 0 and self.streams[caller] >= self.limits.max_streams_per_caller:
            return _error(429, f"Too Many Requests: this caller has {self.streams[caller]} streams open (GET streams and "
                          f"subscriptions/listen, at most {self.limits.max_streams_per_caller}); close one first",
                          headers={"Retry-After": "5"})
        self.streams[caller] += 1
        request.scope[_STREAMING] = True
        return None

    def _allowed_methods(self) -> str:
        return "POST" if self.stateless else "GET, POST, DELETE"

    def _session_for(self, request: Request, *, creating: bool = False) -> HttpSession | Response:
        """The session the request names, a new one for initialize, or the error response to send."""
        version = request.headers.get(VERSION_HEADER)
        if not creating and version is not None and version != PROTOCOL_VERSION:
            return _error(400, f"Bad Request: unsupported MCP-Protocol-Version {version!r} (a session speaks "
                          f"{PROTOCOL_VERSION}; a {MODERN_VERSION} request names its version in params._meta)")
        caller = _principal(request)
        if self.stateless:
            return self._runner(request)
        session_id = request.headers.get(SESSION_HEADER)
        if session_id is None:
            if creating:
                owner = caller.key if caller is not None else None
                room = self.sessions.room_for(owner)
                if isinstance(room, Full):
                    return _error(503, f"Service Unavailable: {room.why}; try again later",
                                  headers={"Retry-After": str(RETRY_AFTER)})
                return self._runner(request, secrets.token_hex(16))
            return _error(400, "Bad Request: the Mcp-Session-Id header is required")
        owner = caller.key if caller is not None else None
        http_session = self.sessions.find(session_id, owner)
        if http_session is None:
            # Another caller's session is answered as if it did not exist: its id reveals nothing.
            if self.sessions.ended_for_room(session_id, owner):
                return _error(404, f"Not Found: this session was ended to make room for new ones (the server keeps "
                              f"at most {self.limits.max_sessions} sessions and this one was the least recently used idle "
                              "one); initialize a new one")
            return _error(404, "Not Found: no such session (it ended or never existed); initialize a new one")
        if caller is not None:  # what its token may call now (a later token of the same caller may have more scopes)
            http_session.session.may_call = _may_call(caller)
        return http_session

    def _runner(self, request: Request, session_id: str | None = None) -> HttpSession:
        """A new session (or a stateless request's runner), owned by the caller when tokens are checked."""
        caller = _principal(request)
        runner = HttpSession(self, session_id)
        if caller is not None:
            runner.owner = runner.session.principal = caller.key
            runner.session.may_call = _may_call(caller)
        if session_id is None:
            runner.lane = _lane_of(request)
        return runner

    # -- POST -------------------------------------------------------------------------------------
    async def _post(self, request: Request) -> Response:
        content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if content_type != "application/json":
            return _error(415, "Unsupported Media Type: the body must be application/json")
        wants_json, wants_sse = _accepts(request.headers.get("accept"))
        if not (wants_json or wants_sse):
            return _error(406, "Not Acceptable: accept application/json and text/event-stream")
        message = await self._message(request)
        if isinstance(message, Response):
            return message
        kind = jsonrpc.classify(message)
        if kind == "invalid":
            return _json(400, jsonrpc.invalid_request(message))
        if self.auth is not None and kind == "request":  # a tool that writes also needs shipcode:write
            refused = self.auth.check(_principal(request), message, self.server)
            if refused is not None:
                return refused
        if kind != "response" and (is_modern(message) or (
                request.headers.get(VERSION_HEADER) == MODERN_VERSION and message["method"] != "initialize")):
            return await self._post_modern(request, message, wants_json, wants_sse)
        is_request = kind == "request"
        found = self._session_for(request, creating=is_request and message["method"] == "initialize")
        if isinstance(found, Response):
            return found
        http_session = found
        if not is_request:
            http_session.receive(message)
            return Response(status_code=202, headers=self._session_headers(http_session))
        return await self._answer(http_session, message, wants_json, wants_sse)

    async def _message(self, request: Request) -> Any:
        """The request's JSON value, or the Response that refuses it: its body is held within the endpoint's
        `body_budget` until it is parsed, and a body over SMALL_BODY is parsed on a worker thread by json's
        Python scanner (`jsonrpc.parse_counted`, at most `max_json_values` values): the C scanner holds the
        GIL, and with it the event loop, for as long as it parses."""
        held = _Held(self)
        try:
            body = await self._read_body(request, held)
            if isinstance(body, Response):
                return body
            if len(body) <= SMALL_BODY:
                return jsonrpc.parse(body)
            return await asyncio.to_thread(jsonrpc.parse_counted, body, self.limits.max_json_values)
        except JsonRpcError as err:
            return _json(400, jsonrpc.error(None, err))
        except jsonrpc.TooManyValues as err:
            return _error(413, f"Content Too Large: {err} in one request")
        finally:
            held.release()

    async def _read_body(self, request: Request, held: _Held) -> bytes | Response:
        """The whole body, never stalled (`_read_all`: 408, and the connection closes: a client that
        stops sending mid-way holds nothing for long), `max_body_bytes` (413) and the body budget (503)."""
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit():
            if int(declared) > self.limits.max_body_bytes:
                return _error(413, f"Content Too Large: the limit is {self.limits.max_body_bytes} bytes")
            if not held.fits(int(declared)):
                return self._over_budget()
        return await self._read_all(request, held)

    def _over_budget(self) -> Response:
        return _error(503, f"Service Unavailable: the server holds {self.bodies_held} bytes of request bodies (at most "
                      f"{self.limits.body_budget}); try again later", headers={"Retry-After": "1"})

    async def _read_all(self, request: Request, held: _Held) -> bytes | Response:
        """Chunk by chunk, each within `body_timeout` seconds of the last (0: no limit), and on average at
        least `body_min_rate` bytes a second once `body_timeout` seconds have passed: by then the body is late
        when `elapsed > body_timeout + received / body_min_rate` (408, and the connection closes)."""
        chunks: list[bytes] = []
        size = 0
        loop = asyncio.get_running_loop()
        started = loop.time()
        while True:
            wait: float | None = None
            if self.limits.body_timeout > 0:
                wait = self.limits.body_timeout
                if self.limits.body_min_rate > 0:
                    wait = min(wait, started + self.limits.body_timeout + size / self.limits.body_min_rate - loop.time())
            if wait is not None and wait > 0 and _received(request):
                wait = None  # what comes next is here already: no timer to set and cancel
            message = await _receive_within(request, wait) if wait is None or wait > 0 else None
            if message is None:
                return _error(408, f"Request Timeout: the body stalled (nothing for {self.limits.body_timeout:g} s, or below "
                              f"{self.limits.body_min_rate} bytes/s on average)", headers={"Connection": "close"})
            if message["type"] == "http.disconnect":
                return Response(status_code=400)
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.limits.max_body_bytes:
                return _error(413, f"Content Too Large: the limit is {self.limits.max_body_bytes} bytes")
            if not held.grow(size):
                return self._over_budget()
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)

    async def _answer(self, http_session: HttpSession, message: Message, wants_json: bool, wants_sse: bool) -> Response:
        request_id = message["id"]
        if request_id in http_session.requests:  # still streaming its answer: the id is taken
            in_use = JsonRpcError(jsonrpc.INVALID_REQUEST, data="id is in use by a request in progress")
            return _json(200, jsonrpc.error(request_id, in_use), self._session_headers(http_session))
        queue: asyncio.Queue[Any] = asyncio.Queue()
        http_session.requests[request_id] = queue
        http_session.receive(message)
        early = [queue.get_nowait() for _ in range(queue.qsize())]
        if early and is_response(early[-1]):  # answered on the loop (inline), with what it sent on the way
            del http_session.requests[request_id]
            response = early.pop()
            headers = self._session_headers(http_session)
            new_id = http_session.id if message["method"] == "initialize" and http_session.id not in self.sessions else None
            if new_id is not None:
                if "result" in response:
                    self.sessions.admit(http_session)  # only now: a failed initialize ends nobody's session
                else:
                    headers = {}  # a failed initialize creates no session: no id to hand out
            if wants_sse and (early or not wants_json):
                return _sse(_events([*early, response]), headers)
            for item in early:
                http_session.route(item, None)
            return _json(200, response, headers)
        for item in early:
            queue.put_nowait(item)
        headers = self._session_headers(http_session)
        while True:
            first = await queue.get()
            if first is DONE or is_response(first) or wants_sse:
                break
            http_session.route(first, None)  # a client that takes no SSE gets the rest on its GET stream
        if first is DONE:  # cancelled, or the session ended: no response will come
            http_session.requests.pop(request_id, None)
            if http_session.closed:
                return _error(404, "Not Found: the session ended before the request was answered")
            return _sse(_nothing(), headers) if wants_sse else Response(status_code=202, headers=headers)
        if is_response(first) and wants_json:
            del http_session.requests[request_id]
            return _json(200, first, headers)
        return _sse(self._stream(http_session, request_id, queue, first), headers)

    async def _stream(self, http_session: HttpSession, request_id: Id, queue: asyncio.Queue[Any],
                      first: Any) -> AsyncIterator[bytes]:
        """The SSE body of one request: what its handler sends, ending with the response."""
        item = first
        try:
            while item is not DONE:
                yield _event(item)
                if is_response(item):
                    return
                item = await queue.get()
        finally:
            if http_session.requests.get(request_id) is queue:
                del http_session.requests[request_id]

    # -- POST, modern (2026-07-28): one runner per request, no session ---------------------------------
    async def _post_modern(self, request: Request, message: Message, wants_json: bool, wants_sse: bool) -> Response:
        runner = self._runner(request)
        if "id" not in message:  # a notification: nothing to answer (cancelling is closing a stream)
            runner.receive(message)
            return Response(status_code=202)
        request_id = message["id"]
        mismatch = header_mismatch(request.headers.raw, message, self._input_schema(message))
        if mismatch is not None:
            return _json(400, jsonrpc.error(request_id, JsonRpcError(jsonrpc.HEADER_MISMATCH, mismatch)))
        if not is_modern(message):  # modern by its header alone: no _meta, or none of its per-request fields
            return _json(400, jsonrpc.error(request_id, no_envelope()))
        listening = message["method"] == "subscriptions/listen"
        if listening:
            if not wants_sse:
                return _error(406, "Not Acceptable: subscriptions/listen answers with text/event-stream")
            refused = self._stream_refused(request)
            if refused is not None:
                return refused
            self.listens.add(runner)
            self.server.connect(runner)  # before the request: no change may slip between its ack and the stream
        queue: asyncio.Queue[Any] = asyncio.Queue()
        runner.requests[request_id] = queue
        runner.receive(message)
        # A client that takes no SSE gets the response alone: a modern request's notifications have no
        # other stream to go to.
        early = [item for item in (queue.get_nowait() for _ in range(queue.qsize()))
                 if wants_sse or is_response(item) or item is DONE]
        while not early:
            item = await self._next(request, queue)
            if item is _GONE:  # the client left before anything was written: that cancels the request
                self._release(runner, request_id, listening, answered=False)
                return Response(status_code=204)
            if wants_sse or is_response(item) or item is DONE:
                early.append(item)
        first = early[0]
        if first is DONE:  # no response will come
            self._release(runner, request_id, listening, answered=True)
            return Response(status_code=202)
        if is_response(first):  # nothing before it: JSON, with the status its error calls for
            self._release(runner, request_id, listening, answered=True)
            status = modern_status(first, message)
            if status == 200 and not wants_json:
                return _sse(_events([first]), {})
            return _json(status, first)
        return _sse(self._modern_stream(runner, request_id, queue, early, listening), {})

    def _input_schema(self, message: Message) -> dict[str, Any] | None:
        """The input schema of the tool a tools/call names, for its `Mcp-Param-*` headers."""
        params = message.get("params")
        if message.get("method") != "tools/call" or not isinstance(params, dict):
            return None
        name = params.get("name")
        tool = self.server.tools.get(name) if isinstance(name, str) else None
        return tool.input_schema if tool is not None else None

    async def _next(self, request: Request, queue: asyncio.Queue[Any]) -> Any:
        """The next item of an exchange, or _GONE if the client closes the connection first."""
        got = asyncio.ensure_future(queue.get())
        gone = asyncio.ensure_future(_disconnected(request))
        try:
            await asyncio.wait((got, gone), return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (got, gone):
                if not task.done():
                    task.cancel()  # a cancelled Queue.get loses no item
        return got.result() if got.done() and not got.cancelled() else _GONE

    async def _modern_stream(self, runner: HttpSession, request_id: Id, queue: asyncio.Queue[Any],
                             items: list[Any], listening: bool) -> AsyncIterator[bytes]:
        """The SSE body of one modern request: its notifications, then its response. The client closing
        it (Starlette cancels this generator when the client disconnects) cancels the request."""
        answered = False
        pending = list(items)  # what arrived before the stream was chosen, then the queue
        try:
            while True:
                if pending:
                    item = pending.pop(0)
                elif listening:
                    try:
                        item = await asyncio.wait_for(queue.get(), self.limits.keepalive)
                    except asyncio.TimeoutError:
                        yield b":\r\n"  # keeps intermediaries and idle timeouts from closing a quiet stream
                        continue
                else:
                    item = await queue.get()
                if item is DONE:
                    answered = True
                    return
                yield _event(item)
                if is_response(item):
                    answered = True
                    return
        finally:
            self._release(runner, request_id, listening, answered=answered)

    def _release(self, runner: HttpSession, request_id: Id, listening: bool, *, answered: bool) -> None:
        """On the loop: a modern exchange is over; if unanswered, the client left and its request is cancelled."""
        if runner.requests.get(request_id) is not None:
            del runner.requests[request_id]
        if not answered:
            runner.cancel_all()
            runner.close()
        if listening:
            self.listens.discard(runner)
            self.server.disconnect(runner)

    def end_listens(self) -> None:
        """The server is shutting down: every subscriptions/listen is answered (the core sends its
        graceful result), then its stream ends."""
        for runner in list(self.listens):
            runner.closed = True
            runner.close()
            for queue in list(runner.requests.values()):
                queue.put_nowait(DONE)

    def _session_headers(self, http_session: HttpSession) -> dict[str, str]:
        return {} if http_session.id is None else {"Mcp-Session-Id": http_session.id}

    # -- GET and DELETE -----------------------------------------------------------------------------
    def _get(self, request: Request) -> Response:
        if self.stateless:
            return _error(405, "Method Not Allowed: a stateless server has no stream of its own", headers={"Allow": "POST"})
        _, wants_sse = _accepts(request.headers.get("accept"))
        if not wants_sse:
            return _error(406, "Not Acceptable: the GET stream is text/event-stream")
        found = self._session_for(request)
        if isinstance(found, Response):
            return found
        if found.get_open:
            return _error(409, "Conflict: this session's GET stream is already open")
        refused = self._stream_refused(request)
        if refused is not None:
            return refused
        found.get_open = True
        return _sse(self._standalone(found), self._session_headers(found))

    async def _standalone(self, http_session: HttpSession) -> AsyncIterator[bytes]:
        """The session's own stream; a comment every `keepalive` seconds notices a client that left."""
        try:
            yield b": stream open\n\n"
            while not http_session.closed:
                while http_session.standalone:
                    yield _event(http_session.standalone.popleft())
                http_session.wake.clear()
                try:
                    await asyncio.wait_for(http_session.wake.wait(), self.limits.keepalive)
                except asyncio.TimeoutError:
                    yield b": keep-alive\n\n"
        finally:
            http_session.get_open = False
            http_session.last_seen = self.sessions.clock()

    def _delete(self, request: Request) -> Response:
        if self.stateless:
            return _error(405, "Method Not Allowed: a stateless server has no session to end", headers={"Allow": "POST"})
        found = self._session_for(request)
        if isinstance(found, Response):
            return found
        assert found.id is not None
        self.sessions.end(found.id)
        return Response(status_code=204)


# -- helpers ----------------------------------------------------------------------------------------
class _Held:
    """The bytes of one request's body counted in its endpoint's `body_budget` (on the loop): none while the body
    is SMALL_BODY or less, then all of it; given back by `release` once the body is parsed or refused."""

    __slots__ = ("endpoint", "size")

    def __init__(self, endpoint: StreamableHttp) -> None:
        self.endpoint = endpoint
        self.size = 0

    def fits(self, size: int) -> bool:
        """Whether a body of `size` bytes would fit now (nothing is held for it until it comes)."""
        endpoint, budget = self.endpoint, self.endpoint.limits.body_budget
        return size <= SMALL_BODY or budget <= 0 or endpoint.bodies_held - self.size + size <= budget

    def grow(self, size: int) -> bool:
        """Hold `size` bytes (the body so far), or False when they do not fit."""
        if size <= self.size or not self.fits(size):
            return size <= self.size
        if size > SMALL_BODY and self.endpoint.limits.body_budget > 0:
            self.endpoint.bodies_held += size - self.size
            self.size = size
        return True

    def release(self) -> None:
        self.endpoint.bodies_held -= self.size
        self.size = 0


def _accepts(header: str | None) -> tuple[bool, bool]:
    """(application/json, text/event-stream) acceptable? No Accept header means anything (RFC 9110)."""
    if header is None:
        return True, True
    types = {part.split(";")[0].strip().lower() for part in header.split(",")}
    anything = "*/*" in types
    return (anything or "application/json" in types or "application/*" in types,
            anything or "text/event-stream" in types or "text/*" in types)


_TIMEOUT = getattr(asyncio, "timeout", None)
"""asyncio.timeout (Python 3.11+): a deadline on the task itself, where wait_for makes a task per wait."""


async def _receive_within(request: Request, wait: float | None) -> Any:
    """The next ASGI message of the request, or None when `wait` seconds pass first (None: no limit)."""
    if wait is None:
        return await request.receive()
    try:
        if _TIMEOUT is not None:
            async with _TIMEOUT(wait):
                return await request.receive()
        return await asyncio.wait_for(request.receive(), wait)
    except (asyncio.TimeoutError, TimeoutError):
        return None


def _received(request: Request) -> bool:
    """Whether the request's next ASGI message is in already, so receiving it cannot wait: uvicorn's request
    cycles (h11 and httptools alike) set their `message_event` when a body chunk, the body's end or a
    disconnect is in, and `receive` then returns without suspending. Anything else: False (wait, with a timer)."""
    cycle = getattr(request.receive, "__self__", None)
    event = getattr(cycle, "message_event", None)
    return isinstance(event, asyncio.Event) and event.is_set()


async def _disconnected(request: Request) -> None:
    """Returns when the client closes the connection (the body has been read: nothing else comes)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass


def _principal(request: Request) -> Principal | None:
    """Who sent the request, when the endpoint checks tokens (set by StreamableHttp.__call__)."""
    found: Principal | None = request.scope.get("auth")
    return found


def _lane_of(request: Request) -> Hashable:
    """Whose turn the handler calls of a request without a session (stateless, or 2026-07-28) take: its
    caller's. With tokens checked, the caller is the token's subject (`Principal.key`): one client over many
    connections is still one caller, and callers behind one proxy are still several. Without tokens, the
    client's address: a connection would not do, since a client may open one per request (SDKs do) and so
    get a lane per call, which is no limit at all. Behind a proxy without tokens every client shares the
    proxy's address, so they share a lane; a server beyond loopback has tokens unless told
    --insecure-no-auth, and on loopback every client is this machine's user anyway."""
    caller = _principal(request)
    if caller is not None:
        return ("caller", caller.key)
    client = request.scope.get("client")
    return ("address", client[0] if client else None)


def _may_call(caller: Principal) -> Callable[[Any], bool]:
    """Which tools the caller's token may call: tools/list lists those only."""
    from ...auth.scopes import may_call  # auth loads only with an auth option (auth/__init__.py)

    return may_call(caller.scopes)


def _forget(counts: collections.Counter[Hashable], key: Hashable) -> None:
    """One fewer of `key`; a caller with none left is not kept."""
    counts[key] -= 1
    if counts[key] <= 0:
        del counts[key]


def _json(status: int, message: Message, headers: dict[str, str] | None = None) -> Response:
    body = jsonrpc.encode_or_substitute(message) or b""
    return Response(body, status_code=status, headers=headers, media_type="application/json")


def _error(status: int, text: str, headers: dict[str, str] | None = None) -> Response:
    code = jsonrpc.INVALID_REQUEST if status < 500 else jsonrpc.INTERNAL_ERROR
    return _json(status, jsonrpc.error(None, JsonRpcError(code, text)), headers)


def _event(message: Message) -> bytes:
    data = jsonrpc.encode_or_substitute(message)
    return b"" if data is None else b"event: message\ndata: " + data[:-1] + b"\n\n"


def _sse(body: AsyncIterator[bytes], headers: dict[str, str]) -> StreamingResponse:
    return StreamingResponse(body, media_type="text/event-stream",
                             headers={**headers, "Cache-Control": "no-cache, no-transform", "X-Accel-Buffering": "no"})


async def _events(messages: list[Message]) -> AsyncIterator[bytes]:
    for message in messages:
        yield _event(message)


async def _nothing() -> AsyncIterator[bytes]:
    empty: tuple[bytes, ...] = ()
    for chunk in empty:
        yield chunk


def create_app(server: Registry, *, path: str = "/mcp", stateless: bool = False, allowed_origins: Iterable[str] = (),
               allowed_hosts: Iterable[str] | None = None, host: str | None = None, auth: ResourceServer | None = None,
               limits: HttpLimits | None = None, **limit: Any) -> Starlette:
    """A Starlette app serving `server` at `path`.

    `allowed_hosts` None accepts loopback Host names only (DNS-rebinding protection for a local
    server), or any name if `host`, the address the server listens on, is not a loopback one; else
    give the names a proxy or load balancer uses, or ["*"]: on a loopback address they widen the
    loopback names rather than replace them. `allowed_origins` lists the browser
    origins allowed besides loopback ones ("*" for any). With `auth`, every request needs a bearer token
    `auth` accepts, and the Protected Resource Metadata is served (RFC 9728). `limits` (limits.py) says
    what a request, a session and a caller may take; a field given by name (`max_sessions=100`) replaces
    the one of `limits`. The connection-level limits (request heads, open connections) are uvicorn's
    protocol's: see `serve_http`.
    """
    limits = with_fields(limits, limit)
    local = host is None or is_loopback(host)
    if allowed_hosts is None and not local:
        allowed_hosts = ["*"]
    endpoint = StreamableHttp(server, stateless=stateless, allowed_origins=allowed_origins, allowed_hosts=allowed_hosts,
                              allow_loopback=local, auth=auth, limits=limits)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        endpoint.shutdown()

    routes = [Route(path, endpoint)]
    if auth is not None:
        auth.server = server
    if auth is not None and auth.discoverable:
        metadata = auth.metadata_response()

        async def protected_resource_metadata(request: Request) -> Response:
            return metadata

        routes += [Route(where, protected_resource_metadata, methods=["GET"]) for where in auth.metadata_paths()]
    app = Starlette(routes=routes, lifespan=lifespan)
    app.state.mcp = endpoint
    return app

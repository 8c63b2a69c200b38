"""The connection front of the HTTP server: what a connection must do before the app hears of it.

uvicorn gives a connection all the time it wants to send its request head (its keep-alive timeout stops
at the first byte), and its `limit_concurrency` answers 503 only once a head is complete. So a client
that sends a header byte now and then (slowloris) holds a connection, and a file descriptor, for good;
once descriptors run out, accept() fails and nobody else is served. `FrontProtocol`, uvicorn's h11
protocol with these rules added, holds:

- a head deadline: a connection that has not sent a whole request head within `header_timeout` seconds
  of connecting (TLS handshake included), or on a kept-alive connection of the first byte of its next
  request, is closed (an idle kept-alive connection is uvicorn's keep-alive timeout's);
- a connection cap: at `max_connections`, a new connection evicts the one that has waited longest for
  its request head (or its TLS handshake, or idled longest between requests); if none does, the one
  that has spent longest sending a request body (a client that uploads slowly on purpose); if none does
  either, the new one is closed: connections whose requests are being served are never cut. The default
  cap sits below RLIMIT_NOFILE (which `raise_file_limit` lifts to its hard limit) by the accept bursts
  (see `accept_batch`) and room for files and pipes, so accept() never runs out of descriptors: a fresh
  client always gets in and slow ones make room;
- accept bursts that fit: asyncio accepts up to `backlog` connections at one loop turn, before any of
  them reaches the front, and on EMFILE stops accepting for a second. `FrontLoop` (uvicorn's `loop`)
  accepts at most `accept_batch()` at a turn, while the kernel still queues `backlog` (a burst waits
  there, not in SYN retries), and the default cap leaves room for the batches not yet counted;
- TCP_NODELAY on every accepted connection: asyncio sets it only where the listening socket's `proto` is
  IPPROTO_TCP, which uvicorn's own socket (`--workers`) is not; without it every response waits for the
  client's delayed ACK (Nagle), some 40 ms;
- an answer given before the request's body was read (413, 415, 401, 403, ...) says `Connection: close`
  and the connection closes once it is written: the rest of the body is never read, so a client cannot
  hold a served connection open by trickling a body nobody waits for;
- a fixed-length answer's head and body in one write (`HeldHead`): uvicorn writes them apart, which with
  TCP_NODELAY is two packets, two wake-ups of the client and a second read before it has its answer;
- a write deadline: a connection whose answer cannot be written (its client does not read, so the transport's
  buffer stays above its high-water mark and uvicorn waits to write more) for `write_timeout` seconds is
  closed, and meanwhile counts as evictable at the cap (after those waiting for a head): a client that
  pipelines requests and never reads their answers holds no connection for long, served or not;
- unambiguous framing (RFC 9112 section 6.1): a request with both Content-Length and Transfer-Encoding is
  refused (400) and the connection closes, so that a proxy framing by length and this server framing by
  chunks never see two different requests (smuggling);
- framing that costs what it carries: h11 makes an event of every chunk, so 65 536 one-byte chunks are 65 536
  events on the loop. After its first `FREE_CHUNKS` chunks, each run of `FREE_CHUNKS` chunks of a body must
  average `min_chunk` bytes, else 400 and close (a run, not the whole body: one large chunk first must not
  pay for a flood of tiny ones), so no read holds more than one event a `min_chunk` bytes beyond a run's
  worth; the body pieces of one read reach uvicorn joined, as one event (`FrontConnection`);
- no protocol switch: a WebSocket upgrade is refused (403, as uvicorn's WebSocket protocol answers an app
  without a WebSocket route) and the connection closes, whatever WebSocket library is installed;
- TLS inside the front (`FrontLimits.tls`): uvicorn's server listens in plain TCP and each connection
  starts as a `Handshake`, counted and evictable like one waiting for its head and under the same
  deadline, which hands the TLS transport to a `FrontProtocol` once the handshake is over. A pending
  handshake costs some 260 KB (asyncio's TLS protocol has a 256 KiB buffer), so at most `max_handshakes`
  are pending at once: one more closes the one pending longest (a client that never completes its handshake
  holds nothing for long, and 13 750 of them no longer take a server to 4 GB). (asyncio's
  own TLS server calls the protocol only after the handshake: a connection that never sends its
  ClientHello would be outside the front.) uvicorn's scope says "https": the transport has TLS.

A stalled body is the app's to refuse (`StreamableHttp`'s body timeout: 408).

Why h11 only: uvicorn picks httptools when it is installed; these rules hook into the protocol's parsing
state (h11's `their_state`), and one implementation, present wherever uvicorn is, is one to harden and
to test. httptools' speed does not matter here: a request's cost is its tool's work.

`protocol(limits)` is what `uvicorn.Config(http=...)` takes; it pickles, so `--workers` processes get it
too. An app served by another uvicorn command line gets these rules with `--http` pointing at a module
attribute made with `protocol(...)` (and its accept batches with `--loop shipcode_mcp.transports.http.front:FrontLoop`).
"""

from __future__ import annotations

import asyncio
import functools
import re
import socket
import ssl
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import h11
from uvicorn.config import Config
from uvicorn.protocols.http.h11_impl import STATUS_PHRASES, H11Protocol
from uvicorn.server import ServerState

HEADER_TIMEOUT = 10.0
"""Seconds a connection has to send a request head."""
CONNECTIONS_CEILING = 16384
"""The default cap never goes above this, however many descriptors the process may open."""
ACCEPT_BATCH_MAX = 2048
"""The accept batch never goes above this (uvicorn's default backlog)."""
IN_FLIGHT_BATCHES = 3
"""Accept batches a server may hold beyond its cap: asyncio accepts a batch at one loop turn, makes their
transports at the next, and their protocols' `connection_made` (where the front counts them and evicts)
runs at the turn after; the sockets of connections evicted then close at the turn after that. So when a
batch is accepted, the two before it may not be counted yet, or their victims not closed."""
RESERVED = 64
"""Descriptors kept beyond the connections for files, pipes to rg and git, and the loop's own."""
MAX_HANDSHAKES = 128
"""TLS handshakes pending at once (some 260 KB each): beyond, the one pending longest is closed."""
WRITE_TIMEOUT = 30.0
"""Seconds an answer may stay blocked (its client reading nothing) before its connection is closed."""
HANDSHAKE_TIMEOUT = 60.0
"""Seconds a TLS handshake may take when there is no head deadline (asyncio's default)."""
CLOSE = (b"connection", b"close")
HEAD_LIMIT = 16 * 1024
"""Bytes a request head may take unless uvicorn's h11_max_incomplete_event_size says otherwise (h11's default)."""
FREE_CHUNKS = 64
"""Chunks of a body that may be of any size; beyond them, each run of as many chunks must average
`FrontLimits.min_chunk` bytes."""
MIN_CHUNK = 256
"""The average chunk (bytes of payload) of each run of FREE_CHUNKS chunks after a chunked body's first: the chunk
framing (at least 5 bytes) is then at most a few percent of what it carries."""
JOINED = 64 * 1024
"""Bodies up to this size are joined to their head in one write; a larger one goes in a write of its own (a
copy of it would cost more than the write it saves)."""


@dataclass(frozen=True)
class FrontLimits:
    """`header_timeout` seconds for a request head (0: no deadline); `max_connections` open connections
    (None: sized from RLIMIT_NOFILE, see `default_max_connections`; 0: no cap); `tls`, the certificate and
    key files (PEM) when the front serves TLS itself; `min_chunk`, the average chunk of each run of FREE_CHUNKS
    chunks after a chunked body's first (0: any); `write_timeout` seconds an answer may stay blocked by a client that does not
    read (0: no deadline, and such a connection counts as served); `max_handshakes` TLS handshakes pending at
    once (0: no cap)."""

    header_timeout: float = HEADER_TIMEOUT
    max_connections: int | None = None
    tls: tuple[str, str] | None = None
    min_chunk: int = MIN_CHUNK
    write_timeout: float = WRITE_TIMEOUT
    max_handshakes: int = MAX_HANDSHAKES


def protocol(limits: FrontLimits = FrontLimits()) -> Callable[..., asyncio.Protocol]:
    """The `http` of a uvicorn Config that applies `limits` (a partial of a module function: it pickles).
    With `limits.tls`, the Config must have no ssl options of its own: the front starts TLS."""
    return functools.partial(accept, limits=limits)


def accept(config: Config, server_state: ServerState, app_state: dict[str, Any],
           _loop: asyncio.AbstractEventLoop | None = None, *, limits: FrontLimits) -> asyncio.Protocol:
    """The protocol of a new connection: a `FrontProtocol`, or with TLS a `Handshake` that makes one."""
    if limits.tls is None:
        return FrontProtocol(config, server_state, app_state, _loop, limits=limits)
    return Handshake(config, server_state, app_state, _loop, limits=limits)


def tls_context(certificate: str, key: str) -> ssl.SSLContext:
    """The server side of TLS with this certificate (raises on files that do not make one)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(certificate, key)
    return context


def accept_batch(soft: int | None = None) -> int:
    """How many connections `FrontLoop` accepts at one loop turn: a sixteenth of the descriptors this process
    may open (`soft`, by default the limit in force), between 16 and `ACCEPT_BATCH_MAX`.
    `default_max_connections` leaves `IN_FLIGHT_BATCHES` of them free, so a burst accepted before the front
    could evict anyone never meets EMFILE (which stops asyncio accepting for 1 s)."""
    soft = _file_limit() if soft is None else soft
    if soft is None:
        return ACCEPT_BATCH_MAX
    return max(16, min(ACCEPT_BATCH_MAX, soft // 16))


def default_max_connections(soft: int | None = None) -> int:
    """The descriptors this process may open (`soft`, by default the limit in force) less an eighth of them
    (at least `RESERVED`) for files, pipes to rg and git and the loop's own, and less `IN_FLIGHT_BATCHES`
    accept batches (`accept_batch`); at most `CONNECTIONS_CEILING`, at least 16."""
    soft = _file_limit() if soft is None else soft
    if soft is None:
        return CONNECTIONS_CEILING
    reserve = max(RESERVED, soft // 8) + IN_FLIGHT_BATCHES * accept_batch(soft)
    return max(16, min(CONNECTIONS_CEILING, soft - reserve))


class FrontLoop(asyncio.SelectorEventLoop):
    """The event loop of a server behind the front (uvicorn's `loop`, as "module:FrontLoop"): its servers accept
    at most `accept_batch()` connections at one loop turn (asyncio's accept loop runs `backlog` times per
    readiness event), while the kernel's queue still holds the `backlog` asked for: a burst larger than a
    batch waits in the queue and is taken a batch a turn, each after the front has counted (and evicted for)
    the ones before, rather than waiting for SYN retries (a second or more) as it would with a short queue."""

    async def create_server(self, *args: Any, **kwargs: Any) -> asyncio.Server:
        backlog = int(kwargs.get("backlog", 100))
        kwargs["backlog"] = min(backlog, accept_batch())
        server = await super().create_server(*args, **kwargs)
        if backlog > kwargs["backlog"]:
            for listening in server.sockets:  # listen() again on the same socket: only the queue's length changes
                with listening.dup() as same:
                    same.listen(backlog)
        return server


def no_delay(transport: asyncio.BaseTransport) -> None:
    """TCP_NODELAY on the connection's socket (a TCP one; anything else is left alone)."""
    sock = transport.get_extra_info("socket")
    if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:  # closed meanwhile
            pass


def raise_file_limit() -> int | None:
    """Lift the soft RLIMIT_NOFILE to the hard one where the system lets us; the limit now in force
    (None where there is no such limit, e.g. on Windows)."""
    try:
        import resource  # POSIX only: None without it (Windows)
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
        import resource  # POSIX only: None without it (Windows)
    except ImportError:
        return None
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    return None if soft == resource.RLIM_INFINITY else int(soft)


class _Member:
    """A connection as the front counts it: admitted or not, a deadline, and how to drop it."""

    front: _Front
    _counted: bool
    _deadline: asyncio.TimerHandle | None

    def _admit(self) -> bool:
        """Count this connection, evicting another at the cap; False: no room (every connection is served)."""
        front = self.front
        if front.cap > 0 and front.open >= front.cap:
            victim = front.victim(self)
            front.evicted += 1
            if victim is None:
                return False
            victim._drop()
        front.open += 1
        self._counted = True
        return True

    def _drop(self) -> None:
        """Close at once (abort: nothing of ours is waiting to be written), and make room now."""
        self._forget()
        self._abort()

    def _abort(self) -> None:
        raise NotImplementedError

    def _forget(self) -> None:
        self._disarm()
        if self._counted:
            self._counted = False
            self.front.open -= 1
            self.front.heads.pop(self, None)
            self.front.handshakes.pop(self, None)
            self.front.blocked.pop(self, None)
            self.front.bodies.pop(self, None)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None


class _Front:
    """What the connections of one uvicorn server share: how many are open, and, oldest first, those
    waiting for a request head (or a TLS handshake), those whose answer is blocked (their client does not
    read) and those sending a body: the candidates for eviction, in that order."""

    def __init__(self, limits: FrontLimits) -> None:
        cap = limits.max_connections
        self.cap = default_max_connections() if cap is None else cap
        self.open = 0
        self.heads: dict[_Member, None] = {}  # insertion order: longest waiting first
        self.blocked: dict[_Member, None] = {}
        self.bodies: dict[_Member, None] = {}
        self.handshakes: dict[_Member, None] = {}  # TLS handshakes pending, oldest first (also in `heads`)
        self.evicted = 0
        self.timed_out = 0
        self.tls = None if limits.tls is None else tls_context(*limits.tls)

    def victim(self, newcomer: _Member) -> _Member | None:
        for waiting in (self.heads, self.blocked, self.bodies):
            for connection in waiting:
                if connection is not newcomer:
                    return connection
        return None


_FRONTS: weakref.WeakKeyDictionary[ServerState, _Front] = weakref.WeakKeyDictionary()


def front_of(server_state: ServerState) -> _Front | None:
    """The shared state of a server's front (for tests and diagnostics), once a connection has come."""
    return _FRONTS.get(server_state)


def _front(server_state: ServerState, limits: FrontLimits) -> _Front:
    front = _FRONTS.get(server_state)
    if front is None:
        front = _FRONTS[server_state] = _Front(limits)
    return front


class Handshake(_Member, asyncio.Protocol):
    """A TLS connection until its handshake is over: counted, evictable and under the head deadline like a
    connection waiting for its head; then its TLS transport goes to a `FrontProtocol`."""

    def __init__(self, config: Config, server_state: ServerState, app_state: dict[str, Any],
                 _loop: asyncio.AbstractEventLoop | None = None, *, limits: FrontLimits) -> None:
        self.args = (config, server_state, app_state)
        self.loop = _loop or asyncio.get_event_loop()
        self.limits = limits
        self.front = _front(server_state, limits)
        self.transport: asyncio.Transport | None = None
        self._counted = False
        self._deadline = None
        self._task: asyncio.Task[None] | None = None
        self._early: list[bytes] = []

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        transport.pause_reading()  # the ClientHello is for start_tls to read
        if not self._admit():
            transport.abort()
            return
        no_delay(transport)
        front = self.front
        if 0 < self.limits.max_handshakes <= len(front.handshakes):
            front.evicted += 1
            next(iter(front.handshakes))._drop()
        front.heads[self] = None
        front.handshakes[self] = None
        started = self.loop.time()
        if self.limits.header_timeout > 0:
            self._deadline = self.loop.call_later(self.limits.header_timeout, self._overdue)
        self.loop.call_soon(self._begin, started)

    def _begin(self, started: float) -> None:
        """Start the handshake, reading still paused. Python 3.10's transport adds its reader after
        connection_made even when that paused it, so a ClientHello could reach the TLS protocol before it is
        set up, and be lost: pausing again here, after that, holds it for start_tls on every version."""
        transport = self.transport
        if transport is None or transport.is_closing() or not self._counted:
            return
        transport.resume_reading()
        transport.pause_reading()
        self._task = self.loop.create_task(self._handshake(started))

    def connection_lost(self, exc: Exception | None) -> None:  # closed before start_tls took the transport
        self._forget()

    def _abort(self) -> None:
        if self.transport is not None:
            self.transport.abort()

    def _overdue(self) -> None:
        self._deadline = None
        if self._counted:
            self.front.timed_out += 1
            self._drop()

    def data_received(self, data: bytes) -> None:  # decrypted, between the handshake's end and the handover
        self._early.append(data)

    def eof_received(self) -> bool | None:
        return None

    async def _handshake(self, started: float) -> None:
        transport, context = self.transport, self.front.tls
        assert transport is not None and context is not None
        timeout = self.limits.header_timeout if self.limits.header_timeout > 0 else HANDSHAKE_TIMEOUT
        try:  # this protocol stays the TLS transport's until the handover: what comes first waits in `_early`
            secure = await self.loop.start_tls(transport, self, context, server_side=True, ssl_handshake_timeout=timeout)
        except Exception:  # evicted, timed out, closed by the client, or no TLS at all: gone
            self._forget()
            transport.abort()
            return
        if secure is None or not self._counted or secure.is_closing():  # evicted or closed as it ended
            self._forget()
            transport.abort()
            return
        self._forget()  # one connection, counted once: the FrontProtocol counts it from now on
        http = FrontProtocol(*self.args, self.loop, limits=self.limits, started=started)
        secure.set_protocol(http)
        http.connection_made(secure)
        for data in self._early:
            if secure.is_closing():
                break
            http.data_received(data)
        self._early.clear()


_HEAD_END = re.compile(rb"\n\r?\n")
"""The blank line that ends a request head, as h11 finds it."""
_BLANK_LINE = re.compile(rb"\r?\n")
_LAST_CHUNK = re.compile(rb"0{1,20}(?:;[^\r\n]*)?\r\n")
"""The line of a chunked body's last chunk (size 0), after which its trailers come."""


class Refused(Exception):
    """A request the front refuses as it is parsed (`status`, 400 by default, and the connection closes): not
    h11's RemoteProtocolError, which uvicorn answers on its own whatever the request's cycle has sent."""

    def __init__(self, why: str, status: int = 400) -> None:
        super().__init__(why)
        self.status = status


class FrontConnection(h11.Connection):
    """h11's server side with the front's framing rules: a request with both Content-Length and
    Transfer-Encoding, and a chunked body with a run of tiny chunks, raise `Refused`; the body pieces parsed from
    one read come out as one `Data` event (uvicorn appends each event's bytes and wakes the request's task
    for each: one per chunk). What ends the run of pieces (the body's end, an error) comes at the next call."""

    def __init__(self, min_chunk: int, max_incomplete_event_size: int | None) -> None:
        if max_incomplete_event_size is None:
            super().__init__(h11.SERVER)
        else:
            super().__init__(h11.SERVER, max_incomplete_event_size)
        self.head_limit = max_incomplete_event_size or HEAD_LIMIT
        self.min_chunk = min_chunk
        self._next: Any = None  # the event (or error) after the joined pieces
        self.chunks = 0  # of the body so far
        self.payload = 0  # bytes of the current run of chunks (the first FREE_CHUNKS chunks are one run too)

    def next_event(self) -> Any:
        held, self._next = self._next, None
        if isinstance(held, BaseException):
            raise held
        if held is not None:
            return held
        event = self._parse()
        if type(event) is h11.Request:
            self.chunks = self.payload = 0
            names = {name for name, _ in event.headers}  # lower-case, as h11 keeps them
            if b"content-length" in names and b"transfer-encoding" in names:
                raise Refused("a request must not carry both Content-Length and Transfer-Encoding (RFC 9112 6.1)")
            return event
        if type(event) is not h11.Data:
            return event
        self._count(event)
        pieces = [event.data]
        while True:
            after: Any
            try:
                after = self._parse()
                if type(after) is h11.Data:
                    self._count(after)
                    pieces.append(after.data)
                    continue
            except (h11.RemoteProtocolError, Refused) as err:
                after = err
            if after is not h11.NEED_DATA and after is not h11.PAUSED:
                self._next = after
            break
        return event if len(pieces) == 1 else h11.Data(data=b"".join(pieces))

    def _parse(self) -> Any:
        """h11's next event, once a block of header lines it would parse whole ends within `head_limit` bytes: a
        request head, or a chunked body's trailers. h11 refuses a longer one only while it is incomplete, and
        parses one that came whole in a read (120 KB of headers: 57 ms on the loop, before any token is looked
        at; trailers alike). Read from h11's own buffer and reader (private: no check without them)."""
        buffered = getattr(getattr(self, "_receive_buffer", None), "_data", None)
        if isinstance(buffered, bytearray) and len(buffered) > self.head_limit:
            start = self._header_lines_start(buffered)
            if start is not None and _BLANK_LINE.match(buffered, start) is None \
                    and _HEAD_END.search(buffered, max(0, start - 1), start + self.head_limit + 3) is None:
                what = "a request head" if self.their_state is h11.IDLE else "a chunked body's trailers"
                raise Refused(f"{what} must end within {self.head_limit} bytes", 431)
        return super().next_event()

    def _header_lines_start(self, buffered: bytearray) -> int | None:
        """Where in h11's buffer a block of header lines starts that h11 would parse next (None: none does)."""
        if self.their_state is h11.IDLE:
            return 0
        reader: Any = getattr(self, "_reader", None)
        if self.their_state is not h11.SEND_BODY or not hasattr(reader, "_reading_trailer"):
            return None
        if reader._reading_trailer:  # its last chunk read: the buffer starts with the trailers
            return 0
        if reader._bytes_in_chunk:  # inside a chunk's data
            return None
        last = _LAST_CHUNK.match(buffered, len(reader._bytes_to_discard))  # after the chunk before's CRLF
        return None if last is None else last.end()

    def _count(self, piece: h11.Data) -> None:
        """A run ends where the next one's first chunk starts, its last chunk whole by then."""
        if piece.chunk_start and self.chunks % FREE_CHUNKS == 0 and self.chunks > 0:
            if self.min_chunk > 0 and self.chunks > FREE_CHUNKS and self.payload < FREE_CHUNKS * self.min_chunk:
                raise Refused(f"the body's chunks are too small (after its first {FREE_CHUNKS} chunks, every "
                              f"{FREE_CHUNKS} must average {self.min_chunk} bytes)")
            self.payload = 0
        self.chunks += piece.chunk_start
        self.payload += len(piece.data)


class FrontProtocol(_Member, H11Protocol):
    """uvicorn's h11 protocol with a deadline for request heads, a cap on open connections, early answers
    that close, and no WebSocket upgrades."""

    def __init__(self, config: Config, server_state: ServerState, app_state: dict[str, Any],
                 _loop: asyncio.AbstractEventLoop | None = None, *, limits: FrontLimits,
                 started: float | None = None) -> None:
        super().__init__(config, server_state, app_state, _loop)
        self.conn = FrontConnection(limits.min_chunk, config.h11_max_incomplete_event_size)
        self.limits = limits
        self.front = _front(server_state, limits)
        self._deadline = None
        self._counted = False
        self._started = started  # when the connection came (before its TLS handshake), for the first head
        self._guarded: Any = None  # the request cycle whose answers are checked (see `_guard`)
        self._write_deadline: asyncio.TimerHandle | None = None

    # -- uvicorn's protocol, with the front's bookkeeping around it ---------------------------------
    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        if not self._admit():  # every open connection is being served: this one cannot be
            transport.abort()
            return
        if self._started is None:  # a TLS connection's socket had it from its Handshake
            no_delay(transport)
        self._track(arm=True)

    def data_received(self, data: bytes) -> None:
        waiting_idle = self._deadline is None and self.conn.their_state is h11.IDLE
        super().data_received(data)
        if self.transport.is_closing():  # refused
            return
        self._guard()
        self._track(arm=waiting_idle)  # the first byte of a kept-alive connection's next request

    def handle_events(self) -> None:
        """uvicorn's, with what the front refuses answered 400 and closed: on a read, and on a pipelined request
        parsed once the one before it is answered."""
        try:
            super().handle_events()
        except Refused as refusal:
            self._refuse(str(refusal), refusal.status)

    def on_response_complete(self) -> None:
        still_sending = self.conn.their_state is h11.SEND_BODY
        super().on_response_complete()
        if still_sending and not self.transport.is_closing():  # answered without its body: never read it
            if self.conn.our_state is not h11.ERROR:
                self.conn.send(h11.ConnectionClosed())
            self.transport.close()
        self._guard()  # a pipelined request may have started
        self._track(arm=False)  # idle between requests: uvicorn's keep-alive timeout, until a byte comes

    def connection_lost(self, exc: Exception | None) -> None:
        self._forget()
        super().connection_lost(exc)

    def pause_writing(self) -> None:
        """The client reads less than we write: evictable, and closed if it stays so for `write_timeout`."""
        super().pause_writing()
        if self.limits.write_timeout > 0 and self._counted and self._write_deadline is None:
            self.front.blocked[self] = None
            self._write_deadline = self.loop.call_later(self.limits.write_timeout, self._write_overdue)

    def resume_writing(self) -> None:
        super().resume_writing()
        self._unblock()

    def _unblock(self) -> None:
        self.front.blocked.pop(self, None)
        if self._write_deadline is not None:
            self._write_deadline.cancel()
            self._write_deadline = None

    def _write_overdue(self) -> None:
        self._write_deadline = None
        if self._counted:
            self.front.timed_out += 1
            self._drop()

    def _forget(self) -> None:
        self._unblock()
        super()._forget()

    def _abort(self) -> None:
        self.transport.abort()

    def _refuse(self, why: str, status: int = 400) -> None:
        """`status` and close, when nothing of an answer has gone yet (else the connection is cut); the request's
        app, if it runs, hears that the client left and sends nothing more. Refused before h11 saw a request
        (a head too long), the answer is written as h11 would have written it."""
        cycle: Any = self.cycle
        if cycle is not None and cycle.response_complete:  # the request before, pipelined: answered already
            cycle = None
        if cycle is not None:
            cycle.disconnected = True
            cycle.message_event.set()
        body = why.encode()
        headers = [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode()), CLOSE]
        if self.conn.our_state is h11.IDLE and self.conn.their_state is h11.IDLE:
            head = b"".join(b"%s: %s\r\n" % header for header in headers)
            self.transport.write(b"HTTP/1.1 %d %s\r\n%s\r\n%s" % (status, STATUS_PHRASES[status], head, body))
            self.transport.close()
            return
        if self.conn.our_state is not h11.SEND_RESPONSE or (cycle is not None and cycle.response_started):
            self.transport.abort()
            return
        self.transport.write((self.conn.send(h11.Response(status_code=status, headers=headers,
                                                          reason=STATUS_PHRASES[status])) or b"")
                             + (self.conn.send(h11.Data(data=body)) or b"") + (self.conn.send(h11.EndOfMessage()) or b""))
        self.transport.close()

    def _should_upgrade(self) -> bool:
        return self._get_upgrade() == b"websocket"  # refused below, whatever WebSocket library is installed

    def handle_websocket_upgrade(self, event: h11.Request) -> None:
        """No WebSocket here: 403 and close, as uvicorn's WebSocket protocol answers an app without a
        WebSocket route; the connection never changes protocol, so the front never loses sight of it."""
        self.cycle = None  # type: ignore[assignment]
        body = b"WebSocket is not served here"
        headers = [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode()), CLOSE]
        try:
            self.transport.write(self.conn.send(h11.Response(status_code=403, headers=headers, reason=STATUS_PHRASES[403]))
                                 or b"")
            self.transport.write(self.conn.send(h11.Data(data=body)) or b"")
            self.transport.write(self.conn.send(h11.EndOfMessage()) or b"")
        except h11.LocalProtocolError:  # e.g. a pipelined upgrade while a response is under way
            self.transport.abort()
            return
        self.transport.close()

    # -- the front ------------------------------------------------------------------------------------
    def _guard(self) -> None:
        """Make the current request's answer say `Connection: close` when it starts before the request's body
        was all received: the connection closes once it is written (`on_response_complete`)."""
        cycle = self.cycle
        if cycle is None or cycle is self._guarded:
            return
        self._guarded = cycle
        send = cycle.send

        async def guarded(message: Any) -> None:
            if message["type"] == "http.response.start":
                if self.conn.their_state is h11.SEND_BODY:
                    headers = list(message.get("headers", ()))
                    if CLOSE not in headers:
                        message = {**message, "headers": [*headers, CLOSE]}
                if any(name.lower() == b"content-length" for name, _ in message.get("headers", ())):
                    cycle.transport = HeldHead(cycle, cycle.transport)  # type: ignore[assignment]  # its body follows: one write
            await send(message)

        cycle.send = guarded  # type: ignore[method-assign]  # run_asgi looks it up when it starts, later

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
                delay = self.limits.header_timeout
                if self._started is not None:  # the first head: its time counts from the connection's start
                    delay = max(0.0, delay - (self.loop.time() - self._started))
                    self._started = None
                self._deadline = self.loop.call_later(delay, self._head_overdue)
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


class HeldHead:
    """The transport of a request cycle between a fixed-length response's head and its body: it keeps the
    head back and writes it with the body's first bytes, in one write, then hands the cycle its transport
    back. The body of such a response is sent right after its head (a streamed answer has no length and is
    never held), so nothing waits on this; should the cycle do anything else first (close on an error, ...),
    the head goes before it, as it would have."""

    __slots__ = ("cycle", "head", "transport")

    def __init__(self, cycle: Any, transport: asyncio.Transport) -> None:
        self.cycle = cycle
        self.transport = transport
        self.head: bytes | None = None

    def write(self, data: bytes) -> None:
        if self.head is None:  # the head itself (the cycle's first write once the response starts)
            self.head = bytes(data)
            return
        head = self._release()
        if len(data) <= JOINED:
            self.transport.write(head + data)
        else:
            self.transport.write(head)
            self.transport.write(data)

    def _release(self) -> bytes:
        """The cycle writes straight again; the head, if any, is the caller's to write first."""
        self.cycle.transport = self.transport
        head, self.head = self.head or b"", None
        return head

    def _flush(self) -> None:
        head = self._release()
        if head and not self.transport.is_closing():
            self.transport.write(head)

    def is_closing(self) -> bool:
        return self.transport.is_closing()

    def close(self) -> None:
        self._flush()
        self.transport.close()

    def abort(self) -> None:
        self._release()
        self.transport.abort()

    def __getattr__(self, name: str) -> Any:  # anything else: the head first, then the transport's own
        self._flush()
        return getattr(self.transport, name)

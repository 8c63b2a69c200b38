"""An HTTP front that holds: slowloris, connection floods, stalled bodies, session floods, one session starving
the others. Each attack is first shown to work with its defence turned off, then not to with it on.

The connection attacks run against real server processes (the command line, a low RLIMIT_NOFILE where the
attack is descriptor exhaustion) from an asyncio client in this process; the others against the app in
uvicorn in this process. Loopback only, bounded in time and connections.
"""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import json
import os
import resource
import select
import selectors
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, cast

import pytest

from shipcode_mcp import Context, Server
from shipcode_mcp.cli import build_server
from shipcode_mcp.transports.http.front import FrontLimits, protocol
from shipcode_mcp.transports.http.serving import uvicorn_server
from support import REPO, wait_for
from transports.http.support import (
    McpHttpClient,
    UvicornThread,
    drip,
    free_port,
    initialize,
    modern,
    modern_headers,
)

SLOW = 600
"""Slow connections of the slowloris attack, as the issue counts them."""
FLOOD = 400
"""Connections of the flood, beyond what a process with FLOOD_FILES descriptors can hold."""
FLOOD_FILES = 256
FRESH = 1.0
"""A fresh client must be answered within this many seconds."""
INIT = json.dumps(initialize()).encode()
REQUEST = (b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
           b"Accept: application/json, text/event-stream\r\nContent-Length: " + str(len(INIT)).encode() + b"\r\n\r\n" + INIT)


def _front(limits: FrontLimits) -> type[asyncio.Protocol]:
    """`protocol(limits)` as uvicorn.Config's `http` is annotated: uvicorn calls a class given there as the protocol
    factory (with config, server_state, app_state), which a factory function is too; the hint names classes only."""
    return cast("type[asyncio.Protocol]", protocol(limits))


# -- connections: real server processes ---------------------------------------------------------------------------
def _own_files(needed: int) -> None:
    """This process opens many connections: its soft descriptor limit goes up to what the test needs."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < needed:
        assert hard == resource.RLIM_INFINITY or hard >= needed, f"the test needs {needed} descriptors (hard limit {hard})"
        resource.setrlimit(resource.RLIMIT_NOFILE, (needed, hard))


@contextlib.contextmanager
def serving(tmp_path: Path, *options: str, files: int | None = None) -> Iterator[int]:
    """`shipcode-mcp --http PORT` with `options`, its descriptors limited to `files` (soft and hard, so it cannot
    raise them); yields its port once it answers an initialize."""
    with serving_process(tmp_path, ["-m", "shipcode_mcp", "--http", "{port}", *options, str(tmp_path)], files) as (port, _):
        yield port


@contextlib.contextmanager
def serving_process(tmp_path: Path, arguments: list[str], files: int | None = None,
                    ready: Callable[[int], bool] | None = None) -> Iterator[tuple[int, int]]:
    """`python ARGUMENTS` ("{port}" replaced by a free port) with its descriptors limited to `files`; yields
    its port and pid once `ready(port)` (by default: it answers an initialize)."""
    ready = ready or _answers
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}

    def limit() -> None:
        if files is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (files, files))

    log = open(tmp_path / f"server-{port}.log", "wb")  # closed below; uvicorn's EMFILE errors go here
    process = subprocess.Popen([sys.executable, *(a.replace("{port}", str(port)) for a in arguments)],
                               env=env, stdout=subprocess.DEVNULL, stderr=log, preexec_fn=limit, start_new_session=True)
    try:
        wait_for(lambda: process.poll() is not None or ready(port), 30, "the server to answer")
        assert process.poll() is None, (tmp_path / f"server-{port}.log").read_text()
        yield port, process.pid
    finally:
        os.killpg(process.pid, signal.SIGKILL)  # its workers too: a bare uvicorn's outlive it
        process.wait(10)
        log.close()


def _answers(port: int, status: bytes = b"HTTP/1.1 200") -> bool:
    """Whether an initialize on a new connection is answered with `status` (by default 200)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2) as sock:
            sock.sendall(REQUEST)
            return sock.recv(12).startswith(status)
    except OSError:
        return False


async def fresh_client(port: int, within: float = FRESH) -> float:
    """Seconds until a new connection's initialize is answered 200 (asyncio.TimeoutError after `within`)."""
    started = time.monotonic()

    async def exchange() -> bytes:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            writer.write(REQUEST)
            return await reader.readline()
        finally:
            writer.close()

    status = await asyncio.wait_for(exchange(), within)
    assert status.startswith(b"HTTP/1.1 200"), status
    return time.monotonic() - started


class Attackers:
    """`count` connections to `port`; `trickle` sends a request line, then a header byte every half second."""

    def __init__(self, port: int, count: int, *, trickle: bool) -> None:
        self.port, self.count, self.trickle = port, count, trickle
        self.closed_after: list[float] = []
        self.writers: list[asyncio.StreamWriter] = []
        self.tasks: list[asyncio.Task[None]] = []
        self.started = 0.0

    async def open(self) -> None:
        self.started = time.monotonic()
        for _ in range(self.count):
            reader, writer = await asyncio.open_connection("127.0.0.1", self.port)
            self.writers.append(writer)
            self.tasks.append(asyncio.ensure_future(self._watch(reader)))
            if self.trickle:
                writer.write(b"POST /mcp HTTP/1.1\r\nX-Slow: ")
        if self.trickle:
            self.tasks.append(asyncio.ensure_future(drip(self.writers)))

    async def _watch(self, reader: asyncio.StreamReader) -> None:
        with contextlib.suppress(OSError):
            while await reader.read(4096):
                pass
        self.closed_after.append(time.monotonic() - self.started)


    @property
    def still_open(self) -> int:
        return self.count - len(self.closed_after)

    def close(self) -> None:
        for task in self.tasks:
            task.cancel()
        for writer in self.writers:
            writer.transport.abort()


async def _until(predicate: Any, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.05)
    return True


@pytest.mark.measures
def test_slowloris_holds_nothing_for_long_and_fresh_clients_are_served(tmp_path: Path) -> None:
    """600 connections each sending a header byte every half second. Without a head deadline they stay open
    as long as they like; with the default one (10 s) they are closed within 30 s, and a fresh client is
    served within a second all along."""
    _own_files(2 * SLOW + 200)
    (tmp_path / "a.txt").write_text("a")
    figures: dict[str, Any] = {}

    async def attack(open_port: int, defended_port: int) -> None:
        exposed = Attackers(open_port, SLOW, trickle=True)
        held = Attackers(defended_port, SLOW, trickle=True)
        try:
            await exposed.open()
            await held.open()
            latencies = [await fresh_client(defended_port)]
            while held.still_open and time.monotonic() - held.started < 30:
                latencies.append(await fresh_client(defended_port))
                await _until(lambda: not held.still_open, 1.0)
            figures.update(fresh_max=max(latencies), fresh_count=len(latencies), closed_first=min(held.closed_after),
                           closed_last=max(held.closed_after, default=None), exposed_open=exposed.still_open)
            assert held.still_open == 0, f"{held.still_open} slow connections still open after 30 s"
            assert exposed.still_open == SLOW  # the attack, undefended: every slow connection still held
            assert max(latencies) < FRESH
        finally:
            exposed.close()
            held.close()

    with serving(tmp_path, "--header-timeout", "0") as open_port, serving(tmp_path) as defended_port:
        asyncio.run(attack(open_port, defended_port))
    print(f"slowloris figures: {figures}")
    assert 9.0 <= figures["closed_first"]  # the default deadline is 10 s, counted from each connection


@pytest.mark.measures
def test_a_flood_beyond_the_descriptors_locks_nobody_out(tmp_path: Path) -> None:
    """400 silent connections to a process that may open 256 descriptors: without a cap, accept() fails and a
    fresh client waits in the backlog; with the cap sized from the limit, each new connection evicts the oldest
    silent one, so the fresh client is served at once (no head deadline here: the cap alone does it), in a
    process of several workers too."""
    _own_files(2 * FLOOD + 200)
    figures: dict[str, Any] = {}

    async def attack(open_port: int, defended_port: int) -> None:
        exposed = Attackers(open_port, FLOOD, trickle=False)
        held = Attackers(defended_port, FLOOD, trickle=False)
        try:
            await exposed.open()
            with pytest.raises(asyncio.TimeoutError):
                await fresh_client(open_port)  # the attack works: nobody new gets in
            await held.open()
            figures["fresh"] = [await fresh_client(defended_port) for _ in range(5)]
            figures["evicted"] = len(held.closed_after)
            assert figures["evicted"] > 0
        finally:
            exposed.close()
            held.close()

    limits = ("--header-timeout", "0")
    with serving(tmp_path, *limits, "--max-connections", "0", files=FLOOD_FILES) as open_port, \
            serving(tmp_path, *limits, "--stateless", "--workers", "2", files=FLOOD_FILES) as defended_port:
        asyncio.run(attack(open_port, defended_port))
    print(f"flood figures: {figures}")


BURST = 1100
"""Connections of the accept burst, as the issue counts them, against BURST_FILES descriptors."""
BURST_FILES = 1024
ACCEPT_FAILED = "socket.accept() out of system resource"
"""What asyncio logs when accept() meets EMFILE (it then stops accepting for a second)."""


def _burst(port: int, count: int) -> list[socket.socket]:
    """`count` connections at once: non-blocking connects, waited for together (the kernel completes them into the
    server's queue whether or not the server is running)."""
    sockets: list[socket.socket] = []
    try:
        with selectors.DefaultSelector() as selector:
            for _ in range(count):
                sock = socket.socket()
                sockets.append(sock)
                sock.setblocking(False)
                sock.connect_ex(("127.0.0.1", port))
                selector.register(sock, selectors.EVENT_WRITE)
            deadline = time.monotonic() + 30
            while selector.get_map():
                assert time.monotonic() < deadline, f"{len(selector.get_map())} connections still connecting"
                for key, _ in selector.select(1.0):
                    selector.unregister(key.fileobj)
                    assert key.fileobj.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0  # type: ignore[union-attr]
    except BaseException:
        for sock in sockets:
            sock.close()
        raise
    return sockets


@pytest.mark.parametrize("soft", [64, 256, 1024, 4096, 20000, 65536, 1 << 20])
def test_the_default_cap_leaves_room_for_the_accept_batches(soft: int) -> None:
    """Connections at the cap, the batches accepted before the front counts them, and the descriptors kept for
    files and pipes fit in the limit (a limit too small for that gets the smallest cap, 16)."""
    from shipcode_mcp.transports.http.front import (
        CONNECTIONS_CEILING,
        IN_FLIGHT_BATCHES,
        RESERVED,
        accept_batch,
        default_max_connections,
    )

    cap, batch = default_max_connections(soft), accept_batch(soft)
    assert 16 <= batch <= 2048 and 16 <= cap <= CONNECTIONS_CEILING
    if cap > 16:
        assert cap + IN_FLIGHT_BATCHES * batch + RESERVED <= soft, (cap, batch)
    assert default_max_connections(1024) == 704  # the process: 1 024 descriptors


@pytest.mark.measures
def test_a_burst_of_connections_beyond_the_descriptors_locks_nobody_out(tmp_path: Path) -> None:
    """The issue's flood as a burst: 1 100 connections queued at once (while the server's loop is held, as a busy
    moment would) to a process that may open 1 024 descriptors. With uvicorn's accept batch (its backlog: 2 048
    at one loop turn) and a cap that leaves a quarter free, accept() meets EMFILE before the front hears of a
    single one, asyncio stops accepting for a second and a fresh client waits for it; with `FrontLoop`'s
    batches and the cap sized for them, the front evicts a batch at a time and the fresh client is served at
    once."""
    _own_files(2 * BURST + 200)
    (tmp_path / "a.txt").write_text("a")
    figures: dict[str, Any] = {}

    def attack(port: int, pid: int, within: float) -> list[float]:
        os.kill(pid, signal.SIGSTOP)  # the burst arrives while the loop is busy: all of it queued at once
        try:
            burst = _burst(port, BURST)
        finally:
            os.kill(pid, signal.SIGCONT)
        try:
            return asyncio.run(_fresh_clients(port, within))
        finally:
            for sock in burst:
                sock.close()

    async def _fresh_clients(port: int, within: float) -> list[float]:
        return [await fresh_client(port, within) for _ in range(3)]

    exposed = [str(Path(__file__).parent / "front_burst_server.py"), "{port}", str(tmp_path)]
    with serving_process(tmp_path, exposed, files=BURST_FILES) as (port, pid):
        figures["exposed"] = attack(port, pid, 10.0)
        exposed_log = (tmp_path / f"server-{port}.log").read_text()
    with serving_process(tmp_path, ["-m", "shipcode_mcp", "--http", "{port}", "--header-timeout", "0", str(tmp_path)],
                         files=BURST_FILES) as (port, pid):
        figures["defended"] = attack(port, pid, FRESH)
        defended_log = (tmp_path / f"server-{port}.log").read_text()
    print(f"burst figures: {figures}")
    assert ACCEPT_FAILED in exposed_log and figures["exposed"][0] > 0.5  # the attack: accept() failed, the client waited
    assert ACCEPT_FAILED not in defended_log, defended_log[-2000:]
    assert max(figures["defended"]) < FRESH


# -- requests, sessions, scheduling: the app in uvicorn in this process -------------------------------------------------
def _stalled_body(port: int, wait: float) -> bytes:
    """Send a head that announces 100 bytes of body and only 10 of them; what comes back within `wait` s."""
    with socket.create_connection(("127.0.0.1", port), timeout=wait) as sock:
        sock.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                     b"Accept: application/json\r\nContent-Length: 100\r\n\r\n{\"jsonrpc\"")
        received = b""
        try:
            while chunk := sock.recv(4096):
                received += chunk
        except TimeoutError:
            return received + b"<still open>"
        return received + b"<closed>"


def test_a_stalled_body_gets_408_and_the_connection_closes() -> None:
    server = Server("bodies", "1.0.0")
    exposed = UvicornThread(server.http_app(session_idle_timeout=0, body_timeout=0))
    try:
        assert _stalled_body(exposed.port, 1.5) == b"<still open>"  # the attack: the read waits for ever
    finally:
        exposed.stop()
    held = UvicornThread(server.http_app(session_idle_timeout=0, body_timeout=0.5))
    try:
        started = time.monotonic()
        answer = _stalled_body(held.port, 5)
        assert answer.startswith(b"HTTP/1.1 408 "), answer
        assert b"connection: close" in answer.lower() and answer.endswith(b"<closed>"), answer
        assert time.monotonic() - started < 3
    finally:
        held.stop()


class FrontThread(UvicornThread):
    """`app` in uvicorn in a thread of this process, behind the front (http_front.protocol)."""

    def __init__(self, app: Any, limits: FrontLimits | None = None) -> None:
        import uvicorn

        config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="on",
                                timeout_graceful_shutdown=1, http=_front(limits or FrontLimits()))
        self.app = app
        self.server = uvicorn_server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        wait_for(lambda: self.server.started or not self.thread.is_alive(), 10, "uvicorn to start")
        assert self.server.started, "uvicorn did not start"
        self.port = self.server.servers[0].sockets[0].getsockname()[1]


def test_an_answer_given_before_the_body_says_close_and_the_connection_closes() -> None:
    """413, 415, 406 and 403 answered before the body announced has come: no keep-alive promise, and the
    connection closes once the answer is written (the rest of the body is never read)."""
    served = FrontThread(Server("early", "1.0.0").http_app(session_idle_timeout=0, max_body_bytes=1000))
    try:
        heads = {413: (b"application/json", b"application/json", b"127.0.0.1", b"5000"),
                 415: (b"text/plain", b"application/json", b"127.0.0.1", b"500"),
                 406: (b"application/json", b"text/html", b"127.0.0.1", b"500"),
                 403: (b"application/json", b"application/json", b"evil.example", b"500")}
        for status, (content_type, accept, host, length) in heads.items():
            with socket.create_connection(("127.0.0.1", served.port), timeout=5) as sock:
                sock.sendall(b"POST /mcp HTTP/1.1\r\nHost: " + host + b"\r\nContent-Type: " + content_type
                             + b"\r\nAccept: " + accept + b"\r\nContent-Length: " + length + b"\r\n\r\n{")
                received = b""
                while chunk := sock.recv(4096):  # to the end: the server closes (a timeout would raise)
                    received += chunk
            head = received.split(b"\r\n\r\n")[0].lower()
            assert head.startswith(b"http/1.1 %d " % status) and b"\r\nconnection: close" in head, received
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()
        with socket.create_connection(("127.0.0.1", served.port), timeout=5) as sock:  # all of it sent: kept alive
            sock.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/plain\r\nContent-Length: "
                         + str(len(body)).encode() + b"\r\n\r\n" + body)
            head = sock.recv(4096).lower()
            assert head.startswith(b"http/1.1 415 ") and b"connection: close" not in head, head
    finally:
        served.stop()


def _accepted_nodelay(listening: socket.socket) -> int:
    """TCP_NODELAY of the socket a plain asyncio server (no front) accepts on `listening`."""
    async def main() -> int:
        accepted: asyncio.Future[asyncio.BaseTransport] = asyncio.get_running_loop().create_future()

        class Recorder(asyncio.Protocol):
            def connection_made(self, transport: asyncio.BaseTransport) -> None:
                accepted.set_result(transport)

        server = await asyncio.get_running_loop().create_server(Recorder, sock=listening)
        async with server:
            _, writer = await asyncio.open_connection(*listening.getsockname()[:2])
            transport = await asyncio.wait_for(accepted, 10)
            value: int = transport.get_extra_info("socket").getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
            writer.close()
            return value

    return asyncio.run(main())


@pytest.mark.parametrize("mode", ["single-process", "workers"])
def test_every_accepted_connection_has_tcp_nodelay(mode: str) -> None:
    """Read back from the sockets the front accepted. In single-process mode uvicorn's asyncio server makes its
    listening socket through getaddrinfo (proto IPPROTO_TCP); with --workers each worker serves the socket the
    parent bound (`Config.bind_socket`: proto 0 before uvicorn 0.55), where asyncio sets no TCP_NODELAY: without
    it every response waits for the client's delayed ACK. Here the worker's path is run in this process
    (`Server.run(sockets=...)`, as uvicorn's worker does), on a socket bound as uvicorn before 0.55 bound it."""
    import uvicorn

    from shipcode_mcp.transports.http.front import FrontProtocol, front_of

    config = uvicorn.Config(Server("nodelay", "1.0.0").http_app(session_idle_timeout=0), host="127.0.0.1",
                            port=free_port() if mode == "workers" else 0, log_level="warning",
                            timeout_graceful_shutdown=1, http=_front(FrontLimits()),
                            loop="shipcode_mcp.transports.http.front:FrontLoop")
    sockets = None
    if mode == "workers":
        parent = _bound_as_before_uvicorn_055(config.port)
        assert _accepted_nodelay(parent.dup()) == 0  # the defect: asyncio alone leaves Nagle on
        sockets = [parent]
    server = uvicorn_server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": sockets}, daemon=True)
    thread.start()
    clients: list[socket.socket] = []
    try:
        wait_for(lambda: server.started or not thread.is_alive(), 10, "uvicorn to start")
        port = server.servers[0].sockets[0].getsockname()[1]
        for _ in range(3):
            client = socket.create_connection(("127.0.0.1", port), timeout=5)
            clients.append(client)
            client.sendall(REQUEST)
            assert client.recv(12) == b"HTTP/1.1 200"
        front = front_of(server.server_state)
        assert front is not None
        accepted = wait_for(lambda: list(front.heads) if len(front.heads) == 3 else None, 10, "3 kept-alive connections")
        options: list[int] = []
        for member in accepted:
            assert isinstance(member, FrontProtocol)  # without TLS the front serves each connection itself
            options.append(member.transport.get_extra_info("socket").getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
        assert all(options) and len(options) == 3, options
    finally:
        for client in clients:
            client.close()
        server.should_exit = True
        thread.join(10)


def _bound_as_before_uvicorn_055(port: int) -> socket.socket:
    """A listening socket as uvicorn's `Config.bind_socket` made it up to 0.54: proto 0, not IPPROTO_TCP."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def _uvicorn_binds_without_proto() -> bool:
    """Whether this uvicorn's `Config.bind_socket` (its workers' socket) gives proto 0, on which asyncio leaves
    TCP_NODELAY off (up to 0.54; 0.55 binds with IPPROTO_TCP)."""
    import uvicorn

    with uvicorn.Config("app", host="127.0.0.1", port=0).bind_socket() as sock:
        return bool(sock.proto == 0)


def _nodelay_in_workers(port: int, parent: int, count: int = 4) -> list[int]:
    """TCP_NODELAY of the sockets `count` kept-alive connections to `port` have in the worker processes of `parent`,
    read from those very sockets (pidfd_getfd, Linux 5.6+: a copy of a child's descriptor)."""
    import ctypes

    pidfd_getfd = 438  # the same number on every architecture
    libc = ctypes.CDLL(None, use_errno=True)
    clients = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(count)]
    try:
        for client in clients:
            client.sendall(REQUEST)
            assert client.recv(12) == b"HTTP/1.1 200"
        peers = {client.getsockname()[1] for client in clients}
        inodes = set()
        with open("/proc/net/tcp") as table:
            for line in table.read().splitlines()[1:]:
                fields = line.split()
                if int(fields[1].split(":")[1], 16) == port and int(fields[2].split(":")[1], 16) in peers:
                    inodes.add(f"socket:[{fields[9]}]")
        assert len(inodes) == count
        workers = [int(child) for task in os.listdir(f"/proc/{parent}/task")
                   for child in Path(f"/proc/{parent}/task/{task}/children").read_text().split()]
        found = []
        for worker in workers:
            pidfd = os.pidfd_open(worker)
            try:
                for fd in os.listdir(f"/proc/{worker}/fd"):
                    with contextlib.suppress(OSError):
                        if os.readlink(f"/proc/{worker}/fd/{fd}") not in inodes:
                            continue
                        copy = libc.syscall(pidfd_getfd, pidfd, int(fd), 0)
                        assert copy >= 0, os.strerror(ctypes.get_errno())
                        with socket.socket(fileno=copy) as sock:
                            found.append(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            finally:
                os.close(pidfd)
        assert len(found) == count, found
        return found
    finally:
        for client in clients:
            client.close()


@pytest.mark.skipif(not hasattr(os, "pidfd_open"), reason="reads a worker's sockets through pidfd_getfd (Linux)")
def test_tcp_nodelay_in_the_worker_processes(tmp_path: Path) -> None:
    """`--stateless --workers 2` for real: the accepted sockets in the worker processes have TCP_NODELAY. A bare
    `uvicorn --workers 2` (the same uvicorn, no front) leaves it off up to uvicorn 0.54, whose workers' socket has
    proto 0: every response would wait for a delayed ACK (the front sets it whatever the socket)."""
    (tmp_path / "a.txt").write_text("a")
    bare = ["-m", "uvicorn", "worker_app:app", "--workers", "2", "--port", "{port}", "--http", "h11",
            "--app-dir", str(Path(__file__).parent), "--log-level", "warning"]
    with serving_process(tmp_path, bare) as (port, pid):
        bare_nodelay = _nodelay_in_workers(port, pid)
        if _uvicorn_binds_without_proto():
            assert bare_nodelay == [0, 0, 0, 0]  # the defect, without the front
        else:
            assert all(bare_nodelay)  # uvicorn 0.55+ binds with IPPROTO_TCP: asyncio sets it
    ours = ["-m", "shipcode_mcp", "--http", "{port}", "--stateless", "--workers", "2", str(tmp_path)]
    with serving_process(tmp_path, ours) as (port, pid):
        assert all(_nodelay_in_workers(port, pid))


def test_the_session_cap_ends_the_least_recently_used_idle_session(tmp_path: Path) -> None:
    from transports.http.support import WAITING, add_common_features

    server = Server("sessions", "1.0.0")
    add_common_features(server)
    unbounded = UvicornThread(server.http_app(session_idle_timeout=0, max_sessions=0))
    try:
        clients = [McpHttpClient(unbounded.port) for _ in range(20)]
        assert len(unbounded.app.state.mcp.sessions) == 20  # the attack: every session is kept
        assert clients[0].call("ping").status == 200
    finally:
        unbounded.stop()

    capped = UvicornThread(server.http_app(session_idle_timeout=0, max_sessions=3))
    streams: list[Any] = []
    try:
        endpoint = capped.app.state.mcp
        oldest, streaming, working = (McpHttpClient(capped.port) for _ in range(3))
        streams.append(streaming.get())
        wait_for(lambda: endpoint.sessions[streaming.session_id].get_open, 10, "the GET stream")
        caller = threading.Thread(target=lambda: streams.append(
            working.call("tools/call", {"name": "wait", "arguments": {"tag": "cap"}}, stream=True)))
        caller.start()
        wait_for(lambda: "cap" in WAITING, 10, "the call in flight")
        newest = McpHttpClient(capped.port)  # room made: the oldest idle session ends
        gone = oldest.call("ping")
        assert gone.status == 404 and "ended to make room" in gone.json()["error"]["message"], gone.body
        assert streaming.call("ping").status == 200 and working.call("ping").status == 200
        assert newest.call("ping").status == 200
        streams.append(newest.get())
        wait_for(lambda: endpoint.sessions[newest.session_id].get_open, 10, "the GET stream")
        refused = McpHttpClient(capped.port, handshake=False).post(initialize())
        assert refused.status == 503 and refused.headers["retry-after"].isdigit(), refused.body
        assert set(endpoint.sessions) == {streaming.session_id, working.session_id, newest.session_id}
        for client in (working, streaming, newest):  # ends their streams and the call in flight
            assert client.delete().status == 204
        caller.join(10)
    finally:
        capped.stop()


HOLD = threading.Event()
STARTED: list[str] = []
RAN: list[str] = []
_COUNT = threading.Lock()


def fair_server(root: Path) -> Server:
    """The workspace (list_files), a tool that holds its thread until the test lets go, and one that notes it ran."""
    server = build_server([str(root)])

    @server.tool
    def hold(ctx: Context, tag: str) -> str:
        """Busy until released (at most 30 s)."""
        with _COUNT:
            STARTED.append(tag)
        HOLD.wait(30)
        return tag

    @server.tool
    def record(tag: str) -> str:
        """Note that it ran."""
        RAN.append(tag)
        return tag

    return server


def _timed(client: McpHttpClient, method: str, params: dict[str, Any] | None = None) -> float:
    started = time.monotonic()
    reply = client.call(method, params)
    assert reply.status == 200 and "result" in reply.json(), reply.body
    return time.monotonic() - started


def _probe(client: McpHttpClient) -> dict[str, float]:
    """The best of five of ping and list_files, in seconds."""
    listing = {"name": "list_files", "arguments": {}}
    return {"ping": min(_timed(client, "ping") for _ in range(5)),
            "list_files": min(_timed(client, "tools/call", listing) for _ in range(5))}


@pytest.mark.parametrize("per_session", [0, 8], ids=["no-limit", "limit-8"])
def test_one_session_s_slow_calls_do_not_delay_another_s(tmp_path: Path, per_session: int) -> None:
    """A session runs 70 calls of a tool that holds its thread; another session's ping and list_files,
    timed before and during. Without a per-session limit the hog takes all 64 threads and list_files waits
    for one; with it, the hog's calls wait in its own lane and the other session is served as if alone."""
    (tmp_path / "a.txt").write_text("a")
    HOLD.clear()
    STARTED.clear()
    served = UvicornThread(fair_server(tmp_path).http_app(session_idle_timeout=0, max_concurrent_calls=per_session))
    callers: list[threading.Thread] = []
    answers: list[int] = []
    try:
        prober = McpHttpClient(served.port)
        alone = _probe(prober)
        hog = McpHttpClient(served.port)
        lanes = served.app.state.mcp.lanes()
        session = served.app.state.mcp.sessions[hog.session_id]

        def slow(n: int) -> None:
            message = {"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {"name": "hold", "arguments": {"tag": str(n)}}}
            answers.append(hog.post(message).status)

        callers = [threading.Thread(target=slow, args=(n,)) for n in range(70)]
        for caller in callers:
            caller.start()
        running = 64 if per_session == 0 else per_session
        wait_for(lambda: len(STARTED) == running and lanes.waiting(session) == 70 - running, 20, "the hog's calls")
        if per_session == 0:
            assert _timed(prober, "ping") < 0.5  # ping is answered on the loop: no thread needed
            with pytest.raises(TimeoutError):  # the attack: list_files waits for a thread the hog holds
                http_client = http.client.HTTPConnection("127.0.0.1", served.port, timeout=1)
                body = {"jsonrpc": "2.0", "id": 99, "method": "tools/call", "params": {"name": "list_files", "arguments": {}}}
                http_client.request("POST", "/mcp", json.dumps(body), prober.headers())
                http_client.getresponse()
        else:
            loaded = _probe(prober)
            print(f"fairness: alone {alone}, beside 70 slow calls {loaded}")
            for name in alone:
                assert loaded[name] - alone[name] < 0.05, (name, alone, loaded)
    finally:
        HOLD.set()
        for caller in callers:
            caller.join(30)
        served.stop()
    assert answers == [200] * 70


def test_requests_without_a_session_share_their_caller_s_lane(tmp_path: Path) -> None:
    """Modern requests have no session: their calls take turns by caller (here: the address), so one
    client cannot get a lane per request by opening a connection per request."""
    HOLD.clear()
    STARTED.clear()
    served = UvicornThread(fair_server(tmp_path).http_app(session_idle_timeout=0, max_concurrent_calls=2))
    callers: list[threading.Thread] = []
    try:
        lanes = served.app.state.mcp.lanes()

        def slow(n: int) -> None:
            message = modern("tools/call", {"name": "hold", "arguments": {"tag": str(n)}}, msg_id=n)
            connection = http.client.HTTPConnection("127.0.0.1", served.port, timeout=30)
            connection.request("POST", "/mcp", json.dumps(message), modern_headers(message))
            connection.getresponse().read()

        callers = [threading.Thread(target=slow, args=(n,)) for n in range(3)]
        for caller in callers:
            caller.start()
        wait_for(lambda: len(STARTED) == 2 and lanes.waiting(("address", "127.0.0.1")) == 1, 20, "two running, one waiting")
    finally:
        HOLD.set()
        for caller in callers:
            caller.join(30)
        served.stop()


@pytest.mark.parametrize("background_lane", ["the session's", "its own"])
def test_roots_are_asked_for_promptly_while_the_session_s_lane_is_full(tmp_path: Path, background_lane: str) -> None:
    """A session with one call at a time runs a slow call, two more wait in its lane; the client says its roots
    changed. The roots refresh (background work) asks roots/list at once on the GET stream: it has a lane of
    its own. Put in the session's lane (as it was), it waits behind the slow calls."""
    HOLD.clear()
    STARTED.clear()
    server = fair_server(tmp_path)
    listed: list[list[dict[str, Any]]] = []
    server.on_roots(lambda session, roots: listed.append(roots))  # a server that follows the client's roots
    served = UvicornThread(server.http_app(session_idle_timeout=0, max_concurrent_calls=1))
    threads: list[threading.Thread] = []
    try:
        endpoint = served.app.state.mcp
        client = McpHttpClient(served.port, capabilities={"roots": {"listChanged": True}})
        session = endpoint.sessions[client.session_id]
        lanes = endpoint.lanes()
        if background_lane == "the session's":  # the defence off: background work queues behind the session's calls
            session.background = lambda work: lanes.submit(session.lane, work)
        stream = client.get()
        first: list[Any] = []
        opening = threading.Thread(target=lambda: first.append(stream.next_event()), daemon=True)
        opening.start()
        opening.join(10)
        assert first and first[0] is not None and first[0]["method"] == "roots/list", first
        assert client.post({"jsonrpc": "2.0", "id": first[0]["id"], "result": {"roots": []}}).status == 202
        wait_for(lambda: listed, 10, "the first roots")
        for n in range(3):
            message = {"jsonrpc": "2.0", "id": 100 + n, "method": "tools/call",
                       "params": {"name": "hold", "arguments": {"tag": str(n)}}}
            threads.append(threading.Thread(target=client.post, args=(message,)))
            threads[-1].start()
        wait_for(lambda: len(STARTED) == 1 and lanes.waiting(session) == 2, 10, "one call running, two waiting")
        got: list[Any] = []
        reader = threading.Thread(target=lambda: got.append(stream.next_event()), daemon=True)
        started = time.monotonic()
        assert client.post({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}).status == 202
        reader.start()
        reader.join(1.0)
        waited = time.monotonic() - started
        if background_lane == "the session's":
            assert not got  # the attack: the refresh waits for the slow calls
            HOLD.set()
            reader.join(30)
        else:
            print(f"roots/list asked {waited * 1000:.1f} ms after list_changed, beside a full lane")
            assert got and waited < 0.5, (got, waited)
        asked = got[0]
        assert asked is not None and asked["method"] == "roots/list", asked
        assert client.post({"jsonrpc": "2.0", "id": asked["id"], "result": {"roots": [{"uri": tmp_path.as_uri()}]}}).status == 202
        wait_for(lambda: len(listed) == 2, 10, "the roots listed again")
        HOLD.set()
        assert client.delete().status == 204  # ends the GET stream
    finally:
        HOLD.set()
        for thread in threads:
            thread.join(30)
        served.stop()


def test_a_call_cancelled_while_it_waits_in_its_lane_never_runs(tmp_path: Path) -> None:
    HOLD.clear()
    STARTED.clear()
    RAN.clear()
    served = UvicornThread(fair_server(tmp_path).http_app(session_idle_timeout=0, max_concurrent_calls=1))
    threads: list[threading.Thread] = []
    try:
        client = McpHttpClient(served.port)
        lanes = served.app.state.mcp.lanes()
        session = served.app.state.mcp.sessions[client.session_id]
        calls = [({"name": "hold", "arguments": {"tag": "h"}}, 1), ({"name": "record", "arguments": {"tag": "cancelled"}}, 2)]
        replies: dict[int, Any] = {}
        for params, n in calls:
            message = {"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": params}
            threads.append(threading.Thread(target=lambda m=message, n=n: replies.update({n: client.post(m)})))
            threads[-1].start()

            def in_lane(n: int = n) -> bool:
                return lanes.running(session) + lanes.waiting(session) == n

            wait_for(in_lane, 10, f"call {n} in the lane")
        cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2}}
        assert client.post(cancel).status == 202
        wait_for(lambda: lanes.waiting(session) == 0, 10, "the cancelled call to leave the lane")
        HOLD.set()
        for thread in threads:  # the held call's id 1 stays in use until its answer is written
            thread.join(10)
        client.next_id = len(calls)  # a fresh id: ids 1 and 2 were written by hand above
        after = client.call("tools/call", {"name": "record", "arguments": {"tag": "after"}})
        assert after.status == 200 and after.json()["result"]["content"][0]["text"] == "after", after.body
        assert RAN == ["after"]  # the same lane, in order: the cancelled call would have run before this one
        assert replies[2].status == 200 and replies[2].events() == []  # cancelled: its stream ends with no response
    finally:
        HOLD.set()
        for thread in threads:
            thread.join(10)
        served.stop()


def test_the_limits_are_command_line_options(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "shipcode_mcp", "--max-sessions", "3"], capture_output=True, text=True,
                          timeout=30, env={**os.environ, "PYTHONPATH": str(REPO / "src")})
    assert done.returncode == 2 and "need --http" in done.stderr
    for bad in (["--max-sessions", "-1"], ["--header-timeout", "nan"], ["--body-timeout", "x"]):
        done = subprocess.run([sys.executable, "-m", "shipcode_mcp", "--http", "0", *bad], capture_output=True, text=True,
                              timeout=30, env={**os.environ, "PYTHONPATH": str(REPO / "src")})
        assert done.returncode == 2 and bad[0] in done.stderr, done.stderr


def _trickled(port: int, chunk: bytes, pace: float, count: int, wait: float) -> bytes:
    """POST a stateless ping padded to `count` chunks of `chunk` (spaces), one every `pace` s; what comes back."""
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()
    padding = len(chunk) * count
    with socket.create_connection(("127.0.0.1", port), timeout=wait) as sock:
        sock.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                     b"Accept: application/json\r\nContent-Length: " + str(len(body) + padding).encode() + b"\r\n\r\n" + body)
        try:
            for _ in range(count):
                time.sleep(pace)  # the client's pace, not a synchronisation
                sock.sendall(chunk)
            return sock.recv(4096)
        except OSError as err:  # closed on us mid-way: the answer came first
            return b"<" + type(err).__name__.encode() + b">"


def test_a_body_below_the_minimum_rate_gets_408_and_a_steady_one_passes() -> None:
    """A byte every 0.2 s never trips a 0.5 s inactivity deadline: without a minimum rate it goes on for as long
    as its Content-Length says; with one (1000 bytes/s after the first 0.5 s) it gets 408 within a second. A body
    at 2000 bytes/s taking three times body_timeout passes."""
    server = Server("rates", "1.0.0")
    exposed = UvicornThread(server.http_app(stateless=True, body_timeout=0.5, body_min_rate=0))
    try:  # the attack: 8 bytes over 1.6 s, answered only at the end
        assert _trickled(exposed.port, b" ", 0.2, 8, 5).startswith(b"HTTP/1.1 200 ")
    finally:
        exposed.stop()
    held = UvicornThread(server.http_app(stateless=True, body_timeout=0.5, body_min_rate=1000))
    try:
        with socket.create_connection(("127.0.0.1", held.port), timeout=5) as sock:
            started = time.monotonic()
            sock.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                         b"Accept: application/json\r\nContent-Length: 1000\r\n\r\n")
            answer = b""
            while not answer:
                time.sleep(0.2)  # the attack's pace
                sock.sendall(b" ")
                answer = sock.recv(4096) if select.select([sock], [], [], 0)[0] else b""
            assert answer.startswith(b"HTTP/1.1 408 ") and b"connection: close" in answer.lower(), answer
            assert time.monotonic() - started < 1.5
        assert _trickled(held.port, b" " * 200, 0.1, 15, 5).startswith(b"HTTP/1.1 200 ")  # 1.5 s, 2000 bytes/s
    finally:
        held.stop()


def _bearer_init(port: int, token: str) -> Any:
    from transports.http.support import request

    return request(port, "POST", initialize(), {**MCP_HEADERS_JSON, "Authorization": f"Bearer {token}"})


MCP_HEADERS_JSON = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


def test_one_caller_cannot_push_another_s_sessions_out(tmp_path: Path) -> None:
    """Two token-file callers, 6 sessions at most, 3 per caller. Without the quota, the first caller's
    initializes end the second's idle sessions; with it, the first caller at its quota ends its own least
    recently used session, the second's stay; a failed initialize ends nobody's."""
    from auth_support import READ_TOKEN, WRITE_TOKEN, write_tokens
    from shipcode_mcp.auth.token_file import TokenFile
    from shipcode_mcp.transports.http.auth import ResourceServer

    tokens = write_tokens(tmp_path / "tokens", f"{READ_TOKEN} shipcode:read\n{WRITE_TOKEN} shipcode:read shipcode:write\n")
    server = Server("quota", "1.0.0")
    for quota, pushed_out in ((0, True), (None, False)):
        auth = ResourceServer(TokenFile(str(tokens)), resource="http://127.0.0.1/mcp")
        served = UvicornThread(server.http_app(session_idle_timeout=0, max_sessions=6, auth=auth,
                                               max_sessions_per_caller=quota if quota is not None else 3))
        try:
            sessions = served.app.state.mcp.sessions
            theirs = [_bearer_init(served.port, WRITE_TOKEN).headers["mcp-session-id"] for _ in range(3)]
            mine = [_bearer_init(served.port, READ_TOKEN).headers["mcp-session-id"] for _ in range(3)]
            assert len(sessions) == 6
            bad = {"jsonrpc": "2.0", "id": 9, "method": "initialize", "params": {"capabilities": 7}}  # fails: nothing ends
            from transports.http.support import request

            refused = request(served.port, "POST", bad, {**MCP_HEADERS_JSON, "Authorization": f"Bearer {READ_TOKEN}"})
            assert "mcp-session-id" not in refused.headers and set(sessions) == {*theirs, *mine}, refused.body
            newest = [_bearer_init(served.port, READ_TOKEN).headers["mcp-session-id"] for _ in range(3)]
            kept = set(sessions)
            if pushed_out:  # the attack: the other caller's sessions made room for this one's
                assert not set(theirs) & kept
            else:
                assert set(theirs) <= kept and kept == {*theirs, *newest}, (theirs, mine, newest, kept)
        finally:
            served.stop()

"""The HTTP front against connections that would lock fresh clients out, attacks that got past it in issue 14's
review (point 5; each was a strict xfail until fixed).

Each test first shows that the front works against the plain form of its attack, so that the failure is the
variant's, not the set-up's. Loopback only, bounded in time and connections.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import resource
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from support import PEER_CACHE, REPO, wait_for
from transports.http.support import drip, free_port
from transports.http.test_front import FRESH, REQUEST, _answers, _own_files, fresh_client, serving

ATTACKERS = 20
"""Connections of each attack: the cap of the server under attack."""


async def _status(reader: asyncio.StreamReader) -> bytes:
    """The status line of a response, after its whole head (the body may never end)."""
    return (await _head(reader)).split(b"\r\n")[0]


async def _head(reader: asyncio.StreamReader) -> bytes:
    """A response's head, up to its blank line."""
    head = b""
    while (line := await reader.readline()) not in (b"\r\n", b""):
        head += line
    return head


class _Trickling:
    """`ATTACKERS` connections that each send `head`, read the response's head, then send a byte every half second."""

    def __init__(self, port: int, head: bytes) -> None:
        self.port, self.head = port, head
        self.writers: list[asyncio.StreamWriter] = []
        self.statuses: list[bytes] = []
        self.closed = 0
        self.tasks: list[asyncio.Task[None]] = []

    async def open(self) -> None:
        for _ in range(ATTACKERS):
            reader, writer = await asyncio.open_connection("127.0.0.1", self.port)
            writer.write(self.head)
            self.statuses.append(await asyncio.wait_for(_status(reader), 5))
            self.writers.append(writer)
            self.tasks.append(asyncio.ensure_future(self._watch(reader)))
        self.tasks.append(asyncio.ensure_future(drip(self.writers)))

    async def _watch(self, reader: asyncio.StreamReader) -> None:
        with contextlib.suppress(OSError):
            while await reader.read(4096):
                pass
        self.closed += 1


    def close(self) -> None:
        for task in self.tasks:
            task.cancel()
        for writer in self.writers:
            writer.transport.abort()


async def _fresh_served(port: int) -> bool:
    try:
        await fresh_client(port)
    except (OSError, asyncio.TimeoutError, AssertionError, asyncio.IncompleteReadError):
        return False
    return True


SLOW_HEAD = b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "
"""The plain slowloris: a head that never ends (no response comes: `_Trickling` is given a head that gets one)."""
REFUSED_HEAD = (b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                b"Accept: application/json, text/event-stream\r\nContent-Length: 100000000\r\n\r\n")
"""A head the app answers at once (413: over the body limit) without reading the body it announces."""


@pytest.mark.measures
def test_answered_requests_that_trickle_their_body_do_not_lock_fresh_clients_out(tmp_path: Path) -> None:
    _own_files(4 * ATTACKERS + 200)
    (tmp_path / "a.txt").write_text("a")
    seen: dict[str, object] = {}

    async def attack(port: int) -> None:
        plain = _Trickling(port, b"")
        try:  # the plain slowloris at the cap: each fresh client evicts one of them
            for _ in range(ATTACKERS):
                reader, writer = await asyncio.open_connection("127.0.0.1", port)
                writer.write(SLOW_HEAD)
                plain.writers.append(writer)
                plain.tasks.append(asyncio.ensure_future(plain._watch(reader)))
            assert await _fresh_served(port)
        finally:
            plain.close()
        variant = _Trickling(port, REFUSED_HEAD)
        try:
            await variant.open()
            assert all(status.startswith(b"HTTP/1.1 413 ") for status in variant.statuses), variant.statuses
            started = time.monotonic()
            while not (served := await _fresh_served(port)) and time.monotonic() - started < 8:
                await asyncio.sleep(0.5)  # a fresh client now and then, for longer than keep-alive + the head deadline
            seen.update(served=served, after=time.monotonic() - started, attackers_closed=variant.closed)
            assert served, f"no fresh client served for 8 s; {variant.closed} of {ATTACKERS} attackers closed"
        finally:
            variant.close()

    with serving(tmp_path, "--max-connections", str(ATTACKERS), "--header-timeout", "1") as port:
        asyncio.run(attack(port))
    print(f"trickled bodies: {seen}")
    assert seen["after"] < FRESH  # type: ignore[operator]


# -- a connection upgraded to WebSocket: uvicorn's `uvicorn[standard]` installs `websockets` ---------------------------
WEBSOCKETS = "17.4"
CACHE = PEER_CACHE


@pytest.fixture(scope="session")
def websockets_path() -> Path:
    """A folder holding websockets==WEBSOCKETS (what `pip install uvicorn[standard]` brings), made on first use."""
    from filelock import FileLock

    folder = CACHE / f"websockets-{WEBSOCKETS}"
    CACHE.mkdir(parents=True, exist_ok=True)
    with FileLock(f"{folder}.lock"):  # made once, whichever of the test processes (pytest-xdist) comes first
        if not (folder / "websockets").is_dir():
            subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                            "--no-deps", "--target", str(folder), f"websockets=={WEBSOCKETS}"], check=True, timeout=600)
    return folder


@contextlib.contextmanager
def serving_with(tmp_path: Path, extra_path: Path, *options: str) -> Iterator[int]:
    """`shipcode-mcp --http PORT` with `extra_path` on its PYTHONPATH; yields its port once it answers."""
    port = free_port()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(extra_path)])}
    log = open(tmp_path / f"server-{port}.log", "wb")
    process = subprocess.Popen([sys.executable, "-m", "shipcode_mcp", "--http", str(port), *options, str(tmp_path)],
                               env=env, stdout=subprocess.DEVNULL, stderr=log)
    try:
        wait_for(lambda: process.poll() is not None or _answers(port), 30, "the server to answer")
        assert process.poll() is None, (tmp_path / f"server-{port}.log").read_text()
        yield port
    finally:
        process.kill()
        process.wait(10)
        log.close()


UPGRADE = (b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
           b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")


def test_websocket_upgrades_do_not_use_up_the_connection_cap(tmp_path: Path, websockets_path: Path) -> None:
    (tmp_path / "a.txt").write_text("a")
    seen: dict[str, object] = {}

    async def upgrade(port: int, kept_alive: bool) -> bytes:
        """An upgrade request (on a connection that served a request first, when `kept_alive`); what came back."""
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            if kept_alive:
                writer.write(b"GET /elsewhere HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                head = await asyncio.wait_for(_head(reader), 5)
                assert head.startswith(b"HTTP/1.1 404 "), head
                await reader.readexactly(int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0]))
            writer.write(UPGRADE)
            return await asyncio.wait_for(reader.read(), 5)  # the app has no WebSocket route: closed at once
        finally:
            writer.close()

    async def attack(port: int) -> None:
        assert await _fresh_served(port)
        # Upgrades on new connections: their ghosts sit in the front's `bodies`, so fresh clients evict them.
        seen["fresh-upgrades"] = {(await upgrade(port, False))[:12] for _ in range(ATTACKERS)}
        seen["served-after-fresh-upgrades"] = [await _fresh_served(port) for _ in range(3)]
        # Upgrades on kept-alive connections: the previous request's cycle makes the ghost look served.
        seen["answers"] = {(await upgrade(port, True))[:12] for _ in range(ATTACKERS)}
        seen["served"] = [await _fresh_served(port) for _ in range(3)]

    with serving_with(tmp_path, websockets_path, "--max-connections", str(ATTACKERS)) as port:
        asyncio.run(attack(port))
    print(f"upgrades: {seen}")
    assert seen["fresh-upgrades"] == {b"HTTP/1.1 403"} and seen["served-after-fresh-upgrades"] == [True, True, True]
    assert seen["answers"] == {b"HTTP/1.1 403"}  # each upgrade was refused by the app, and its connection closed
    assert seen["served"] == [True, True, True], "the cap is full of connections that are gone"


# -- TLS served directly (--tls-cert): connections that never start their handshake --------------------------------------
FLOOD = 400
FLOOD_FILES = 256


@contextlib.contextmanager
def serving_tls(tmp_path: Path, *options: str, files: int) -> Iterator[tuple[int, ssl.SSLContext]]:
    """`shipcode-mcp --http PORT --tls-cert --tls-key` (a certificate made here) with `files` descriptors; yields its
    port and a client context that trusts it, once it answers an initialize over TLS."""
    from test_cli_security import self_signed

    cert, key = self_signed(tmp_path)
    trusting = ssl.create_default_context(cafile=str(cert))
    port = free_port()

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (files, files))

    def answers() -> bool:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=2) as raw, \
                    trusting.wrap_socket(raw, server_hostname="127.0.0.1") as sock:
                sock.sendall(REQUEST)
                return sock.recv(12).startswith(b"HTTP/1.1 200")
        except OSError:
            return False

    log = open(tmp_path / f"server-{port}.log", "wb")
    process = subprocess.Popen([sys.executable, "-m", "shipcode_mcp", "--http", str(port), "--tls-cert", str(cert),
                                "--tls-key", str(key), *options, str(tmp_path)],
                               env={**os.environ, "PYTHONPATH": str(REPO / "src")}, stdout=subprocess.DEVNULL, stderr=log,
                               preexec_fn=limit)
    try:
        wait_for(lambda: process.poll() is not None or answers(), 30, "the server to answer")
        assert process.poll() is None, (tmp_path / f"server-{port}.log").read_text()
        yield port, trusting
    finally:
        process.kill()
        process.wait(10)
        log.close()


async def _fresh_tls(port: int, context: ssl.SSLContext) -> bool:
    async def exchange() -> bytes:
        reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=context, server_hostname="127.0.0.1")
        try:
            writer.write(REQUEST)
            return await reader.readline()
        finally:
            writer.close()

    try:
        return (await asyncio.wait_for(exchange(), FRESH)).startswith(b"HTTP/1.1 200")
    except (OSError, asyncio.TimeoutError):
        return False


def test_a_flood_of_silent_connections_to_a_tls_server_locks_nobody_out(tmp_path: Path) -> None:
    _own_files(2 * FLOOD + 200)
    (tmp_path / "a.txt").write_text("a")
    seen: dict[str, object] = {}

    async def flood(port: int) -> list[asyncio.StreamWriter]:
        writers = []
        for _ in range(FLOOD):
            writers.append((await asyncio.open_connection("127.0.0.1", port))[1])
        return writers

    async def plain(port: int) -> None:
        writers = await flood(port)
        try:
            seen["plain"] = [await _fresh_served(port) for _ in range(3)]
        finally:
            for writer in writers:
                writer.transport.abort()

    async def tls(port: int, context: ssl.SSLContext) -> None:
        assert await _fresh_tls(port, context)
        writers = await flood(port)
        try:
            seen["tls"] = [await _fresh_tls(port, context) for _ in range(3)]
        finally:
            for writer in writers:
                writer.transport.abort()

    with serving(tmp_path, "--header-timeout", "0", files=FLOOD_FILES) as port:
        asyncio.run(plain(port))
    assert seen["plain"] == [True, True, True]  # the front holds for plain HTTP: the cap makes room
    with serving_tls(tmp_path, "--header-timeout", "0", files=FLOOD_FILES) as (port, context):
        asyncio.run(tls(port, context))
    print(f"silent floods: {seen}")
    assert seen["tls"] == [True, True, True], "fresh TLS clients were not served within a second"

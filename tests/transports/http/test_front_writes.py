"""The front writes a fixed-length answer's head and body at once: one TCP segment per answer, where uvicorn
alone sends two (head, then body), each a wake-up of the client. Streamed answers (SSE) are not held: their
head goes as soon as it is sent. Counted on the client's socket (Linux TCP_INFO: data segments received)."""

from __future__ import annotations

import asyncio
import json
import socket
import struct
import sys
import threading
from collections.abc import Iterator
from typing import cast

import pytest
import uvicorn

from shipcode_mcp import Server
from shipcode_mcp.transports.http.front import FrontLimits, protocol
from shipcode_mcp.transports.http.serving import uvicorn_server
from support import wait_for

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="TCP_INFO's data segment count is Linux's")

DATA_SEGS_IN = 152
"""Offset of tcpi_data_segs_in (u32) in Linux's struct tcp_info (since 4.6)."""


def _front(limits: FrontLimits) -> type[asyncio.Protocol]:
    """`protocol(limits)` as uvicorn.Config's `http` is annotated: uvicorn calls a class given there as the protocol
    factory (with config, server_state, app_state), which a factory function is too; the hint names classes only."""
    return cast("type[asyncio.Protocol]", protocol(limits))


def _data_segments_in(sock: socket.socket) -> int:
    info = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 256)
    assert len(info) >= DATA_SEGS_IN + 4, "this kernel's tcp_info has no data segment counts"
    return int(struct.unpack_from("I", info, DATA_SEGS_IN)[0])


def _post(body: dict[str, object], accept: str = "application/json, text/event-stream") -> bytes:
    data = json.dumps(body).encode()
    return (b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: " + accept.encode()
            + b"\r\nContent-Length: " + str(len(data)).encode() + b"\r\n\r\n" + data)


def _answer(sock: socket.socket) -> bytes:
    """One whole answer (Content-Length, or an SSE stream that ends with its response), read to its end."""
    got = b""
    while b"\r\n\r\n" not in got:
        got += sock.recv(65536)
    head, _, rest = got.partition(b"\r\n\r\n")
    length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")),
                  None)
    while (len(rest) < length) if length is not None else not rest.endswith(b"0\r\n\r\n"):
        rest += sock.recv(65536)
    return head + b"\r\n\r\n" + rest


@pytest.fixture
def port() -> Iterator[int]:
    server_app = Server("writes", "1.0.0")

    @server_app.tool()
    def echo(text: str) -> str:
        """Echo."""
        return text

    config = uvicorn.Config(server_app.http_app(stateless=True), host="127.0.0.1", port=0, log_level="warning",
                            timeout_graceful_shutdown=1, http=_front(FrontLimits()))
    server = uvicorn_server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        wait_for(lambda: server.started or not thread.is_alive(), 10, "uvicorn to start")
        yield int(server.servers[0].sockets[0].getsockname()[1])
    finally:
        server.should_exit = True
        thread.join(10)


def _segments(port: int, requests: list[bytes]) -> list[tuple[int, bytes]]:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        counts = []
        for request in requests:
            before = _data_segments_in(sock)
            sock.sendall(request)
            answer = _answer(sock)
            counts.append((_data_segments_in(sock) - before, answer))
        return counts


def test_a_json_answer_is_one_segment(port: int) -> None:
    ping = _post({"jsonrpc": "2.0", "id": 1, "method": "ping"})
    call = _post({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "hi"}}})
    refused = _post({"jsonrpc": "2.0", "id": 3, "method": "ping"}, accept="text/html")  # 406, also fixed-length
    answers = _segments(port, [ping, call, ping, call, refused])
    assert [answer.split(b"\r\n")[0] for _, answer in answers] == [b"HTTP/1.1 200 OK"] * 4 + [b"HTTP/1.1 406 Not Acceptable"]
    assert b'"hi"' in answers[1][1]
    assert [segments for segments, _ in answers] == [1] * 5


def test_a_large_answer_and_a_stream_still_arrive_whole(port: int) -> None:
    big = "x" * 200_000  # beyond the size joined to its head: written apart
    call = _post({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": big}}})
    streamed = _post({"jsonrpc": "2.0", "id": 2, "method": "ping"}, accept="text/event-stream")
    (_, large), (_, stream) = _segments(port, [call, streamed])
    assert large.startswith(b"HTTP/1.1 200 OK") and big.encode() in large
    assert stream.startswith(b"HTTP/1.1 200 OK") and b"text/event-stream" in stream and b'"result":{}' in stream

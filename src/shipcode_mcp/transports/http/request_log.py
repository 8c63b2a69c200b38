"""--log-level debug over HTTP: one line per JSON-RPC request, as stdio writes them (`log.request`).

An ASGI middleware around the app, installed only at debug level (nothing to pay otherwise). It reads a
POST's body as the app does and the answer as the client does: the response with the request's id, in
a JSON body or among the events of an SSE stream. A request answered by none (the client cancelled it
or went away, the session ended) is `cancelled`; one refused before it reached MCP (a 4xx with no
JSON-RPC error) is `http STATUS`, as `(unread)` when it was refused before its body was read.
Notifications and the client's responses are not requests: no line.
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

from ... import log

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Message, Receive, Scope, Send


class RequestLog:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        exchange = _Exchange()

        async def reading() -> Message:
            message = await receive()
            if message["type"] == "http.request":
                exchange.body(message.get("body", b""), message.get("more_body", False))
            return message

        async def writing(message: Message) -> None:
            if message["type"] == "http.response.start":
                exchange.start(message["status"], message.get("headers", ()))
            elif message["type"] == "http.response.body":
                exchange.answer(message.get("body", b""))
            await send(message)

        try:
            await self.app(scope, reading, writing)
        finally:
            exchange.end()


class _Exchange:
    """One POST: the request it carries, and what came back for it."""

    def __init__(self) -> None:
        self.began = time.monotonic()
        self.chunks: list[bytes] = []
        self.method: str | None = None  # set once the body is read, if it is a request
        self.id: Any = None
        self.status = 0
        self.sse = False
        self.pending = b""  # the start of an SSE line not yet ended
        self.response: Any = None

    def body(self, chunk: bytes, more: bool) -> None:
        self.chunks.append(chunk)
        if more:
            return
        try:
            message = json.loads(b"".join(self.chunks))
        except ValueError:
            message = None
        self.chunks = []
        if isinstance(message, dict) and isinstance(message.get("method"), str) and "id" in message:
            self.method, self.id = message["method"], message["id"]
        elif not isinstance(message, dict):  # unparsable: its error response, if any, is the line
            self.method = "(invalid)"

    def start(self, status: int, headers: Any) -> None:
        self.status = status
        for name, value in headers:
            if name.lower() == b"content-type":
                self.sse = value.split(b";")[0].strip().lower() == b"text/event-stream"

    def answer(self, chunk: bytes) -> None:
        if self.method is None or self.response is not None:
            return
        if not self.sse:
            self.chunks.append(chunk)
            return
        *lines, self.pending = (self.pending + chunk).split(b"\n")
        for line in lines:
            if line.startswith(b"data:"):
                self._consider(line[5:])

    def _consider(self, data: bytes) -> None:
        try:
            message = json.loads(data)
        except ValueError:
            return
        if isinstance(message, dict) and "method" not in message and ("result" in message or "error" in message) \
                and (message.get("id") == self.id or self.method == "(invalid)"):
            self.response = message

    def end(self) -> None:
        if self.method is None:
            if self.status >= 400:  # refused before its body was read (Accept, Origin, Host, size)
                log.request("(unread)", None, time.monotonic() - self.began, f"http {self.status}")
            return
        if not self.sse and self.chunks:
            self._consider(b"".join(self.chunks))
        seconds = time.monotonic() - self.began
        if self.response is not None:
            outcome, code = log.outcome_of(self.response)
            log.request(self.method, self.id, seconds, outcome, code)
        elif self.status >= 400:
            log.request(self.method, self.id, seconds, f"http {self.status}")
        else:
            log.request(self.method, self.id, seconds, "cancelled")

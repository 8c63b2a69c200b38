"""LSP's base protocol with one language server: JSON-RPC messages framed by Content-Length headers on the
child's stdin and stdout, read by one thread, each request with a deadline.

The program on the other end is not ours and reads a workspace that may be hostile: it may hang, crash,
stop reading, flood its output, or send a malformed or endless frame. None of that may hold a tool call
past its deadline, grow the server's memory without bound, or leave a thread waiting forever: a frame
larger than MAX_MESSAGE, a header longer than MAX_HEADER or a message that is not JSON-RPC ends the
connection (the language server is then stopped and started again by its owner); a write that cannot go
through within WRITE_TIMEOUT ends it too; stderr is drained and only its end kept.

Not pygls' client: it starts the language server itself (asyncio's subprocesses), where every child of
this server starts in process.Child (its sandbox and limits), and our tools wait on threads, not a loop.
"""

from __future__ import annotations

import errno
import json
import os
import selectors
import threading
import time
from collections.abc import Callable
from typing import Any

from ...primitives import ToolError

MAX_HEADER = 8 * 1024
"""A frame's header is at most this long (a real one is some 30 bytes)."""
MAX_MESSAGE = 64 * 1024 * 1024
"""A frame's body is at most this long: the references of a common name in a large repository are a few MB."""
WRITE_TIMEOUT = 10.0
"""A language server that takes no input for this long (it reads nothing, its pipe is full) is dropped."""
STDERR_KEPT = 4096
_POLL = 0.05
_CHUNK = 1 << 16
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
REQUEST_CANCELLED = -32800
"""LSP's code for a request the client cancelled."""


class Gone(ToolError):
    """The language server ended, broke the protocol or stopped reading: the connection is closed."""


class Refused(ToolError):
    """The language server answered a request with an error."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


class TimedOut(ToolError):
    """No answer within the request's deadline (the request was cancelled)."""


class _Pending:
    __slots__ = ("done", "error", "result")

    def __init__(self) -> None:
        self.done = threading.Event()
        self.result: Any = None
        self.error: ToolError | None = None


Answer = Callable[[str, Any], Any]
"""What to answer a request the language server makes of us (`workspace/configuration`); raises LookupError
for a method we do not know."""
Notified = Callable[[str, Any], None]
"""What to do with a notification from the language server (`textDocument/publishDiagnostics`)."""


class Connection:
    """The JSON-RPC connection over a language server's pipes: `to_server` its stdin's write end, `from_server`
    and `errors` the read ends of its stdout and stderr (all owned by the caller, who closes them after
    `close`). `answer` and `notified` run on the reader thread."""

    def __init__(self, to_server: int, from_server: int, errors: int, *, answer: Answer, notified: Notified,
                 name: str) -> None:
        self.name = name
        self._to, self._from, self._errors = to_server, from_server, errors
        for fd in (to_server, from_server, errors):
            os.set_blocking(fd, False)
        self._answer, self._notified = answer, notified
        self._pending: dict[int, _Pending] = {}
        self._lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._next_id = 1
        self._closed: str | None = None
        self._stderr = bytearray()
        self._wake_r, self._wake_w = os.pipe2(os.O_CLOEXEC | os.O_NONBLOCK)
        self._wake: tuple[int, int] | None = (self._wake_r, self._wake_w)
        """The pipe that wakes the reader thread to stop; None once `close` has taken it."""
        self._thread = threading.Thread(target=self._read, name=f"language server {name}", daemon=True)
        self._thread.start()

    @property
    def closed(self) -> str | None:
        """Why the connection ended (in words), None while it is open."""
        return self._closed

    @property
    def stderr(self) -> str:
        """The end of what the language server wrote on stderr."""
        return self._stderr.decode("utf-8", "replace")

    def request(self, method: str, params: Any, *, timeout: float, check: Callable[[], None] | None = None) -> Any:
        """Send a request and wait for its result, at most `timeout` seconds (TimedOut: the request is then
        cancelled); `check` is called every _POLL seconds (a tool call's cancellation: it may raise, and the
        request is cancelled). Refused for an error answer, Gone when the connection ends meanwhile."""
        pending = _Pending()
        with self._lock:
            if self._closed is not None:
                raise Gone(f"the {self.name} language server is not running: {self._closed}")
            number = self._next_id
            self._next_id += 1
            self._pending[number] = pending
        deadline = time.monotonic() + timeout
        sent = False
        try:
            self._send({"jsonrpc": "2.0", "id": number, "method": method, "params": params}, deadline, check)
            sent = True
            while not pending.done.wait(min(_POLL, max(0.0, deadline - time.monotonic()))):
                if check is not None:
                    check()
                if time.monotonic() >= deadline:
                    raise TimedOut(f"the {self.name} language server did not answer {method} within {timeout:g} s")
        except BaseException:
            with self._lock:
                abandoned = self._pending.pop(number, None) is not None
            if abandoned and sent and self._closed is None:
                try:  # (best effort: a server that takes no input is not waited for)
                    self._send({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": number}},
                               time.monotonic() + _POLL)
                except (Gone, TimedOut):
                    pass
            raise
        if pending.error is not None:
            raise pending.error
        return pending.result

    def notify(self, method: str, params: Any, deadline: float | None = None) -> None:
        """Send a notification (Gone if the connection is closed or the language server does not take it; TimedOut
        past `deadline` before any of it is written)."""
        self._send({"jsonrpc": "2.0", "method": method, "params": params}, deadline)

    def close(self, reason: str = "stopped") -> None:
        """End the connection, once (a second call does nothing): the reader thread stops, waiting requests fail
        with Gone. The pipes stay open (their owner closes them once the language server is killed)."""
        self._end(reason)
        with self._lock:
            wake, self._wake = self._wake, None
        if wake is None:
            return
        try:
            os.write(wake[1], b"x")
        except OSError:
            pass
        if threading.current_thread() is not self._thread:
            self._thread.join()
        for fd in wake:
            os.close(fd)

    # -- writing ---------------------------------------------------------------------------------------------
    def _send(self, message: dict[str, Any], deadline: float | None = None, check: Callable[[], None] | None = None,
              ) -> None:
        """Write one message whole. A request's `deadline` and `check` hold while it waits for its turn and for the
        language server to take it: TimedOut (or what `check` raises) before a byte of it is written; once some
        is, a message cut short would break every later frame, so the connection is ended (Gone)."""
        body = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass")
        data = memoryview(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        stuck = time.monotonic() + WRITE_TIMEOUT
        while not self._write_lock.acquire(timeout=_POLL):
            self._waited(deadline, check, message)
        try:
            if self._closed is not None:
                raise Gone(f"the {self.name} language server is not running: {self._closed}")
            whole = len(data)
            with selectors.DefaultSelector() as selector:
                selector.register(self._to, selectors.EVENT_WRITE)
                while data:
                    try:
                        data = data[os.write(self._to, data):]
                        continue
                    except BlockingIOError:
                        pass
                    except OSError as err:
                        self._end(f"its input was closed ({os.strerror(err.errno or errno.EPIPE)})")
                        raise Gone(f"the {self.name} language server is not running: {self._closed}") from None
                    if time.monotonic() > stuck or self._closed is not None:
                        self._end(f"it took no input for {WRITE_TIMEOUT:g} s")
                        raise Gone(f"the {self.name} language server is not running: {self._closed}")
                    try:
                        self._waited(deadline, check, message)
                    except BaseException:
                        if len(data) < whole:
                            self._end("a message to it was cut short (its request was given up)")
                        raise
                    selector.select(_POLL)
        finally:
            self._write_lock.release()

    def _waited(self, deadline: float | None, check: Callable[[], None] | None, message: dict[str, Any]) -> None:
        if check is not None:
            check()
        if deadline is not None and time.monotonic() > deadline:
            raise TimedOut(f"the {self.name} language server did not take {message.get('method')} in time")

    # -- reading (the reader thread) -------------------------------------------------------------------------
    def _read(self) -> None:
        buffer = bytearray()
        with selectors.DefaultSelector() as selector:
            selector.register(self._from, selectors.EVENT_READ)
            selector.register(self._errors, selectors.EVENT_READ)
            selector.register(self._wake_r, selectors.EVENT_READ)
            while self._closed is None:
                for key, _ in selector.select():
                    if key.fd == self._wake_r:
                        return
                    try:
                        chunk = os.read(key.fd, _CHUNK)
                    except BlockingIOError:
                        continue
                    except OSError as err:
                        chunk = b""
                        if key.fd == self._from:
                            self._end(f"its output failed ({os.strerror(err.errno or errno.EIO)})")
                            return
                    if key.fd == self._errors:
                        if not chunk:
                            selector.unregister(key.fd)
                        self._stderr = (self._stderr + chunk)[-STDERR_KEPT:]
                        continue
                    if not chunk:
                        self._end("it exited" + (f": {self._last_words()}" if self._stderr.strip() else ""))
                        return
                    buffer += chunk
                    try:
                        self._take(buffer)
                    except _Broken as broken:
                        self._end(str(broken))
                        return

    def _last_words(self) -> str:
        return self.stderr.strip().splitlines()[-1][:200] if self._stderr.strip() else ""

    def _take(self, buffer: bytearray) -> None:
        """Handle every whole frame at the start of `buffer` and remove it; _Broken for a frame that is not LSP's."""
        while True:
            end = buffer.find(b"\r\n\r\n", 0, MAX_HEADER + 4)
            if end < 0:
                if len(buffer) > MAX_HEADER:
                    raise _Broken(f"it wrote a header longer than {MAX_HEADER} bytes")
                return
            length = None
            for line in bytes(buffer[:end]).split(b"\r\n"):
                field, _, value = line.partition(b":")
                if field.strip().lower() == b"content-length":
                    digits = value.strip()
                    if not digits.isdigit() or not digits.isascii():
                        raise _Broken("it wrote a Content-Length that is not a number")
                    if len(digits) > 20:  # (before int(): thousands of digits raise there)
                        raise _Broken(f"it wrote a Content-Length of {len(digits)} digits (at most {MAX_MESSAGE} bytes are read)")
                    length = int(digits)
            if length is None:
                raise _Broken("it wrote a header without Content-Length")
            if length > MAX_MESSAGE:
                raise _Broken(f"it wrote a message of {length} bytes (at most {MAX_MESSAGE} are read)")
            start = end + 4
            if len(buffer) < start + length:
                return
            body = bytes(buffer[start:start + length])
            del buffer[:start + length]
            try:
                message = json.loads(body)
            except (ValueError, RecursionError):  # (nesting deeper than the parser recurses: not a message of LSP's)
                raise _Broken("it wrote a message that is not JSON, or nested too deep") from None
            if not isinstance(message, dict):
                raise _Broken("it wrote a message that is not a JSON object")
            self._dispatch(message)

    def _dispatch(self, message: dict[str, Any]) -> None:
        method = message.get("method")
        if isinstance(method, str):
            if "id" in message:
                self._serve(message["id"], method, message.get("params"))
            else:
                try:
                    self._notified(method, message.get("params"))
                except (ValueError, TypeError, KeyError, AttributeError):
                    pass  # a notification of a shape we did not expect: dropped, as LSP lets a client do
            return
        number = message.get("id")
        with self._lock:
            pending = self._pending.pop(number, None) if isinstance(number, int) else None
        if pending is None:
            return  # the answer to a request given up (timed out, cancelled)
        error = message.get("error")
        if isinstance(error, dict):
            code = error.get("code")
            pending.error = Refused(code if isinstance(code, int) else 0,
                                    f"the {self.name} language server refused the request: {str(error.get('message'))[:500]}")
        else:
            pending.result = message.get("result")
        pending.done.set()

    def _serve(self, number: Any, method: str, params: Any) -> None:
        """Answer a request of the language server's."""
        try:
            reply: dict[str, Any] = {"jsonrpc": "2.0", "id": number, "result": self._answer(method, params)}
        except LookupError:
            reply = {"jsonrpc": "2.0", "id": number, "error": {"code": METHOD_NOT_FOUND, "message": f"no {method} here"}}
        except Exception:  # (params of a shape the answer did not expect: the reader thread must go on)
            reply = {"jsonrpc": "2.0", "id": number, "error": {"code": INVALID_PARAMS, "message": f"bad params for {method}"}}
        try:
            self._send(reply)
        except Gone:
            pass

    def _end(self, reason: str) -> None:
        with self._lock:
            if self._closed is not None:
                return
            self._closed = reason
            pending, self._pending = self._pending, {}
        for item in pending.values():
            item.error = Gone(f"the {self.name} language server stopped: {reason}")
            item.done.set()


class _Broken(Exception):
    """The language server wrote something that is not LSP's base protocol."""

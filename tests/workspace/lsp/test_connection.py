"""LSP's base protocol (lsp/connection.py) against hostile language servers: real processes over real pipes.

Each fake language server is a small Python script (lsp_support.FRAMING and a body of its own) started by
process.Child in the sandbox of every child, its stdin a pipe of ours (`stdin=`), as servers.py starts
basedpyright. A language server reads a workspace that may be hostile, so each misbehaviour it could show
(hanging, crashing, flooding, a malformed or endless frame, not reading) must end in a clear exception
within its deadline, with bounded memory, and never a thread waiting forever.
"""

from __future__ import annotations

import itertools
import os
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from lsp_support import FRAMING, PYTHON, PYTHON_READABLE, PeakRss, record_thread_deaths

from shipcode_mcp.workspace import process, spawner
from shipcode_mcp.workspace.lsp import connection as connection_module
from shipcode_mcp.workspace.lsp.connection import (
    MAX_HEADER,
    MAX_MESSAGE,
    METHOD_NOT_FOUND,
    STDERR_KEPT,
    Answer,
    Connection,
    Gone,
    Notified,
    Refused,
    TimedOut,
)
from support import wait_for

MIB = 1024 * 1024
_numbers = itertools.count()


def unknown(method: str, params: Any) -> Any:
    """What a client that knows no request of the server's answers."""
    raise LookupError(method)


class Fake:
    """A fake language server (FRAMING, then `body`) run by process.Child in its sandbox, its stdin a pipe of
    ours; our Connection to it; the `fake/...` notifications it sent, in order."""

    def __init__(self, folder: Path, body: str, answer: Answer | None, notified: Notified | None) -> None:
        script = folder / f"fake_{next(_numbers)}.py"
        script.write_text(FRAMING + textwrap.dedent(body))
        self.notes: list[tuple[str, Any]] = []
        self._closed = False
        stdin_r, self.to_server = os.pipe2(os.O_CLOEXEC)
        try:
            self.child = process.Child(None, [PYTHON, "-I", "-S", str(script)], cwd=str(folder),
                                       readable=[str(folder), *PYTHON_READABLE], env={}, timeout=120.0,
                                       what="the fake language server", slot=False, stdin=stdin_r)
        except BaseException:
            os.close(self.to_server)
            raise
        finally:
            os.close(stdin_r)
        self.connection = Connection(self.to_server, self.child.stdout_fd, self.child.stderr_fd,
                                     answer=answer or unknown, notified=notified or self._note, name="fake")

    def _note(self, method: str, params: Any) -> None:
        if method.startswith("fake/"):
            self.notes.append((method, params))

    def reads(self, count: int) -> list[Any]:
        """The first `count` messages the fake server read (it sends each as a `fake/read` notification)."""
        def read() -> list[Any] | None:
            found = [params for method, params in self.notes if method == "fake/read"]
            return found[:count] if len(found) >= count else None
        return wait_for(read, 10, f"the fake server to read {count} messages")

    def close(self, reason: str = "the test ended") -> None:
        """Close the connection (once: a second close would close descriptors numbered as its were)."""
        if not self._closed:
            self._closed = True
            self.connection.close(reason)

    def stop(self) -> None:
        self.close()
        self.child.__exit__(None, None, None)
        os.close(self.to_server)


class Fakes:
    """The fake language servers of a test, stopped at its end."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.started: list[Fake] = []

    def start(self, body: str, *, answer: Answer | None = None, notified: Notified | None = None) -> Fake:
        fake = Fake(self.folder, body, answer, notified)
        self.started.append(fake)
        return fake


@pytest.fixture
def fakes(tmp_path: Path) -> Iterator[Fakes]:
    started = Fakes(tmp_path)
    try:
        yield started
    finally:
        for fake in started.started:
            fake.stop()


@pytest.fixture
def background() -> Iterator[Callable[[Callable[[], Any]], Future[Any]]]:
    """Run a call on another thread (a request waiting while the test does something else)."""
    pool = ThreadPoolExecutor(max_workers=4)
    try:
        yield pool.submit
    finally:
        pool.shutdown(wait=False, cancel_futures=True)  # (a request still waiting ends with its connection)


# -- a well-behaved server -------------------------------------------------------------------------------
ECHO = """
while (request := read()) is not None:
    if "id" not in request:
        continue
    send({"jsonrpc": "2.0", "id": "config-1", "method": "workspace/configuration",
          "params": {"items": [{"section": "python.analysis"}, {"section": "other"}]}})
    configuration = read()
    answer(request, {"method": request["method"], "params": request["params"], "configuration": configuration})
"""


@pytest.mark.parametrize("forked_here", [False, True], ids=["fork-server", "forked-here"])
def test_a_request_is_answered_and_the_server_asks_us_in_between(fakes: Fakes, forked_here: bool,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The round trip, with the server asking us `workspace/configuration` before it answers; over both ways a
    child's stdin pipe is handed to it (the fork server, or a fork of this process where there is none)."""
    if forked_here:
        def unavailable(*args: object, **kwargs: object) -> None:
            raise spawner.Unavailable("test")
        monkeypatch.setattr(spawner.fork_server(), "spawn", unavailable)
    asked: list[tuple[str, Any, str]] = []

    def answer(method: str, params: Any) -> Any:
        asked.append((method, params, threading.current_thread().name))
        if method == "workspace/configuration":
            return [{"asked": item["section"]} for item in params["items"]]
        raise LookupError(method)

    fake = fakes.start(ECHO, answer=answer)
    for number in (1, 2):
        result = fake.connection.request("fake/echo", {"number": number, "nested": [None, True, 1.5]}, timeout=10)
        assert result == {
            "method": "fake/echo", "params": {"number": number, "nested": [None, True, 1.5]},
            "configuration": {"jsonrpc": "2.0", "id": "config-1", "result": [{"asked": "python.analysis"}, {"asked": "other"}]},
        }
    assert [(method, name) for method, _, name in asked] == [("workspace/configuration", "language server fake")] * 2
    assert fake.connection.closed is None


def test_a_request_of_the_server_we_do_not_know_gets_method_not_found(fakes: Fakes) -> None:
    fake = fakes.start("""
        request = read()
        send({"jsonrpc": "2.0", "id": 99, "method": "fake/unknown", "params": {"x": 1}})
        answer(request, read())
        hold()
    """)
    reply = fake.connection.request("fake/ask", {}, timeout=10)
    assert reply["id"] == 99 and "result" not in reply
    assert reply["error"]["code"] == METHOD_NOT_FOUND == -32601
    assert fake.connection.closed is None


def test_an_error_answer_is_refused_with_its_code_and_the_connection_goes_on(fakes: Fakes) -> None:
    fake = fakes.start("""
        request = read()
        send({"jsonrpc": "2.0", "id": request["id"], "error": {"code": -32602, "message": "bad params " + "x" * 5000}})
        request = read()
        send({"jsonrpc": "2.0", "id": request["id"], "error": {"code": "not a number", "message": None}})
        answer(read(), "still here")
        hold()
    """)
    with pytest.raises(Refused, match="bad params") as refused:
        fake.connection.request("fake/first", {}, timeout=10)
    assert refused.value.code == -32602
    assert len(str(refused.value)) < 1000  # the server's message is cut, not carried whole
    with pytest.raises(Refused) as odd:
        fake.connection.request("fake/second", {}, timeout=10)
    assert odd.value.code == 0
    assert fake.connection.request("fake/third", {}, timeout=10) == "still here"


# -- waiting -------------------------------------------------------------------------------------------------
SLOW = """
first = read()
notify("fake/read", first)
cancel = read()
notify("fake/read", cancel)
answer(first, "too late")  # after the cancel: nobody waits for it any more
answer(read(), "second")
hold()
"""
"""Answers the first request only once it is cancelled (too late), then answers the next one."""


def test_a_request_never_answered_times_out_at_its_deadline_and_is_cancelled(fakes: Fakes) -> None:
    fake = fakes.start(SLOW)
    started = time.monotonic()
    with pytest.raises(TimedOut, match=r"did not answer fake/slow within 0\.5 s"):
        fake.connection.request("fake/slow", {"a": 1}, timeout=0.5)
    took = time.monotonic() - started
    assert 0.5 <= took < 2.0, took
    first, cancel = fake.reads(2)
    assert first["method"] == "fake/slow"
    assert cancel == {"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": first["id"]}}
    # The late answer to the cancelled request is dropped: the next request gets its own.
    assert fake.connection.request("fake/next", {}, timeout=10) == "second"
    assert fake.connection.closed is None


class Cancelled(Exception):
    """The tool call that made the request was cancelled."""


def test_a_cancelled_call_stops_waiting_at_once_and_cancels_its_request(fakes: Fakes) -> None:
    fake = fakes.start(SLOW)
    cancel_at = time.monotonic() + 0.3

    def check() -> None:
        if time.monotonic() >= cancel_at:
            raise Cancelled

    with pytest.raises(Cancelled):
        fake.connection.request("fake/slow", {}, timeout=60, check=check)
    assert time.monotonic() - cancel_at < 1.0
    first, cancel = fake.reads(2)
    assert cancel["method"] == "$/cancelRequest" and cancel["params"] == {"id": first["id"]}
    assert fake.connection.request("fake/next", {}, timeout=10) == "second"


def test_a_server_that_exits_mid_request_is_gone_at_once_with_its_last_words(fakes: Fakes) -> None:
    fake = fakes.start("""
        request = read()
        sys.stderr.write("reading the workspace\\nfatal: the workspace is on fire\\n")
        sys.stderr.flush()
        os._exit(3)
    """)
    started = time.monotonic()
    with pytest.raises(Gone, match="fatal: the workspace is on fire") as gone:
        fake.connection.request("fake/doomed", {}, timeout=60)
    assert time.monotonic() - started < 5, "Gone came at the deadline, not when the server exited"
    assert "it exited" in str(gone.value)
    assert fake.connection.closed is not None and "fatal: the workspace is on fire" in fake.connection.closed
    started = time.monotonic()
    with pytest.raises(Gone, match="not running"):
        fake.connection.request("fake/after", {}, timeout=60)
    with pytest.raises(Gone, match="not running"):
        fake.connection.notify("fake/after", {})
    assert time.monotonic() - started < 1


def test_close_fails_a_waiting_request_at_once(fakes: Fakes, background: Callable[[Callable[[], Any]], Future[Any]]) -> None:
    fake = fakes.start("""
        notify("fake/read", read())
        hold()
    """)
    waiting = background(lambda: fake.connection.request("fake/forever", {}, timeout=60))
    fake.reads(1)  # the request is on the server's side: the caller is waiting
    started = time.monotonic()
    fake.close("the server is shutting down")
    with pytest.raises(Gone, match="the server is shutting down"):
        waiting.result(timeout=5)
    assert time.monotonic() - started < 1
    assert fake.connection.closed == "the server is shutting down"
    with pytest.raises(Gone):
        fake.connection.request("fake/after", {}, timeout=60)
    with pytest.raises(Gone):
        fake.connection.notify("fake/after", {})


# -- malformed frames ------------------------------------------------------------------------------------
MALFORMED = [
    pytest.param('write(b"Content-Type: application/vscode-jsonrpc\\r\\n\\r\\n{}")', "without Content-Length",
                 id="no-content-length"),
    pytest.param('write(b"Content-Length: twelve\\r\\n\\r\\n")', "not a number", id="length-not-a-number"),
    pytest.param('write(b"Content-Length: -1\\r\\n\\r\\n")', "not a number", id="negative-length"),
    pytest.param('write(b"Content-Length: 0x20\\r\\n\\r\\n" + b" " * 32)', "not a number", id="hex-length"),
    pytest.param(f'write(b"X" * {MAX_HEADER + 1})', "header longer than", id="endless-header-line"),
    pytest.param(f'write(b"Content-Length: 2\\r\\nX-Padding: " + b"p" * {MAX_HEADER} + b"\\r\\n\\r\\n{{}}")',
                 "header longer than", id="header-too-long"),
    pytest.param(f'write(b"Content-Length: {MAX_MESSAGE + 1}\\r\\n\\r\\n")\n'
                 'for _ in range(100):\n'
                 '    write(b"[" * (1 << 20))', "a message of", id="length-over-max-message"),
    pytest.param(f'write(b"Content-Length: {10 ** 18}\\r\\n\\r\\n")', "a message of", id="length-of-an-exabyte"),
    pytest.param('write(frame(b"{not json"))', "not JSON", id="not-json"),
    pytest.param('write(frame(b\'{"jsonrpc": "2.0", "method": "\\xff\\xfe"}\'))', "not JSON", id="not-utf-8"),
    pytest.param('write(frame(b""))', "not JSON", id="empty-body"),
    pytest.param('write(frame(b\'[{"jsonrpc": "2.0", "id": 1, "result": null}]\'))', "not a JSON object", id="batch-array"),
    pytest.param('write(frame(b\'"just a string"\'))', "not a JSON object", id="string"),
    pytest.param('write(frame(b"null"))', "not a JSON object", id="null"),
]


@pytest.mark.parametrize(("written", "reason"), MALFORMED)
def test_a_malformed_frame_ends_the_connection_and_fails_waiting_requests_at_once(
        fakes: Fakes, written: str, reason: str) -> None:
    """The server reads our request, writes the frame, then stays (so the end is the frame's doing, not an
    exit): the connection ends at once, the request waiting fails, and this process's memory stays put (a
    body announced larger than MAX_MESSAGE, and streamed, is neither read nor made room for)."""
    fake = fakes.start(f"notify('fake/read', read())\n{written}\nhold()\n")
    with PeakRss() as memory:
        started = time.monotonic()
        with pytest.raises(Gone, match=reason):
            fake.connection.request("fake/anything", {}, timeout=60)
        took = time.monotonic() - started
    assert took < 5, took
    assert fake.connection.closed is not None and reason in fake.connection.closed
    assert memory.growth < 32 * MIB, memory.growth
    started = time.monotonic()
    with pytest.raises(Gone):
        fake.connection.request("fake/after", {}, timeout=60)
    assert time.monotonic() - started < 1


def test_frames_are_read_however_they_are_cut_and_stray_messages_are_dropped(fakes: Fakes) -> None:
    """A long (but allowed) header with fields in any case, frames joined in one write, an answer dribbled a
    byte at a time, and between them answers to no request of ours, and notifications of odd shapes: the
    real answer arrives, and the connection stays open."""
    notes: list[tuple[str, Any]] = []

    def notified(method: str, params: Any) -> None:
        if method == "fake/raises":
            raise ValueError("a notification of a shape we did not expect")
        notes.append((method, params))

    prefix = b"content-length: 99\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\nX-Padding: "
    padding = MAX_HEADER - 16 - len(prefix)  # the header without the blank line that ends it: just under MAX_HEADER
    fake = fakes.start(f"""
        request = read()
        body = json.dumps({{"jsonrpc": "2.0", "method": "fake/padded", "params": {{}}}}).encode()
        write(b"content-length: %2d\\r\\nContent-Type: application/vscode-jsonrpc; charset=utf-8\\r\\nX-Padding: "
              % len(body) + b"p" * {padding} + b"\\r\\n\\r\\n" + body)
        together = frame(json.dumps({{"jsonrpc": "2.0", "method": "fake/together", "params": 1}}).encode())
        write(together + frame(json.dumps({{"jsonrpc": "2.0", "method": "fake/together", "params": 2}}).encode()))
        for stray in ({{"jsonrpc": "2.0", "id": 12345, "result": "no such request"}},
                      {{"jsonrpc": "2.0", "id": str(request["id"]), "result": "an id of another type"}},
                      {{"jsonrpc": "2.0", "id": None, "error": {{"code": -32700, "message": "parse error"}}}},
                      {{"jsonrpc": "2.0", "id": [request["id"]], "result": "a list for an id"}},
                      {{"jsonrpc": "2.0", "method": "fake/odd", "params": [1, 2]}},
                      {{"jsonrpc": "2.0", "method": "fake/raises", "params": {{}}}},
                      {{"jsonrpc": "2.0", "method": 5}},
                      {{"jsonrpc": "2.0"}},
                      {{}}):
            send(stray)
        for byte in frame(json.dumps({{"jsonrpc": "2.0", "id": request["id"], "result": "dribbled"}}).encode()):
            write(bytes([byte]))
        hold()
    """, notified=notified)
    assert fake.connection.request("fake/ask", {}, timeout=10) == "dribbled"
    assert notes == [("fake/padded", {}), ("fake/together", 1), ("fake/together", 2), ("fake/odd", [1, 2])]
    assert fake.connection.closed is None


def test_bodies_are_framed_by_bytes_not_characters(fakes: Fakes) -> None:
    """Multi-byte UTF-8 both ways: the fake server reads exactly Content-Length bytes and decodes them strictly
    (a length counted in characters would cut our frame and kill it), and its answer comes right after a
    notification in the same write (a length read as characters would run one frame into the other)."""
    fake = fakes.start("""
        request = read()
        text = request["params"]["text"]
        raw = last_body
        first = frame(json.dumps({"jsonrpc": "2.0", "method": "fake/echo", "params": {"text": text}}, ensure_ascii=False).encode())
        second = frame(json.dumps({"jsonrpc": "2.0", "id": request["id"],
                                   "result": {"text": text, "chars": len(text), "bytes": len(text.encode()),
                                              "raw_utf8": text.encode() in raw}}, ensure_ascii=False).encode())
        write(first + second)
        hold()
    """)
    text = "héllo wörld → 世界 🐍 " * 50 + "\u00e9" * 1000
    result = fake.connection.request("fake/echo", {"text": text}, timeout=10)
    assert result == {"text": text, "chars": len(text), "bytes": len(text.encode()), "raw_utf8": True}
    assert len(text.encode()) > len(text) + 1000
    assert fake.notes == [("fake/echo", {"text": text})]


# -- floods ----------------------------------------------------------------------------------------------
def test_a_flood_of_notifications_before_the_answer_costs_no_memory(fakes: Fakes) -> None:
    """48 MB of window/logMessage (large and small) before the answer: every one is handed on and dropped,
    the answer arrives, and this process's memory grows by far less than the flood."""
    counted = {"notes": 0, "chars": 0}

    def notified(method: str, params: Any) -> None:
        counted["notes"] += 1
        counted["chars"] += len(params["message"])

    fake = fakes.start("""
        request = read()
        big = frame(json.dumps({"jsonrpc": "2.0", "method": "window/logMessage",
                                "params": {"type": 4, "message": "b" * 100_000}}).encode())
        small = frame(json.dumps({"jsonrpc": "2.0", "method": "window/logMessage",
                                  "params": {"type": 4, "message": "s" * 1000}}).encode())
        for _ in range(400):
            write(big)
        for _ in range(8):
            write(small * 1000)
        answer(request, "after the flood")
        hold()
    """, notified=notified)
    with PeakRss() as memory:
        started = time.monotonic()
        assert fake.connection.request("fake/ask", {}, timeout=30) == "after the flood"
        took = time.monotonic() - started
    assert counted == {"notes": 400 + 8000, "chars": 400 * 100_000 + 8000 * 1000}
    assert memory.growth < 24 * MIB, memory.growth
    assert took < 15, took
    assert fake.connection.closed is None


def test_a_flood_of_stderr_keeps_only_its_end_and_requests_are_still_answered(fakes: Fakes) -> None:
    fake = fakes.start("""
        request = read()
        noise = b"noise " * 174_763  # a MB
        for _ in range(50):
            sys.stderr.buffer.write(noise)
        sys.stderr.buffer.write(b"\\nthe end of stderr\\n")
        sys.stderr.flush()
        answer(request, "answered")
        answer(read(), "answered again")
        hold()
    """)
    with PeakRss() as memory:
        assert fake.connection.request("fake/ask", {}, timeout=30) == "answered"
        wait_for(lambda: fake.connection.stderr.endswith("the end of stderr\n"), 10, "the end of stderr")
    assert len(fake.connection.stderr.encode()) <= STDERR_KEPT
    assert "noise noise" in fake.connection.stderr
    assert memory.growth < 24 * MIB, memory.growth
    assert fake.connection.request("fake/again", {}, timeout=10) == "answered again"


@pytest.mark.parametrize("sent_by", ["notify", "request"])
def test_a_server_that_stops_reading_is_dropped_after_the_write_timeout(
        fakes: Fakes, sent_by: str, monkeypatch: pytest.MonkeyPatch,
        background: Callable[[Callable[[], Any]], Future[Any]]) -> None:
    """Its stdin pipe fills and stays full: the write gives up after WRITE_TIMEOUT (not never), the connection
    ends, and a request waiting meanwhile fails too."""
    monkeypatch.setattr(connection_module, "WRITE_TIMEOUT", 1.0)
    fake = fakes.start("""
        notify("fake/read", read())
        hold()
    """)
    waiting = background(lambda: fake.connection.request("fake/small", {}, timeout=60))
    fake.reads(1)
    large = {"data": "x" * (4 * MIB)}
    started = time.monotonic()
    with pytest.raises(Gone, match="took no input for 1 s"):
        if sent_by == "notify":
            fake.connection.notify("fake/large", large)
        else:
            fake.connection.request("fake/large", large, timeout=60)
    took = time.monotonic() - started
    assert 0.9 <= took < 4, took
    with pytest.raises(Gone, match="took no input"):
        waiting.result(timeout=2)
    assert fake.connection.closed is not None and "took no input" in fake.connection.closed


# -- found by these tests ----------------------------------------------------------------------------------
@pytest.fixture
def thread_deaths(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    return record_thread_deaths(monkeypatch)


def ends_at_once(fake: Fake, thread_deaths: list[str]) -> None:
    """A request waiting when the server wrote what it wrote fails with Gone at once, the reader alive till then."""
    started = time.monotonic()
    with pytest.raises((Gone, TimedOut)) as ended:
        fake.connection.request("fake/ask", {}, timeout=2)
    assert not thread_deaths, f"the reader thread died: {thread_deaths}"
    assert isinstance(ended.value, Gone) and time.monotonic() - started < 1.5, ended.value


def test_a_deeply_nested_message_ends_the_connection(fakes: Fakes, thread_deaths: list[str]) -> None:
    fake = fakes.start("""
        read()
        write(frame(b'{"a":' + b"[" * 100_000 + b"]" * 100_000 + b"}"))
        hold()
    """)
    ends_at_once(fake, thread_deaths)


def test_a_content_length_of_thousands_of_digits_ends_the_connection(fakes: Fakes, thread_deaths: list[str]) -> None:
    fake = fakes.start("""
        read()
        write(b"Content-Length: " + b"9" * 5000 + b"\\r\\n\\r\\n")
        hold()
    """)
    ends_at_once(fake, thread_deaths)


def test_a_request_to_a_server_that_reads_nothing_keeps_its_deadline_and_its_cancellation(
        fakes: Fakes, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(connection_module, "WRITE_TIMEOUT", 5.0)
    fake = fakes.start("hold()\n")
    cancel_at = time.monotonic() + 0.5

    def check() -> None:
        if time.monotonic() >= cancel_at:
            raise Cancelled

    started = time.monotonic()
    with pytest.raises((Cancelled, TimedOut, Gone)):
        fake.connection.request("fake/large", {"text": "x" * MIB}, timeout=1.0, check=check)
    took = time.monotonic() - started
    assert took < 2.0, f"a request of 1 s, cancelled at 0.5 s, held its caller {took:.1f} s"

"""The parse workers (parsers.py): confined like every child, cancellable mid-parse, failures remembered."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

pytest.importorskip("ast_grep_py")

from shipcode_mcp.context import Cancelled
from shipcode_mcp.workspace import sandbox
from shipcode_mcp.workspace.code import parsers

STALL = ("(\\" * 40 + "\n") * 1000  # some 30 s of tree-sitter-lua's error recovery (test_parse_attacks.py)


@pytest.fixture
def pool() -> Iterator[parsers.Pool]:
    pool = parsers.Pool(size=1)
    try:
        yield pool
    finally:
        pool.clear()


def _worker_pid(pool: parsers.Pool) -> int:
    assert pool.ask({"op": "ping"}) == "pong"
    return pool._idle[0].child.proc.pid


def test_a_worker_runs_in_the_sandbox_with_its_limits(pool: parsers.Pool) -> None:
    pid = _worker_pid(pool)
    status = Path(f"/proc/{pid}/status").read_text()
    limits = Path(f"/proc/{pid}/limits").read_text()
    assert f"Max address space         {parsers.WORKER_LIMITS.address_space}" in limits
    if sandbox.unavailable_reason() is None:
        assert "NoNewPrivs:\t1" in status  # set to enter the Landlock domain
    assert Path(f"/proc/{pid}/environ").read_bytes() == b""  # none of the server's environment


def test_a_parse_is_cancelled_at_once_and_its_worker_replaced(pool: parsers.Pool) -> None:
    first = _worker_pid(pool)
    cancelled = threading.Event()
    threading.Timer(0.3, cancelled.set).start()

    def check() -> None:
        if cancelled.is_set():
            raise Cancelled()

    started = time.monotonic()
    with pytest.raises(Cancelled):
        pool.ask({"op": "outline", "text": STALL, "language": "lua"}, check)
    assert time.monotonic() - started < 2
    assert pool.stopped == 1 and not Path(f"/proc/{first}").exists()  # killed and reaped
    assert _worker_pid(pool) != first


def test_a_failed_request_is_answered_again_at_once(pool: parsers.Pool) -> None:
    for _ in range(20):  # the worker must have had the CPU for half the deadline (a loaded machine may starve it)
        with pytest.raises(parsers.Failed, match=r"took longer than 0\.5 s") as failed:
            pool.ask({"op": "outline", "text": STALL, "language": "lua"}, timeout=0.5)
        if not isinstance(failed.value, parsers.Starved):
            break
    assert not isinstance(failed.value, parsers.Starved)
    started, workers = time.monotonic(), pool.started
    with pytest.raises(parsers.Failed, match="took longer than"):
        pool.ask({"op": "outline", "text": STALL, "language": "lua"})
    assert time.monotonic() - started < 0.5 and pool.started == workers


@pytest.mark.parametrize("defended", [False, True])
def test_a_deadline_passed_by_a_starved_worker_is_not_remembered(pool: parsers.Pool, monkeypatch: pytest.MonkeyPatch,
                                                                 defended: bool) -> None:
    """A deadline that passed while the worker had no CPU (a loaded machine; here the worker stopped) is no
    fault of the text: it was remembered, and the same small file was refused at once ever after. Control
    (every deadline remembered, as before): it is refused again; with the defence, parsed in a new worker."""
    if not defended:
        monkeypatch.setattr(parsers, "BUSY_SHARE", 0.0)
    pid = _worker_pid(pool)
    os.kill(pid, signal.SIGSTOP)
    request = {"op": "outline", "text": "def f(): pass\n", "language": "python"}
    try:
        with pytest.raises(parsers.Failed, match=r"took longer than 0\.5 s"):
            pool.ask(request, timeout=0.5)
    finally:
        with contextlib.suppress(ProcessLookupError):  # (the failed worker was killed)
            os.kill(pid, signal.SIGCONT)
    if not defended:
        with pytest.raises(parsers.Failed, match="took longer than"):
            pool.ask(request)
        assert pool.started == 1
        return
    assert parsers.symbols_from(pool.ask(request))[0].name == "f"
    assert pool.started == 2
    assert parsers.symbols_from(pool.ask({"op": "outline", "text": "def f(): pass\n", "language": "python"}))[0].name == "f"


def test_a_worker_holds_its_share_of_the_memory_budget_while_it_answers(pool: parsers.Pool) -> None:
    from shipcode_mcp.workspace import process
    from support import wait_for

    before = process.memory.reserved
    stop = threading.Event()
    outcome: list[BaseException] = []

    def check() -> None:
        if stop.is_set():
            raise Cancelled()

    def parse() -> None:
        try:
            pool.ask({"op": "outline", "text": STALL, "language": "lua"}, check)
        except BaseException as err:  # (kept for the assertion below)
            outcome.append(err)

    thread = threading.Thread(target=parse)
    thread.start()
    try:
        wait_for(lambda: process.memory.reserved >= before + parsers.WORKER_LIMITS.address_space, 10,
                 "the worker's reservation")
    finally:
        stop.set()
        thread.join(10)
    assert isinstance(outcome[0], Cancelled)
    assert process.memory.reserved == before


NESTED_JAVA = "".join(f"class C{i}{{" for i in range(2000)) + "}" * 2000
"""25 KB whose outline is some 10 MB of JSON: every class's qualified name holds all the names around it."""


@pytest.mark.parametrize("bounded", [False, True])
def test_an_answer_larger_than_the_bound_is_not_read(pool: parsers.Pool, monkeypatch: pytest.MonkeyPatch,
                                                     bounded: bool) -> None:
    """A worker's answer was read whole, whatever its size (100 KB of nested classes: 184 MB, the server at
    550 MB). Control (no bound): this answer is more than 8 MiB and is read; with the bound it fails the
    request after its 4-byte header, and the next request gets a new worker."""
    read: list[int] = []
    receive = parsers._Worker._receive

    def counted(worker: parsers._Worker, size: int, check: Callable[[], None] | None, deadline: float) -> bytes:
        data = receive(worker, size, check, deadline)
        read.append(len(data))
        return data

    monkeypatch.setattr(parsers._Worker, "_receive", counted)
    monkeypatch.setattr(parsers, "MAX_REPLY", 8 * sandbox.MIB if bounded else 1 << 32)
    if not bounded:
        assert len(parsers.symbols_from(pool.ask({"op": "outline", "text": NESTED_JAVA, "language": "java"}))) == 1
        assert max(read) > 8 * sandbox.MIB
        return
    with pytest.raises(parsers.Failed, match="MiB"):
        pool.ask({"op": "outline", "text": NESTED_JAVA, "language": "java"})
    assert read == [4]
    assert pool.stopped == 1 and pool.ask({"op": "ping"}) == "pong"

"""tree-sitter work, done in a small pool of sandboxed worker processes (worker.py), never in the server.

A grammar fed hostile text can abort the process that parses it (a C assertion in tree-sitter-ruby's
scanner: SIGABRT on 3 KB of heredocs) or run for minutes (error recovery over 80 KB of `(\\` as Lua).
In the server the first killed it and the second held the GIL, so nothing else was answered, ping
included. A worker is a child like rg and git (process.Child: the one spawn point, its Landlock domain
and resource limits, no writes, a memory limit); each request has a deadline and is cancellable: a
worker that aborts, runs out of memory or passes its deadline is killed, the request fails with
`Skipped` (one file of a search of many is counted as skipped; a tool on one file answers isError),
and the next request starts a new worker. Workers are started when first needed (start-up never pays
for them) and kept, at most MAX_WORKERS, for later requests: one costs a request's JSON over a pipe
(some 0.1 ms for a 30 KB file), against a parse's milliseconds, and parses no longer hold the server's GIL.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import select
import signal
import struct
import sys
import sysconfig
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from importlib.util import find_spec
from typing import Any

from ...primitives import ToolError
from .. import process
from ..sandbox import MIB, Limits
from ..text import printable
from .symbols import Symbol

PARSE_TIMEOUT = 10.0
"""A request (one file's parse and the work on its tree) taking longer is stopped: 512 KiB of real code
parses in some 0.05 s, of random punctuation in 2.5 s (the worst real case measured)."""
MAX_WORKERS = max(1, min(4, os.cpu_count() or 1))
"""Workers running at once: parses of concurrent calls go on in parallel, up to this many."""
WORKER_LIMITS = Limits(address_space=1024 * MIB, cpu_seconds=3600)
"""A worker's resource limits: 512 KiB of random C++ punctuation, outlined and then matched by `$A`, took a
worker to 217 MB of address space (its peak). While it answers a request, a worker holds this much of the
children's one memory budget (process.memory), as rg and git do while they run."""
WORKER_CPU_BUDGET = 1800.0
"""A worker that spent this long on requests is retired (before its CPU limit would stop it mid-request)."""
_HEADER = struct.Struct(">I")
_PROGRAM = os.path.join(os.path.dirname(os.path.abspath(__file__)), "worker.py")
_POLL = 0.05
"""How often a wait for a worker looks for a cancellation."""
STDERR_KEPT = 4096
"""How much of the end of a worker's stderr is kept (for the message when it dies)."""
STDERR_SHOWN = 200
"""The most of its last line a message shows."""
MAX_REPLY = 64 * MIB
"""A worker's answer is read only up to this size; a larger one fails the request (and the worker is replaced).
Outlines grow with the square of nesting (each symbol carries its qualified name): 100 KB of nested Java
classes made a 184 MB answer, which the server read whole and parsed (550 MB), four calls at once four
times that; a real 512 KiB file's outline is a few MB."""
MAX_FAILURES = 1024
"""Requests remembered as failed (by a digest of the whole request: the same text, language and question),
answered again at once rather than by another crash or another wait for the deadline."""


def _no_check() -> None:
    """A wait that nothing cancels."""


class Failed(ToolError):
    """The worker could not do the request: it crashed, ran out of time or memory, or the work failed."""


class Starved(Failed):
    """The deadline passed while the worker had little of the CPU (a loaded machine, a stopped worker): the
    text may parse at once another time, so this failure is not remembered."""


BUSY_SHARE = 0.25
"""A deadline is the text's fault (and remembered) when the worker ran on the CPU at least this share of it:
2.5 s of the 10 s, the longest a real 512 KiB text was seen to parse (a worker on this loaded 2-core machine
had a third of a core)."""


def _cpu_seconds(pid: int) -> float | None:
    """The CPU time a process has used (user and system), from /proc; None where it cannot be read."""
    try:
        fields = process.stat_fields(pid)
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def _signal_name(code: int) -> str:
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


class _Worker:
    """One worker process and the two pipes to it."""

    def __init__(self) -> None:
        requests_r, self.requests = os.pipe2(os.O_CLOEXEC)
        try:
            binary = os.path.realpath(sys.executable)
            self.child = process.Child(None, [binary, "-I", "-S", "-B", _PROGRAM, str(requests_r), *_paths()],
                                       cwd="/", readable=_readable(), limits=WORKER_LIMITS, env={},
                                       pass_fds=(requests_r,), timeout=PARSE_TIMEOUT, what="the parser", slot=False)
        except BaseException:
            os.close(self.requests)
            raise
        finally:
            os.close(requests_r)
        os.set_blocking(self.requests, False)
        self.replies = self.child.stdout_fd
        os.set_blocking(self.child.stderr_fd, False)
        self.said = b""
        """The end of what the worker wrote on stderr (a grammar's assertion message), read after each
        request so that the pipe never fills."""
        self.spent = 0.0
        self._cpu: float | None = None
        """The worker's CPU time when the current request was sent (None: not known)."""
        self._timeout = PARSE_TIMEOUT

    def close(self) -> None:
        """Kill the worker (whatever it is doing) and release its pipes."""
        self.child.kill()
        os.close(self.requests)
        self.child.__exit__(None, None, None)

    def ask(self, request: bytes, check: Callable[[], None] | None, timeout: float) -> dict[str, Any]:
        """Send one request and wait for its answer, at most `timeout` seconds; `check` (a request's
        cancellation) is called every _POLL seconds. Failed when the worker dies or times out (it must
        then be closed); Cancelled from `check`."""
        started = time.monotonic()
        deadline = started + timeout
        self._cpu = _cpu_seconds(self.child.proc.pid)
        self._timeout = timeout
        try:
            self._send(_HEADER.pack(len(request)) + request, check, deadline)
            size = _HEADER.unpack(self._receive(_HEADER.size, check, deadline))[0]
            if size > MAX_REPLY:
                raise Failed(f"could not be parsed: the answer would be {size // MIB} MiB (at most "
                             f"{MAX_REPLY // MIB} MiB; code nested this deep makes an answer that grows with the square of its depth)")
            body = self._receive(size, check, deadline)
        finally:
            self.spent += time.monotonic() - started
            self._drain()
        answer: dict[str, Any] = json.loads(body.decode("utf-8", "surrogatepass"))
        return answer

    def _wait(self, fd: int, events: int, check: Callable[[], None] | None, deadline: float) -> None:
        poll = select.poll()
        poll.register(fd, events)
        while True:
            if check is not None:
                check()
            left = deadline - time.monotonic()
            if left <= 0:
                message = f"took longer than {self._timeout:g} s to parse and was stopped"
                now = _cpu_seconds(self.child.proc.pid)
                if self._cpu is not None and now is not None and now - self._cpu < BUSY_SHARE * self._timeout:
                    raise Starved(message)
                raise Failed(message)
            if poll.poll(max(1, int(min(left, _POLL) * 1000))):
                return

    def _send(self, data: bytes, check: Callable[[], None] | None, deadline: float) -> None:
        view = memoryview(data)
        while view:
            self._wait(self.requests, select.POLLOUT, check, deadline)
            try:
                view = view[os.write(self.requests, view):]
            except BlockingIOError:
                continue
            except BrokenPipeError:
                raise self._died() from None

    def _receive(self, size: int, check: Callable[[], None] | None, deadline: float) -> bytes:
        parts: list[bytes] = []
        while size:
            self._wait(self.replies, select.POLLIN, check, deadline)
            chunk = os.read(self.replies, min(size, 1 << 20))
            if not chunk:
                raise self._died()
            parts.append(chunk)
            size -= len(chunk)
        return b"".join(parts)

    def _drain(self) -> None:
        """Read what the worker wrote on stderr so far, keeping the end of it."""
        while True:
            try:
                chunk = os.read(self.child.stderr_fd, 1 << 16)
            except (BlockingIOError, InterruptedError):
                return
            if not chunk:
                return
            self.said = (self.said + chunk)[-STDERR_KEPT:]

    def _died(self) -> Failed:
        """Why the worker ended (it closed its output: it exited or was killed), with the last line it
        wrote on stderr (tree-sitter's failed assertion, say)."""
        self.child.kill()
        code = self.child.proc.wait()
        stopped = self.child.stopped(code)
        if stopped is not None:
            return Failed(stopped)
        self._drain()
        lines = self.said.decode("utf-8", "replace").strip().splitlines()
        said = f": {printable(lines[-1][-STDERR_SHOWN:])}" if lines else ""
        how = f"was killed by {_signal_name(code)}" if code < 0 else f"exited with status {code}"
        return Failed(f"could not be parsed: the parser {how} (a grammar's failure on this text{said})")


def _paths() -> list[str]:
    """The folders of the packages the worker imports: this one's, ast-grep-py's and, when installed (the
    `code` extra brings it), pyflakes' (diagnostics of Python)."""
    spec = find_spec("ast_grep_py")
    if spec is None or spec.origin is None:
        raise ToolError("The code tools need ast-grep-py (pip install 'shipcode-mcp[code]')")
    package = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    flakes = find_spec("pyflakes")
    return [package, os.path.dirname(spec.origin)] + (
        [os.path.dirname(flakes.origin)] if flakes is not None and flakes.origin is not None else [])


def _readable() -> list[str]:
    """What the worker may read: Python's standard library (and its shared library), the packages it imports."""
    paths = {sysconfig.get_path("stdlib")}
    library = sysconfig.get_config_var("INSTSONAME") if sysconfig.get_config_var("Py_ENABLE_SHARED") else None
    if library:
        paths.add(os.path.join(sysconfig.get_config_var("LIBDIR"), library))
    return sorted(path for path in {*paths, *_paths()} if os.path.exists(path))


class Pool:
    """At most `size` workers; a request takes an idle one (or starts one), and gives it back after."""

    def __init__(self, size: int = MAX_WORKERS) -> None:
        self.size = size
        self._idle: list[_Worker] = []
        self._running = 0
        self._ready = threading.Condition()
        self._owner = os.getpid()
        self._failures: OrderedDict[bytes, str] = OrderedDict()
        self.started = 0
        self.stopped = 0

    def ask(self, request: dict[str, Any], check: Callable[[], None] | None = None,
            timeout: float | None = None) -> Any:
        """The answer to one request; Failed when the worker failed it (it is then replaced), at once when
        the same request failed before."""
        data = json.dumps(request, ensure_ascii=False).encode("utf-8", "surrogatepass")
        digest = hashlib.blake2b(data, digest_size=16).digest()
        with self._ready:
            failed = self._failures.get(digest)
        if failed is not None:
            raise Failed(failed)
        worker = self._take(check)
        healthy = False
        try:
            process.memory.take(WORKER_LIMITS.address_space, check or _no_check)
            try:
                answer = worker.ask(data, check, PARSE_TIMEOUT if timeout is None else timeout)
            finally:
                process.memory.give(WORKER_LIMITS.address_space)
            healthy = worker.spent < WORKER_CPU_BUDGET
        except Starved:
            raise
        except Failed as err:
            self._remember(digest, str(err))
            raise
        finally:
            self._give(worker, healthy)
        if "error" in answer:
            message = f"could not be parsed ({printable(str(answer['error']))})"
            self._remember(digest, message)
            raise Failed(message)
        return answer["ok"]

    def _remember(self, digest: bytes, message: str) -> None:
        with self._ready:
            self._failures[digest] = message
            while len(self._failures) > MAX_FAILURES:
                self._failures.popitem(last=False)

    def _take(self, check: Callable[[], None] | None) -> _Worker:
        with self._ready:
            if self._owner != os.getpid():  # a fork of the server: the workers (their pipes) are its parent's
                self._owner, self._idle, self._running = os.getpid(), [], 0
            while not self._idle and self._running >= self.size:
                if check is not None:
                    check()
                self._ready.wait(_POLL)
            if self._idle:
                return self._idle.pop()
            self._running += 1
        try:
            worker = _Worker()
        except BaseException:
            with self._ready:
                self._running -= 1
                self._ready.notify()
            raise
        self.started += 1
        return worker

    def _give(self, worker: _Worker, healthy: bool) -> None:
        if not healthy:
            self.stopped += 1
            try:
                worker.close()
            except OSError as err:
                if err.errno != errno.EBADF:
                    raise
        with self._ready:
            if healthy:
                self._idle.append(worker)
            else:
                self._running -= 1
            self._ready.notify()

    def clear(self) -> None:
        """Stop the idle workers and forget the failures (a test's clean slate)."""
        with self._ready:
            self._failures.clear()
            idle, self._idle = self._idle, []
            self._running -= len(idle)
        for worker in idle:
            worker.close()


POOL = Pool()


def outline(text: str, language: str, check: Callable[[], None] | None = None) -> list[Symbol]:
    """The outline of `text` (as outline.outline), made in a worker."""
    return symbols_from(POOL.ask({"op": "outline", "text": text, "language": language}, check))


def symbols_from(rows: list[list[Any]]) -> list[Symbol]:
    """The outline a worker sent flat (worker.flat_outline), nested again (children before parents,
    without recursion)."""
    children: list[list[Symbol]] = [[] for _ in rows]
    built: list[Symbol | None] = [None] * len(rows)
    for index in range(len(rows) - 1, -1, -1):  # a child always comes after its parent
        parent, name, qualified, kind, line, end_line, signature, def_line = rows[index]
        built[index] = symbol = Symbol(name, qualified, kind, line, end_line, signature,
                                       tuple(reversed(children[index])), def_line)
        if parent >= 0:
            children[parent].append(symbol)
    return [symbol for symbol, row in zip(built, rows, strict=True) if row[0] < 0 and symbol is not None]

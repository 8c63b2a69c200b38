"""Child processes for tools (rg, git): sandboxed, bounded output, a deadline, killed when cancelled.

Every child of the workspace starts here and nowhere else (`_start`: by the fork server of spawner.py,
or, where it cannot, forked here with the same confinement), but run_command's bubblewrap, whose sandbox is
namespaces around a whole process tree (run_command.py, command_sandbox.py), inside the kernel sandbox (sandbox.py):
it reads only beneath the paths its caller names, writes nothing, runs nothing but itself, and has
resource limits. A child runs in its own session and is killed with its whole process group, so
nothing it started outlives the request. stdout is read as it comes (search streams it); stderr is
kept, bounded, for error messages.
"""

from __future__ import annotations

import errno
import os
import selectors
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

from ..primitives import ToolError
from . import sandbox, spawner
from .sandbox import Limits

if TYPE_CHECKING:
    from ..context import Context

DEFAULT_TIMEOUT = 60.0
MAX_STDERR = 64 * 1024
MAX_LINE_BYTES = 1 << 20
"""At most this much of one output line is held (one 200 MB line must not cost 200 MB): the rest is
dropped, but for its last TAIL_BYTES, and the line comes as a `CutLine`."""
TAIL_BYTES = 1 << 16
_CHUNK = 1 << 16
MAX_CHILDREN = max(4, 2 * (os.cpu_count() or 1))
"""Children running at once, whatever the number of requests: 500 queued searches would otherwise be
hundreds of rg processes (each with its threads) on a few cores, and every start is a fork that holds
the interpreter's lock, so the reading loop itself would wait. The others wait for a slot, cancellable."""
_slots = threading.BoundedSemaphore(MAX_CHILDREN)
class MemoryBudget:
    """The memory of every child at once. Each child's own limit (RLIMIT_AS) bounds it alone, not their sum:
    four git_status calls on a repository with a 50 MB .gitignore took 6.95 GiB together (16 GiB possible
    on a 2-core machine). A child reserves its address-space limit before it starts and gives it back when it
    ends; one that does not fit beside those running waits for its turn (cancellable). One alone always runs."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.reserved = 0
        self._changed = threading.Condition()

    def take(self, size: int, waiting: Callable[[], None]) -> None:
        """Reserve `size` bytes; `waiting` is called before each 50 ms of waiting (and may raise to stop it: at
        once, for a child that would rather not wait)."""
        with self._changed:
            while self.reserved and self.reserved + size > self.total:
                waiting()
                self._changed.wait(0.05)
            self.reserved += size

    def give(self, size: int) -> None:
        with self._changed:
            self.reserved -= size
            self._changed.notify_all()


MEMORY_BUDGET = MAX_CHILDREN * sandbox.CHILD_LIMITS.address_space
"""The address space of every child at once (8 GiB on up to 2 cores): MAX_CHILDREN children of the usual
limit (rg's 2 GiB), but only half as many gits (4 GiB each). Before, they could take 16 GiB together."""
memory = MemoryBudget(MEMORY_BUDGET)
CHILD_ENVIRONMENT = ("PATH", "HOME", "XDG_CONFIG_HOME", "LANG", "LANGUAGE", "TZ")
"""The variables of the server's environment a child gets (and `LC_*`): where the user's git configuration
and ignore files are, the language and time zone. Nothing else: the server's environment may hold tokens
(an HTTP server's, a cloud's), and a compromised rg or git must find none."""


def child_environment() -> dict[str, str]:
    """The environment of a child whose caller gives none, and the base of one it gives."""
    return {key: value for key, value in os.environ.items() if key in CHILD_ENVIRONMENT or key.startswith("LC_")}


FIFO_LOOK_INTERVAL = 0.5
"""How often a running child is looked at for a thread waiting to open a named pipe (`waits_on_a_fifo`)."""
_FIFO_WAITS = ("fifo_open", "wait_for_partner")
"""Where in the kernel a thread opening a FIFO sleeps until the other end is opened (/proc/TID/wchan)."""
MAX_LOOKED_AT = 64


def waits_on_a_fifo(pid: int) -> bool:
    """Whether a thread of `pid`, or of a process it started (at most MAX_LOOKED_AT processes), sleeps opening
    a named pipe. rg and git open every folder's .gitignore (and git its attributes): a FIFO by that name
    deep in a tree, too many to look for before they start, would hold one of the MAX_CHILDREN slots until
    the deadline (30 to 120 s) and starve every other root. A child of ours has no other reason to open one."""
    todo, looked = [pid], 0
    while todo and looked < MAX_LOOKED_AT:
        current = todo.pop()
        looked += 1
        try:
            tasks = os.listdir(f"/proc/{current}/task")
        except OSError:
            continue  # gone, or no /proc
        for task in tasks:
            folder = f"/proc/{current}/task/{task}/"
            try:
                with open(folder + "wchan", encoding="ascii", errors="replace") as wchan:
                    if wchan.read() in _FIFO_WAITS:
                        return True
                with open(folder + "children", encoding="ascii") as children:
                    todo.extend(int(child) for child in children.read().split())
            except (OSError, ValueError):
                continue  # a thread that ended meanwhile
    return False


def stat_fields(pid: int) -> list[str]:
    """The fields of /proc/PID/stat after the process's name (state first, then the parent...): the name is
    in parentheses and may hold spaces and ')' itself, so it ends at the last ')'. OSError (ENOENT: gone)
    or ValueError where they cannot be read."""
    with open(f"/proc/{pid}/stat", "rb") as stat:
        fields = stat.read().rpartition(b")")[2].decode("ascii").split()
    if not fields:
        raise ValueError(f"/proc/{pid}/stat has no fields after the name")
    return fields


class CutLine(bytes):
    """The head of an output line longer than the limit; `size` is the whole line's length in bytes and
    `tail` its last TAIL_BYTES (where rg's --json puts a match's line number)."""

    size: int
    tail: bytes

    def __new__(cls, head: bytes, size: int, tail: bytes) -> CutLine:
        line = super().__new__(cls, head)
        line.size, line.tail = size, tail
        return line


class Busy(ToolError):
    """A child that would rather not start than wait for its turn (`Child(wait=False)`) found none free."""


class Child:
    """One running command. Use as a context manager: leaving it kills the child if still running.

    `readable` lists the folders (and files) the child may read beneath: the roots it works in, and
    whatever else its caller vouches for. Nothing else outside the system's libraries is readable to it.
    `writable` lists the folders it may change beneath (none for a reader: only /dev/null is writable).
    Without a request context (`ctx` None) it cannot be cancelled but still has its deadline. Its stdin is
    /dev/null, or `stdin` (a pipe's read end) for a child that takes requests there (a language server).
    """

    def __init__(self, ctx: Context | None, argv: Sequence[str], *, cwd: str, readable: Sequence[str],
                 executable: Sequence[str] = (), limits: Limits | None = None, env: Mapping[str, str] | None = None,
                 pass_fds: Sequence[int] = (), timeout: float = DEFAULT_TIMEOUT, what: str | None = None,
                 slot: bool = True, writable: Sequence[str] = (), stdin: int | None = None, wait: bool = True) -> None:
        self.what = what or os.path.basename(argv[0])
        self.timeout = timeout
        self._ctx = ctx
        self._stderr = bytearray()
        # The program granted in the sandbox is the one run: found once, on PATH if need be, then named absolutely.
        binary = argv[0] if os.path.isabs(argv[0]) else shutil.which(argv[0])
        if binary is None or not os.path.isfile(binary):
            raise ToolError(f"Could not start {self.what}: {os.strerror(errno.ENOENT)}")
        argv = [binary, *argv[1:]]
        spawner.fork_server().warm()
        try:
            confined = sandbox.confine(binary, readable, limits or sandbox.CHILD_LIMITS, executable, writable)
        except OSError as err:
            raise ToolError(f"Could not prepare the sandbox of {self.what}: {err.strerror or err}") from None
        self._deadline = time.monotonic() + timeout
        self._slot = False
        self._memory = (limits or sandbox.CHILD_LIMITS).address_space
        self._reserved = False
        try:
            if slot:  # (a long-lived child that counts apart, the parse workers, takes none)
                self._take_slot(wait)
            with confined:
                self.proc, self._out, self._err = _start(argv, cwd, child_environment() if env is None else env,
                                                         confined, pass_fds, stdin)
        except OSError as err:
            self._give_slot()
            raise ToolError(f"Could not start {self.what}: {os.strerror(err.errno) if err.errno else err}") from None
        except (subprocess.SubprocessError, spawner.SandboxRefused):  # the sandbox could not be entered: the child never ran
            self._give_slot()
            raise ToolError(f"Could not start {self.what} in its sandbox") from None
        except BaseException:
            self._give_slot()
            confined.close()
            raise
        if ctx is not None:
            ctx.on_cancel(self.kill)

    def _take_slot(self, wait: bool) -> None:
        """Wait for one of the MAX_CHILDREN slots, then for its share of the memory budget; the request's
        cancellation and deadline still hold. Without `wait`, Busy unless both are free at once."""
        while not _slots.acquire(timeout=0.05 if wait else 0):
            if not wait:
                self._busy()
            self._waiting()
        self._slot = True
        memory.take(self._memory, self._waiting if wait else self._busy)
        self._reserved = True

    def _busy(self) -> None:
        raise Busy(f"{self.what} was not started: every slot for a child is in use")

    def _waiting(self) -> None:
        if self._ctx is not None:
            self._ctx.check_cancelled()
        if time.monotonic() > self._deadline:
            raise ToolError(f"{self.what} waited longer than {self.timeout:g} s for its turn (too many requests "
                            "at once) and was not started")

    def _give_slot(self) -> None:
        if self._reserved:
            self._reserved = False
            memory.give(self._memory)
        if self._slot:
            self._slot = False
            _slots.release()

    @property
    def stdout_fd(self) -> int:
        """The read end of the child's stdout, for a caller that reads it its own way (a worker's answers)."""
        return self._out

    @property
    def stderr_fd(self) -> int:
        """The read end of the child's stderr, for a caller that reads it its own way."""
        return self._err

    def __enter__(self) -> Child:
        return self

    def __exit__(self, *exc: object) -> None:
        self.kill()
        self.proc.wait()
        self._give_slot()
        for fd in (self._out, self._err):
            os.close(fd)

    def kill(self) -> None:
        """Kill the child and everything it started; harmless once it has exited."""
        self.proc.kill()

    def chunks(self) -> Iterator[bytes]:
        """stdout as it arrives, until EOF; raises Cancelled if the request was cancelled meanwhile."""
        out, err = self._out, self._err
        with selectors.DefaultSelector() as selector:
            selector.register(out, selectors.EVENT_READ)
            selector.register(err, selectors.EVENT_READ)
            open_fds = 2
            look = time.monotonic() + FIFO_LOOK_INTERVAL
            while open_fds:
                now = time.monotonic()
                remaining = self._deadline - now
                if remaining <= 0:
                    self.kill()
                    raise ToolError(f"{self.what} took longer than {self.timeout:g} s and was stopped; narrow the request")
                if now >= look:
                    look = now + FIFO_LOOK_INTERVAL
                    if waits_on_a_fifo(self.proc.pid):
                        self.kill()
                        raise ToolError(f"{self.what} stopped: it was opening a named pipe (FIFO) in the workspace (one "
                                        "named .gitignore, .ignore or like a file it reads), which would have held it "
                                        "until its deadline; remove the FIFO, or narrow the request to a folder "
                                        "without it")
                for key, _ in selector.select(min(remaining, look - now)):
                    data = os.read(key.fd, _CHUNK)
                    if not data:
                        selector.unregister(key.fd)
                        open_fds -= 1
                    elif key.fd == err:
                        if len(self._stderr) < MAX_STDERR:
                            self._stderr += data[: MAX_STDERR - len(self._stderr)]
                    else:
                        yield data
        if self._ctx is not None:
            self._ctx.check_cancelled()

    def lines(self, limit: int = MAX_LINE_BYTES) -> Iterator[bytes]:
        """stdout line by line (without the newline); a line longer than `limit` bytes comes as a CutLine
        of its first `limit` bytes, so memory is bounded by the limit, not by the line."""
        partial: list[bytes] = []  # the head (at most `limit` bytes) of a line not yet ended
        held = size = 0  # bytes in `partial`; bytes of that line so far
        tail = b""  # that line's last TAIL_BYTES so far
        for chunk in self.chunks():
            *ended, rest = chunk.split(b"\n")
            for piece in ended:
                whole = size + len(piece)
                if size:  # the end of a line begun in an earlier chunk
                    partial.append(piece[:limit - held])
                    tail, piece = tail + piece, b"".join(partial)
                    partial, held, size = [], 0, 0
                else:
                    tail = piece
                yield piece if whole <= limit else CutLine(piece[:limit], whole, tail[-TAIL_BYTES:])
                tail = b""
            if rest:
                keep = rest[:limit - held]
                if keep:
                    partial.append(keep)
                    held += len(keep)
                size += len(rest)
                tail = (tail + rest)[-TAIL_BYTES:]
        if size:
            head = b"".join(partial)
            yield head if size <= limit else CutLine(head, size, tail)

    def wait(self) -> int:
        """The exit status (after stdout was read to its end, or the child was killed). What the child said on
        stderr and was not yet read (a reader that stopped early, with stdout's lines ready first) is read now."""
        code = self.proc.wait()
        self._drain_stderr()
        if self._ctx is not None:
            self._ctx.check_cancelled()
        return code

    def _drain_stderr(self) -> None:
        """Read what is left in the stderr pipe without waiting: the child has exited, but a descendant of it
        could still hold the pipe open (then only what is there now is kept)."""
        os.set_blocking(self._err, False)
        try:
            while len(self._stderr) < MAX_STDERR:
                data = os.read(self._err, _CHUNK)
                if not data:
                    break
                self._stderr += data[: MAX_STDERR - len(self._stderr)]
        except BlockingIOError:
            pass
        finally:
            os.set_blocking(self._err, True)

    def stopped(self, code: int) -> str | None:
        """Why the child was stopped by one of its limits (memory, CPU time), in words; None otherwise."""
        return limit_message(self.what, code, self.stderr)

    def finish(self, truncated: bool) -> int:
        """The exit status (as wait); a child stopped by one of its limits is a ToolError that says so,
        unless it was killed for printing too much (`truncated`)."""
        code = self.wait()
        if not truncated:
            stopped = self.stopped(code)
            if stopped is not None:
                raise ToolError(stopped)
        return code

    @property
    def stderr(self) -> str:
        return self._stderr.decode("utf-8", "replace")


class Process(Protocol):
    """A started child, whoever forked it: `kill()` kills its whole process group."""

    @property
    def pid(self) -> int: ...

    @property
    def returncode(self) -> int | None: ...

    def kill(self) -> None: ...

    def wait(self, timeout: float | None = None) -> int: ...


class Forked:
    """A child this process forked itself (where the fork server cannot be used)."""

    __slots__ = ("_popen", "pid")

    def __init__(self, popen: subprocess.Popen[bytes]) -> None:
        self._popen = popen
        self.pid = popen.pid

    @property
    def returncode(self) -> int | None:
        return self._popen.returncode

    def kill(self) -> None:
        if self._popen.returncode is None:
            spawner.kill_group(self.pid)

    def wait(self, timeout: float | None = None) -> int:
        return self._popen.wait(timeout)


def _start(argv: Sequence[str], cwd: str, env: Mapping[str, str], confined: sandbox.Confinement,
           pass_fds: Sequence[int], stdin: int | None = None) -> tuple[Process, int, int]:
    """Start a child (by the fork server where it can, else by forking here): the child and the read ends
    of its stdout and stderr pipes. Its stdin is `stdin` when given, else /dev/null."""
    try:
        return spawner.fork_server().spawn(argv, cwd=cwd, env=env, confinement=confined, pass_fds=pass_fds,
                                           stdin=stdin)
    except spawner.Unavailable:
        pass
    out_r, out_w = os.pipe2(os.O_CLOEXEC)
    err_r, err_w = os.pipe2(os.O_CLOEXEC)
    try:
        popen = subprocess.Popen(list(argv), cwd=cwd, env=env, pass_fds=tuple(pass_fds),
                                 stdin=subprocess.DEVNULL if stdin is None else stdin,
                                 stdout=out_w, stderr=err_w, start_new_session=True, preexec_fn=confined)
    except BaseException:
        os.close(out_r)
        os.close(err_r)
        raise
    finally:
        os.close(out_w)
        os.close(err_w)
    return Forked(popen), out_r, err_r


class Completed:
    __slots__ = ("returncode", "stderr", "stdout", "truncated")

    def __init__(self, stdout: bytes, returncode: int, stderr: str, truncated: bool) -> None:
        self.stdout = stdout
        self.returncode = returncode
        self.stderr = stderr
        self.truncated = truncated


def limit_message(what: str, code: int, stderr: str) -> str | None:
    """A child killed by a resource limit, said plainly: the answer it gave is not to be trusted."""
    if code == -signal.SIGXCPU:
        return f"{what} stopped: it used up its CPU time limit"
    if code == -signal.SIGXFSZ:
        return f"{what} stopped: it tried to write a file, which it may not"
    lowered = stderr.lower()
    if code != 0 and ("memory allocation" in lowered or "out of memory" in lowered or "cannot allocate" in lowered):
        return (f"{what} stopped: it reached its memory limit (a file with a very long line, or a very large "
                "object); narrow the request with path or glob")
    return None


def run(ctx: Context | None, argv: Sequence[str], *, cwd: str, readable: Sequence[str], limit: int,
        executable: Sequence[str] = (), limits: Limits | None = None, env: Mapping[str, str] | None = None,
        pass_fds: Sequence[int] = (), timeout: float = DEFAULT_TIMEOUT, what: str | None = None,
        writable: Sequence[str] = ()) -> Completed:
    """Run to completion, keeping at most `limit` bytes of stdout (the child is stopped past that).
    A child stopped by one of its resource limits is a ToolError that says so."""
    with Child(ctx, argv, cwd=cwd, readable=readable, executable=executable, limits=limits, env=env, pass_fds=pass_fds,
               timeout=timeout, what=what, writable=writable) as child:
        parts: list[bytes] = []
        size = 0
        truncated = False
        for chunk in child.chunks():
            if truncated:
                continue  # killed: read on to the end, so that what it said on stderr is kept
            parts.append(chunk)
            size += len(chunk)
            if size > limit:
                truncated = True
                child.kill()
        code = child.finish(truncated)
        stdout = b"".join(parts)
        return Completed(stdout[:limit] if truncated else stdout, code, child.stderr, truncated)

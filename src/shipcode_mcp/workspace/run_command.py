"""run_command: a shell command line run in a folder of the workspace, inside its sandbox (command_sandbox.py,
tree_limits.py), with a timeout; its exit status, duration and output (head and tail of each stream kept, the middle
counted) as the result.

The loop an agent lives on is edit, run the tests, read the failure: this is the middle step, safe to offer. A run
that ends by a limit (timeout, memory, processes) is a result that says which, not an error:
the output so far is what the agent needs. With a progress token, the output's lines go out as
notifications/progress while the command runs; cancelling the request kills the whole tree.
"""

from __future__ import annotations

import atexit
import fcntl
import json
import os
import pwd
import resource
import secrets
import selectors
import signal
import stat
import subprocess
import tempfile
import threading
import time
from contextlib import ExitStack, contextmanager

from .. import log
from ..primitives import ToolError, ToolResult, text_content
from . import command_sandbox, junit_reports, process, tree_limits
from .command_sandbox import Jail, RunOptions, Scan
from .text import printable
from .tools import RUN_TIMEOUT
from .writes import root_lock

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from typing import Any, NoReturn

    from ..context import Context
    from .roots import Roots

HEAD = 8 * 1024
"""Bytes kept from the start of each stream (the command's first lines: what ran)."""
TAIL = 24 * 1024
"""Bytes kept from the end of each stream (a test run's failures and summary come last)."""
PROGRESS_INTERVAL = 0.25
SETUP_SECONDS = 30.0
"""How long bubblewrap may take to make the namespaces and mounts before the command is given up."""
KILLED_WAIT = 5.0
"""After the timeout's kill, how long what is left in the pipes is still read."""
MAX_RUNS = max(2, os.cpu_count() or 1)
"""Commands running at once; more wait for their turn (cancellable, within their timeout)."""
_turns = threading.BoundedSemaphore(MAX_RUNS)
_CHUNK = 1 << 16


class Stream:
    """One output stream as it comes: its first HEAD bytes, its last TAIL bytes, how much there was in all."""

    __slots__ = ("head", "lines", "size", "tail")

    def __init__(self) -> None:
        self.head = bytearray()
        self.tail = bytearray()
        self.size = 0
        self.lines = 0

    def add(self, data: bytes) -> None:
        self.size += len(data)
        self.lines += data.count(b"\n")
        room = HEAD - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if data:
            self.tail += data
            if len(self.tail) > TAIL:
                del self.tail[:len(self.tail) - TAIL]

    def text(self) -> tuple[str, int]:
        """The stream as kept: its start and its end, each cut at a line where it has one, and a line between them
        that says how many bytes of the middle are left out; and that number (0: nothing left out, no line)."""
        start, end = bytes(self.head), bytes(self.tail)
        if self.size == len(start) + len(end):
            return (start + end).decode("utf-8", "replace"), 0
        cut = start.rfind(b"\n")
        start = start[:cut + 1] if cut >= 0 else start
        cut = end.find(b"\n")
        end = end[cut + 1:] if 0 <= cut < len(end) - 1 else end
        left_out = self.size - len(start) - len(end)
        return start.decode("utf-8", "replace") + MARKER.format(left_out) + end.decode("utf-8", "replace"), left_out


MARKER = "[… {} bytes left out …]\n"


def shrunk(data: dict[str, Any], keep: int) -> dict[str, Any]:
    """The result's data with each stream cut to about `keep` characters (a quarter from its start, the rest from its
    end, at lines), the middle left out counted: how budget.py fits a run's result to a client's budget without
    running the command again."""
    data = dict(data)
    for name in ("stdout", "stderr"):
        text, left, size = str(data[name]), int(data[f"{name}_omitted"]), int(data[f"{name}_bytes"])
        if len(text) <= keep:
            continue
        marker = MARKER.format(left)
        at = text.find(marker) if left else -1
        start, end = (text[:at], text[at + len(marker):]) if at >= 0 else (text, text)
        kept_start = _to_line_end(start[:keep // 4])
        kept_end = _from_line_start(end[max(0, len(end) - (keep - keep // 4)):])
        # The bytes still shown, in proportion to the characters (the text is decoded: an invalid byte is one
        # character, as is a letter of several bytes; exact for ASCII).
        chars = len(start) + len(end) if at >= 0 else len(text)
        shown = round((size - left) * (len(kept_start) + len(kept_end)) / max(1, chars))
        left_out = max(left, size - shown)
        data[name], data[f"{name}_omitted"] = kept_start + MARKER.format(left_out) + kept_end, left_out
    if data.get("tests") is not None:
        data["tests"] = junit_reports.shrunk(data["tests"], keep)
    return data


def _to_line_end(text: str) -> str:
    cut = text.rfind("\n")
    return text[:cut + 1] if cut >= 0 else text


def _from_line_start(text: str) -> str:
    cut = text.find("\n")
    return text[cut + 1:] if 0 <= cut < len(text) - 1 else text


def run_command(ctx: Context, roots: Roots, command: str, cwd: str | None, timeout: int | None,
                env: list[str] | None, report: str | None) -> ToolResult:
    options = roots.run_options
    if options is None:  # (the tool is offered only with --allow-run)
        raise ToolError("run_command is not allowed on this server (start it with --allow-run)")
    if "\x00" in command:
        raise ToolError("The command holds a NUL character")
    if timeout is not None and timeout > options.max_timeout:
        raise ToolError(f"timeout: at most {options.max_timeout} s on this server (--run-timeout)")
    seconds = min(RUN_TIMEOUT, options.max_timeout) if timeout is None else timeout
    folder = roots.resolve(cwd if cwd is not None else ".")
    if not os.path.isdir(folder):
        raise ToolError(f"cwd: {printable(roots.display(folder))} is not a folder")
    missing = command_sandbox.unavailable_reason()
    if missing is not None:
        raise ToolError(f"Commands cannot run in their sandbox here: {missing}")
    if report == "tests" and not junit_reports.available():
        raise ToolError("report: 'tests' needs defusedxml, of the run extra (pip install 'shipcode-mcp[run]')")
    ctx.run_as_task()  # (tasks extension) from here the client polls; a refusal above came back at once
    waiting = time.monotonic() + seconds  # the wait for a turn and for the writer's lock together: the timeout
    _take_turn(ctx, waiting, seconds)
    try:
        with _one_writer(ctx, options, waiting, seconds):
            return _run(ctx, roots, options, command, folder, seconds, env or [], report == "tests")
    finally:
        _turns.release()


def _take_turn(ctx: Context, deadline: float, seconds: int) -> None:
    """One of the MAX_RUNS turns, waited for (cancellable) until `deadline`."""
    while not _turns.acquire(timeout=0.05):
        ctx.check_cancelled()
        if time.monotonic() > deadline:
            raise ToolError(f"The command waited {seconds} s for its turn ({MAX_RUNS} commands were running) and was "
                            "not started")


_writer = threading.Lock()


@contextmanager
def _one_writer(ctx: Context, options: RunOptions, deadline: float, seconds: int) -> Iterator[None]:
    """With writable roots, one command at a time (in this process, and in every server process of this user, by a
    lock file): a command that changes the roots while another's sandbox is made could move a folder between the
    scan and the mounts."""
    if not options.writable:
        yield
        return
    while not _writer.acquire(timeout=0.05):
        _waited(ctx, deadline, seconds)
    try:
        fd = _lock_file()
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    _waited(ctx, deadline, seconds)
                    time.sleep(0.05)
            yield
        finally:
            os.close(fd)
    finally:
        _writer.release()


def _waited(ctx: Context, deadline: float, seconds: int) -> None:
    ctx.check_cancelled()
    if time.monotonic() > deadline:
        raise ToolError(f"The command waited {seconds} s for another command that may write the roots to end, and was "
                        "not started")


def _lock_file() -> int:
    """The lock file of this user's writing commands, the same for every server process of the user whatever its
    environment: in ~/.cache/shipcode-mcp of the user's home as the password database names it, else in
    /tmp/shipcode-mcp-UID; never a link, nor another user's file or folder."""
    uid = os.geteuid()
    try:
        home = pwd.getpwuid(uid).pw_dir
    except KeyError:  # a user the password database does not know
        home = "/nonexistent"
    for folder in (os.path.join(home, ".cache", "shipcode-mcp"), f"/tmp/shipcode-mcp-{uid}"):
        try:
            os.makedirs(folder, 0o700, exist_ok=True)
            info = os.lstat(folder)
        except OSError:
            continue
        if stat.S_ISDIR(info.st_mode) and info.st_uid == uid and not info.st_mode & 0o022:
            break
    else:
        raise ToolError("No folder of this user's could hold the lock of writing commands; nothing ran")
    path = os.path.join(folder, "run.lock")
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError as err:
        raise ToolError(f"The lock of writing commands ({path}) could not be opened: {err.strerror}") from None
    if os.fstat(fd).st_uid != os.geteuid():
        os.close(fd)
        raise ToolError(f"The lock of writing commands ({path}) belongs to another user; nothing ran")
    return fd


@contextmanager
def _roots_held(ctx: Context, roots: Roots, paths: list[str]) -> Iterator[None]:
    """The write locks of every root (in one order) while a command's sandbox is made: no write tool of any server
    process (with --allow-write or --confirm-writes) changes a root between the scan and the check of the mounts."""
    with ExitStack() as held:
        for root in sorted(paths):
            held.enter_context(root_lock(ctx, roots, root, roots.display(root)))
        yield


def _run(ctx: Context, roots: Roots, options: RunOptions, command: str, folder: str, seconds: int,
         given_env: list[str], tests: bool = False) -> ToolResult:
    paths = list(roots.paths)
    scratch = Scratch() if command_sandbox.holds_tmp(paths) else None
    limits = tree_limits.TreeLimits(options.memory, options.processes)
    _live[limits] = scratch
    proc: subprocess.Popen[bytes] | None = None
    jail: Jail | None = None
    block = info = tmp = -1
    try:
        shown = "/tmp" if scratch is None else scratch.path
        env = command_sandbox.environment(options, shown, given_env)
        folders = ("home", junit_reports.FOLDER) if tests else ("home",)
        if tests:
            env.update(junit_reports.environment(f"{shown}/{junit_reports.FOLDER}", env))
        binary = command_sandbox.bwrap()
        if binary is None:
            raise ToolError("bubblewrap is not installed")
        rlimits = limits.rlimits(cpu_seconds=seconds * (os.cpu_count() or 1) + 1)

        with _roots_held(ctx, roots, paths):
            jail = Jail(options, paths, folder, shown, env, Scan(paths, options.writable, ctx.check_cancelled), folders)
            jail.open()
            blocked, block = os.pipe2(os.O_CLOEXEC)
            info, told = os.pipe2(os.O_CLOEXEC)
            try:
                arguments = memfd_of([*jail.arguments(), "--block-fd", str(blocked), "--info-fd", str(told)])
            except BaseException:
                for fd in (blocked, told):
                    os.close(fd)
                raise
            try:
                proc = subprocess.Popen([binary, "--args", str(arguments), "--", "/bin/sh", "-c", command],
                                        env={"PATH": command_sandbox.DEFAULT_PATH}, cwd="/", stdin=subprocess.DEVNULL,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        pass_fds=(arguments, blocked, told, *jail.fds), start_new_session=True)
            finally:
                for fd in (arguments, blocked, told):
                    os.close(fd)
            _live_process[limits] = proc
            pid = _child_pid(info, proc)
            # The limits, on bubblewrap and the sandbox's init as soon as it exists, before the command does: all it
            # starts inherits them. (Not between fork and exec: a preexec_fn makes subprocess fork the whole server,
            # holding the interpreter's lock for milliseconds, where it would otherwise spawn.) The cgroups take the
            # init alone (bubblewrap outside only waits for it: it forks nothing more); a move into a cgroup may wait
            # for the kernel's RCU (a few ms, a clock tick or two), which the init spends making its mounts. An init
            # gone meanwhile (bubblewrap failed) is bubblewrap's error, and its pid, were it taken again, no other's.
            try:
                if _parent(pid) != proc.pid:
                    _failed(proc)
                limits.join(pid)
                for process in (proc.pid, pid):
                    for kind, value in rlimits:
                        limit(process, kind, value)
            except ProcessLookupError:
                _failed(proc)
            _wait_blocked(pid, blocked, proc)
            jail.verify(pid)
            if tests:  # the tmpfs, held open past the sandbox's end: its reports are read after
                tmp = os.open(f"/proc/{pid}/root{shown}", os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        jail.close()
        running = proc
        stopped: list[str] = []

        def kill(why: str | None = None) -> None:
            if why is not None and why not in stopped:
                stopped.append(why)
            if running.returncode is None:
                try:
                    os.killpg(running.pid, signal.SIGKILL)  # bubblewrap, and with it (die-with-parent) the PID namespace
                except OSError:
                    pass

        ctx.on_cancel(kill)
        ctx.check_cancelled()
        started = time.monotonic()
        try:
            os.write(block, b"go")  # the sandbox is as it was meant to be: the command starts
        except BrokenPipeError:
            _failed(running)
        out, err = Stream(), Stream()
        _collect(ctx, running, out, err, started + seconds, lambda: kill("timeout"))
        code = running.wait()
        duration = time.monotonic() - started
        ctx.check_cancelled()
        stopped += limits.reached()
        report = junit_reports.read(f"/proc/self/fd/{tmp}/{junit_reports.FOLDER}") if tests else None
        return _result(roots, command, folder, code, duration, out, err, stopped, seconds, report)
    finally:
        for fd in (block, info, tmp):
            if fd >= 0:
                os.close(fd)
        if jail is not None:
            jail.close()
        if proc is not None:
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except OSError:
                    pass
            proc.wait()
            for pipe in (proc.stdout, proc.stderr):
                if pipe is not None:
                    pipe.close()
        limits.close()
        if scratch is not None:
            scratch.remove()
        _live.pop(limits, None)
        _live_process.pop(limits, None)


_live: dict[tree_limits.TreeLimits, Scratch | None] = {}
"""Each running command's cgroups and scratch folder: what `_at_exit` cleans if the server stops meanwhile."""
_live_process: dict[tree_limits.TreeLimits, subprocess.Popen[bytes]] = {}


@atexit.register
def _at_exit() -> None:
    """The server stops (SIGTERM, the end of its input) with commands running: each tree is killed (bubblewrap would
    take it down with the server anyway), its scratch folder and cgroups removed."""
    for proc in list(_live_process.values()):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
    for limits, scratch in list(_live.items()):
        limits.close()
        if scratch is not None:
            scratch.remove()


def _child_pid(info: int, proc: subprocess.Popen[bytes]) -> int:
    """The sandbox's init, as bubblewrap tells it on --info-fd once the namespaces exist; ToolError with what
    bubblewrap said if it stopped before."""
    said = b""
    deadline = time.monotonic() + SETUP_SECONDS
    with selectors.DefaultSelector() as selector:  # (poll or epoll: descriptors above 1023 are fine)
        selector.register(info, selectors.EVENT_READ)
        while time.monotonic() < deadline:
            if not selector.select(max(0.0, deadline - time.monotonic())):
                break
            data = os.read(info, 4096)
            if not data:
                break
            said += data
            try:
                pid = json.loads(said)["child-pid"]
            except (ValueError, KeyError, TypeError):
                continue
            if isinstance(pid, int):
                return pid
    _failed(proc)


READ_CALLS = {"x86_64": 0, "aarch64": 63, "riscv64": 63}
"""read(2)'s number per machine: /proc/PID/syscall shows it while a process waits in it."""


def _wait_blocked(pid: int, blocked: int, proc: subprocess.Popen[bytes]) -> None:
    """Wait until the sandbox's init waits on --block-fd: its mounts are all made and its root is the new one (only
    then does checking them mean anything). ToolError if bubblewrap stops first or takes too long."""
    waiting = f"{READ_CALLS.get(os.uname().machine, 0)} {blocked:#x} "
    host = os.stat("/").st_dev
    deadline = time.monotonic() + SETUP_SECONDS
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            with open(f"/proc/{pid}/syscall", encoding="ascii") as call:
                if call.read().startswith(waiting) and os.stat(f"/proc/{pid}/root").st_dev != host:
                    return
        except OSError:
            pass
        time.sleep(BLOCKED_POLL)
    _failed(proc)


BLOCKED_POLL = 0.0005
"""How often `_wait_blocked` looks (bubblewrap takes 5-10 ms to make the sandbox; a look costs microseconds)."""


def _failed(proc: subprocess.Popen[bytes]) -> NoReturn:
    """bubblewrap stopped, or hangs, before the command: killed, and what it said is the error."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert proc.stderr is not None
    message = proc.stderr.read(4096).decode("utf-8", "replace").strip() or f"exit status {proc.returncode}"
    raise ToolError(f"The command's sandbox could not be made: {message}; nothing ran")


def _parent(pid: int) -> int:
    """The parent of process `pid`."""
    try:
        return int(process.stat_fields(pid)[1])
    except (OSError, ValueError, IndexError):
        raise ProcessLookupError(pid) from None


class Scratch:
    """Where a root holds /tmp, the command's /tmp (a tmpfs) needs a mount point in that root's view: an empty folder
    of the server's temporary folder, made for the call and removed after it by descriptor. The command may rename
    or replace the folders on its path (they are in a root), never write into it (the tmpfs covers it): so its
    removal is one rmdir, of this folder only (same device and inode), whatever now stands at its path."""

    def __init__(self) -> None:
        self.parent = os.open(tempfile.gettempdir(), os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            self.name = f"shipcode-run-{os.getpid()}-{secrets.token_hex(6)}"
            os.mkdir(self.name, 0o700, dir_fd=self.parent)
            info = os.stat(self.name, dir_fd=self.parent, follow_symlinks=False)
        except BaseException:
            os.close(self.parent)
            raise
        self.identity = (info.st_dev, info.st_ino)
        self.path = os.path.join(os.readlink(f"/proc/self/fd/{self.parent}"), self.name)

    def remove(self) -> None:
        if self.parent < 0:
            return
        try:
            info = os.stat(self.name, dir_fd=self.parent, follow_symlinks=False)
            if (info.st_dev, info.st_ino) == self.identity:
                os.rmdir(self.name, dir_fd=self.parent)
            else:
                log.warning(f"run_command: {self.path} is no longer the scratch folder made for the call; left alone")
        except OSError as err:
            log.warning(f"run_command: the scratch folder {self.path} could not be removed ({err.strerror})")
        finally:
            os.close(self.parent)
            self.parent = -1


def limit(pid: int, kind: int, value: int) -> None:
    """Lower process `pid`'s limit `kind` to `value` (never above the hard limit the server itself has)."""
    _, hard = resource.getrlimit(kind)
    value = value if hard == resource.RLIM_INFINITY else min(value, hard)
    resource.prlimit(pid, kind, (value, value))


def memfd_of(arguments: list[str]) -> int:
    """bubblewrap's arguments in an anonymous file (NUL-separated, for --args): not in the process list, where any
    local user would read the values of the environment's variables."""
    fd = os.memfd_create("shipcode-run-arguments", 0)  # inheritable only where passed (pass_fds)
    data = b"".join(argument.encode("utf-8", "surrogateescape") + b"\0" for argument in arguments)
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def _collect(ctx: Context, proc: subprocess.Popen[bytes], out: Stream, err: Stream, deadline: float,
             timed_out: Callable[[], None]) -> None:
    """Read both pipes to their end, sending the lines as progress when asked, then wait for the shell; at the
    deadline the tree is killed (its pipes then close: the PID namespace ends with it). A command that closed its
    pipes and went on is waited for until the deadline all the same."""
    assert proc.stdout is not None and proc.stderr is not None
    streams = {proc.stdout.fileno(): out, proc.stderr.fileno(): err}
    selector = selectors.DefaultSelector()
    for fd in streams:
        selector.register(fd, selectors.EVENT_READ)
    last_report, pending, killed = time.monotonic(), b"", None
    try:
        while streams:
            now = time.monotonic()
            if killed is None and now >= deadline:
                timed_out()
                killed = now
            if killed is not None and now - killed > KILLED_WAIT:
                break  # (the tree was killed and its pipes close with it: this only bounds the wait)
            wait = PROGRESS_INTERVAL if killed is not None else min(deadline - now, PROGRESS_INTERVAL)
            for key, _ in selector.select(wait):
                data = os.read(key.fd, _CHUNK)
                if not data:
                    selector.unregister(key.fd)
                    del streams[key.fd]
                    continue
                streams[key.fd].add(data)
                pending = (pending + data)[-4096:]
            now = time.monotonic()
            if pending and now - last_report >= PROGRESS_INTERVAL and ctx.progress_token is not None:
                lines = pending.decode("utf-8", "replace").rstrip("\n").splitlines()
                ctx.report_progress(out.size + err.size, message=lines[-1][:200] if lines else None)
                last_report, pending = now, b""
    finally:
        selector.close()
    try:
        proc.wait(max(0.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        timed_out()
        proc.wait()


STOPPED = {"timeout": "stopped at its timeout of {seconds} s", "memory": "a process was killed at the memory limit",
           "processes": "it reached the limit on processes (a fork failed)"}
MAX_COMMAND_SHOWN = 2000
"""Characters of the command the result's data repeats (a longer one ends in …)."""


def _result(roots: Roots, command: str, folder: str, code: int, duration: float, out: Stream, err: Stream,
            stopped: list[str], seconds: int, report: dict[str, Any] | None = None) -> ToolResult:
    stdout, stdout_left = out.text()
    stderr, stderr_left = err.text()
    shown = command if len(command) <= MAX_COMMAND_SHOWN else command[:MAX_COMMAND_SHOWN] + "…"
    data: dict[str, Any] = {"exit_code": None if "timeout" in stopped else code, "limits": stopped,
                            "duration_ms": round(duration * 1000), "timeout": seconds, "cwd": roots.display(folder),
                            "command": shown, "stdout": stdout, "stderr": stderr, "stdout_bytes": out.size,
                            "stderr_bytes": err.size, "stdout_omitted": stdout_left, "stderr_omitted": stderr_left,
                            "tests": report}
    return ToolResult([text_content(render(data))], data)


def render(data: dict[str, Any]) -> str:
    """The result as text for the model: what ran where, how it ended, then each stream (budget.py renders a result
    cut to a budget with it too)."""
    command = str(data["command"])
    first = command.splitlines()[0] if command else ""
    shown = printable(first[:200]) + (" …" if len(first) > 200 or "\n" in command else "")
    lines = [f"$ {shown}", f"(in {printable(str(data['cwd']))}, took {int(str(data['duration_ms'])) / 1000:.2f} s)"]
    limits = data["limits"]
    assert isinstance(limits, list)
    code = data["exit_code"]
    ending = "killed" if code is None else f"exit status {code}" + _signal_hint(code)
    why = [STOPPED.get(limit, str(limit)).format(seconds=data["timeout"]) for limit in limits]
    lines.append(ending + (f": {'; '.join(why)}" if why else ""))
    for name in ("stdout", "stderr"):
        text, size, left = str(data[name]), data[f"{name}_bytes"], data[f"{name}_omitted"]
        if not size:
            lines.append(f"{name}: (nothing)")
            continue
        about = f"{size} bytes" + (f", {left} in the middle left out" if left else "")
        lines.append(f"{name} ({about}):")
        lines.append(text.rstrip("\n"))
    if data.get("tests") is not None:
        lines += junit_reports.render(data["tests"])
    return "\n".join(lines)


def _signal_hint(code: int) -> str:
    """What a status over 128 says, if a signal ended the shell or its last command (sh cannot tell `exit 137`)."""
    try:
        name = signal.Signals(code - 128).name if 128 < code < 128 + 65 else None
    except ValueError:
        name = None
    return f" (128 + {code - 128}: {name}, if a signal ended it)" if name else ""

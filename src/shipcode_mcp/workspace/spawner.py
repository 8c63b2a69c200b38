"""Children started by the fork server (forkserver.py): the server's side of it.

The fork server is started on the first child, from this process without a `preexec_fn` (so subprocess
can vfork it: cheap whatever this process's size), and lives until this process ends (its control
socket closes with us, and it kills what it started). A fork server that dies takes its children with
it (their parent-death signal), a thread here kills what they started (`Live.watch`), and it is started
again on the next child. Where it cannot work at all (not Linux, no pidfd, a kernel that refuses its first child),
`Unavailable` tells the caller to fork the child itself, as before.
"""

from __future__ import annotations

import errno
import json
import math
import os
import select
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence

from .sandbox import Confinement

START_TIMEOUT = 10.0
"""How long a child's start may take in the fork server (its own first start included) before the fork
server is deemed stuck, stopped, and the child started here."""
MAX_REQUEST = 1 << 20
"""forkserver.MAX_REQUEST: a larger request would arrive cut short."""
PROGRAM = os.path.join(os.path.dirname(os.path.abspath(__file__)), "forkserver.py")


class Unavailable(Exception):
    """The fork server cannot start this child: the caller forks it itself."""


class SandboxRefused(Exception):
    """The child could not enter its sandbox, and was not run."""


class Spawned:
    """A child the fork server started. `kill()` kills its whole group; `wait()` gives subprocess's
    returncode (negative for a signal)."""

    __slots__ = ("_channel", "_closing", "_live", "_lock", "pid", "returncode")

    def __init__(self, pid: int, channel: socket.socket, live: Live) -> None:
        self.pid = pid
        self.returncode: int | None = None
        self._channel = channel
        self._live = live
        self._lock = threading.Lock()
        self._closing = threading.Lock()
        """Held to send on the channel or close it: a kill from another thread must never reach a descriptor
        number that a close just freed and another child's channel took (it would kill that child)."""

    def kill(self) -> None:
        with self._closing:
            if self.returncode is None and self._channel.fileno() >= 0:
                try:
                    self._channel.send(b"kill", socket.MSG_NOSIGNAL)
                except OSError:
                    pass  # the child has been reported, or the fork server is gone (and killed it)

    def wait(self, timeout: float | None = None) -> int:
        with self._lock:
            if self.returncode is None:
                if timeout is not None:
                    poll = select.poll()  # (not select(): a busy server's descriptors go past 1024)
                    poll.register(self._channel, select.POLLIN)
                    if not poll.poll(max(0, math.ceil(timeout * 1000))):
                        raise subprocess.TimeoutExpired(str(self.pid), timeout)
                try:
                    answer = self._channel.recv(64)
                except OSError:
                    answer = b""
                if answer.startswith(b"exit "):
                    self.returncode = int(answer[5:])
                else:  # the fork server died: the child may live on, orphaned; it must not
                    kill_group(self.pid)
                    self.returncode = -signal.SIGKILL
                with self._closing:
                    self._channel.close()
                self._live.discard(self)
            return self.returncode

    def orphaned(self) -> None:
        """Its fork server died: kill its group (what it started would run on, holding its output open),
        unless the fork server reported it first (reaped, its id may be another's by now)."""
        with self._closing:
            if self.returncode is not None or self._channel.fileno() < 0:
                return
            try:
                answer = self._channel.recv(64, socket.MSG_PEEK | socket.MSG_DONTWAIT)
            except OSError:
                answer = b""
            if not answer.startswith(b"exit "):
                kill_group(self.pid)


class Live:
    """The children one fork server started and the server has not yet seen end."""

    __slots__ = ("_lock", "_spawned")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._spawned: set[Spawned] = set()

    def add(self, spawned: Spawned) -> None:
        with self._lock:
            self._spawned.add(spawned)

    def discard(self, spawned: Spawned) -> None:
        with self._lock:
            self._spawned.discard(spawned)

    def watch(self, ended: int) -> None:
        """Wait for the fork server (`ended`: its pidfd, which this closes) to end, then kill the groups of
        its children still running: its death kills them (PR_SET_PDEATHSIG), not what they started."""
        try:
            poll = select.poll()
            poll.register(ended, select.POLLIN)
            while not poll.poll():
                pass
        finally:
            os.close(ended)
        with self._lock:
            orphans = list(self._spawned)
        for spawned in orphans:
            spawned.orphaned()


class ForkServer:
    """The connection to one fork server, started when first needed (and again if it dies)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._control: socket.socket | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self._owner = 0
        self._live = Live()
        self._broken = not usable()

    def spawn(self, argv: Sequence[str], *, cwd: str, env: Mapping[str, str] | None, confinement: Confinement,
              pass_fds: Sequence[int], stdin: int | None = None) -> tuple[Spawned, int, int]:
        """Start `argv` (its first item an absolute path); the child, and the read ends of its stdout and
        stderr pipes. Its stdin is `stdin` (a descriptor of ours: the pipe a language server reads its
        requests from), else /dev/null. OSError for a child that could not start (a missing program or folder)."""
        if self._broken:
            raise Unavailable("no fork server here")
        ruleset = confinement.ruleset_fd
        spec = json.dumps({
            "binary": argv[0], "argv": list(argv), "cwd": cwd, "env": dict(os.environ if env is None else env),
            "limits": [[kind, soft, hard] for kind, (soft, hard) in confinement.limits],
            "pass_fds": list(pass_fds), "sandboxed": ruleset is not None, "stdin": stdin is not None,
            "seccomp": confinement.seccomp.hex(), "drop_caps": confinement.drop_caps,
        }).encode()
        if len(spec) > MAX_REQUEST:
            raise Unavailable("request too large for the fork server")
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        out_r, out_w = os.pipe2(os.O_CLOEXEC)
        err_r, err_w = os.pipe2(os.O_CLOEXEC)
        handed = [theirs.fileno(), out_w, err_w, *([] if ruleset is None else [ruleset]), *pass_fds,
                  *([] if stdin is None else [stdin])]
        try:
            used, live = self._send(spec, handed)
        except BaseException:
            for fd in (out_r, err_r):
                os.close(fd)
            mine.close()
            raise
        finally:
            theirs.close()
            os.close(out_w)
            os.close(err_w)
        try:
            mine.settimeout(START_TIMEOUT)
            try:
                answer = mine.recv(128)
            except OSError:
                answer = b""
            if answer.startswith(b"started ") and answer[8:].isdigit() and int(answer[8:]) > 1:
                mine.settimeout(None)  # (a group id of 0 or 1 would make a kill of it a kill of everything)
                spawned = Spawned(int(answer[8:]), mine, live)
                live.add(spawned)
                return spawned, out_r, err_r
            raise self._failure(answer, used)
        except BaseException:
            mine.close()
            os.close(out_r)
            os.close(err_r)
            raise

    def warm(self) -> None:
        """Start the fork server now if it is not running, without waiting for it: its own start-up (tens of
        milliseconds, in its own process) then overlaps the caller's preparations (on a first call, the
        sandbox binding's import and the ruleset)."""
        if self._broken or (self._control is not None and self._owner == os.getpid()):
            return
        with self._lock:
            try:
                self._connected()
            except Unavailable:
                pass  # the child will be forked here; spawn says so again

    def _failure(self, answer: bytes, used: socket.socket) -> Exception:
        parts = answer.decode("ascii", "replace").split()
        if len(parts) == 3 and parts[0] == "error" and parts[2].isdigit():
            stage, code = parts[1], int(parts[2])
            if stage in ("exec", "cwd"):
                return OSError(code, os.strerror(code))
            if stage == "sandbox":
                return SandboxRefused(os.strerror(code))
            if stage == "unavailable":
                self._broken = True
        else:
            self._restart_next_time(used)
        return Unavailable(answer.decode("ascii", "replace") or "the fork server did not answer")

    def _send(self, spec: bytes, fds: list[int]) -> tuple[socket.socket, Live]:
        """Send one request; the control socket of the fork server that got it, and its children."""
        with self._lock:
            for attempt in range(2):
                control = self._connected()
                try:
                    socket.send_fds(control, [spec], fds, socket.MSG_NOSIGNAL)
                    return control, self._live
                except OSError as err:
                    if err.errno == errno.EMSGSIZE:
                        raise Unavailable("request too large for the fork server") from None
                    self._stop()
                    if attempt:
                        raise Unavailable(f"the fork server is gone: {err}") from None
        raise AssertionError("unreachable")

    def _connected(self) -> socket.socket:
        if self._control is not None and self._owner == os.getpid():
            return self._control
        self._stop()
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self._process = subprocess.Popen(
                [sys.executable, "-I", "-S", PROGRAM, str(theirs.fileno())], pass_fds=(theirs.fileno(),),
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, cwd="/", start_new_session=True,
            )
        except OSError as err:
            mine.close()
            self._broken = True
            raise Unavailable(f"the fork server could not start: {err}") from None
        finally:
            theirs.close()
        self._control, self._owner, self._live = mine, os.getpid(), Live()
        try:  # opened now, while the fork server is surely unreaped: its id cannot be another's yet
            ended = os.pidfd_open(self._process.pid)
        except OSError:
            pass  # no watch: the children's own reports (or their channels' end) still come
        else:
            threading.Thread(target=self._live.watch, args=(ended,), name="fork server watch", daemon=True).start()
        return mine

    def _restart_next_time(self, used: socket.socket) -> None:
        """The fork server that got a request failed it: stop it, unless it was replaced meanwhile (its
        successor, and the children others started there, are not to blame)."""
        with self._lock:
            if self._control is used:
                self._stop()

    def _stop(self) -> None:
        if self._control is not None:
            self._control.close()  # the fork server's cue to kill its children and end
        self._control = None
        if self._owner != os.getpid():  # a copy inherited by a fork of the server: the fork server is not ours
            self._process = None
        if self._process is not None:
            process, self._process = self._process, None
            try:
                process.wait(1)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def kill_group(pid: int) -> None:
    """SIGKILL to the process group `pid` leads (each child leads its own); nothing if it is gone."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass


def usable() -> bool:
    """Whether this system has what the fork server needs: Linux (pidfds, SOCK_SEQPACKET, fd passing)."""
    return (sys.platform.startswith("linux") and bool(sys.executable) and hasattr(os, "pidfd_open")
            and hasattr(socket, "SOCK_SEQPACKET") and hasattr(socket, "send_fds"))


_server: ForkServer | None = None
_server_lock = threading.Lock()


def fork_server() -> ForkServer:
    """This process's fork server (one for every child it starts)."""
    global _server
    if _server is None:
        with _server_lock:
            if _server is None:
                _server = ForkServer()
    return _server

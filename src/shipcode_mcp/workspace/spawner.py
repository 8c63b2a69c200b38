"""Children started by the fork server (forkserver.py): the server's side of it.

The fork server is started on the first child, from this process without a `preexec_fn` (so subprocess
can vfork it: cheap whatever this process's size), and lives until this process ends (its control
socket closes with us, and it kills what it started). A fork server that dies is started again on the
next child. Where it cannot work at all (not Linux, no pidfd, a kernel that refuses its first child),
`Unavailable` tells the caller to fork the child itself, as before.
"""

from __future__ import annotations

import errno
import json
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
PROGRAM = os.path.join(os.path.dirname(os.path.abspath(__file__)), "forkserver.py")


class Unavailable(Exception):
    """The fork server cannot start this child: the caller forks it itself."""


class SandboxRefused(Exception):
    """The child could not enter its sandbox, and was not run."""


class Spawned:
    """A child the fork server started. `kill()` kills its whole group; `wait()` gives subprocess's
    returncode (negative for a signal)."""

    __slots__ = ("_channel", "_lock", "pid", "returncode")

    def __init__(self, pid: int, channel: socket.socket) -> None:
        self.pid = pid
        self.returncode: int | None = None
        self._channel = channel
        self._lock = threading.Lock()

    def kill(self) -> None:
        if self.returncode is None:
            try:
                self._channel.send(b"kill", socket.MSG_NOSIGNAL)
            except OSError:
                pass  # the child has been reported, or the fork server is gone (and killed it)

    def wait(self, timeout: float | None = None) -> int:
        with self._lock:
            if self.returncode is None:
                if timeout is not None and not select.select([self._channel], [], [], timeout)[0]:
                    raise subprocess.TimeoutExpired(str(self.pid), timeout)
                try:
                    answer = self._channel.recv(64)
                except OSError:
                    answer = b""
                if answer.startswith(b"exit "):
                    self.returncode = int(answer[5:])
                else:  # the fork server died: the child may live on, orphaned; it must not
                    try:
                        os.killpg(self.pid, signal.SIGKILL)
                    except OSError:
                        pass
                    self.returncode = -signal.SIGKILL
                self._channel.close()
            return self.returncode

    def close(self) -> None:
        """Stop listening for the child (which the fork server then kills, if it still runs)."""
        if self.returncode is None:
            self._channel.close()


class ForkServer:
    """The connection to one fork server, started when first needed (and again if it dies)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._control: socket.socket | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self._owner = 0
        self._broken = not usable()

    def spawn(self, argv: Sequence[str], *, cwd: str, env: Mapping[str, str] | None, confinement: Confinement,
              pass_fds: Sequence[int]) -> tuple[Spawned, int, int]:
        """Start `argv` (its first item an absolute path); the child, and the read ends of its stdout and
        stderr pipes. OSError for a child that could not start (a missing program or folder)."""
        if self._broken:
            raise Unavailable("no fork server here")
        ruleset = confinement.ruleset_fd
        spec = json.dumps({
            "binary": argv[0], "argv": list(argv), "cwd": cwd, "env": dict(os.environ if env is None else env),
            "limits": [[kind, soft, hard] for kind, (soft, hard) in confinement.limits],
            "pass_fds": list(pass_fds), "sandboxed": ruleset is not None,
        }).encode()
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        out_r, out_w = os.pipe2(os.O_CLOEXEC)
        err_r, err_w = os.pipe2(os.O_CLOEXEC)
        handed = [theirs.fileno(), out_w, err_w, *([] if ruleset is None else [ruleset]), *pass_fds]
        try:
            self._send(spec, handed)
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
            if answer.startswith(b"started "):
                mine.settimeout(None)
                return Spawned(int(answer[8:]), mine), out_r, err_r
            raise self._failure(answer)
        except BaseException:
            mine.close()
            os.close(out_r)
            os.close(err_r)
            raise

    def _failure(self, answer: bytes) -> Exception:
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
            self._restart_next_time()
        return Unavailable(answer.decode("ascii", "replace") or "the fork server did not answer")

    def _send(self, spec: bytes, fds: list[int]) -> None:
        with self._lock:
            for attempt in range(2):
                control = self._connected()
                try:
                    socket.send_fds(control, [spec], fds, socket.MSG_NOSIGNAL)
                    return
                except OSError as err:
                    if err.errno == errno.EMSGSIZE:
                        raise Unavailable("request too large for the fork server") from None
                    self._stop()
                    if attempt:
                        raise Unavailable(f"the fork server is gone: {err}") from None

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
        self._control, self._owner = mine, os.getpid()
        return mine

    def _restart_next_time(self) -> None:
        with self._lock:
            self._stop()

    def _stop(self) -> None:
        if self._control is not None and self._owner == os.getpid():
            self._control.close()  # the fork server's cue to kill its children and end
        self._control = None
        if self._process is not None:
            process, self._process = self._process, None
            try:
                process.wait(1)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


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

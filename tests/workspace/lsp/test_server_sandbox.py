"""The sandbox around a language server (lsp/servers.py), tried with a hostile one: a Python script that speaks
just enough LSP to be started, warmed and asked, and that answers a request `shipcode/attack` with the
outcome of each attack it tries from inside (what a language server compromised by the workspace it reads
would try). Each attack is first shown to work from the same script run plainly, then refused when
LanguageServer runs it: it reads its roots and its own install, nothing else; it writes nothing; it makes
no socket; it signals no process of ours; it runs no other program. And it ends: stopped, crashed at
start or silent at start, no process is left and no caller waits.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import Any

import pytest
from lsp_support import FRAMING, PYTHON, PYTHON_READABLE, PeakRss, record_thread_deaths

from shipcode_mcp.workspace import sandbox, spawner
from shipcode_mcp.workspace.lsp import servers
from shipcode_mcp.workspace.lsp.connection import Connection
from shipcode_mcp.workspace.lsp.installed import Installed
from shipcode_mcp.workspace.lsp.servers import LanguageServer, NotReady
from support import wait_for

MIB = 1024 * 1024

pytestmark = pytest.mark.skipif(sandbox.unavailable_reason() is not None,
                                reason=f"no kernel sandbox here: {sandbox.unavailable_reason()}")

HOSTILE = FRAMING + r'''
import errno, signal, socket, subprocess


def attempt(action):
    try:
        return "done: " + str(action())[:300]
    except OSError as err:
        return "refused: " + errno.errorcode.get(err.errno or 0, str(err))


def write_file(path):
    with open(path, "w") as out:
        out.write("written by the language server\n")
    return path


def tcp(port):
    with socket.create_connection(("127.0.0.1", port), timeout=5) as connection:
        connection.sendall(b"tcp-canary")
    return "connected"


def udp(port):
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        return sock.sendto(b"udp-canary", ("127.0.0.1", port))


def unix(name):
    with socket.socket(socket.AF_UNIX) as sock:
        sock.connect("\0" + name)  # an abstract socket: no file, so no Landlock rule stands in its way
        sock.sendall(b"unix-canary")
    return "connected"


def attacks(p):
    pid = p["pid"]
    return {
        "read_inside": attempt(lambda: open(p["inside"]).read()),
        "read_secret": attempt(lambda: open(p["secret"]).read()),
        "list_outside": attempt(lambda: os.listdir(p["outside"])),
        "write_root": attempt(lambda: write_file(p["root_file"])),
        "write_tmp": attempt(lambda: write_file(p["tmp_file"])),
        "tcp": attempt(lambda: tcp(p["tcp"])),
        "udp": attempt(lambda: udp(p["udp"])),
        "unix": attempt(lambda: unix(p["unix"])),
        "probe": attempt(lambda: os.kill(pid, 0)),
        "signal": attempt(lambda: os.kill(pid, signal.SIGUSR2)),
        "environ": attempt(lambda: len(open(f"/proc/{pid}/environ", "rb").read())),
        "run": attempt(lambda: subprocess.run(["/bin/sh", "-c", "echo ran"], capture_output=True).stdout.decode()),
    }


mode = sys.argv[1] if len(sys.argv) > 1 else "serve"
if mode == "crash":
    sys.stderr.write("hostile: cannot start: the workspace is on fire\n")
    sys.exit(2)
while (message := read()) is not None:
    method = message.get("method")
    if mode == "silent":
        continue
    if method == "initialized":
        notify("window/logMessage", {"type": 3, "message": "Found 1 source file"})
    if "id" not in message:
        continue
    if method == "initialize":
        answer(message, {"capabilities": {}})
    elif method == "workspace/symbol":
        answer(message, [])
    elif method == "shipcode/attack":
        answer(message, attacks(message["params"]))
    elif method == "shipcode/exit":
        os._exit(3)
    elif method == "shipcode/diagnose":  # diagnostics of many files, each with a long message
        count, size = message["params"]["count"], message["params"]["size"]
        for number in range(count):
            notify("textDocument/publishDiagnostics",
                   {"uri": f"file:///nowhere/{number}.py", "diagnostics": [{"message": "d" * size, "range": {}}]})
        answer(message, count)
    elif method == "shipcode/ask-configuration":  # asks us with params of a shape the client does not expect
        send({"jsonrpc": "2.0", "id": "config", "method": "workspace/configuration", "params": None})
        answer(message, read())
    else:
        send({"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32601, "message": method}})
'''


class Places:
    """A root holding a Python file, a folder outside it holding a random secret, the hostile server's own
    folder (outside both), and where its writes would land."""

    def __init__(self, tmp_path: Path) -> None:
        self.root, self.outside, self.install = tmp_path / "root", tmp_path / "outside", tmp_path / "server"
        for folder in (self.root, self.outside, self.install):
            folder.mkdir()
        self.inside = self.root / "inside.py"
        self.inside.write_text("INSIDE = 'the server reads its root'\n")
        self.secret = f"SECRET-{secrets.token_hex(12)}"
        self.secret_file = self.outside / "secret.txt"
        self.secret_file.write_text(f"{self.secret}\n")
        self.script = self.install / "hostile.py"
        self.script.write_text(HOSTILE)
        self.root_file = self.root / "written.txt"
        self.tmp_file = Path(tempfile.gettempdir()) / f"shipcode-lsp-{secrets.token_hex(8)}.txt"

    def argv(self, mode: str = "serve") -> tuple[str, ...]:
        return (PYTHON, "-I", "-S", str(self.script), mode)

    def installed(self, mode: str = "serve") -> Installed:
        return Installed("python", "hostile", "1", self.argv(mode), (str(self.install), *PYTHON_READABLE), (), (".py",))

    def cleanup(self) -> None:
        self.root_file.unlink(missing_ok=True)
        self.tmp_file.unlink(missing_ok=True)


@pytest.fixture
def places(tmp_path: Path) -> Iterator[Places]:
    made = Places(tmp_path)
    try:
        yield made
    finally:
        made.cleanup()


class Victim:
    """What the attacks aim at in this process: a TCP listener, a UDP socket and a listener on an abstract unix
    socket (all local), and a count of the SIGUSR2 this process gets."""

    def __init__(self) -> None:
        self.tcp = socket.socket()
        self.tcp.bind(("127.0.0.1", 0))
        self.tcp.listen(4)
        self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.udp.bind(("127.0.0.1", 0))
        self.unix_name = f"shipcode-lsp-test-{secrets.token_hex(8)}"
        self.unix = socket.socket(socket.AF_UNIX)
        self.unix.bind("\0" + self.unix_name)
        self.unix.listen(4)
        self.signals = 0
        self._previous = signal.signal(signal.SIGUSR2, self._signalled)

    def _signalled(self, number: int, frame: FrameType | None) -> None:
        self.signals += 1

    def params(self, places: Places) -> dict[str, Any]:
        return {"pid": os.getpid(), "inside": str(places.inside), "secret": str(places.secret_file),
                "outside": str(places.outside), "root_file": str(places.root_file), "tmp_file": str(places.tmp_file),
                "tcp": self.tcp.getsockname()[1], "udp": self.udp.getsockname()[1], "unix": self.unix_name}

    def received(self) -> dict[str, bytes | None]:
        """What reached each socket by now (None: nothing; a connection made is queued, accepted or not)."""
        got: dict[str, bytes | None] = {}
        for name, listener in (("tcp", self.tcp), ("unix", self.unix)):
            listener.settimeout(0)
            try:
                accepted = listener.accept()[0]
            except BlockingIOError:
                got[name] = None
                continue
            with accepted:
                accepted.settimeout(5)
                got[name] = accepted.recv(64)
        self.udp.settimeout(0)
        try:
            got["udp"] = self.udp.recv(64)
        except BlockingIOError:
            got["udp"] = None
        return got

    def close(self) -> None:
        signal.signal(signal.SIGUSR2, self._previous)
        for sock in (self.tcp, self.udp, self.unix):
            sock.close()


@pytest.fixture
def victim() -> Iterator[Victim]:
    made = Victim()
    try:
        yield made
    finally:
        made.close()


def running(script: Path) -> list[int]:
    """The processes running `script` now (a scan of /proc)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            if str(script).encode() in cmdline.split(b"\0"):
                found.append(int(entry))
    return found


def plain_attacks(places: Places, params: dict[str, Any]) -> dict[str, str]:
    """The attacks from the same script run as a plain process (no sandbox), over the same protocol."""
    with subprocess.Popen(places.argv(), cwd=places.root, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE) as proc:
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        connection = Connection(proc.stdin.fileno(), proc.stdout.fileno(), proc.stderr.fileno(),
                                answer=lambda method, params: None, notified=lambda method, params: None, name="plain")
        try:
            assert connection.request("initialize", {"capabilities": {}}, timeout=10) == {"capabilities": {}}
            outcome: dict[str, str] = connection.request("shipcode/attack", params, timeout=30)
        finally:
            connection.close()
            proc.kill()
    return outcome


def ready(server: LanguageServer, timeout: float = 20.0) -> None:
    """Wait (bounded) until the server is ready; fail at once if it failed."""
    def is_ready() -> bool:
        try:
            server.ready()
        except NotReady as err:
            assert server.state not in ("failed", "stopped"), err.note
            return False
        return True
    wait_for(is_ready, timeout, "the language server to be ready")


@pytest.fixture
def started() -> Iterator[list[LanguageServer]]:
    """The language servers a test starts, stopped at its end whatever happened; but not one stopped or failed
    already, as the registry does not stop a failed one (it has killed its process; a second stop() would
    close its connection a second time: see test_a_failed_language_server_stopped_closes_no_descriptor_of_others)."""
    made: list[LanguageServer] = []
    try:
        yield made
    finally:
        for server in made:
            if server.state not in ("stopped", "failed"):
                server.stop()


@pytest.mark.parametrize("forked_here", [False, True], ids=["fork-server", "forked-here"])
def test_a_hostile_language_server_is_refused_everything_but_its_root(
        places: Places, victim: Victim, started: list[LanguageServer], forked_here: bool,
        monkeypatch: pytest.MonkeyPatch) -> None:
    params = victim.params(places)
    plain = plain_attacks(places, params)
    # Every attack works without the sandbox.
    assert plain["read_inside"].startswith("done: INSIDE")
    assert plain["read_secret"] == f"done: {places.secret}\n"
    assert "secret.txt" in plain["list_outside"]
    assert plain["write_root"].startswith("done") and places.root_file.exists()
    assert plain["write_tmp"].startswith("done") and places.tmp_file.exists()
    assert plain["tcp"] == plain["unix"] == "done: connected" and plain["udp"] == "done: 10"
    assert victim.received() == {"tcp": b"tcp-canary", "unix": b"unix-canary", "udp": b"udp-canary"}
    assert plain["probe"] == plain["signal"] == "done: None"
    wait_for(lambda: victim.signals == 1, 10, "the plain script's SIGUSR2")
    assert plain["environ"].startswith("done: ") and int(plain["environ"][6:]) > 0
    assert plain["run"] == "done: ran\n"
    places.cleanup()
    victim.signals = 0

    if forked_here:  # where the fork server cannot run, the server forks the language server itself, as confined
        def unavailable(*args: object, **kwargs: object) -> None:
            raise spawner.Unavailable("test")
        monkeypatch.setattr(spawner.fork_server(), "spawn", unavailable)
    server = LanguageServer(places.installed(), (str(places.root),))
    started.append(server)
    ready(server)
    confined: dict[str, str] = server.request("shipcode/attack", params, timeout=30, check=None)
    assert confined["read_inside"].startswith("done: INSIDE")  # what it is for still works
    assert places.secret not in json.dumps(confined)
    assert confined["read_secret"] == confined["list_outside"] == "refused: EACCES"
    assert confined["write_root"] == confined["write_tmp"] == "refused: EACCES"
    assert not places.root_file.exists() and not places.tmp_file.exists()
    assert confined["tcp"] == confined["udp"] == confined["unix"] == "refused: EACCES"  # no socket at all
    assert confined["environ"] == "refused: EACCES"
    assert confined["run"] == "refused: EACCES"
    if sandbox.abi() >= 6:  # signal scoping came with Landlock ABI 6
        assert confined["probe"] == confined["signal"] == "refused: EPERM"
    time.sleep(0.2)  # a signal or datagram sent would have arrived by now
    assert victim.received() == {"tcp": None, "unix": None, "udp": None}
    if sandbox.abi() >= 6:
        assert victim.signals == 0
    assert server.state == "ready" and server.failure is None


def test_a_stopped_language_server_leaves_no_process(places: Places, started: list[LanguageServer]) -> None:
    server = LanguageServer(places.installed(), (str(places.root),))
    started.append(server)
    ready(server)
    pid = server.pid
    assert pid is not None and running(places.script) == [pid]
    began = time.monotonic()
    server.stop()
    assert time.monotonic() - began < 5
    assert server.state == "stopped" and server.pid is None
    assert running(places.script) == []
    with pytest.raises(NotReady):
        server.ready()
    with pytest.raises(NotReady):
        server.request("shipcode/attack", {}, timeout=5, check=None)


def test_a_language_server_that_crashes_at_start_fails_with_its_reason(places: Places,
                                                                         started: list[LanguageServer]) -> None:
    server = LanguageServer(places.installed("crash"), (str(places.root),))
    started.append(server)
    wait_for(lambda: server.state == "failed", 10, "the server to fail")
    assert server.failure is not None and "the workspace is on fire" in server.failure, server.failure
    with pytest.raises(NotReady, match=r"failed .*the workspace is on fire"):
        server.ready()
    assert running(places.script) == []


def test_a_language_server_silent_at_start_fails_at_the_start_timeout(places: Places, started: list[LanguageServer],
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(servers, "START_TIMEOUT", 1.0)
    began = time.monotonic()
    server = LanguageServer(places.installed("silent"), (str(places.root),))
    started.append(server)
    with pytest.raises(NotReady, match="is starting"):
        server.ready()
    wait_for(lambda: server.state == "failed", 10, "the server to fail")
    assert 1.0 <= time.monotonic() - began < 6
    assert server.failure is not None and "did not answer initialize within 1 s" in server.failure, server.failure
    wait_for(lambda: running(places.script) == [], 5, "the silent server to be killed")


def test_a_language_server_that_exits_is_marked_failed(places: Places, started: list[LanguageServer]) -> None:
    server = LanguageServer(places.installed(), (str(places.root),))
    started.append(server)
    ready(server)
    began = time.monotonic()
    with pytest.raises(NotReady, match="failed"):
        server.request("shipcode/exit", {}, timeout=30, check=None)
    assert time.monotonic() - began < 5
    assert server.state == "failed" and running(places.script) == []
    with pytest.raises(NotReady, match="failed"):
        server.ready()


# -- found by these tests ----------------------------------------------------------------------------------
@pytest.fixture
def thread_deaths(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    return record_thread_deaths(monkeypatch)


def test_a_request_of_the_server_of_an_unexpected_shape_does_not_stop_the_connection(
        places: Places, started: list[LanguageServer], thread_deaths: list[str]) -> None:
    server = LanguageServer(places.installed(), (str(places.root),))
    started.append(server)
    ready(server)
    began = time.monotonic()
    try:
        reply = server.request("shipcode/ask-configuration", {}, timeout=3, check=None)
    except NotReady as err:
        reply = err.note
    assert not thread_deaths, f"the reader thread died: {thread_deaths}"
    assert time.monotonic() - began < 2, f"waited for the deadline: {reply}"


def test_a_failed_language_server_stopped_closes_no_descriptor_of_others(places: Places,
                                                                         started: list[LanguageServer]) -> None:
    server = LanguageServer(places.installed(), (str(places.root),))
    started.append(server)
    ready(server)
    with pytest.raises(NotReady, match="failed"):
        server.request("shipcode/exit", {}, timeout=30, check=None)
    mine = [fd for _ in range(32) for fd in os.pipe()]  # they take the descriptor numbers the failure freed
    server.stop()
    closed = []
    for fd in mine:
        try:
            os.fstat(fd)
        except OSError:
            closed.append(fd)
    for fd in set(mine) - set(closed):
        os.close(fd)
    assert not closed, f"stop() closed descriptors it did not own: {closed}"


def test_a_flood_of_diagnostics_costs_bounded_memory(places: Places, started: list[LanguageServer]) -> None:
    server = LanguageServer(places.installed(), (str(places.root),))
    started.append(server)
    ready(server)
    with PeakRss() as memory:
        assert server.request("shipcode/diagnose", {"count": 100, "size": MIB}, timeout=30, check=None) == 100
    assert memory.growth < 32 * MIB, f"100 MB of diagnostics took {memory.growth / MIB:.0f} MB"

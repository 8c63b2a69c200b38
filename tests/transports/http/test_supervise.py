"""`--supervise` (and `--workers` above 1): the server's worker is started again when it dies, so one crash, one
OOM kill or one hung worker never leaves the deployment dead. Each case first shows the harm on a server that is
not supervised (the same kill leaves nothing that answers), then that a supervised one answers again.

Real processes over real sockets: the command line, uvicorn's supervisor, its spawned workers."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from support import REPO, wait_for
from transports.http.support import MCP_HEADERS, McpHttpClient, children, free_port, initialize, request

pytest.importorskip("uvicorn")


@contextmanager
def server(arguments: list[str], tmp_path: Path, token: str | None = None
           ) -> Iterator[tuple[subprocess.Popen[bytes], int, Path]]:
    """`shipcode-mcp --http PORT ARGUMENTS` serving `tmp_path/project` (which holds hello.txt), once it
    answers (`token`'s requests); yields the process, its port and the file its stderr goes to."""
    project = tmp_path / "project"
    project.mkdir(exist_ok=True)
    (project / "hello.txt").write_text("hello\n")
    port = free_port()
    stderr = tmp_path / f"server-{port}.log"
    with open(stderr, "wb") as log:
        process = subprocess.Popen([sys.executable, "-m", "shipcode_mcp", "--http", str(port), *arguments, str(project)],
                                   env={**os.environ, "PYTHONPATH": str(REPO / "src")}, stdin=subprocess.DEVNULL,
                                   stdout=subprocess.DEVNULL, stderr=log, start_new_session=True)
    try:
        wait_for(lambda: process.poll() is not None or serves(port, token), 60, "the server to answer")
        assert process.poll() is None, stderr.read_text()
        yield process, port, stderr
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(30)


def serves(port: int, token: str | None = None) -> bool:
    """Whether an initialize on a new connection is answered, and a read_file after it."""
    authorized = {**MCP_HEADERS, **({} if token is None else {"Authorization": f"Bearer {token}"})}
    try:
        init = request(port, "POST", initialize(), authorized, timeout=5)
        if init.status != 200:
            return False
        headers = {**authorized, "MCP-Protocol-Version": "2025-06-18"}
        if "mcp-session-id" in init.headers:
            headers["Mcp-Session-Id"] = init.headers["mcp-session-id"]
            request(port, "POST", {"jsonrpc": "2.0", "method": "notifications/initialized"}, headers, timeout=5)
        call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "read_file", "arguments": {"path": "hello.txt"}}}
        result = request(port, "POST", call, headers, timeout=30).json()["result"]
        return bool(result["structuredContent"]["text"] == "hello")
    except OSError:
        return False


def refuses(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
        return False
    except OSError:
        return True


def workers(supervisor: int) -> list[int]:
    """The supervisor's worker processes (uvicorn spawns them; its resource tracker is another child)."""
    found = []
    for pid in children(supervisor):
        try:
            if b"spawn_main" in Path(f"/proc/{pid}/cmdline").read_bytes():
                found.append(pid)
        except OSError:
            pass
    return found


def counted_workers(supervisor: int, count: int, without: int | None = None) -> list[int] | None:
    """The workers of `supervisor` once there are `count` of them, `without` not among them; else None (for wait_for)."""
    found = workers(supervisor)
    return found if found and len(found) == count and (without is None or without not in found) else None


def in_session(session: int) -> list[int]:
    """The live processes of a session (a server started with start_new_session: its own pid), the only ones
    that can hold its listening socket. (Whether its port refuses connections is no test: once it is free,
    any other process of the machine, a parallel test's server say, may bind it.)"""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(") ", 1)[1].split()
            except (OSError, IndexError):
                continue
            if fields[0] != "Z" and int(fields[3]) == session:
                found.append(int(entry))
    return found


def oom_score_adj(pid: int) -> int:
    return int(Path(f"/proc/{pid}/oom_score_adj").read_text())


@pytest.mark.parametrize("dies", [signal.SIGKILL, signal.SIGABRT], ids=["killed", "aborted"])
def test_an_unsupervised_server_that_dies_leaves_nothing_that_answers(dies: signal.Signals, tmp_path: Path) -> None:
    """The control: the harm a supervisor prevents. One process serves; killed (the OOM killer's SIGKILL) or
    aborted (a C assertion's SIGABRT), nothing answers on its port any more."""
    with server([], tmp_path) as (process, _port, _):
        assert workers(process.pid) == []
        os.kill(process.pid, dies)
        assert process.wait(30) == -dies
        assert in_session(process.pid) == []  # nothing left that listens


@pytest.mark.parametrize("dies", [signal.SIGKILL, signal.SIGABRT], ids=["killed", "aborted"])
@pytest.mark.parametrize("mode", [["--supervise"], ["--stateless", "--supervise"], ["--stateless", "--workers", "2"]],
                         ids=["sessions", "stateless", "two-workers"])
def test_a_supervised_worker_that_dies_is_started_again(mode: list[str], dies: signal.Signals, tmp_path: Path) -> None:
    with server(mode, tmp_path) as (process, port, stderr):
        count = 2 if "--workers" in mode else 1
        first = wait_for(lambda: counted_workers(process.pid, count), 30, "the workers")
        victim = first[0]
        os.kill(victim, dies)
        replaced = wait_for(lambda: counted_workers(process.pid, count, without=victim), 60, "a worker started again")
        wait_for(lambda: serves(port), 60, "the server to answer again")
        assert set(first) - {victim} <= set(replaced)  # the others kept serving
        new = (set(replaced) - set(first)).pop()
        # The supervisor says so once uvicorn's round of restarts is over, a moment after the new worker exists
        # (and, with two workers, the other one answers meanwhile): waited for, not read at once.
        line = f"WARNING: worker {victim} was killed by {dies.name}"
        said = wait_for(lambda: next((text for text in [stderr.read_text()] if line in text), None), 30,
                        "the supervisor's warning")
        assert f"started again as {new}" in said, said
        process.send_signal(signal.SIGTERM)
        assert process.wait(30) == 0


def test_a_supervised_session_server_serves_sessions_and_a_dead_workers_sessions_end(tmp_path: Path) -> None:
    """With one supervised worker the server keeps its sessions (GET stream, requests to the client); those of a
    worker that died end: the client gets 404 for them, and a new initialize is served (the spec's recovery)."""
    with server(["--supervise"], tmp_path) as (process, port, _):
        client = McpHttpClient(port)
        assert client.session_id is not None
        assert request(port, "GET", headers={"Accept": "text/event-stream", "Mcp-Session-Id": client.session_id,
                                             "MCP-Protocol-Version": "2025-06-18"}, stream=True).status == 200
        [worker] = workers(process.pid)
        os.kill(worker, signal.SIGKILL)
        wait_for(lambda: serves(port), 60, "the server to answer again")
        ping = {"jsonrpc": "2.0", "id": 5, "method": "ping"}
        headers = {**MCP_HEADERS, "Mcp-Session-Id": client.session_id, "MCP-Protocol-Version": "2025-06-18"}
        assert request(port, "POST", ping, headers).status == 404
        assert McpHttpClient(port).call("ping").json()["result"] == {}


def test_a_hung_worker_is_killed_and_started_again(tmp_path: Path) -> None:
    """A worker that stops answering its supervisor's health check (stopped here; one held 5 s in a single call
    of native code alike: busy Python code still answers) is killed after HEALTH_CHECK_TIMEOUT (5 s) and
    replaced. Without a supervisor, a stopped server accepts connections (the kernel's backlog) and answers
    none of them."""
    with server([], tmp_path) as (process, port, _):
        os.kill(process.pid, signal.SIGSTOP)
        try:
            assert not serves(port)
        finally:
            os.kill(process.pid, signal.SIGCONT)
    with server(["--supervise"], tmp_path) as (process, port, stderr):
        [worker] = wait_for(lambda: workers(process.pid), 30, "the worker")
        os.kill(worker, signal.SIGSTOP)
        start = time.monotonic()
        wait_for(lambda: worker not in workers(process.pid) and serves(port), 90, "the server to answer again")
        assert time.monotonic() - start >= 5
        assert f"worker {worker} did not answer its supervisor for 5 s and was killed" in stderr.read_text()


def test_a_worker_killed_during_its_health_check_is_said_to_be_killed_by_its_signal(tmp_path: Path) -> None:
    """A worker that dies while its supervisor waits for its health check's answer (the wait lasts its 5 s for a
    dead worker too) was killed by someone else, not by the supervisor: the warning names the signal. Stopped
    first, so the kill lands inside the wait every time (a kill at random lands there now and then)."""
    with server(["--supervise"], tmp_path) as (process, port, stderr):
        [worker] = wait_for(lambda: workers(process.pid), 30, "the worker")
        os.kill(worker, signal.SIGSTOP)
        time.sleep(1.5)  # the supervisor checks every 0.5 s: it now waits for this worker's answer
        os.kill(worker, signal.SIGKILL)
        wait_for(lambda: worker not in workers(process.pid) and serves(port), 90, "the server to answer again")
        said = stderr.read_text()
        assert f"worker {worker} was killed by SIGKILL" in said, said
        assert "did not answer its supervisor" not in said, said


def _gone(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1].startswith("Z")
    except OSError:
        return True


def test_workers_end_with_their_supervisor(tmp_path: Path) -> None:
    """A supervisor killed outright (SIGKILL, the OOM killer's) leaves no worker behind: the control, a bare
    `uvicorn --workers 2`, leaves both serving on the port, unsupervised, where a new start fails to bind."""
    port = free_port()
    bare = subprocess.Popen([sys.executable, "-m", "uvicorn", "worker_app:app", "--workers", "2", "--port", str(port),
                             "--log-level", "warning"], cwd=Path(__file__).parent, start_new_session=True,
                            env={**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO / "tests")])},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        left = wait_for(lambda: counted_workers(bare.pid, 2), 60, "the bare workers")
        wait_for(lambda: not refuses(port), 30, "the bare server to listen")
        os.kill(bare.pid, signal.SIGKILL)
        bare.wait(30)
        time.sleep(1)
        assert not any(_gone(pid) for pid in left) and not refuses(port)  # the harm: orphans still serve
    finally:
        os.killpg(bare.pid, signal.SIGKILL)
    with server(["--stateless", "--workers", "2"], tmp_path) as (process, port, _):
        found = wait_for(lambda: counted_workers(process.pid, 2), 30, "the workers")
        os.kill(process.pid, signal.SIGKILL)
        process.wait(30)
        wait_for(lambda: all(_gone(pid) for pid in found), 30, "the workers to end")
        wait_for(lambda: in_session(process.pid) == [], 30, "nothing of the server left")


def _session(port: int, token: str | None) -> dict[str, str]:
    """The headers of a new session's requests (with `token`)."""
    headers = {**MCP_HEADERS, **({} if token is None else {"Authorization": f"Bearer {token}"})}
    init = request(port, "POST", initialize(), headers)
    assert init.status == 200, init.body
    headers.update({"Mcp-Session-Id": init.headers["mcp-session-id"], "MCP-Protocol-Version": "2025-06-18"})
    assert request(port, "POST", {"jsonrpc": "2.0", "method": "notifications/initialized"}, headers).status == 202
    return headers


def _ping(port: int, headers: dict[str, str]) -> int:
    return request(port, "POST", {"jsonrpc": "2.0", "id": 7, "method": "ping"}, headers).status


def test_sighup_reloads_the_token_file_in_the_worker_and_keeps_its_sessions(tmp_path: Path) -> None:
    """Without a token file SIGHUP replaces the worker (uvicorn's way; the control): its sessions end (404).
    With one, the supervisor passes SIGHUP on and the worker reads the file again in place, as the one-process
    server does: a token added works, a removed one stops, and the sessions go on."""
    with server(["--supervise"], tmp_path) as (process, port, _):
        [worker] = wait_for(lambda: workers(process.pid), 30, "the worker")
        headers = _session(port, None)
        os.kill(process.pid, signal.SIGHUP)
        wait_for(lambda: (now := workers(process.pid)) and worker not in now and serves(port), 60, "a new worker")
        assert _ping(port, headers) == 404  # the harm: the session is gone with its worker
    old, new = "a-first-token-of-16-or-more", "a-second-token-of-16-or-more"
    tokens = tmp_path / "tokens"
    tokens.write_text(f"{old} shipcode:read\n")
    tokens.chmod(0o600)
    with server(["--supervise", "--auth-token-file", str(tokens)], tmp_path, old) as (process, port, _):
        [worker] = wait_for(lambda: workers(process.pid), 30, "the worker")
        headers = _session(port, old)
        newcomer = {**MCP_HEADERS, "Authorization": f"Bearer {new}"}
        assert request(port, "POST", initialize(), newcomer).status == 401
        tokens.write_text(f"{old} shipcode:read\n{new} shipcode:read\n")
        os.kill(process.pid, signal.SIGHUP)
        wait_for(lambda: request(port, "POST", initialize(), newcomer).status == 200, 30, "the new token to work")
        assert _ping(port, headers) == 200 and workers(process.pid) == [worker]
        tokens.write_text(f"{new} shipcode:read\n")
        os.kill(process.pid, signal.SIGHUP)
        wait_for(lambda: _ping(port, headers) == 401, 30, "the removed token to stop working")
        assert workers(process.pid) == [worker]


@pytest.mark.parametrize("stateless", [True, False], ids=["stateless", "sessions"])
def test_sigttin_adds_a_worker_only_without_sessions(stateless: bool, tmp_path: Path) -> None:
    """uvicorn's supervisor adds a worker on SIGTTIN: right without sessions (the control), wrong with one
    worker keeping them (a second would answer 404 to half their requests), where it is refused and said."""
    with server(["--supervise", *(["--stateless"] if stateless else [])], tmp_path) as (process, port, stderr):
        wait_for(lambda: len(workers(process.pid)) == 1, 30, "the worker")
        os.kill(process.pid, signal.SIGTTIN)
        if stateless:
            wait_for(lambda: len(workers(process.pid)) == 2, 30, "a second worker")
            return
        wait_for(lambda: "SIGTTIN ignored" in stderr.read_text(), 30, "the refusal")
        time.sleep(1)  # the supervisor's next rounds start nothing either
        assert len(workers(process.pid)) == 1 and serves(port)


def test_workers_are_what_the_oom_killer_picks_before_their_supervisor(tmp_path: Path) -> None:
    with server(["--stateless", "--workers", "2"], tmp_path) as (process, _, _):
        raised = min(1000, oom_score_adj(process.pid) + 500)
        # each worker raises its score as it builds its app: the one that has not answered yet may not have
        wait_for(lambda: (now := workers(process.pid)) and [oom_score_adj(pid) for pid in now] == [raised] * 2, 30,
                 "both workers' raised oom_score_adj")


def test_a_worker_that_cannot_start_again_is_tried_again_slowly_and_serves_once_it_can(tmp_path: Path) -> None:
    """The token file broke after the start; the worker killed then cannot start again. It says why, without
    a traceback and not every half second (uvicorn's supervisor would start it again at once, or stop the
    whole deployment on status 3): it waits RESTART_BACKOFF (5 s) and is tried again, and serves again once
    the file is mended, the supervisor up throughout."""
    tokens, token = tmp_path / "tokens", "a-token-of-more-than-16-characters"
    tokens.write_text(f"{token} shipcode:read\n")
    tokens.chmod(0o600)
    with server(["--supervise", "--auth-token-file", str(tokens)], tmp_path, token) as (process, port, stderr):
        [worker] = wait_for(lambda: workers(process.pid), 30, "the worker")
        tokens.write_text("short\n")
        os.kill(worker, signal.SIGKILL)
        wait_for(lambda: "a token needs at least 16 characters" in stderr.read_text(), 30, "the refusal")
        time.sleep(6)
        said = stderr.read_text()
        assert process.poll() is None and 1 <= said.count("a token needs at least 16 characters") <= 3, said
        assert "Traceback" not in said and token not in said
        tokens.write_text(f"{token} shipcode:read\n")
        wait_for(lambda: serves(port, token), 60, "the server to answer again")
        assert process.poll() is None


def test_supervise_needs_http() -> None:
    done = subprocess.run([sys.executable, "-m", "shipcode_mcp", "--supervise"], capture_output=True, text=True,
                          timeout=30, env={**os.environ, "PYTHONPATH": str(REPO / "src")})
    assert done.returncode == 2 and "--supervise" in done.stderr

"""Serving an ASGI app with uvicorn, every uvicorn detail in one place: the front of every connection
(front.py), logging on stderr, the signals (a graceful shutdown that exits 0, SIGHUP for a token
file), the shutdown of open listen streams, and supervised worker processes (started again when one dies,
their oom_score_adj raised, ended with their supervisor). `serve_http` serves a registry's endpoint
(endpoint.py's `create_app`) this way.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import signal
import sys
import threading
from typing import TYPE_CHECKING, Any

from ... import log
from .endpoint import _ENDPOINTS, create_app
from .limits import HttpLimits, with_fields

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from ...registry import Registry
    from .auth import ResourceServer
    from .front import FrontLimits

HEALTH_CHECK_TIMEOUT = 5  # seconds a supervised worker may leave its supervisor's health check unanswered
SUPERVISOR_VARIABLE = "SHIPCODE_MCP_SUPERVISOR"  # the supervisor's pid, as its workers find it
RESTARTS_VARIABLE = "SHIPCODE_MCP_RESTARTS"  # set once the first workers are started: later ones are restarts
RESTART_BACKOFF = 5.0  # seconds a worker started again that cannot serve waits before it exits to be tried again
OOM_SCORE_RAISE = 500  # a supervised worker's oom_score_adj over its supervisor's (-1000 to 1000)


def serve_http(server: Registry, host: str = "127.0.0.1", port: int = 8765, *, path: str = "/mcp",
               stateless: bool = False, allowed_origins: Sequence[str] = (), allowed_hosts: Sequence[str] | None = None,
               log_level: str = "warning", auth: ResourceServer | None = None, tls: tuple[str, str] | None = None,
               front: FrontLimits | None = None, limits: HttpLimits | None = None, **limit: Any) -> int:
    """Serve `server` over Streamable HTTP at http://host:port/path (https with `tls`, a certificate and its
    key) until SIGINT or SIGTERM; with `auth`, SIGHUP reads its token file again.

    A server bound to a non-loopback address accepts any Host name unless `allowed_hosts` says
    otherwise; Origin is checked either way. For several worker processes, see `create_app`. `front`
    limits connections (front.py: request heads, open connections; default `FrontLimits()`); `limits`
    and the fields given by name are `create_app`'s.
    """
    app: Any = create_app(server, path=path, stateless=stateless, allowed_origins=allowed_origins,
                          allowed_hosts=allowed_hosts, host=host, auth=auth, limits=with_fields(limits, limit))
    if log.enabled("debug"):  # one line per request (docs/logging.md)
        from .request_log import RequestLog  # only at --log-level debug

        app = RequestLog(app)
    options: dict[str, Any] = {} if tls is None else {"ssl_certfile": tls[0], "ssl_keyfile": tls[1]}
    return run_uvicorn(app, host=host, port=port, log_level=log_level, on_hangup=None if auth is None else auth.reload,
                       front=front, **options)


def run_uvicorn(app: Any, *, log_level: str, on_hangup: Callable[[], None] | None = None,
                front: FrontLimits | None = None, supervise: bool = False, sessions: bool = False,
                hangup_to_workers: bool = False, **options: Any) -> int:
    """uvicorn.run with logging on stderr only, in our format (its access log would go to stdout), a prompt shutdown
    even with GET streams open, and exit status 0 after a graceful shutdown on SIGINT or SIGTERM
    (uvicorn raises the signal again once done; it finds a handler that lets the process end normally).

    Connections go through the front (front.py: `front`, default `FrontLimits()`), in each worker too;
    the descriptor limit is raised to its hard limit first (workers inherit it), which sizes the default cap
    and the accept batch (`front.FrontLoop`, uvicorn's `loop`: the cap leaves room for the bursts).
    `ssl_certfile` and `ssl_keyfile` go to the front, which starts TLS itself (so a connection that never
    completes its handshake is under its rules too); the files are read here first, so a bad pair stops the
    start. No WebSocket (`ws="none"`): the app has no WebSocket route.

    `supervise` (an import string for `app`; always so with more than one of `workers`) serves from worker
    processes under uvicorn's supervisor, which starts a worker again when it dies or stops answering its
    health check; the exit status is 3 when a worker failed to start (as uvicorn.run's). With `sessions` (one
    worker keeping them), SIGTTIN adds no worker: a second would not know the first one's sessions. With
    `hangup_to_workers` (each reloads a token file on it: `reload_on_hangup`), SIGHUP goes to each worker
    instead of replacing them, so no session ends for it."""
    import uvicorn

    from .front import FrontLimits, protocol, raise_file_limit, tls_context  # uvicorn's: create_app needs Starlette alone

    raise_file_limit()
    if sys.platform != "win32" and hasattr(uvicorn.Config, "get_loop_factory"):  # uvicorn 0.36+ takes a loop class
        options.setdefault("loop", "shipcode_mcp.transports.http.front:FrontLoop")  # accept batches the cap has room for
    limits = front if front is not None else FrontLimits()
    certificate, key = options.pop("ssl_certfile", None), options.pop("ssl_keyfile", None)
    if certificate is not None:
        tls_context(certificate, key)  # raises now on files that make no TLS server
        limits = dataclasses.replace(limits, tls=(certificate, key))
    options["http"] = protocol(limits)
    options["ws"] = "none"
    level = {"off": "critical"}.get(log_level, log_level)
    config = log.uvicorn_log_config(level)  # stderr, in our format (docs/logging.md)
    handled = (signal.SIGINT, signal.SIGTERM)
    previous = {sig: signal.signal(sig, _stopped) for sig in handled} if _main_thread() else {}
    if on_hangup is not None and _main_thread() and hasattr(signal, "SIGHUP"):
        previous[signal.SIGHUP] = signal.signal(signal.SIGHUP, lambda signum, frame: _on_loop_soon(on_hangup))
    settings: dict[str, Any] = dict(log_config=config, log_level=level, access_log=level in ("debug", "info"),
                                    timeout_graceful_shutdown=3, server_header=False, **options)
    try:
        if supervise or options.get("workers", 1) != 1:
            return _supervised(uvicorn.Config(app, timeout_worker_healthcheck=HEALTH_CHECK_TIMEOUT, **settings), sessions,
                               hangup_to_workers)
        if isinstance(app, str):
            uvicorn.run(app, **settings)
        else:  # uvicorn.run, with a server that ends listen streams with their result when it shuts down
            server = uvicorn_server(uvicorn.Config(app, **settings))
            server.run()
            if not server.started:
                raise SystemExit(3)  # uvicorn's STARTUP_FAILURE, as uvicorn.run exits
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 0


def _supervised(config: Any, sessions: bool, hangup_to_workers: bool) -> int:
    """uvicorn.run's way with workers, for one worker as well: its Multiprocess supervisor on one listening
    socket. The workers' listen streams end when the graceful wait is up."""
    from uvicorn.config import STARTUP_FAILURE
    from uvicorn.supervisors import Multiprocess

    class Supervisor(Multiprocess):
        def keep_subprocess_alive(self) -> None:
            """uvicorn's, saying at warning level (uvicorn says it at info) which worker ended and how. uvicorn
            kills a worker whose health check went unanswered; one that was dead by then (killed during the
            check's wait, which a dead worker's pipe does not cut short) died of someone else's signal."""
            before = list(self.processes)
            killed: set[int] = set()
            for worker in before:
                worker.kill = _noting_kills(worker, killed)  # type: ignore[method-assign]
            try:
                super().keep_subprocess_alive()
            finally:
                for worker in before:
                    del worker.kill  # uvicorn's own again
            for old, new in zip(before, self.processes, strict=True):
                if old is not new:
                    log.warning(f"worker {old.pid} {_how_it_ended(old.exitcode, id(old) in killed)}; "
                                f"started again as {new.pid}")

        def init_processes(self) -> None:
            super().init_processes()
            os.environ[RESTARTS_VARIABLE] = "1"  # every worker started from now on is a restart: see restarted

        def handle_hup(self) -> None:
            if not hangup_to_workers:
                super().handle_hup()  # uvicorn's: each worker replaced, one by one
                return
            for worker in self.processes:  # a worker not serving yet may not hear it: it is replaced instead
                if worker.pid is not None and worker.is_ready(timeout=1):
                    os.kill(worker.pid, signal.SIGHUP)
                else:
                    worker.terminate()

        def handle_ttin(self) -> None:
            if sessions:
                log.warning("SIGTTIN ignored: the sessions live in one worker, which a second would not know "
                            "(--stateless serves from as many as you like)")
                return
            super().handle_ttin()

    os.environ[SUPERVISOR_VARIABLE] = str(os.getpid())  # before any worker starts: see worker_started
    sock = config.bind_socket()
    supervisor = Supervisor(config, sockets=[sock])
    try:
        supervisor.run()
    finally:
        sock.close()
    return STARTUP_FAILURE if any(worker.exitcode == STARTUP_FAILURE for worker in supervisor.processes) else 0


def restarted() -> bool:
    """Whether this supervised worker was started again after a death (not one of the first ones)."""
    return os.environ.get(RESTARTS_VARIABLE) == "1"


def reload_on_hangup(reload: Callable[[], None]) -> None:
    """In a supervised worker: SIGHUP (the supervisor passes its own on) runs `reload` on the event loop, as
    the one-process server does, rather than ending the worker (SIGHUP's default)."""
    signal.signal(signal.SIGHUP, lambda signum, frame: _on_loop_soon(reload))


def worker_started() -> None:
    """What a supervised worker does first. It ends with its supervisor (PR_SET_PDEATHSIG; one that died
    before this exits at once): left behind, it would serve alone, unsupervised, and hold the port against a
    new start. And it is what the kernel's OOM killer picks before its supervisor, which would start it again
    (raising one's own oom_score_adj needs no privilege; its children inherit it)."""
    import ctypes  # only a supervised worker calls prctl

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(ctypes.c_int(1), ctypes.c_ulong(signal.SIGTERM), ctypes.c_ulong(0), ctypes.c_ulong(0),
                      ctypes.c_ulong(0)) != 0:  # PR_SET_PDEATHSIG
            raise OSError(ctypes.get_errno(), "prctl")
    except (OSError, AttributeError) as err:  # not Linux
        log.warning(f"a worker cannot end with its supervisor: {err}")
    supervisor = os.environ.get(SUPERVISOR_VARIABLE)
    if supervisor is not None and os.getppid() != int(supervisor):
        raise SystemExit(0)  # the supervisor is gone already
    try:
        with open("/proc/self/oom_score_adj", "r+") as adj:
            adj.write(str(min(1000, int(adj.read()) + OOM_SCORE_RAISE)))
    except (OSError, ValueError):  # not Linux, or no /proc: the supervisor still starts a dead worker again
        pass


def _noting_kills(worker: Any, killed: set[int]) -> Callable[[], None]:
    """`worker`'s kill, adding it to `killed` when it was still running (so the kill was this one)."""
    kill = worker.kill

    def noting() -> None:
        if worker.process.is_alive():
            killed.add(id(worker))
        kill()
    return noting


def _how_it_ended(status: int | None, killed_here: bool) -> str:
    if killed_here and status == -signal.SIGKILL:  # running, and its health check unanswered: uvicorn killed it
        return f"did not answer its supervisor for {HEALTH_CHECK_TIMEOUT:g} s and was killed"
    if status is not None and status < 0:
        return f"was killed by {signal.Signals(-status).name}" + (" (the OOM killer sends it)" if status == -9 else "")
    return f"exited with status {status}"


def uvicorn_server(config: Any) -> Any:
    """A uvicorn.Server that first ends the open subscriptions/listen streams (each with its result) when
    it shuts down: uvicorn waits for open responses before the app's lifespan hears of the shutdown. It serves
    no WebSocket (`ws="none"`: the app has no WebSocket route, and an upgraded connection leaves the front)."""
    import uvicorn

    if not config.loaded:
        config.ws = "none"

    class Server(uvicorn.Server):
        async def shutdown(self, sockets: list[Any] | None = None) -> None:
            loop = asyncio.get_running_loop()
            for endpoint in list(_ENDPOINTS):
                if endpoint.loop is loop:
                    endpoint.end_listens()
            await super().shutdown(sockets)

    return Server(config)


def _on_loop_soon(call: Callable[[], None]) -> None:
    """From a signal handler: run `call` as the event loop's next callback, not in the middle of whatever the
    loop was doing when the signal came (a reload must not interleave with a lookup of what it replaces)."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:  # the server is not running yet (or any more): nothing to interleave with
        call()
        return
    loop.call_soon_threadsafe(call)


def _stopped(signum: int, frame: Any) -> None:
    """uvicorn has shut down gracefully and raises the signal again: nothing more to do."""


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


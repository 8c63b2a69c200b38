"""The language servers of the process: one per language and set of roots, shared by every client and
session, started (with `--precise`) at start or on first need, warmed in the background, started again
when one crashes, stopped when idle, and run in the sandbox of every child.

A language server is a long-lived child like the parse workers (process.Child): it reads the roots and its
own install, writes nothing (no folder of the workspace or elsewhere is writable to it, so it leaves nothing
behind), makes no socket and runs nothing but itself; its memory is bounded by its heap option and an
address-space limit. Nothing waits on it without a deadline: a tool asks `ready()` and answers from the
syntax tree while the server is starting or warming (saying when precise answers are expected); a request
past its deadline is cancelled and the tool answers from the syntax tree too.

The server reads the files from disk; before each request the Python files of the roots are looked at
(their size and modification time) and what changed since the last look is told to it
(`workspace/didChangeWatchedFiles`), so an edit made by a tool or outside is seen by the next answer.
"""

from __future__ import annotations

import atexit
import os
import re
import threading
import time
from collections.abc import Callable
from typing import Any

from ...primitives import ToolError
from .. import process
from ..listing import list_files
from ..sandbox import MIB, Limits
from ..uris import file_uri
from .connection import Connection, Gone, TimedOut
from .installed import HEAP_MIB, LANGUAGES, Installed, find

LIMITS = Limits(address_space=(HEAP_MIB + 3072) * MIB, cpu_seconds=6 * 3600, open_files=4096)
"""The server's resource limits: its heap (installed.HEAP_MIB) and Node's own reservations within the address
space. Past them, the server fails and is started again."""
START_TIMEOUT = 60.0
"""`initialize` must be answered within this."""
WARM_TIMEOUT = 600.0
"""The warm-up (every file of the language parsed and bound) must end within this."""
ENUMERATION_WAIT = 2.0
"""The longest a request waits for the server to find the workspace's files again after files were created or
deleted (pyright does it in milliseconds; a file it excludes, in a hidden folder, makes it skip that)."""
IDLE_STOP = 20 * 60.0
"""A server no call has used for this long is stopped (and started again on the next need)."""
IDLE_CHECK = 30.0
"""How often the servers are looked at for idleness."""
RESTARTS = 3
"""Crashes within RESTART_WINDOW after which a server is not started again until the window has passed."""
RESTART_WINDOW = 600.0
SECONDS_PER_FILE = 0.01
"""The warm-up's expected cost per file of the language, for the time a call is told to wait (basedpyright on
636 files of Python's standard library: 3.2 s on this 2-core machine, 5 ms a file; twice that, for a loaded
machine)."""
_FOUND = re.compile(r"(?:Found \d+ source files?|No source files found)")
_POLL = 0.05


class NotReady(Exception):
    """No precise answer now: the server is starting, warming, failed or not installed; `note` says which and,
    while it warms, when answers are expected."""

    def __init__(self, note: str) -> None:
        super().__init__(note)
        self.note = note


class LanguageServer:
    """One running language server (or one starting) for one language and set of roots."""

    def __init__(self, installed: Installed, roots: tuple[str, ...]) -> None:
        self.installed = installed
        self.roots = roots
        self.state = "starting"
        self.failure: str | None = None
        self.started = time.monotonic()
        self.expected: float | None = None
        """When the warm-up is expected to end (monotonic), once the files are counted."""
        self.used = self.started
        self.warm_seconds: float | None = None
        self._child: process.Child | None = None
        self._to_server: int | None = None
        self._connection: Connection | None = None
        self._seen: dict[str, tuple[int, int]] = {}
        self._sync = threading.Lock()
        self._ending = threading.Lock()
        self._documents = threading.Lock()
        """Held while a document is open in the server (`diagnostics`)."""
        self._stopped = threading.Event()
        self._found = threading.Event()
        """Set when the server has found the workspace's files (pyright logs `Found 636 source files`)."""
        self._thread = threading.Thread(target=self._start, name=f"{installed.name} start", daemon=True)
        self._thread.start()

    @property
    def name(self) -> str:
        return self.installed.name

    # -- starting and warming (its own thread) ---------------------------------------------------------------
    def _start(self) -> None:
        try:
            seen = self._look()  # before the server reads them: a change after this look is told to it later
            with self._sync:
                self._seen = seen
            connection = self._launch()
            connection.request("initialize", self._initialize_params(), timeout=START_TIMEOUT, check=self._check_stopped)
            connection.notify("initialized", {})
            self.state = "warming"
            self.expected = time.monotonic() + SECONDS_PER_FILE * len(seen)
            begun = time.monotonic()
            # pyright finds the workspace's files after `initialized` (it logs how many), then a workspace
            # symbol search parses and binds every one: what a first references request would pay for (on
            # 636 files of the standard library, 5.7 s cold, 2.9 s after this warm-up, 0.15 s later on).
            while not self._found.wait(_POLL):
                self._check_stopped()
                if time.monotonic() - begun > START_TIMEOUT:
                    break
            connection.request("workspace/symbol", {"query": "shipcode_mcp_warm_up"}, timeout=WARM_TIMEOUT,
                               check=self._check_stopped)
            self.warm_seconds = time.monotonic() - begun
            self.state = "ready"
        except BaseException as err:  # whatever stopped it (a crash, a deadline, stop()): said, never raised
            self._fail(str(err) if isinstance(err, ToolError) else f"{type(err).__name__}: {err}")

    def _launch(self) -> Connection:
        installed = self.installed
        stdin_r, self._to_server = os.pipe2(os.O_CLOEXEC)
        try:
            self._child = process.Child(None, installed.argv, cwd=self.roots[0], readable=[*self.roots, *installed.readable],
                                        limits=LIMITS, env=dict(installed.env), timeout=float("inf"),
                                        what=f"the {installed.name} language server", slot=False, stdin=stdin_r)
        finally:
            os.close(stdin_r)
        self._connection = Connection(self._to_server, self._child.stdout_fd, self._child.stderr_fd,
                                      answer=self._answer, notified=self._notified, name=installed.name)
        return self._connection

    def _initialize_params(self) -> dict[str, Any]:
        folders = [{"uri": file_uri(root), "name": os.path.basename(root) or root} for root in self.roots]
        return {
            "processId": None,  # (pyright would poll that process with a signal, which the sandbox refuses)
            "clientInfo": {"name": "shipcode-mcp"},
            "rootUri": folders[0]["uri"],
            "workspaceFolders": folders,
            "capabilities": {
                "general": {"positionEncodings": ["utf-16"]},
                "workspace": {"configuration": True, "workspaceFolders": True,
                              "didChangeWatchedFiles": {"dynamicRegistration": True}},
                "textDocument": {"references": {}, "definition": {"linkSupport": False},
                                 "rename": {"prepareSupport": True},
                                 "publishDiagnostics": {"relatedInformation": False}, "diagnostic": {"dynamicRegistration": False}},
                "window": {"workDoneProgress": False},
            },
        }

    def _check_stopped(self) -> None:
        if self._stopped.is_set():
            raise Gone(f"the {self.name} language server was stopped")

    # -- what the language server asks of us ---------------------------------------------------------------
    def _answer(self, method: str, params: Any) -> Any:
        if method == "workspace/configuration":
            items = params.get("items") if isinstance(params, dict) else None
            return [self._setting(item.get("section") if isinstance(item, dict) else None)
                    for item in (items if isinstance(items, list) else [])][:1000]
        if method == "workspace/workspaceFolders":
            return self._initialize_params()["workspaceFolders"]
        if method in ("client/registerCapability", "client/unregisterCapability", "window/workDoneProgress/create",
                      "window/showMessageRequest", "workspace/diagnostic/refresh", "workspace/semanticTokens/refresh",
                      "workspace/inlayHint/refresh", "workspace/codeLens/refresh"):
            return None
        raise LookupError(method)

    @staticmethod
    def _setting(section: Any) -> Any:
        """What the server is told of its settings: only open files are checked (a workspace-wide check on
        each change would cost a core), and the Python environment is not looked for (that would run the
        workspace's interpreter: code of the repository's choosing)."""
        analysis = {"diagnosticMode": "openFilesOnly", "autoSearchPaths": True, "useLibraryCodeForTypes": True,
                    "typeCheckingMode": "standard"}  # (a project's own configuration file says otherwise: it wins)
        if section in ("python.analysis", "basedpyright.analysis"):
            return analysis
        if section in ("python", "basedpyright"):
            return {"analysis": analysis}
        return None

    def _notified(self, method: str, params: Any) -> None:
        if method == "window/logMessage" and isinstance(params, dict) and _FOUND.match(str(params.get("message"))):
            self._found.set()

    # -- asking ---------------------------------------------------------------------------------------------
    def ready(self) -> None:
        """Return if the server can answer now, else raise NotReady with what the caller should say."""
        self.used = time.monotonic()
        connection = self._connection
        if self.state == "ready":
            if connection is not None and connection.closed is None:
                return
            self._fail(connection.closed if connection is not None and connection.closed else "it stopped")
        if self.state == "failed":
            raise NotReady(f"the {self.name} language server failed ({self.failure})")
        if self.state == "stopped":
            raise NotReady(f"the {self.name} language server was stopped")
        waited = time.monotonic() - self.started
        if self.expected is None:
            raise NotReady(f"the {self.name} language server is starting ({waited:.0f} s ago)")
        left = max(1.0, self.expected - time.monotonic())
        raise NotReady(f"the {self.name} language server is still reading the workspace ({waited:.0f} s so far; "
                       f"precise answers expected in about {left:.0f} s)")

    def request(self, method: str, params: Any, *, timeout: float, check: Callable[[], None] | None) -> Any:
        """A request of the ready server, after telling it what changed on disk; NotReady when it is not ready
        or does not answer in time (it is then cancelled; a server that ended is marked failed)."""
        connection = self._connected()
        try:
            self.catch_up()
            return connection.request(method, params, timeout=timeout, check=check)
        except TimedOut as err:
            raise NotReady(str(err)) from None
        except Gone as err:
            self._fail(str(err))
            raise NotReady(f"the {self.name} language server failed ({self.failure})") from None

    def diagnostics(self, real: str, text: str, *, timeout: float, check: Callable[[], None] | None) -> list[Any]:
        """The server's diagnostics of the file `real` holding `text` (opened for the question, then closed: the
        server checks open files only). One file at a time: an open document is the server's state."""
        uri = file_uri(real)
        deadline = time.monotonic() + timeout
        while not self._documents.acquire(timeout=_POLL):
            if check is not None:
                check()
            if time.monotonic() > deadline:
                raise NotReady(f"the {self.name} language server was busy checking other files for {timeout:g} s")
        try:
            connection = self._connected()
            try:
                self.catch_up()
                connection.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": self.installed.language,
                                                                            "version": 1, "text": text}}, deadline)
                try:
                    answer = connection.request("textDocument/diagnostic", {"textDocument": {"uri": uri}},
                                                timeout=max(0.0, deadline - time.monotonic()), check=check)
                finally:  # (a moment more for the close: a document left open would be checked on every change)
                    connection.notify("textDocument/didClose", {"textDocument": {"uri": uri}}, time.monotonic() + 1)
            except TimedOut as err:
                raise NotReady(str(err)) from None
            except Gone as err:
                self._fail(str(err))
                raise NotReady(f"the {self.name} language server failed ({self.failure})") from None
        finally:
            self._documents.release()
        items = answer.get("items") if isinstance(answer, dict) else None
        return items if isinstance(items, list) else []

    def _connected(self) -> Connection:
        """The connection of the ready server; NotReady when it is not ready (or was just stopped)."""
        self.ready()
        connection = self._connection
        if connection is None:
            raise NotReady(f"the {self.name} language server was stopped")
        return connection

    def catch_up(self) -> None:
        """Tell the server of the files of its language created, changed or deleted since the last look."""
        connection = self._connected()
        with self._sync:
            now = self._look()
            changes = [{"uri": file_uri(path), "type": 1 if path not in self._seen else 2}
                       for path, mark in now.items() if self._seen.get(path) != mark]
            changes += [{"uri": file_uri(path), "type": 3} for path in self._seen if path not in now]
            self._seen = now
            if not changes:
                return
            # A file created or deleted changes the program: pyright finds the files again (and logs how many)
            # before its next answer can know of it, a few milliseconds later.
            enumerated = any(change["type"] != 2 for change in changes)
            if enumerated:
                self._found.clear()
            connection.notify("workspace/didChangeWatchedFiles", {"changes": changes})
            if enumerated:
                self._found.wait(ENUMERATION_WAIT)

    def _look(self) -> dict[str, tuple[int, int]]:
        """(modification time, size) of each file of the server's language in the roots."""
        globs = [f"*{extension}" for extension in self.installed.extensions]
        seen: dict[str, tuple[int, int]] = {}
        for root in self.roots:
            for name in list_files(root, globs):
                path = os.path.join(root, name)
                try:
                    info = os.stat(path, follow_symlinks=False)
                except OSError:
                    continue
                seen[path] = (info.st_mtime_ns, info.st_size)
        return seen

    # -- ending ---------------------------------------------------------------------------------------------
    def _fail(self, reason: str) -> None:
        if self.state != "stopped":
            self.state, self.failure = "failed", reason
        self._kill()

    def stop(self) -> None:
        """Stop the server (it is killed: it holds nothing that needs a clean exit)."""
        self.state = "stopped"
        self._stopped.set()
        self._kill()

    def _kill(self) -> None:
        """Kill the process, end the connection (its reader thread first, then its pipes), once."""
        with self._ending:
            child, connection, to_server = self._child, self._connection, self._to_server
            self._child = self._connection = self._to_server = None
        if child is not None:
            child.kill()
        if connection is not None:
            connection.close()
        if child is not None:
            child.__exit__(None, None, None)
        if to_server is not None:
            os.close(to_server)

    @property
    def pid(self) -> int | None:
        child = self._child
        return child.proc.pid if child is not None else None


class LanguageServers:
    """Every language server of the process, by language and roots."""

    def __init__(self) -> None:
        self.enabled = False
        self._servers: dict[tuple[str, tuple[str, ...]], LanguageServer] = {}
        self._crashes: dict[tuple[str, tuple[str, ...]], list[float]] = {}
        self._lock = threading.Lock()
        self._janitor: threading.Thread | None = None
        self._installed: dict[str, Installed | None] = {}

    def installed(self, language: str) -> Installed | None:
        if language not in self._installed:
            self._installed[language] = find(language)
        return self._installed[language]

    def described(self) -> list[str]:
        """The installed language servers, as the start-up line names them ("basedpyright 1.40.2 for python")."""
        return [f"{found.name} {found.version} for {language}" for language in LANGUAGES
                if (found := self.installed(language)) is not None]

    def server(self, language: str, roots: tuple[str, ...]) -> LanguageServer:
        """The server of `language` for `roots`, started if it is not running; NotReady when none can be:
        `--precise` not given, none installed, or it crashed too often lately."""
        if not self.enabled:
            raise NotReady("no language server is used (start the server with --precise to use one)")
        installed = self.installed(language)
        if installed is None:
            raise NotReady(f"no language server for {language} is installed (pip install 'shipcode-mcp[precise]')")
        key = (language, roots)
        with self._lock:
            server = self._servers.get(key)
            if server is not None and server.state == "failed":
                crashes = [moment for moment in self._crashes.get(key, []) if time.monotonic() - moment < RESTART_WINDOW]
                crashes.append(time.monotonic())
                self._crashes[key] = crashes
                if len(crashes) > RESTARTS:
                    crashes.pop()
                    raise NotReady(f"the {server.name} language server failed {len(crashes)} times in the last "
                                   f"{RESTART_WINDOW / 60:.0f} minutes and is not started again for now ({server.failure})")
                server.stop()  # (killed when it failed: this ends what is left of it)
                server = None
            if server is None or server.state == "stopped":
                server = self._servers[key] = LanguageServer(installed, roots)
                self._watch()
        return server

    def start(self, roots: tuple[str, ...]) -> None:
        """Start the server of every language that has one installed (`--precise`: at start)."""
        for language in LANGUAGES:
            if self.installed(language) is not None:
                self.server(language, roots)

    def running(self) -> list[LanguageServer]:
        with self._lock:
            return list(self._servers.values())

    def stop_all(self) -> None:
        with self._lock:
            servers, self._servers = list(self._servers.values()), {}
        for server in servers:
            server.stop()

    def _watch(self) -> None:
        if self._janitor is None:
            self._janitor = threading.Thread(target=self._stop_idle, name="language servers", daemon=True)
            self._janitor.start()
            atexit.register(self.stop_all)

    def _stop_idle(self) -> None:
        while True:
            time.sleep(IDLE_CHECK)
            with self._lock:
                idle = [(key, server) for key, server in self._servers.items()
                        if time.monotonic() - server.used > IDLE_STOP]
                for key, _ in idle:
                    del self._servers[key]
            for _, server in idle:
                server.stop()


SERVERS = LanguageServers()
"""The process's language servers (`--precise` turns them on: SERVERS.enabled)."""

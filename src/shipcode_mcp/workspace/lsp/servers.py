"""The language servers of the process: one per language and set of roots, shared by every client and
session, started (with `--precise`) at start or on first need, warmed in the background, started again
when one crashes, stopped when idle, and run in the sandbox of every child.

A language server is a long-lived child like the parse workers (process.Child): it reads the roots and its
own install, writes nothing (no folder of the workspace or elsewhere is writable to it, so it leaves nothing
behind; one that needs temporary files, typescript-language-server, gets a private scratch folder, removed when
it stops), makes no socket and runs nothing but itself; its memory is bounded by its heap option and an
address-space limit. Nothing waits on it without a deadline: a tool asks `ready()` and answers from the
syntax tree while the server is starting or warming (saying when precise answers are expected); a request
past its deadline is cancelled and the tool answers from the syntax tree too.

The server reads the files from disk; before each request the files of its language in the roots are looked
at (their size and modification time) and what changed since the last look is told to it
(`workspace/didChangeWatchedFiles`), so an edit made by a tool or outside is seen by the next answer. A server
whose projects are those of its open files (tsserver) has the files a question is about opened for that
question (with their text on disk), then closed.
"""

from __future__ import annotations

import atexit
import os
import re
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from ...primitives import ToolError, inside
from .. import process, safe_open
from ..listing import list_files
from ..roots import Roots
from ..sandbox import MIB, Limits, unavailable_reason
from ..uris import file_uri, uri_path
from . import compile_commands
from .connection import Connection, Gone, Refused, TimedOut
from .installed import HEAP_MIB, INSTALL, LANGUAGES, Installed, find

LIMITS = Limits(address_space=(HEAP_MIB + 3072) * MIB, cpu_seconds=6 * 3600, open_files=4096)
"""The server's resource limits: its heap (installed.HEAP_MIB) and Node's own reservations within the address
space. Past them, the server fails and is started again."""
START_TIMEOUT = 60.0
"""`initialize` must be answered within this."""
WARM_TIMEOUT = 600.0
"""The warm-up (every file of the language parsed and bound) must end within this."""
MAX_TIMEOUTS = 3
"""Requests in a row past their deadline after which a server is taken as hung, and started again."""
MAX_SERVERS = 2
"""Servers of one language running at once (for as many sets of roots): one more stops the least used."""
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
MAX_OPENED = 4 << 20
"""The largest file the warm-up opens in a server (the files of a question are read as the tools read them)."""
SECONDS_PER_FILE = 0.01
"""The warm-up's expected cost per file of the language, for the time a call is told to wait (basedpyright on
636 files of Python's standard library: 3.2 s on this 2-core machine, 5 ms a file; twice that, for a loaded
machine)."""
EMPTY_RECHECK = 60.0
"""How long a server that found no file of its language stays stopped before a question looks again."""
MAX_KEPT_OPEN = 16
"""Files changed since a server that indexes the workspace read them (clangd) that are kept open in it at most (each
holds its parse there); past that, it is started again."""
INDEX_PROGRESS = "backgroundIndexProgress"
"""The work-done progress token under which clangd reports its background index."""
INDEX_BEGIN = 10.0
"""How long a server that indexes in the background has to say it began, before it is taken to have nothing to do."""
_FOUND = re.compile(r"(?:Found \d+ source files?|No source files found)")
_POLL = 0.05


class NotReady(Exception):
    """No precise answer now: the server is starting, warming, failed or not installed; `note` says which and,
    while it warms, when answers are expected."""

    def __init__(self, note: str) -> None:
        super().__init__(note)
        self.note = note


class NoFiles(NotReady):
    """The workspace has no file of the server's language (when it last looked): nothing to answer, nothing to say."""


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
        self._timeouts = 0
        self._documents = threading.Lock()
        """Held while a document is open in the server (`diagnostics`)."""
        self._scratch: str | None = None
        self.empty = False
        """Whether it stopped at start for want of a file of its language."""
        self._stopped = threading.Event()
        self._found = threading.Event()
        """Set when the server has found the workspace's files (pyright logs `Found 636 source files`)."""
        self._indexing: bool | None = None
        """Whether the server's background index is being built (None: it has not said; `Installed.indexes`)."""
        self._index_began = 0.0
        """When the server last began its background index (monotonic)."""
        self._progress = "just begun"
        """How far the background index is, as the server last said (clangd: `3/40`, files indexed of those queued)."""
        self._indexed = threading.Event()
        """Set when the server's background index has been built (clangd ends its `backgroundIndexProgress`)."""
        self._pushed: dict[str, tuple[Any, list[Any]]] = {}
        """The diagnostics last pushed for each file open in the server (`textDocument/publishDiagnostics`), by its
        path: the version they are of."""
        self._pushes = threading.Condition()
        self._version = 0
        """The last version a document was given in the server (each opening or change a new one)."""
        self._open: set[str] = set()
        """The paths of the documents open in the server (changed and read under `_pushes`)."""
        self._pending: dict[str, int] = {}
        """Files kept open whose latest version the server has not read yet (its index of them waited for by the
        next question)."""
        self._kept: dict[str, tuple[str, int]] = {}
        """The files changed on disk since the server indexed them, kept open in it with their text and version
        (`Installed.indexes`: its index of an open file is the one it answers from)."""
        self.compile_commands: str | None = None
        """Where the compilation database given to the server came from (`Installed.compile_commands`)."""
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
            if not any(path.endswith(self.installed.extensions) for path in seen):
                # No file of its language (--precise starts every installed server): nothing to answer about (an
                # idle basedpyright held 100 MB in a TypeScript workspace). A question about a file made later
                # starts a new one (`LanguageServers.server`), once EMPTY_RECHECK has passed.
                self.empty = True
                self.stop()
                return
            connection = self._launch(seen)
            connection.request("initialize", self._initialize_params(), timeout=START_TIMEOUT, check=self._check_stopped)
            connection.notify("initialized", {})
            self.state = "warming"
            self.expected = time.monotonic() + SECONDS_PER_FILE * len(seen)
            begun = time.monotonic()
            if self.installed.enumerates:
                # pyright finds the workspace's files after `initialized` (it logs how many), then a workspace
                # symbol search parses and binds every one: what a first references request would pay for (on
                # 636 files of the standard library, 5.7 s cold, 2.9 s after this warm-up, 0.15 s later on).
                while not self._found.wait(_POLL):
                    self._check_stopped()
                    if time.monotonic() - begun > START_TIMEOUT:
                        break
                connection.request("workspace/symbol", {"query": "shipcode_mcp_warm_up"}, timeout=WARM_TIMEOUT,
                                   check=self._check_stopped)
            else:
                self._warm_project(connection, seen)
            self.warm_seconds = time.monotonic() - begun
            self.state = "ready"
        except BaseException as err:  # whatever stopped it (a crash, a deadline, stop()): said, never raised
            self._fail(str(err) if isinstance(err, ToolError) else f"{type(err).__name__}: {err}")

    def _warm_project(self, connection: Connection, seen: dict[str, tuple[int, int]]) -> None:
        """tsserver loads a project (its tsconfig's files, parsed and bound) when a file of it is opened: the file
        nearest a root is opened, a workspace symbol search waits for its project, and it is closed (the project
        stays loaded while the next file opened is one of it). clangd reads its compilation database when a file is
        opened, and indexes every file it names in the background: the index is waited for."""
        code = sorted((path for path in seen if path.endswith(self.installed.extensions)),
                      key=lambda path: (path.count(os.sep), path))
        first, text = next(((path, text) for path in code if (text := _text(self.roots, path)) is not None), (None, None))
        if first is None or text is None:
            return
        deadline = time.monotonic() + WARM_TIMEOUT
        with self._opened(connection, {first: text}, deadline):
            if self.installed.indexes:
                self._wait_for_index(begun=True)
            else:
                connection.request("workspace/symbol", {"query": "shipcode_mcp_warm_up"}, timeout=WARM_TIMEOUT,
                                   check=self._check_stopped)
        if self.installed.indexes:
            self._wait_for_index(begun=False)

    def _wait_for_index(self, begun: bool) -> None:
        """Wait for the server's background index to begin (`begun`), or to end (every file of the database
        parsed: the references it answers before are those of the files indexed so far). One that has not begun
        within INDEX_BEGIN has nothing to do (every file's index was up to date) or does not say."""
        start = time.monotonic()
        while not (self._indexing is not None if begun else self._indexed.is_set()):
            self._check_stopped()
            waited = time.monotonic() - start
            if (self._indexing is None and waited > INDEX_BEGIN) or waited > WARM_TIMEOUT:
                return
            time.sleep(_POLL)

    def _launch(self, seen: dict[str, tuple[int, int]]) -> Connection:
        installed = self.installed
        env = dict(installed.env)
        argv = installed.argv
        if installed.scratch:
            self._scratch = _scratch_folder(installed.name)
            env["TMPDIR"] = self._scratch
        if installed.compile_commands and self._scratch is not None:
            self.compile_commands = compile_commands.write(
                self._scratch, self.roots, [path for path in seen if path.endswith(installed.extensions)])
            argv = (*argv, f"--compile-commands-dir={self._scratch}")
        stdin_r, self._to_server = os.pipe2(os.O_CLOEXEC)
        try:
            self._child = process.Child(None, argv, cwd=self.roots[0], readable=[*self.roots, *installed.readable],
                                        limits=Limits(LIMITS.address_space, LIMITS.cpu_seconds, LIMITS.open_files,
                                                      installed.file_size), env=env, timeout=float("inf"),
                                        what=f"the {installed.name} language server", slot=False, stdin=stdin_r,
                                        writable=[self._scratch] if self._scratch is not None else [])
        finally:
            os.close(stdin_r)
        self._connection = Connection(self._to_server, self._child.stdout_fd, self._child.stderr_fd,
                                      answer=self._answer, notified=self._notified, name=installed.name)
        return self._connection

    def _initialize_params(self) -> dict[str, Any]:
        folders = [{"uri": file_uri(root), "name": os.path.basename(root) or root} for root in self.roots]
        return {
            **({"initializationOptions": self.installed.options} if self.installed.options else {}),
            "processId": None,  # (pyright would poll that process with a signal, which the sandbox refuses)
            "clientInfo": {"name": "shipcode-mcp"},
            "rootUri": folders[0]["uri"],
            "workspaceFolders": folders,
            "capabilities": {
                "general": {"positionEncodings": ["utf-16"]},
                "workspace": {"configuration": True, "workspaceFolders": True,
                              "didChangeWatchedFiles": {"dynamicRegistration": True, "relativePatternSupport": True}},
                "textDocument": {"references": {}, "definition": {"linkSupport": False},
                                 "rename": {"prepareSupport": True},
                                 "publishDiagnostics": {"relatedInformation": False}, "diagnostic": {"dynamicRegistration": False}},
                "window": {"workDoneProgress": self.installed.indexes},  # (how clangd tells of its index)
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
        if not isinstance(params, dict):
            return
        if method == "window/logMessage" and _FOUND.match(str(params.get("message"))):
            self._found.set()
        elif method == "$/progress" and params.get("token") == INDEX_PROGRESS and isinstance(params.get("value"), dict):
            kind = params["value"].get("kind")
            if kind in ("begin", "report"):
                message = params["value"].get("message")
                if isinstance(message, str) and re.fullmatch(r"\d{1,9}/\d{1,9}", message):
                    self._progress = f"{message} of its queue done"
                elif kind == "begin":
                    self._progress = "just begun"
                if not self._indexing:
                    self._index_began = time.monotonic()
                self._indexing = True
                self._indexed.clear()
            elif kind == "end":
                self._indexing = False
                self._indexed.set()
        elif method == "textDocument/publishDiagnostics" and self.installed.diagnostics == "push" \
                and isinstance(params.get("uri"), str) and isinstance(params.get("diagnostics"), list):
            path = uri_path(params["uri"])  # (by path: clangd writes a ':' of a name as it is, we write %3A)
            with self._pushes:  # (only the last of each file we opened: a flood of them holds no memory)
                if path in self._open:
                    self._pushed[path] = (params.get("version"), params["diagnostics"])
                    self._pushes.notify_all()

    # -- asking ---------------------------------------------------------------------------------------------
    def ready(self) -> None:
        """Return if the server can answer now, else raise NotReady with what the caller should say."""
        self.used = time.monotonic()
        connection = self._connection
        if self.state == "ready":
            if connection is not None and connection.closed is None:
                indexing = time.monotonic() - self._index_began
                if self._indexing and indexing < WARM_TIMEOUT:
                    # Its index began again after the warm-up took it as built (clangd enqueues a database's files
                    # in more than one batch at times): what it answers now lacks the files not yet indexed (a
                    # method's definition in a .cc, its declaration given instead). Past WARM_TIMEOUT, as the
                    # warm-up does, it answers from what it has indexed (an index that never ends says so too).
                    raise NotReady(f"the {self.name} language server is indexing the workspace ({self._progress}, "
                                   f"for {indexing:.0f} s)")
                return
            self._fail(connection.closed if connection is not None and connection.closed else "it stopped")
        if self.state == "failed":
            raise NotReady(f"the {self.name} language server failed ({self.failure})")
        if self.state == "stopped":
            if self.empty:
                raise NoFiles(f"the workspace has no {self.installed.language} files for the {self.name} language server")
            raise NotReady(f"the {self.name} language server was stopped")
        waited = time.monotonic() - self.started
        if self.expected is None:
            raise NotReady(f"the {self.name} language server is starting ({waited:.0f} s ago)")
        left = max(1.0, self.expected - time.monotonic())
        raise NotReady(f"the {self.name} language server is still reading the workspace ({waited:.0f} s so far; "
                       f"precise answers expected in about {left:.0f} s)")

    def request(self, method: str, params: Any, *, timeout: float, check: Callable[[], None] | None,
                documents: dict[str, str] | None = None) -> Any:
        """A request of the ready server, after telling it what changed on disk; NotReady when it is not ready,
        refuses or does not answer in time (it is then cancelled). `documents` (real path: text) are the files
        the request is about, opened for it in a server that needs that (`Installed.opens`)."""
        with self._turn(timeout, check) as deadline:
            if not (self.installed.opens and documents):
                return self._ask(method, params, deadline, check)
            connection = self._connected()
            try:
                self.catch_up(deadline, check)
                with self._opened(connection, documents, deadline):
                    return self._ask(method, params, deadline, check, looked=True)
            except (TimedOut, Gone) as err:
                raise self._not_ready(err) from None

    @contextmanager
    def _opened(self, connection: Connection, texts: dict[str, str], deadline: float) -> Iterator[dict[str, int]]:
        """The files `texts` open in the server with those texts while the block runs (their versions given to the
        block), then closed (a moment more for the closes: a document left open would be read from us ever after,
        and checked on every change). A file kept open (`_kept`) is given the text instead, then its own again."""
        opened: list[str] = []
        changed: list[str] = []
        versions: dict[str, int] = {}
        try:
            for real, text in texts.items():
                if time.monotonic() > deadline:  # (not begun: a text cut short by a deadline would end the connection)
                    raise TimedOut(f"the {self.name} language server was not given the files to answer about in time")
                kept = self._kept.get(real)
                if kept is not None and kept[0] == text:
                    versions[real] = kept[1]
                    continue
                versions[real] = self._send_text(connection, real, text, opening=kept is None)
                (opened if kept is None else changed).append(real)
            yield versions
        finally:
            try:
                for real in changed:
                    self._keep_text(connection, real, self._kept[real][0], time.monotonic() + 1)
                for real in opened:
                    # A server that indexes what it reads keeps a closed file's last text in its index: one opened
                    # with another text than the disk's (a dry run's) is given the disk's and kept open.
                    disk = _text(self.roots, real, lenient=True) if self.installed.indexes else texts[real]
                    if disk is not None and disk != texts[real]:
                        self._keep_text(connection, real, disk, time.monotonic() + 1)
                    else:
                        self._close(connection, real, time.monotonic() + 1)
            except (TimedOut, Gone):
                pass  # (the connection is ending: nothing is open in a server that is gone)

    def _keep_text(self, connection: Connection, real: str, text: str, deadline: float) -> None:
        """Give the open file `real` the text `text` and keep it open; its index is waited for by the next question."""
        version = self._send_text(connection, real, text, opening=False, deadline=deadline)
        self._kept[real] = (text, version)
        self._pending[real] = version

    def _close(self, connection: Connection, real: str, deadline: float) -> None:
        with self._pushes:
            self._open.discard(real)
            self._pushed.pop(real, None)
        self._pending.pop(real, None)
        connection.notify("textDocument/didClose", {"textDocument": {"uri": file_uri(real)}}, deadline)

    def _send_text(self, connection: Connection, real: str, text: str, *, opening: bool,
                   deadline: float | None = None) -> int:
        """Open `real` in the server with `text`, or give an open one `text` as its whole content; its new version."""
        self._version += 1
        if opening:
            with self._pushes:
                self._open.add(real)  # (before it is sent: a failed send leaves it open in our books, closed by _kill)
            connection.notify("textDocument/didOpen", {"textDocument": {
                "uri": file_uri(real), "languageId": self.installed.language_id(real), "version": self._version,
                "text": text}}, deadline)
        else:
            connection.notify("textDocument/didChange", {"textDocument": {"uri": file_uri(real), "version": self._version},
                                                         "contentChanges": [{"text": text}]}, deadline)
        return self._version

    def check_texts(self, texts: dict[str, str], *, timeout: float, check: Callable[[], None] | None,
                    ) -> dict[str, list[Any]]:
        """The server's diagnostics of each file `real` as if it held `texts[real]`: all opened together (so each is
        checked against the others as given, the rest as on disk), asked, then closed (the server checks open
        files only). The documents are the server's state: no other request runs meanwhile (`_turn`)."""
        found: dict[str, list[Any]] = {}
        with self._turn(timeout, check) as deadline:
            connection = self._connected()
            try:
                self.catch_up(deadline, check)
                with self._opened(connection, texts, deadline) as versions:
                    for real in texts:
                        if self.installed.diagnostics == "push":
                            found[real] = self._pushed_for(real, versions[real], deadline, check)
                        elif self.installed.diagnostics == "pull":
                            answer = self._ask("textDocument/diagnostic", {"textDocument": {"uri": file_uri(real)}},
                                               deadline, check, looked=True)
                            items = answer.get("items") if isinstance(answer, dict) else None
                            found[real] = items if isinstance(items, list) else []
                        else:
                            found[real] = [item for kind in ("syntacticDiagnosticsSync", "semanticDiagnosticsSync")
                                           for item in _tsserver_diagnostics(self._ask(
                                               "workspace/executeCommand", {"command": "typescript.tsserverRequest",
                                                                            "arguments": [kind, {"file": real,
                                                                                                 "includeLinePosition": True}]},
                                               deadline, check, looked=True))]
            except (TimedOut, Gone) as err:
                raise self._not_ready(err) from None
        return found

    def _pushed_for(self, real: str, version: int, deadline: float, check: Callable[[], None] | None) -> list[Any]:
        """The diagnostics the server pushes for `real` once it has read it as opened at `version`; TimedOut past
        `deadline` (those of an earlier opening, or of a close, are not taken for them)."""
        with self._pushes:
            while True:
                pushed = self._pushed.get(real)
                if pushed is not None and pushed[0] == version:
                    return pushed[1]
                if check is not None:
                    check()
                self._check_stopped()
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimedOut(f"the {self.name} language server did not check the file in time")
                self._pushes.wait(min(left, _POLL))

    @contextmanager
    def _turn(self, timeout: float, check: Callable[[], None] | None) -> Iterator[float]:
        """One caller's turn with the server, by its deadline: documents opened for a check are the server's
        state, which a concurrent question would read (a dry run's text taken for the file's)."""
        deadline = time.monotonic() + timeout
        while not self._documents.acquire(timeout=_POLL):
            if check is not None:
                check()
            if time.monotonic() > deadline:
                raise NotReady(f"the {self.name} language server was busy with other requests for {timeout:g} s")
        try:
            yield deadline
        finally:
            self._documents.release()

    def _ask(self, method: str, params: Any, deadline: float, check: Callable[[], None] | None,
             looked: bool = False) -> Any:
        """One request, after telling the server what changed on disk (unless the caller just did: `looked`)."""
        connection = self._connected()
        try:
            if not looked:
                self.catch_up(deadline, check)
            answer = connection.request(method, params, timeout=max(0.0, deadline - time.monotonic()), check=check)
        except (TimedOut, Gone, Refused) as err:
            raise self._not_ready(err) from None
        self._timeouts = 0
        return answer

    def _not_ready(self, err: Exception) -> NotReady:
        """What a failed request makes of the server: a crash fails it; a deadline, the third in a row or with the
        process stopped (SIGSTOP, a debugger), fails it too (it is started again on the next need, rather than
        holding every call to its deadline); a refusal leaves it as it is."""
        if isinstance(err, Gone):
            self._fail(str(err))
        elif isinstance(err, TimedOut):
            self._timeouts += 1
            if self._timeouts >= MAX_TIMEOUTS or _stopped(self.pid):
                self._fail(f"{self._timeouts} requests in a row past their deadline" if self._timeouts >= MAX_TIMEOUTS
                           else "its process was stopped")
        if self.state == "failed":
            return NotReady(f"the {self.name} language server failed ({self.failure})")
        return NotReady(str(err))

    def _left_out(self, path: str) -> bool:
        """Whether pyright leaves the file out of the workspace by default (beneath a hidden folder or file,
        node_modules, __pycache__): its creation makes it find no files again, so there is nothing to wait for."""
        shown = _shown(self.roots, path)
        parts = shown.split(os.sep) if shown != path else []  # (a path outside the roots is shown as it is)
        return any(part.startswith(".") or part in ("node_modules", "__pycache__") for part in parts)

    def known(self, real: str) -> bool:
        """Whether `real` is a file of the server's language that the workspace's walk lists (not ignored: what
        the other tools show and the server is told of)."""
        return real in self._seen

    def _connected(self) -> Connection:
        """The connection of the ready server; NotReady when it is not ready (or was just stopped)."""
        self.ready()
        connection = self._connection
        if connection is None:
            raise NotReady(f"the {self.name} language server was stopped")
        return connection

    def catch_up(self, deadline: float, check: Callable[[], None] | None = None) -> None:
        """Tell the server of the files of its language created, changed or deleted since the last look (one that
        indexes the workspace is given them as open files, and their index waited for by `deadline`)."""
        connection = self._connected()
        with self._sync:
            now = self._look()
            paths = [path for path, mark in now.items() if self._seen.get(path) != mark]
            changes = [{"uri": file_uri(path), "type": 1 if path not in self._seen else 2} for path in paths]
            gone = [path for path in self._seen if path not in now]
            changes += [{"uri": file_uri(path), "type": 3} for path in gone]
            paths += gone
            if not changes:
                self._settle(deadline, check)
                return
            # A file created or deleted changes the program: pyright finds the files again (and logs how many)
            # before its next answer can know of it, a few milliseconds later.
            enumerated = self.installed.enumerates and any(change["type"] != 2 and not self._left_out(path)
                                                           for change, path in zip(changes, paths, strict=True))
            if enumerated:
                self._found.clear()
            connection.notify("workspace/didChangeWatchedFiles", {"changes": changes})
            if enumerated:
                self._found.wait(ENUMERATION_WAIT)
            if self.installed.indexes:
                self._keep(connection, [path for path in paths if path.endswith(self.installed.extensions)], now)
            self._seen = now  # (after: a call that ends on the way leaves the changes to the next)
            self._settle(deadline, check)

    def _keep(self, connection: Connection, paths: list[str], now: dict[str, tuple[int, int]]) -> None:
        """Keep the changed files `paths` open in a server that indexes the workspace with their text on disk (clangd
        takes its index of an open file over its background index, which it never updates for a change on disk),
        closing those deleted; their index is waited for (`_settle`). A file it cannot be given (over MAX_OPENED), or
        more than MAX_KEPT_OPEN kept, has it read the workspace anew (`_read_anew`)."""
        for path in paths:
            kept = self._kept.get(path)
            if path not in now:
                if kept is not None:
                    del self._kept[path]
                    self._close(connection, path, time.monotonic() + 1)
                continue
            text = _text(self.roots, path, lenient=True)
            if text is None:
                if now[path][1] > MAX_OPENED:
                    self._read_anew(f"{_shown(self.roots, path)} changed and is larger than {MAX_OPENED >> 20} MiB")
                continue  # (gone or replaced since the look: the next look says which)
            if len(self._kept) + (kept is None) > MAX_KEPT_OPEN:
                self._read_anew(f"more than {MAX_KEPT_OPEN} of its files changed")
            if kept is not None and kept[0] == text:
                continue  # (touched, not changed: the server would not read it again, nor say it had)
            version = self._send_text(connection, path, text, opening=kept is None, deadline=time.monotonic() + 1)
            self._kept[path] = (text, version)
            self._pending[path] = version

    def _read_anew(self, why: str) -> None:
        """Fail the server, to be started again and index the workspace anew (counted as a crash: a tree that keeps
        changing is not indexed again and again); Gone for the caller."""
        self._fail(f"{why} since it read them: started again to read the workspace anew")
        raise Gone(f"the {self.name} language server is started again to index the workspace anew ({why})")

    def _settle(self, deadline: float, check: Callable[[], None] | None) -> None:
        """Wait for the server's index of the files kept open since it last answered (their diagnostics come once it
        has read them), by `deadline`; TimedOut past it (the next question waits again). More than MAX_KEPT_OPEN files
        kept (dry runs' files are kept too) has it read the workspace anew."""
        if len(self._kept) > MAX_KEPT_OPEN:
            self._read_anew(f"more than {MAX_KEPT_OPEN} of its files changed")
        for path, version in list(self._pending.items()):
            self._pushed_for(path, version, deadline, check)
            if self._pending.get(path) == version:
                del self._pending[path]

    def _look(self) -> dict[str, tuple[int, int]]:
        """(modification time, size) of each file of the server's language in the roots, and of the files of its
        projects' configuration (`Installed.watched`)."""
        globs = [f"*{extension}" for extension in self.installed.extensions] + list(self.installed.watched)
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
        """Kill the process, end the connection (its reader thread first, then its pipes), remove its scratch
        folder, once."""
        with self._ending:
            child, connection, to_server, scratch = self._child, self._connection, self._to_server, self._scratch
            self._child = self._connection = self._to_server = self._scratch = None
        if child is not None:
            child.kill()
        if connection is not None:
            connection.close()
        if child is not None:
            child.__exit__(None, None, None)
        if to_server is not None:
            os.close(to_server)
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)

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
        """The language's server as found the first time it was asked for (found once: PATH is read then)."""
        if language not in self._installed:
            self._installed[language] = find(language)
        return self._installed[language]

    def forget_installed(self) -> None:
        """Find the servers again on their next need (a process that changed its PATH: the benches)."""
        self._installed.clear()

    def described(self) -> list[str]:
        """The installed language servers, as the start-up line names them ("basedpyright 1.40.2 for python")."""
        return [f"{found.name} {found.version} for {language}" for language in LANGUAGES
                if (found := self.installed(language)) is not None]

    def server(self, language: str, roots: tuple[str, ...], present: bool = False) -> LanguageServer:
        """The server of `language` for `roots`, started if it is not running; NotReady when none can be:
        `--precise` not given, none installed, or it crashed too often lately; NoFiles when it found no file of its
        language less than EMPTY_RECHECK ago (unless the caller knows of one now: `present`)."""
        if not self.enabled:
            raise NotReady("no language server is used (start the server with --precise to use one)")
        missing = unavailable_reason()
        if missing is not None:  # pyright runs the project's Python, and reads what links lead to: not unconfined
            raise NotReady(f"no language server is started without the kernel sandbox ({missing})")
        installed = self.installed(language)
        if installed is None:
            raise NotReady(f"no language server for {language} is installed ({INSTALL.get(language, 'none is known')})")
        roots = tuple(sorted(roots))  # (the same folders in another order: the same server)
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
            if server is not None and server.empty and not present and time.monotonic() - server.started < EMPTY_RECHECK:
                server.ready()  # NoFiles: none when it looked, a moment ago
            if server is None or server.state == "stopped":
                _outside(installed, roots)  # (once a server is made: not on every question)
                others = sorted((other for (kind, _), other in self._servers.items() if kind == language),
                                key=lambda other: other.used)
                for other in others[:max(0, len(others) + 1 - MAX_SERVERS)]:  # the least used make room
                    other.stop()
                self._servers = {known: other for known, other in self._servers.items()
                                 if other.state != "stopped" or other.empty}  # (an empty one remembers it looked)
                server = self._servers[key] = LanguageServer(installed, roots)
                self._watch()
        return server

    def start(self, roots: tuple[str, ...]) -> None:
        """Start the server of every language that has one installed (`--precise`: at start)."""
        for language in LANGUAGES:
            if self.installed(language) is not None:
                try:
                    self.server(language, roots)
                except NotReady:
                    continue  # (one that cannot be run: the tools say why when asked)

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


_CATEGORIES = {"error": 1, "warning": 2, "suggestion": 4, "message": 3}
"""tsserver's diagnostic categories as LSP's severities."""


def _tsserver_diagnostics(answer: Any) -> list[dict[str, Any]]:
    """tsserver's diagnostics (a `*DiagnosticsSync` response, with line positions) as LSP diagnostics: tsserver's
    lines and offsets are 1-based, its offsets in UTF-16 code units as LSP's characters; its codes are tsc's
    (TS2322). Items of another shape are left out."""
    body = answer.get("body") if isinstance(answer, dict) else None
    found: list[dict[str, Any]] = []
    for item in body if isinstance(body, list) else ():
        start = item.get("startLocation") if isinstance(item, dict) else None
        if not isinstance(start, dict) or not isinstance(start.get("line"), int) or not isinstance(start.get("offset"), int):
            continue
        found.append({"range": {"start": {"line": start["line"] - 1, "character": start["offset"] - 1}},
                      "severity": _CATEGORIES.get(str(item.get("category")), 1),
                      "code": f"TS{item['code']}" if isinstance(item.get("code"), int) else None,
                      "message": str(item.get("message", ""))})
    return found


def _outside(installed: Installed, roots: tuple[str, ...]) -> None:
    """NotReady when the server's program or install is inside the roots (a node_modules/.bin of the workspace on
    PATH: the repository's own code)."""
    within = next((path for path in (*installed.argv, *installed.readable) if os.path.isabs(path)
                   and any(inside(os.path.realpath(path), root) for root in roots)), None)
    if within is not None:
        raise NotReady(f"the {installed.name} language server found on PATH is inside the workspace ({within}): "
                       "code of the repository is not run as one")


def _shown(roots: tuple[str, ...], path: str) -> str:
    """A path in the roots as the tools show it (relative to its root)."""
    root = next((root for root in roots if path.startswith(root + os.sep)), None)
    return path[len(root) + 1:] if root is not None else path


def _text(roots: tuple[str, ...], path: str, lenient: bool = False) -> str | None:
    """The text of a file the walk listed in a root, opened within the roots as every tool opens one (no link
    followed on the way), None if it is not a regular file of at most MAX_OPENED bytes of UTF-8 now (`lenient`: of
    any bytes, what is not UTF-8 replaced, as the tools read it)."""
    return safe_open.small_text(Roots(list(roots)), path, MAX_OPENED, "replace" if lenient else "strict")


def _scratch_folder(name: str) -> str:
    """A new private folder for a language server's temporary files, named with this process's id; those of
    processes that ended without removing theirs (killed) are removed first."""
    prefix = f"shipcode-{name}-"
    base = tempfile.gettempdir()
    try:
        entries = os.listdir(base)
    except OSError:
        entries = []
    for entry in entries:
        owner = entry[len(prefix):].split("-", 1)[0]
        if entry.startswith(prefix) and owner.isdigit() and int(owner) != os.getpid() and not _alive(int(owner)):
            shutil.rmtree(os.path.join(base, entry), ignore_errors=True)
    return tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}-")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # (another user's)
    return True


def _stopped(pid: int | None) -> bool:
    """Whether the process is stopped (state T or t: SIGSTOP, a debugger) or gone."""
    if pid is None:
        return True
    try:
        return process.stat_fields(pid)[0] in ("T", "t", "Z", "X")
    except (OSError, ValueError):
        return True

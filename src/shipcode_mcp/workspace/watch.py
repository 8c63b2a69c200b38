"""`--watch`: resources/subscribe and the change notifications, driven by a file watcher.

watchfiles (the optional `watch` extra) is imported here only, so only with --watch. One thread takes
each burst of changes (grouped until STEP_MS pass without a change, at most DEBOUNCE_MS) and:
- when files appeared or disappeared, or an ignore file changed, walks the roots concerned again and,
  if what resources/list shows changed, sends every client notifications/resources/list_changed;
- sends notifications/resources/updated once per burst to each client subscribed to a file that
  changed (or appeared, or disappeared), or to a folder whose entries changed, with the URI the
  client subscribed with.
Changes inside .git/ and to ignored files are not news: resources/list shows neither.
"""

from __future__ import annotations

import os
import threading

from .. import log
from ..primitives import ResourceNotFound
from .resources import IGNORE_FILES

TYPE_CHECKING = False
if TYPE_CHECKING:
    from watchfiles._rust_notify import RustNotify

    from ..server import Server
    from ..session import Session
    from .resource_tree import Snapshot, WorkspaceResources

    Subscription = tuple[str, str, str, bool]  # real path, its root, path relative to the root, is a folder

STEP_MS = 100
"""A burst of changes ends when this long passes without another."""
DEBOUNCE_MS = 1_600
"""A burst that goes on is reported at least this often."""
POLL_DELAY_MS = 500
"""How often the polling fallback (no inotify watches left, or WATCHFILES_FORCE_POLLING) looks."""
READY_SECONDS = 60.0
"""How long resources/subscribe and resources/list wait for the watcher to start."""

_SUBSCRIPTIONS = "shipcode_mcp.workspace.subscriptions"  # key in session.data: {uri: Subscription}
_MODIFIED = 2  # watchfiles.Change.modified; added is 1, deleted 3


def install_watch(server: Server, resources: WorkspaceResources) -> Watcher:
    """Turn on subscribe and listChanged, and start watching the roots in the background."""
    try:
        import watchfiles  # noqa: F401  (only to fail now, with a clear message, rather than later)
    except ImportError:
        raise ValueError(
            "--watch needs the optional 'watch' extra (watchfiles): pip install 'shipcode-mcp[watch]'") from None
    watcher = Watcher(server, resources)
    server.resources_subscribe = True
    server.resources_list_changed = True
    server.subscribe_handler = watcher.subscribe
    resources.before_listing.append(watcher.wait_ready)
    watcher.start()
    return watcher


class Watcher:
    """The watching thread, and each session's subscriptions (kept in `session.data`)."""

    def __init__(self, server: Server, resources: WorkspaceResources) -> None:
        self.server = server
        self.resources = resources
        self.paths = list(resources.roots.paths)
        self.ready = threading.Event()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._seen: dict[str, Snapshot] = {}  # per root, the walk the last notifications were based on
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="shipcode-mcp-watch", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def wait_ready(self) -> None:
        """Block until changes are being watched, so that none made after this returns goes unreported."""
        if not self.ready.wait(READY_SECONDS):
            log.warning(f"--watch: the watcher has not started after {READY_SECONDS:g} s; changes may go unreported")

    # -- subscriptions ------------------------------------------------------------------------------
    def subscribe(self, session: Session, uri: str, subscribe: bool) -> None:
        """resources/subscribe of a listed file or folder (else -32002), or resources/unsubscribe of any URI."""
        if not subscribe:
            with self._lock:
                session.data.get(_SUBSCRIPTIONS, {}).pop(uri, None)
            return
        self.wait_ready()
        try:
            real, snapshot, rel, directory = self.resources.locate(uri)
        except ResourceNotFound:
            session.subscriptions.discard(uri)  # the server noted the subscription before asking us
            raise
        with self._lock:
            session.data.setdefault(_SUBSCRIPTIONS, {})[uri] = (real, snapshot.root, rel, directory)

    # -- the thread ------------------------------------------------------------------------------------
    def _run(self) -> None:
        """Watch the roots; when they change (a client's roots), watch the new ones and say the list changed."""
        try:
            while not self._stop.is_set():
                following = self.paths != list(self.resources.roots.paths)
                self.paths = list(self.resources.roots.paths)
                notify = self._open()
                if notify is None:
                    return
                with notify:
                    self._seen = {root: self.resources.snapshot(root, 0.0) for root in self.paths}
                    self.ready.set()
                    if following:
                        self.server.broadcast("notifications/resources/list_changed")
                    self._watch(notify)
        except Exception:
            _log_failure("the watcher stopped")
        finally:
            self.ready.set()  # never leave a client waiting on a watcher that is not coming

    def _watch(self, notify: RustNotify) -> None:
        """Handle bursts until asked to stop or the roots change (RustNotify polls `interrupted` every step)."""
        interrupted = _Interrupted(self)
        while not interrupted.is_set():
            changes = notify.watch(DEBOUNCE_MS, STEP_MS, 60_000, interrupted)
            if isinstance(changes, str):  # "timeout", "stop" or "signal"
                continue
            try:
                self.handle(changes)
            except Exception:
                _log_failure("handling changes failed")

    def _open(self) -> RustNotify | None:
        """Native notifications (inotify and friends), else polling, for instance when watches run out."""
        from watchfiles._rust_notify import RustNotify

        polling = os.environ.get("WATCHFILES_FORCE_POLLING", "").lower() not in ("", "false", "disable", "disabled")
        try:
            return RustNotify(self.paths, False, polling, POLL_DELAY_MS, True, True)
        except Exception as err:
            if polling:
                log.error(f"--watch: cannot watch the roots: {err}")
                return None
            log.warning(f"--watch: native file notifications failed ({err}); polling every {POLL_DELAY_MS} ms instead")
        try:
            return RustNotify(self.paths, False, True, POLL_DELAY_MS, True, True)
        except Exception as err:
            log.error(f"--watch: cannot watch the roots: {err}")
            return None

    def handle(self, changes: set[tuple[int, str]]) -> None:
        """React to one burst of (watchfiles.Change, path) pairs."""
        changed: set[str] = set()
        rewalk: set[str] = set()
        for kind, path in changes:
            roots = [root for root in self.resources.roots_containing(path) if not _in_git(path, root)]
            if roots:
                changed.add(path)
                if kind != _MODIFIED or os.path.basename(path) in IGNORE_FILES:
                    rewalk.update(roots)
        if not changed:
            return
        before: dict[str, Snapshot | None] = {}
        for root in rewalk:
            self.resources.expire(root)
            before[root] = self._seen.get(root)
            self._seen[root] = self.resources.snapshot(root, 0.0)
        if any(old is None or old.files.keys() != self._seen[root].files.keys() for root, old in before.items()):
            self.server.broadcast("notifications/resources/list_changed")
        with self._lock:
            subscribed = [(session, list(subs.items())) for session in _sessions(self.server)
                          if (subs := session.data.get(_SUBSCRIPTIONS))]
        for session, subscriptions in subscribed:
            for uri, subscription in subscriptions:
                if self._affects(subscription, changed, before):
                    session.notify("notifications/resources/updated", {"uri": uri})

    def _affects(self, subscription: Subscription, changed: set[str], before: dict[str, Snapshot | None]) -> bool:
        real, root, rel, directory = subscription
        if not directory and real in changed:
            return True
        if root not in before:
            return False
        old, new = before[root], self._seen[root]
        if directory:  # its entries, not their contents
            return old is None or old.folders().get(rel) != new.folders().get(rel)
        return old is None or (rel in old.files) != (rel in new.files)


class _Interrupted:
    """The event RustNotify checks at every step: we are stopping, or the roots are not the ones watched."""

    def __init__(self, watcher: Watcher) -> None:
        self.watcher = watcher

    def is_set(self) -> bool:
        return self.watcher._stop.is_set() or self.watcher.paths != self.watcher.resources.roots.paths


def _log_failure(what: str) -> None:
    import traceback

    log.error(f"--watch: {what}\n{traceback.format_exc()}")


def _in_git(path: str, root: str) -> bool:
    """Inside a .git folder below `root`: resources/list hides those, as git's own bookkeeping."""
    return ".git" in path[len(root.rstrip("/")):].split("/")


def _sessions(server: Server) -> list[Session]:
    """The server's sessions; a session that starts meanwhile (another thread) makes us look again."""
    for _ in range(10):
        try:
            return list(server.sessions)
        except RuntimeError:  # the WeakSet changed size while being copied
            continue
    return []

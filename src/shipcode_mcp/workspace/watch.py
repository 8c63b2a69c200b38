"""`--watch`: resources/subscribe and the change notifications, driven by a file watcher.

watchfiles (the optional `watch` extra) is imported here only, so only with --watch. One thread takes
each burst of changes (grouped until STEP_MS pass without a change, at most DEBOUNCE_MS) and:
- when files appeared or disappeared, or an ignore file changed, walks the roots concerned again and,
  if what resources/list shows changed, sends every client notifications/resources/list_changed;
- sends notifications/resources/updated once per burst to each client subscribed to a file that
  changed (or appeared, or disappeared), or to a folder whose entries changed, with the URI the
  client subscribed with.
Changes inside .git/ and to ignored files are not news: resources/list shows neither.

Links are never followed (a link to / in a root would otherwise mean a watch on every folder of the
machine): each folder is watched on its own, not recursively, and the folders are those the walk
lists (it never follows links) with their direct sub-folders, plus folders created since; the set is
rebuilt when it changes. An event reached through a link (its folder's real path differs) is ignored.

Without inotify (watches run out, too many folders, or WATCHFILES_FORCE_POLLING), `_Poller` looks at the
same folders every POLL_DELAY_MS or longer. Not watchfiles' own polling: it compares write times to the
second, so a file written again within the second of its last write was never reported.
"""

from __future__ import annotations

import os
import stat
import sys
import threading
import time
import traceback
from typing import TYPE_CHECKING, Protocol

from .. import log
from .resource_limits import IGNORE_FILES

if TYPE_CHECKING:
    from ..context import Context
    from ..server import Server
    from .resource_tree import Snapshot, WorkspaceResources

    Subscription = tuple[str, str, str, bool]  # real path, its root, path relative to the root, is a folder


class _Notify(Protocol):
    """What the watcher needs of RustNotify, which `_Poller` gives too."""

    def watch(self, debounce_ms: int, step_ms: int, timeout_ms: int,
              stop_event: _Interrupted) -> set[tuple[int, str]] | str: ...

    def close(self) -> None: ...

STEP_MS = 100
"""A burst of changes ends when this long passes without another."""
DEBOUNCE_MS = 1_600
"""A burst that goes on is reported at least this often."""
POLL_DELAY_MS = 500
"""How often the polling fallback (no inotify watches left, or WATCHFILES_FORCE_POLLING) looks."""
MAX_WATCHES = 8192
"""At most this many folders are watched natively, one inotify watch each. Watches come from the user's
`fs.inotify.max_user_watches`, shared by every program of that user: 30 000 folders took 30 001, and 200 000
every one of a machine's 192 536, so no other watcher of that user could start. Beyond this, or beyond a
quarter of what the user has, the roots are polled instead, and the server says so."""
POLL_MS_PER_FOLDER = 0.1
"""Polling lists every folder each round: with many, the rounds are spaced (10 000 folders: every second)."""
READY_SECONDS = 60.0
"""How long resources/subscribe and resources/list wait for the watcher to start."""

_ADDED, _MODIFIED, _DELETED = 1, 2, 3  # watchfiles.Change
REWATCH_ROUNDS = 5
"""How often in a row the watched folders may be rebuilt for one burst (each rebuild walks again)."""


def can_watch() -> None:
    """Raise ValueError, with the install hint, where watchfiles (the `watch` extra) cannot be imported: to fail
    at start, with a clear message, rather than later."""
    try:
        import watchfiles  # noqa: F401  (imported, not looked up: a module that is there may still not load)
    except ImportError:
        raise ValueError(f"--watch needs the optional 'watch' extra (watchfiles): {log.install_hint('watch')}") from None


def install_watch(server: Server, resources: WorkspaceResources) -> Watcher:
    """Turn on subscribe and listChanged, and start watching the roots in the background."""
    can_watch()
    watcher = Watcher(server, resources)
    server.on_subscribe(watcher.subscribe)
    server.enable_list_changed("resources")
    resources.wait_before_listing(watcher.wait_ready)
    watcher.start()
    return watcher


class Watcher:
    """The watching thread; what each subscription needs to be checked (`subscribe`) is kept by the server."""

    def __init__(self, server: Server, resources: WorkspaceResources) -> None:
        self.server = server
        self.resources = resources
        self.paths = list(resources.roots.paths)
        self.ready = threading.Event()
        self._stop = threading.Event()
        self._seen: dict[str, Snapshot] = {}  # per root, the walk the last notifications were based on
        self._notify: _Notify | None = None
        self._watched: set[str] = set()  # the folders self._notify watches
        self._created: set[str] = set()  # folders created since the start, maybe still holding no listed file
        self._polling = False  # native notifications failed once: do not try them at every rebuild
        self._capped = False  # the last folders opened were more than the watches allowed (`_watch_cap`)
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
    def subscribe(self, context: Context, uri: str) -> Subscription:
        """Check resources/subscribe of a listed file or folder (else -32002); what it returns is kept
        with the subscription. It may walk the tree: the server calls it off the reading loop."""
        self.wait_ready()
        real, snapshot, rel, directory = self.resources.locate(uri)
        return real, snapshot.root, rel, directory

    # -- the thread ------------------------------------------------------------------------------------
    def _run(self) -> None:
        """Watch the roots; when they change (a client's roots), watch the new ones and say the list changed."""
        try:
            while not self._stop.is_set():
                following = self.paths != list(self.resources.roots.paths)
                self.paths = list(self.resources.roots.paths)
                self._close()
                self._created = set()
                self._seen = {root: self.resources.snapshot(root, 0.0) for root in self.paths}
                self._rewatch({})
                if self._notify is None:
                    return
                self.ready.set()
                if following:
                    self.server.list_changed("resources")
                self._watch()
        except Exception:
            _log_failure("the watcher stopped")
        finally:
            self._close()
            self.ready.set()  # never leave a client waiting on a watcher that is not coming

    def _close(self) -> None:
        if self._notify is not None:
            self._notify.close()
            self._notify, self._watched = None, set()

    def _watch(self) -> None:
        """Handle bursts until asked to stop or the roots change (RustNotify polls `interrupted` every step)."""
        interrupted = _Interrupted(self)
        while not interrupted.is_set() and self._notify is not None:
            changes = self._notify.watch(DEBOUNCE_MS, STEP_MS, 60_000, interrupted)
            if isinstance(changes, str):  # "timeout", "stop" or "signal"
                continue
            try:
                self.handle(changes)
            except Exception:
                _log_failure("handling changes failed")

    def _folders(self) -> set[str]:
        """The folders to watch: each holding a listed file, each created since, and their direct sub-folders
        (so that a file appearing in an empty one is seen). Never a link, nor anything inside .git."""
        bases: set[str] = set()
        for root, snapshot in self._seen.items():
            prefix = root.rstrip("/") + "/"
            bases.update(prefix + rel if rel else root for rel in snapshot.folders())
        self._created = {folder for folder in self._created if _is_folder(folder)}
        bases |= self._created
        folders = set(bases)
        for base in bases:
            folders.update(_subfolders(base))
        return folders

    def _rewatch(self, before: dict[str, Snapshot | None]) -> None:
        """Watch the folders the walks call for; after each rebuild walk again, since a file may have
        appeared in a new folder before its watch began. Roots walked again are noted in `before`."""
        for _ in range(REWATCH_ROUNDS):
            folders = self._folders()
            if self._notify is not None and folders == self._watched:
                return
            fresh = self._open(sorted(folders))
            if fresh is None:
                return  # keep the watches we have
            old, self._notify, self._watched = self._notify, fresh, folders
            if old is not None:
                old.close()
            for root in self.paths:
                before.setdefault(root, self._seen.get(root))
                self.resources.expire(root)
                self._seen[root] = self.resources.snapshot(root, 0.0)

    def _open(self, folders: list[str]) -> _Notify | None:
        """Native notifications (inotify and friends), else polling (`_Poller`), for instance when watches run out."""
        from watchfiles._rust_notify import RustNotify

        forced = os.environ.get("WATCHFILES_FORCE_POLLING", "").lower() not in ("", "false", "disable", "disabled")
        cap, allowed = _watch_cap()
        capped = len(folders) > cap
        delay = max(POLL_DELAY_MS, round(len(folders) * POLL_MS_PER_FOLDER)) if capped else POLL_DELAY_MS
        if capped and not self._capped:
            log.warning(f"--watch: the roots hold {len(folders)} folders to watch, more than the {cap} watched at most "
                        f"(one inotify watch each, from the {allowed} this user has for all its programs); polling "
                        f"every {delay} ms instead")
        self._capped = capped
        if forced or self._polling or capped:
            return _Poller(folders, delay)
        for _ in range(REWATCH_ROUNDS):
            try:
                notify: _Notify = RustNotify(folders, False, False, delay, False, True)
                return notify
            except FileNotFoundError:  # a folder went away since the walk: its parent's watch says so
                folders = [folder for folder in folders if _is_folder(folder)]
            except Exception as err:
                log.warning(f"--watch: native file notifications failed ({err}); polling every {delay} ms instead")
                self._polling = True
                return _Poller(folders, delay)
        log.error("--watch: cannot watch the roots: folders keep disappearing")
        return None

    def handle(self, changes: set[tuple[int, str]]) -> None:
        """React to one burst of (watchfiles.Change, path) pairs."""
        changed: set[str] = set()
        rewalk: set[str] = set()
        real_folders: dict[str, str] = {}
        for kind, path in changes:
            roots = [root for root in self.resources.roots.containing(path) if not _in_git(path, root)]
            folder = os.path.dirname(path)
            if folder not in real_folders:
                real_folders[folder] = os.path.realpath(folder)
            if not roots or (real_folders[folder] != folder and path not in roots):
                continue  # outside the roots, or reached through a link (swapped in since it was watched)
            changed.add(path)
            if kind != _MODIFIED or os.path.basename(path) in IGNORE_FILES:
                rewalk.update(roots)
            if kind == _ADDED and _is_folder(path):
                self._created.update(_tree(path))
        if not changed:
            return
        before: dict[str, Snapshot | None] = {}
        for root in rewalk:
            self.resources.expire(root)
            before[root] = self._seen.get(root)
            self._seen[root] = self.resources.snapshot(root, 0.0)
        if rewalk:
            self._rewatch(before)
        if any(old is None or old.names != self._seen[root].names for root, old in before.items()):
            self.server.list_changed("resources")
        for uri, subscription in self.server.subscriptions().items():
            if self._affects(subscription, changed, before):
                self.server.resource_updated(uri, within=False)  # a folder's subscribers hear of its entries only

    def _affects(self, subscription: Subscription, changed: set[str], before: dict[str, Snapshot | None]) -> bool:
        real, root, rel, directory = subscription
        if not directory and real in changed:
            return True
        if root not in before:
            return False
        old, new = before[root], self._seen[root]
        if directory:  # its entries, not their contents
            return old is None or old.entries(rel) != new.entries(rel)
        return old is None or old.has_file(rel) != new.has_file(rel)


def _watch_cap() -> tuple[int, int | None]:
    """How many folders may be watched natively (MAX_WATCHES, at most a quarter of the user's inotify watches),
    and how many watches the user has (None where that cannot be read)."""
    try:
        with open("/proc/sys/fs/inotify/max_user_watches", encoding="ascii") as limit:
            allowed: int | None = int(limit.read())
    except (OSError, ValueError):
        allowed = None
    return (MAX_WATCHES if allowed is None else max(1, min(MAX_WATCHES, allowed // 4))), allowed


class _Interrupted:
    """The event RustNotify checks at every step: we are stopping, or the roots are not the ones watched."""

    def __init__(self, watcher: Watcher) -> None:
        self.watcher = watcher

    def is_set(self) -> bool:
        return self.watcher._stop.is_set() or self.watcher.paths != self.watcher.resources.roots.paths


_FILE_CLOCK_TICK = 0.02
"""Longer than a tick of the coarse clock file times are taken from (10 ms at the slowest kernel HZ)."""
_Look = tuple[int, int, int, int, bool]
"""What `_Poller` compares of an entry: inode, size, write and change times (to the nanosecond), a folder."""


class _Poller:
    """The folders' entries looked at every `delay_ms`, changes given as RustNotify gives them (added,
    modified, deleted, each with its path). The first look is taken before this returns, and it returns only
    once the clock that dates files has moved on from it (`_FILE_CLOCK_TICK`): a change made after
    it, however soon, has a time no entry had at the first look, so it is never missed."""

    def __init__(self, folders: list[str], delay_ms: int) -> None:
        self.folders, self.delay_ms = folders, delay_ms
        self._last = self._look()
        time.sleep(_FILE_CLOCK_TICK)

    def _look(self) -> dict[str, _Look]:
        seen: dict[str, _Look] = {}
        for folder in self.folders:
            try:
                with os.scandir(folder) as entries:
                    for entry in entries:
                        try:
                            info = entry.stat(follow_symlinks=False)
                        except OSError:
                            continue  # gone since it was listed: the next look says so
                        seen[entry.path] = (info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns,
                                            stat.S_ISDIR(info.st_mode))
            except (OSError, ValueError):
                continue  # a folder gone: its entries are deleted, its parent's look says it went
        return seen

    def _changes(self) -> set[tuple[int, str]]:
        now, last = self._look(), self._last
        self._last = now
        changes = {(_DELETED, path) for path in last.keys() - now.keys()}
        for path, looked in now.items():
            before = last.get(path)
            if before is None or before[0] != looked[0]:  # new, or another file under the name
                changes.add((_ADDED, path))
            elif before != looked:
                changes.add((_MODIFIED, path))
        return changes

    def watch(self, debounce_ms: int, step_ms: int, timeout_ms: int,
              stop_event: _Interrupted) -> set[tuple[int, str]] | str:
        """Changes once a look finds nothing new (at most `debounce_ms` after the first), "stop" when
        `stop_event` is set (checked every `step_ms`), "timeout" after `timeout_ms` without a change."""
        start = time.monotonic()
        found: set[tuple[int, str]] = set()
        first = next_look = 0.0
        while True:
            now = time.monotonic()
            if stop_event.is_set():
                return "stop"
            if now >= next_look:
                new = self._changes()
                if found and (not new - found or now - first >= debounce_ms / 1000):  # quiet, or long enough
                    return found | new
                if new and not found:
                    first = now
                found |= new
                next_look = now + (step_ms if found else self.delay_ms) / 1000
            if not found and now - start >= timeout_ms / 1000:
                return "timeout"
            time.sleep(min(step_ms / 1000, max(0.0, next_look - time.monotonic())))

    def close(self) -> None:
        """Nothing held open."""


def ending() -> bool:
    """The failure being handled is the interpreter's shutdown: it is finalizing, or it refused a new thread
    because it is shutting down (Python 3.12, from the moment its main thread ends)."""
    error = sys.exc_info()[1]
    return sys.is_finalizing() or (isinstance(error, RuntimeError) and "interpreter shutdown" in str(error))


def _log_failure(what: str) -> None:
    if ending():  # the server exits (EOF) while the watcher works: its work cut short is no failure
        return
    log.error(f"--watch: {what}\n{traceback.format_exc()}")


def _in_git(path: str, root: str) -> bool:
    """Inside a .git folder below `root`: resources/list hides those, as git's own bookkeeping."""
    return ".git" in path[len(root.rstrip("/")):].split("/")


def _is_folder(path: str) -> bool:
    """A real folder, not a link to one."""
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except (OSError, ValueError):
        return False


def _tree(folder: str) -> list[str]:
    """A new folder and every real folder below it (made before its watch began, as `mkdir -p` does)."""
    found = []
    for parent, names, _ in os.walk(folder):
        names[:] = [name for name in names if name != ".git"]  # os.walk does not descend into links
        found.append(parent)
    return found


def _subfolders(folder: str) -> list[str]:
    """The real folders directly inside `folder` (links and .git left out)."""
    try:
        with os.scandir(folder) as entries:
            return [entry.path for entry in entries if entry.name != ".git" and entry.is_dir(follow_symlinks=False)]
    except (OSError, ValueError):
        return []



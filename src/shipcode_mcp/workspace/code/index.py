"""The code index: each root's definitions in one SQLite file in the user's cache folder, so find_symbol looks a
name up instead of reading and parsing every file that mentions it.

- **Where**: `--index-dir` (Roots.index_folder; default `$XDG_CACHE_HOME/shipcode-mcp/index`, else
  `~/.cache/shipcode-mcp/index`), one database per root (named by a digest of its real path, which the database also holds and is checked
  against), a folder of mode 0700; never inside the workspace. At most MAX_DATABASES databases are kept: the
  least recently used beyond that, unused for an hour, are removed.
- **What**: per file (its path relative to the root) the stat key it was read at (size, mtime, ctime, inode),
  its outline as the parse worker makes it (flat rows, source order) and the identifiers it uses, each with how
  many times (`name NUL count NUL ...`: no identifier holds a NUL, no indexed file either); a file the outline could not
  make (too large, a line too long, a parse that failed) is kept as skipped, and a query looks at those
  files as a scan would (rg, then a parse), so the answers are the scan's.
- **Fresh**: before a lookup, the root's inotify queue (tree_watch.py) says which files were written since the
  last one, and those whose key moved are read again; when it cannot tell (a file or folder made, deleted or
  moved, an ignore file changed, no inotify, WALK_EVERY passed) the root is walked (the walk list_files does:
  rg --files, the ignore rules), watched again, and each file's stat compared with its key: changed, new and
  deleted files are read again before the answer. A key less than RACY_NS older than the walk is not trusted
  (git's racy rule: a write in the same clock tick keeps the mtime), so such a file is read again next time.
- **Built in the background**: the first build of a root (or a change of more than SYNC_CHANGES files)
  runs in a thread, committed every BATCH files (a kill keeps what was committed); a call made meanwhile
  answers from a scan, as without the index, and says so.
- **Shared**: WAL mode and short write transactions, so several processes of one deployment read and
  update one database; a file is written only if its key is still the one it was read at (checked inside the
  transaction), so a process that read an older version never writes it over a newer one.
- **Safe**: a database that SQLite finds corrupt, of another format (PRAGMA user_version) or of another
  root is removed and built again; one that cannot be opened or written (a read-only cache folder, a full
  disk, MAX_INDEX_BYTES reached) leaves the tools to scan, said once on stderr.
sqlite3 is imported here only, on the first lookup.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import os
import secrets
import stat
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Generic, NamedTuple, TypeVar

from ... import log
from ...primitives import ToolError
from .. import safe_open
from ..text import place
from .parsers import POOL, Starved
from .source import FILE_FAILURES, Skipped, check_parsable, known_language, skip_reason, source_from
from .symbols import Symbol
from .tree_watch import TreeWatch

T = TypeVar("T")

if TYPE_CHECKING:
    import sqlite3

    from ...context import Context
    from ..roots import Roots
    from .source import Folder

FORMAT = 8
"""The schema's version (PRAGMA user_version): a database of another is built again. Raised too when the outline
of some files changes (3: TypeScript's generic call signatures read), so no stale outline is served; 4: the names
each file uses (files.uses, for repo_map); 5: which of them a file binds itself, known in more languages; 6: a `.h`
file holding C++ read as C++; 7: more of C++'s forms known; 8: a file's row id never given again, IndexedFolder's
prints)."""
MAX_DATABASES = 64
"""Databases kept in the index folder; the least recently used beyond these (unused for STALE_SECONDS) go."""
STALE_SECONDS = 3600.0
MAX_INDEX_BYTES = 2 * 1024 ** 3
"""One database's size at most (PRAGMA max_page_count): past it, writes fail and the tools scan."""
WALK_EVERY = 60.0
"""With a watch, the root is walked again at least this often (seconds): what no event tells (an ignore file outside
the watched folders, a file made deep below folders that held none) is seen within this time."""
RACY_NS = 2_000_000_000
"""A file changed this recently before the walk is read again next time (its mtime may not move on a rewrite)."""
CLOCK_TICK_NS = 20_000_000
"""More than the kernel's coarse clock tick (file times lag the true time by up to one tick, 1 to 10 ms)."""
BATCH = 256
"""Files parsed per committed transaction while building."""
SYNC_CHANGES = 512
"""Up to this many changed files are read again before answering; more are left to the background build."""
BUSY_MS = 10_000
"""How long a write waits for another process's transaction."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value NOT NULL);
CREATE TABLE IF NOT EXISTS files(
    id INTEGER PRIMARY KEY AUTOINCREMENT, path BLOB UNIQUE NOT NULL, size INTEGER NOT NULL, mtime INTEGER NOT NULL,
    ctime INTEGER NOT NULL, ino INTEGER NOT NULL, skipped TEXT, uses TEXT);
CREATE TABLE IF NOT EXISTS symbols(
    file INTEGER NOT NULL, seq INTEGER NOT NULL, parent INTEGER NOT NULL, name TEXT NOT NULL, last TEXT NOT NULL,
    qualified TEXT NOT NULL, kind TEXT NOT NULL, line INTEGER NOT NULL, end_line INTEGER NOT NULL,
    signature TEXT NOT NULL, def_line INTEGER NOT NULL, PRIMARY KEY(file, seq)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS symbols_name ON symbols(name);
CREATE INDEX IF NOT EXISTS symbols_last ON symbols(last);
"""

_GENERATIONS = itertools.count()
"""Each index's generation is the next of these: never the same twice in a process, even for a database opened
again (whose PRAGMA data_version starts again)."""

Key = tuple[int, int, int, int]  # size, mtime_ns, ctime_ns, inode
MOVED: Key = (-1, -1, -1, -1)
"""The key of a file to read again at the next look (written while it was read, or unreadable)."""


def _links(path: str) -> int:
    try:
        return os.lstat(path).st_nlink
    except OSError:
        return 1


def _key(info: os.stat_result) -> Key:
    return (info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino)


def _racy(info: os.stat_result, at: int) -> bool:
    """Whether the file changed within RACY_NS before `at` (time.time_ns): its key may not move on a rewrite in the
    same clock tick (git's racy rule), so what was read of it is not trusted."""
    return at - max(info.st_mtime_ns, info.st_ctime_ns) < RACY_NS


def _under(column: str, prefix: str) -> tuple[str, tuple[bytes, ...]]:
    """SQL keeping the root-relative paths (bytes) of `column` under the folder `prefix` ("" for the root)."""
    if not prefix:
        return f"{column} >= ?", (b"",)
    raw = os.fsencode(prefix)
    return f"{column} >= ? AND {column} < ?", (raw + b"/", raw + b"0")  # '0' follows '/'


class Unavailable(Exception):
    """The index cannot answer for this call: the caller scans (the reason, for the answer; "" with the index
    off); `building` while it is built or brought up to date in the background."""

    def __init__(self, reason: str, building: bool = False, damaged: bool = False) -> None:
        super().__init__(reason)
        self.building = building
        self.damaged = damaged  # the database was found damaged and removed: asking again builds it anew


class RootIndex:
    """One root's database: opened on first use, guarded by a lock (one connection per process and root)."""

    def __init__(self, folder: str, root: str) -> None:
        self.folder = folder
        self.root = root
        self.path = os.path.join(folder, hashlib.sha256(os.fsencode(root)).hexdigest()[:24] + ".sqlite3")
        self._lock = threading.RLock()
        self._db: sqlite3.Connection | None = None
        self.ready = False  # a full build of the root has completed (in this process or an earlier one)
        self.building: threading.Thread | None = None
        self.progress = (0, 0)  # files done, files to do, of the build running
        self.failed: str | None = None  # why this index is off for the rest of the process
        self.refreshing = threading.Lock()  # one refresh at a time (the others then look at what is left)
        self.watch: TreeWatch | None = None  # the root's folders under inotify since the last walk
        self.walked_at = -WALK_EVERY  # time.monotonic() of the last walk the watch can be trusted from
        self.known: dict[bytes, Key] = {}  # each code file of the last walk, by the key the index holds for it
        self.linked: set[str] = set()  # those with more than one hard link, looked at on every look
        self.generation = next(_GENERATIONS)  # moved by every write of this process (IndexedFolder.stamp)

    # -- the database ----------------------------------------------------------------------------------
    def _open(self) -> sqlite3.Connection:
        import sqlite3  # on the first lookup only, not at start (local import)

        if self._db is not None:
            return self._db
        os.makedirs(self.folder, mode=0o700, exist_ok=True)
        for attempt in range(2):
            try:
                db = sqlite3.connect(self.path, timeout=BUSY_MS / 1000, check_same_thread=False,
                                     isolation_level=None)
                try:
                    self._prepare(db)
                except BaseException:
                    db.close()
                    raise
            except sqlite3.DatabaseError as err:
                if attempt or isinstance(err, sqlite3.OperationalError):  # locked, unreadable: not its content
                    raise
                log.warning(f"code index {self.path}: {err}; building it again")
                self._remove()
                continue
            self._db = db
            with contextlib.suppress(OSError):
                os.utime(self.path)  # used now: not evicted (_evict)
            return db
        raise AssertionError("unreachable")

    def _prepare(self, db: sqlite3.Connection) -> None:
        """WAL, the size cap, the schema; DatabaseError for one of another format or root, or damaged."""
        import sqlite3  # loaded by _open already (local import)

        db.execute(f"PRAGMA busy_timeout={BUSY_MS}")
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        page = db.execute("PRAGMA page_size").fetchone()[0]
        db.execute(f"PRAGMA max_page_count={MAX_INDEX_BYTES // page}")
        version = db.execute("PRAGMA user_version").fetchone()[0]
        if version not in (0, FORMAT):
            raise sqlite3.DatabaseError(f"format {version}, not {FORMAT}")
        db.executescript(_SCHEMA)
        if version == 0:
            db.execute(f"PRAGMA user_version={FORMAT}")
        db.execute("BEGIN IMMEDIATE")
        try:
            row = db.execute("SELECT value FROM meta WHERE key='root'").fetchone()
            if row is None:
                db.execute("INSERT INTO meta VALUES('root', ?)", (os.fsencode(self.root),))
                # A new database's row ids begin at a random point: one built again (damaged, of an older format)
                # gives no file a print it had in the one before (IndexedFolder.changed_since).
                db.execute("INSERT INTO sqlite_sequence(name, seq) VALUES('files', ?)", (secrets.randbits(48),))
            elif row[0] != os.fsencode(self.root):
                raise sqlite3.DatabaseError(f"it indexes {row[0]!r}")
            self.ready = db.execute("SELECT value FROM meta WHERE key='built'").fetchone() is not None
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:  # (SQLite rolls back itself on a full disk)
                db.execute("ROLLBACK")
            raise

    def _remove(self) -> None:
        import sqlite3  # loaded by _open already (local import)

        if self._db is not None:
            with contextlib.suppress(sqlite3.Error):
                self._db.close()
            self._db = None
        for suffix in ("", "-wal", "-shm", "-journal"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.path + suffix)
        self.ready = False
        self.known = {}
        self.generation = next(_GENERATIONS)

    def close(self) -> None:
        with self._lock:
            if self.watch is not None:
                self.watch.close()
                self.watch = None
            if self._db is not None:
                self._db.close()
                self._db = None

    @contextlib.contextmanager
    def _using(self) -> Iterator[sqlite3.Connection]:
        """The connection, under the lock; a database found corrupt on the way is removed (the next use builds
        it again) and the call scans."""
        import sqlite3  # loaded by _open already (local import)

        with self._lock:
            if self.failed is not None:
                raise Unavailable(self.failed)
            try:
                yield self._open()
            except sqlite3.DatabaseError as err:
                if isinstance(err, sqlite3.OperationalError) and "full" in str(err):  # the size cap, a full disk
                    self.failed = f"the code index is off: it is full ({err})"
                    log.warning(f"code index {self.path}: {self.failed}")
                    raise Unavailable(self.failed) from None
                if isinstance(err, sqlite3.OperationalError):  # locked too long by another process
                    raise Unavailable(f"the code index could not be used ({err})") from None
                log.warning(f"code index {self.path}: {err}; building it again")
                self._remove()
                raise Unavailable(f"the code index was damaged ({err}) and is built again", damaged=True) from None
            except OSError as err:
                self.failed = f"the code index is off ({err.strerror or err})"
                log.warning(f"code index {self.path}: {self.failed}")
                raise Unavailable(self.failed) from None

    # -- keeping it fresh -------------------------------------------------------------------------------
    def refresh(self, ctx: Context, roots: Roots) -> None:
        """Bring the whole root up to date: from the watch when it can tell (the files written since the last look
        read again), else by a walk (and a new watch). Unavailable, with a build started in the background, when
        more than SYNC_CHANGES files are to be read (every file of a root never built)."""
        if self.ready and self.watch is not None and time.monotonic() - self.walked_at < WALK_EVERY:
            changes = self.watch.look()
            if not changes.walk_again:
                try:
                    self._written(ctx, roots, changes.written | self.linked)
                except BaseException:
                    self.walked_at = -WALK_EVERY  # the events are read: only a walk can tell what they said
                    raise
                return
        self._walk(ctx, roots)

    def _written(self, ctx: Context, roots: Roots, written: set[str]) -> None:
        """Read again the files of the index that were written (their key moved) since the last look; `written`
        holds every file with several hard links too (a write through another name, maybe outside the roots,
        tells no watched folder)."""
        items = []
        for relative in written:
            raw = os.fsencode(relative)
            old = self.known.get(raw)
            if old is None:
                continue  # not a code file of the walk (ignored, another language): not the index's
            try:
                info = os.lstat(os.path.join(self.root, relative))
            except OSError:
                items.append((relative, relative))
                continue
            # a write in the clock tick of the last read may keep its key (git's racy rule): read again
            if _key(info) != old or _racy(info, time.time_ns()):
                items.append((relative, relative))
        if items:
            self.store(roots, self._whole(roots), items, (), ctx.check_cancelled)

    def _whole(self, roots: Roots) -> Folder:
        from .source import Folder  # the root as a folder to read (local import: source's callers import this module)

        return Folder(roots, roots.display(self.root))

    def _walk(self, ctx: Context, roots: Roots) -> None:
        """Walk the root, watch its folders, read again what changed since the index read it."""
        if self.watch is not None:
            self.watch.close()
            self.watch = None
        whole = self._whole(roots)
        started = time.time_ns()
        code = whole.files(ctx)
        watch = TreeWatch.of(self.root)  # before the stat: what changes after it is an event
        try:
            changed, gone = self.changes(whole, "", code)
            if len(changed) > SYNC_CHANGES:
                if watch is not None:
                    watch.close()
                    watch = None
                _start_build(self, roots)
                if self.ready:
                    raise Unavailable(f"{len(changed)} files changed since the code index of "
                                      f"{place(roots.display(self.root))} was made; it is brought up to date in the "
                                      "background, and find_symbol reads the files", building=True)
                return
            if changed or gone:
                self.store(roots, whole, changed, gone, ctx.check_cancelled)
            if not self.ready:
                self.mark_built()
            self.known = {raw: key for raw, (key, _) in self.keys("").items()}
            self.linked = {name for name in code if _links(os.path.join(self.root, name)) > 1}
        except BaseException:
            if watch is not None:
                watch.close()
            raise
        self.watch = watch
        # A file made or deleted between the walk and the watch is in neither: a folder written since the walk
        # began (or within a clock tick before: file times come from a coarse clock) has the next call walk again.
        self.walked_at = -WALK_EVERY if watch is None or watch.written_since(started - CLOCK_TICK_NS) else time.monotonic()

    def keys(self, prefix: str) -> dict[bytes, tuple[Key, bool]]:
        """Every file under `prefix` the index holds: its key and whether it was skipped."""
        under, values = _under("path", prefix)
        with self._using() as db:
            rows = db.execute("SELECT path, size, mtime, ctime, ino, skipped IS NOT NULL FROM files WHERE " + under,
                              values).fetchall()
        return {row[0]: ((row[1], row[2], row[3], row[4]), bool(row[5])) for row in rows}

    def changes(self, folder: Folder, prefix: str, names: list[str]) -> tuple[list[tuple[str, str]], list[bytes]]:
        """What to read again under the folder (root-relative path, folder-relative name) and the paths gone,
        from the walk's `names` and a stat of each."""
        known = self.keys(prefix)
        now = time.time_ns()
        changed: list[tuple[str, str]] = []
        seen: set[bytes] = set()
        for name in names:
            relative = f"{prefix}/{name}" if prefix else name
            raw = os.fsencode(relative)
            seen.add(raw)
            old = known.get(raw)
            try:
                info = os.lstat(os.path.join(folder.real, name))
            except OSError:
                changed.append((relative, name))  # read it again: the read says what it is
                continue
            key = _key(info)
            if old is None or old[0] != key or _racy(info, now):
                changed.append((relative, name))
        gone = [path for path in known if path not in seen]
        return changed, gone

    def store(self, roots: Roots, folder: Folder, items: list[tuple[str, str]], gone: Iterable[bytes],
              check: Callable[[], None] | None) -> None:
        """Read and outline `items` (two at a time, on the parse workers) and write them, with `gone`
        deleted, in one transaction."""
        rows = list(_parsed(roots, folder, items, check))
        with self._using() as db:
            db.execute("BEGIN IMMEDIATE")
            try:
                for path in gone:  # deleted, or left out by the ignore rules now
                    _delete(db, path)
                    self.known.pop(path, None)
                for raw, key, outcome in rows:
                    current = self._current(raw)
                    if current != key:  # written since it was read (maybe after another process read and stored
                        # it): its row is left as it is, and the next look reads it again
                        self.known[raw] = MOVED
                        if current is None:
                            _delete(db, raw)
                            self.known.pop(raw, None)
                        continue
                    _delete(db, raw)
                    if outcome is None:
                        self.known[raw] = MOVED  # unreadable now: read again at the next look
                        continue
                    self.known[raw] = key
                    skipped = outcome if isinstance(outcome, str) else None
                    outline, uses = (None, None) if skipped is not None else outcome
                    cursor = db.execute("INSERT INTO files(path, size, mtime, ctime, ino, skipped, uses) "
                                        "VALUES(?,?,?,?,?,?,?)", (raw, *key, skipped, None if uses is None else
                                        "\0".join(f"{name}\0{count}" for name, count in uses.items())))
                    if outline is not None:
                        file_id = cursor.lastrowid
                        db.executemany("INSERT INTO symbols VALUES(?,?,?,?,?,?,?,?,?,?,?)",
                                       [(file_id, seq, row[0], row[1], row[2].rsplit(".", 1)[-1], row[2], row[3],
                                         row[4], row[5], row[6], row[7]) for seq, row in enumerate(outline)])
                db.execute("COMMIT")
                self.generation = next(_GENERATIONS)
            except BaseException:
                if db.in_transaction:  # (SQLite rolls back itself on a full disk)
                    db.execute("ROLLBACK")
                raise

    def _current(self, raw: bytes) -> Key | None:
        """The file's key now, None if it is gone (looked at inside the write transaction, so a process that read
        an older version never writes it over a newer one)."""
        try:
            return _key(os.lstat(os.path.join(os.fsencode(self.root), raw)))
        except OSError:
            return None

    def mark_built(self) -> None:
        with self._using() as db:
            db.execute("INSERT OR REPLACE INTO meta VALUES('built', ?)", (str(time.time()),))
            self.ready = True

    # -- looking up -----------------------------------------------------------------------------------
    def lookup(self, prefix: str, narrow: Narrow, test: Callable[[Symbol], bool],
               kind: str | None) -> list[tuple[bytes, int, Symbol]]:
        """The definitions under `prefix` that `test` accepts (of `kind`), each with its root-relative path and
        place in its file, in path then source order; `narrow` says which rows can match (by the SQL indexes
        where it can), `test` decides."""
        under, values = _under("f.path", prefix)
        select = ("SELECT f.path, s.seq, s.name, s.qualified, s.kind, s.line, s.end_line, s.signature, s.def_line "
                  "FROM symbols s JOIN files f ON f.id = s.file WHERE " + under)
        where, narrowing = narrow.sql()
        with self._using() as db:
            rows = db.execute(select + where, (*values, *narrowing)).fetchall()
        found = []
        for path, seq, sname, qualified, skind, line, end_line, signature, def_line in rows:
            if kind is not None and skind != kind:
                continue
            symbol = Symbol(sname, qualified, skind, line, end_line, signature, (), def_line)
            if test(symbol):
                found.append((path, seq, symbol))
        found.sort(key=lambda item: (os.fsdecode(item[0]), item[1]))
        return found

    def holds(self, prefix: str) -> bool:
        """Whether the index holds a file under `prefix`."""
        under, values = _under("path", prefix)
        with self._using() as db:
            return db.execute("SELECT 1 FROM files WHERE " + under + " LIMIT 1", values).fetchone() is not None

    def skipped(self, prefix: str) -> list[bytes]:
        """The files under `prefix` the index holds as skipped (a query reads them as a scan would), but binary
        ones (which ripgrep leaves out of a scan's candidates: no code in them)."""
        under, values = _under("path", prefix)
        with self._using() as db:
            return [row[0] for row in db.execute("SELECT path FROM files WHERE skipped IS NOT NULL AND skipped != 'binary' "
                                                 "AND " + under, values).fetchall()]


class Narrow:
    """Which symbols a query can match, as SQL the indexes answer: the last part of a plain or qualified name
    (`last`), or for a glob its literal start (`start`, on the name) or longest literal part (`part`, in the name,
    or in the qualified name for a qualified glob); nothing for a glob without either. The query's own test then
    decides, so this only has to keep every match (SQLite's GLOB is not used: it backtracks without bound)."""

    def __init__(self, last: str | None = None, start: str = "", part: str = "", qualified: bool = False) -> None:
        self.last, self.start, self.part, self.qualified = last, start, part, qualified

    def sql(self) -> tuple[str, tuple[str, ...]]:
        if self.last is not None:
            return " AND (s.name = ? OR s.last = ?)", (self.last, self.last)
        if self.start and not self.qualified:
            if self.start[-1] == "\U0010ffff":  # no next code point: a part to look for instead
                return " AND instr(s.name, ?) = 1", (self.start,)
            return " AND s.name >= ? AND s.name < ?", (self.start, self.start[:-1] + chr(ord(self.start[-1]) + 1))
        if self.part:
            return f" AND instr({'s.qualified' if self.qualified else 's.name'}, ?) > 0", (self.part,)
        return "", ()


def _delete(db: sqlite3.Connection, path: bytes) -> None:
    row = db.execute("SELECT id FROM files WHERE path = ?", (path,)).fetchone()
    if row is not None:
        db.execute("DELETE FROM symbols WHERE file = ?", (row[0],))
        db.execute("DELETE FROM files WHERE id = ?", (row[0],))


def _parsed(roots: Roots, folder: Folder, items: list[tuple[str, str]],
            check: Callable[[], None] | None, kept: Scanned | None = None) -> Iterator[tuple[bytes, Key, Any]]:
    """(path, key, outcome) of each item: [the outline's flat rows, the names it uses], the reason it was skipped, or None (not
    there, not a regular file, or a parse starved of CPU: not kept). Up to POOL.size files at once. With `kept`, a file
    whose identity it holds is not read again, and each file read is given to it."""
    from concurrent.futures import ThreadPoolExecutor  # only when files are read

    def one(item: tuple[str, str]) -> tuple[bytes, Key, Any]:
        relative, name = item
        real, shown = folder.file(name)
        raw = os.fsencode(relative)
        read_at = time.time_ns()  # (a file changed within RACY_NS of its read may change again unseen)
        try:
            language = known_language(real, shown)
            fd, info = safe_open.open_file(roots, real, shown)
        except FILE_FAILURES:
            return raw, (0, 0, 0, 0), None
        try:
            if not stat.S_ISREG(info.st_mode):
                return raw, _key(info), None
            if kept is not None and (known := kept.get(real, info)) is not None:
                return raw, _key(info), known
            try:
                source = source_from(fd, info, real, shown, language)
                check_parsable(source)
            except Skipped as err:
                return raw, _key(info), err.reason
        finally:
            os.close(fd)
        try:
            rows = POOL.ask({"op": "outline_uses", "text": source.text, "language": source.language}, check)
        except Starved:
            return raw, _key(info), None
        except FILE_FAILURES as err:
            return raw, _key(info), skip_reason(err, shown)
        if kept is not None:
            kept.put(real, info, rows, read_at)
        return raw, _key(info), rows

    if len(items) < 2:
        yield from map(one, items)
        return
    with ThreadPoolExecutor(max_workers=POOL.size, thread_name_prefix="index") as threads:
        yield from threads.map(one, items)


def _build(index: RootIndex, roots: Roots) -> None:
    """The whole root read again where it changed, BATCH files per transaction, then marked built (the next call
    walks again and watches the root)."""
    from ...context import Context  # a request of nobody's, never cancelled (local import: the build's only)

    try:
        folder = index._whole(roots)
        names = folder.files(Context(None, "code-index", "code-index", {}))
        changed, gone = index.changes(folder, "", names)
        index.progress = (0, len(changed))
        index.store(roots, folder, [], gone, None)
        for start in range(0, len(changed), BATCH):
            index.store(roots, folder, changed[start:start + BATCH], (), None)
            index.progress = (min(start + BATCH, len(changed)), len(changed))
        index.mark_built()
        index.walked_at = -WALK_EVERY
    except (Unavailable, ToolError, OSError) as err:
        log.warning(f"code index of {index.root}: the build stopped ({err})")
    finally:
        index.building = None


def _start_build(index: RootIndex, roots: Roots) -> None:
    if index.building is None:
        index.progress = (0, 0)
        index.building = threading.Thread(target=_build, args=(index, roots),
                                          name="code-index", daemon=True)
        index.building.start()


def definitions(ctx: Context, roots: Roots, folder: Folder, narrow: Narrow,
                test: Callable[[Symbol], bool], kind: str | None) -> tuple[list[tuple[str, int, Symbol]], list[str]]:
    """find_symbol's answer from the index of the folder's root, made fresh first: each definition
    (its name relative to the folder, its place in the file, the symbol) in path then source order, and
    the files under the folder the index holds as skipped (the caller reads those as a scan would).
    Unavailable (why, or "" with the index off) when the caller must scan. A database found damaged on the way
    is built again at once."""
    try:
        return _definitions(ctx, roots, folder, narrow, test, kind)
    except Unavailable as why:
        if not why.damaged:
            raise
    return _definitions(ctx, roots, folder, narrow, test, kind)


def _definitions(ctx: Context, roots: Roots, folder: Folder, narrow: Narrow, test: Callable[[Symbol], bool],
                 kind: str | None) -> tuple[list[tuple[str, int, Symbol]], list[str]]:
    index, prefix = _fresh(ctx, roots, folder, "find_symbol")
    start = len(prefix) + 1 if prefix else 0
    found = [(os.fsdecode(path)[start:], seq, symbol) for path, seq, symbol in index.lookup(prefix, narrow, test, kind)]
    return found, [os.fsdecode(path)[start:] for path in index.skipped(prefix)]


def _fresh(ctx: Context, roots: Roots, folder: Folder, tool: str) -> tuple[RootIndex, str]:
    """The index of the folder's root, brought up to date with the files, and the folder's path in it (""
    for the root); Unavailable when `tool` must read the files instead (the index off, being built, or holding no
    file there)."""
    root = roots.root_of(folder.real)
    if roots.index_folder is None or root is None or not folder.is_dir:
        raise Unavailable("")
    index = INDEXES.for_root(roots.index_folder, root)
    with index._using():
        pass  # opened: whether an earlier process built it is known
    if index.building is None:
        with index.refreshing:
            index.refresh(ctx, roots)
    if index.building is not None or not index.ready:
        done, total = index.progress
        raise Unavailable(f"the code index of {place(roots.display(index.root))} is being built"
                          f"{f' ({done} of {total} files)' if total else ''}; until then {tool} reads the files",
                          building=True)
    prefix = "" if folder.real == root else os.path.relpath(folder.real, root)
    if prefix and not index.holds(prefix):
        raise Unavailable("")  # no code file there, or a folder the root's ignore rules leave out: the scan's
    return index, prefix


FileFacts = tuple[list[Sequence[Any]], dict[str, int]] | str
"""What repo_map knows of one file: [its flat outline rows, the names it uses with their counts], or why it was
skipped."""


class IndexedFolder:
    """A folder's part of a root's index, brought up to date with the files: what repo_map reads of it, and a stamp
    that changes whenever what it reads may have (a write of this process, or a commit of another process sharing
    the database), so a caller may keep what it made of the facts until then."""

    def __init__(self, index: RootIndex, prefix: str) -> None:
        self.index, self.prefix = index, prefix
        self.key = (index.path, prefix)
        with index._using() as db:
            self.stamp = (index.generation, db.execute("PRAGMA data_version").fetchone()[0])

    def facts(self) -> dict[str, FileFacts]:
        """Each file under the folder (its name relative to the folder) with its outline (the flat rows the parse
        worker makes) and the names it uses, or why it was skipped."""
        start = len(self.prefix) + 1 if self.prefix else 0
        under, values = _under("f.path", self.prefix)
        with self.index._using() as db:
            return _facts(db, start, under, values)

    def changed_since(self, prints: Mapping[str, Print], whole_past: int | None = None) -> Changes:
        """What a caller that made something of the facts, and kept their prints, reads to bring it up to date: each
        file's print now, the names in `prints` gone, and the facts of the files whose print is not the one in
        `prints`, or of every file (`whole`) when more than `whole_past` changed or went. A file read again has a new
        row (`_delete`, then an insert; a row id is never given twice), so an unchanged print is unchanged facts,
        even where a rewrite kept the file's key. Read in one transaction: the prints are those of the facts."""
        start = len(self.prefix) + 1 if self.prefix else 0
        under, values = _under("f.path", self.prefix)
        with self.index._using() as db:
            db.execute("BEGIN")
            try:
                rows = db.execute("SELECT f.path, f.id FROM files f WHERE " + under, values).fetchall()
                now = {os.fsdecode(path)[start:]: file_id for path, file_id in rows}
                changed = [file_id for name, file_id in now.items() if prints.get(name) != file_id]
                gone = [name for name in prints if name not in now]
                whole = len(changed) == len(now) or (whole_past is not None and len(changed) + len(gone) > whole_past)
                if whole:
                    facts = _facts(db, start, under, values)
                else:
                    facts = {}
                    for first in range(0, len(changed), _IDS_AT_ONCE):
                        ids = changed[first:first + _IDS_AT_ONCE]
                        facts.update(_facts(db, start, f"f.id IN ({','.join('?' * len(ids))})", tuple(ids)))
            finally:
                if db.in_transaction:
                    db.execute("COMMIT")
        return Changes(now, facts, gone, whole)


Print = int
"""A file's row id in the index: a new one each time the file is read again."""


class Changes(NamedTuple):
    """IndexedFolder.changed_since's answer."""

    prints: dict[str, Print]
    facts: dict[str, FileFacts]
    """The facts of the files changed, or of all (`whole`)."""
    gone: list[str]
    whole: bool


_IDS_AT_ONCE = 500
"""Files read at most by one query of IndexedFolder.changed_since (SQLite's bound on a statement's parameters)."""


def _facts(db: sqlite3.Connection, start: int, where: str, values: tuple[Any, ...]) -> dict[str, FileFacts]:
    """IndexedFolder.facts of the files `where` selects (of the files `f`), named from `start` on."""
    files = db.execute("SELECT f.id, f.path, f.skipped, f.uses FROM files f WHERE " + where, values).fetchall()
    symbols = db.execute("SELECT s.file, s.parent, s.name, s.qualified, s.kind, s.line, s.end_line, "
                         "s.signature, s.def_line FROM symbols s JOIN files f ON f.id = s.file WHERE " + where +
                         " ORDER BY s.file, s.seq", values).fetchall()
    outlines: dict[int, list[Sequence[Any]]] = {}
    for row in symbols:
        outlines.setdefault(row[0], []).append(row[1:])
    facts: dict[str, FileFacts] = {}
    for file_id, path, skipped, uses in files:
        name = os.fsdecode(path)[start:]
        if skipped is not None:
            facts[name] = skipped
            continue
        parts = uses.split("\0") if uses else []
        facts[name] = (outlines.get(file_id, []), dict(zip(parts[::2], map(int, parts[1::2]), strict=True)))
    return facts


_WAIT = 0.1
"""Seconds between two looks at the call's cancellation while another call makes the same folder's value."""


class Derived(Generic[T]):
    """What a tool makes of an indexed folder's facts (repo_map's ranking, locate's term statistics), the last
    MAX_KEPT folders' each kept while the folder's stamp holds; one made at a time per folder (a second call
    waits for it, cancellable, and takes it). `make` is given the folder's value made before its stamp moved, if
    one is kept, to bring it up to date rather than make it anew (it must not change it: a call may be reading it)."""

    MAX_KEPT = 8

    def __init__(self, make: Callable[[IndexedFolder, Callable[[], None], T | None], T]) -> None:
        self._make = make
        self._lock = threading.Lock()
        self._kept: OrderedDict[tuple[str, str], tuple[tuple[int, int], T]] = OrderedDict()
        self._making: dict[tuple[str, str], threading.Lock] = {}

    def _fresh(self, indexed: IndexedFolder) -> T | None:
        """The folder's value kept, if its stamp still holds (under the lock)."""
        kept = self._kept.get(indexed.key)
        if kept is None or kept[0] != indexed.stamp:
            return None
        self._kept.move_to_end(indexed.key)
        return kept[1]

    def get(self, indexed: IndexedFolder, check: Callable[[], None]) -> T:
        with self._lock:
            value = self._fresh(indexed)
            if value is not None:
                return value
            making = self._making.setdefault(indexed.key, threading.Lock())
        while not making.acquire(timeout=_WAIT):
            check()
        try:
            with self._lock:
                value = self._fresh(indexed)
                kept = self._kept.get(indexed.key)
            if value is not None:
                return value
            value = self._make(indexed, check, None if kept is None else kept[1])
            with self._lock:
                self._kept[indexed.key] = (indexed.stamp, value)
                self._kept.move_to_end(indexed.key)
                while len(self._kept) > self.MAX_KEPT:
                    gone, _ = self._kept.popitem(last=False)
                    self._making.pop(gone, None)
            return value
        finally:
            making.release()


def indexed_folder(ctx: Context, roots: Roots, folder: Folder) -> IndexedFolder:
    """The folder's part of its root's index, made fresh first; Unavailable when the caller must read the files
    (see _fresh), damaged when the database was found so (the caller asks again once: it is built again)."""
    return IndexedFolder(*_fresh(ctx, roots, folder, "repo_map"))


MAX_SCANNED_BYTES = 64 * 1024 ** 2
"""What the files read without the index said, kept for the next call (an estimate of its memory): a call asked again
reads only what changed."""


class Scanned:
    """The outline and names of each file read without the index, by its real path and identity (size, times,
    inode: what the index keys a file by), the least recently used dropped past MAX_SCANNED_BYTES (their size
    estimated with their strings'), and a file taking more than a sixteenth of that not kept (a generated or hostile
    file's deep names). A file changed within RACY_NS before it was opened is not kept (its times may not
    move on a rewrite while it is parsed)."""

    def __init__(self, limit: int = MAX_SCANNED_BYTES) -> None:
        self._lock = threading.Lock()
        self._kept: OrderedDict[tuple[str, Key], tuple[Any, int]] = OrderedDict()
        self._bytes = 0
        self._limit = limit

    def get(self, real: str, info: os.stat_result) -> Any:
        with self._lock:
            found = self._kept.get((real, _key(info)))
            if found is None:
                return None
            self._kept.move_to_end((real, _key(info)))
            return found[0]

    def put(self, real: str, info: os.stat_result, rows: Any, read_at: int) -> None:
        """Keep what the file opened at `read_at` (time.time_ns) said."""
        if _racy(info, read_at):
            return
        size = _kept_size(rows)
        if size > self._limit // 16:
            return
        with self._lock:
            old = self._kept.pop((real, _key(info)), None)
            self._bytes += size - (old[1] if old is not None else 0)
            self._kept[(real, _key(info))] = (rows, size)
            while self._bytes > self._limit and self._kept:
                self._bytes -= self._kept.popitem(last=False)[1][1]


def _kept_size(rows: Any) -> int:
    """The memory of a file's outline rows and names used, estimated within a quarter on real and hostile code (the
    objects, and each string by its length: qualified names grow with the nesting)."""
    outline, uses = rows
    return (260 + sum(310 + sum(len(field) for field in row if isinstance(field, str)) for row in outline)
            + sum(130 + len(name) for name in uses))


SCANNED = Scanned()


def scanned_facts(roots: Roots, folder: Folder, names: list[str],
                  check: Callable[[], None] | None) -> Iterator[tuple[str, FileFacts | None]]:
    """What IndexedFolder.facts holds, read from the files (`names`, relative to the folder) as the index reads them: each
    name with its facts, or None (gone, not a regular file, a parse starved of CPU); a file unchanged since a call
    before read it is not read again (SCANNED)."""
    for raw, _, outcome in _parsed(roots, folder, [(name, name) for name in names], check, SCANNED):
        yield os.fsdecode(raw), (None if outcome is None else outcome if isinstance(outcome, str)
                                 else (outcome[0], outcome[1]))


class Indexes:
    """Every root's index in this process, by its folder and root."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._roots: dict[tuple[str, str], RootIndex] = {}

    def for_root(self, folder: str, root: str) -> RootIndex:
        with self._lock:
            index = self._roots.get((folder, root))
            if index is None:
                index = self._roots[(folder, root)] = RootIndex(folder, root)
                _evict(folder, keep=index.path)
            return index

    def close(self) -> None:
        """Close every database (the tests' way to start again from the files)."""
        with self._lock:
            for index in self._roots.values():
                index.close()
            self._roots.clear()


INDEXES = Indexes()


def _evict(folder: str, keep: str) -> None:
    """Remove the least recently used databases beyond MAX_DATABASES that nobody opened or wrote for STALE_SECONDS
    (an open touches its file)."""
    try:
        entries = [entry.path for entry in os.scandir(folder) if entry.name.endswith(".sqlite3") and entry.path != keep]
    except OSError:
        return
    if len(entries) < MAX_DATABASES:
        return
    now = time.time()
    dated = []
    for path in entries:
        with contextlib.suppress(OSError):
            dated.append((max(os.stat(path + suffix).st_mtime for suffix in ("", "-wal") if os.path.exists(path + suffix)),
                          path))
    dated.sort()
    for used, path in dated[:len(entries) + 1 - MAX_DATABASES]:
        if now - used < STALE_SECONDS:
            break
        for suffix in ("", "-wal", "-shm", "-journal"):
            with contextlib.suppress(OSError):
                os.unlink(path + suffix)

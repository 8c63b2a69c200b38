"""The resources feature itself: snapshots of the roots' walks, resources/list's source, resources/read.

Imported on the first listing or read (or at start with --watch), not at start-up. See resources.py
for what is served and the rules; this module is how.
"""

from __future__ import annotations

import os
import stat
import threading
import time
from bisect import bisect_left
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from .. import jsonrpc, log
from ..primitives import Resource, ResourceNotFound, ToolError, blob_resource, inside, text_resource
from ..registry import ResourceParts
from .listing import list_files
from .mime import SNIFF_BYTES, as_text, guess_mime_type, mime_type
from .resource_limits import (
    DIRECTORY_MIME_TYPE,
    MAX_DIRECTORY_ENTRIES,
    MAX_LISTED_FILES,
    MAX_READ_BYTES,
    RESOURCE_TOO_LARGE,
    SNAPSHOT_SECONDS,
    TRUNCATED_META_KEY,
    display,
)
from .roots import OutsideRoots
from .safe_open import open_file
from .uris import encode_path, root_uri, uri_path

if TYPE_CHECKING:
    from ..context import Context
    from .roots import Roots

    Content = dict[str, Any]


def _peek(roots: Roots, path: str) -> tuple[bytes | None, int | None]:
    """The first SNIFF_BYTES of a listed file and its size; (None, None) when it cannot be read
    (gone, or swapped for a link or a special file since the walk)."""
    try:
        fd, info = open_file(roots, path, "")
    except (ToolError, OSError, ValueError):
        return None, None
    try:
        return os.read(fd, SNIFF_BYTES), info.st_size
    except OSError:
        return None, info.st_size
    finally:
        os.close(fd)


def _read_all(fd: int, uri: str, name: str, size: int) -> bytes:
    """The whole file, or RESOURCE_TOO_LARGE once it passes the limit: never more than the limit in memory."""
    if size > MAX_READ_BYTES:
        raise _too_large(uri, name, size)
    chunks: list[bytes] = []
    total = 0
    want = size + 1  # one read takes a regular file whole; one more sees the end (or that it grew)
    while True:
        chunk = os.read(fd, min(want, MAX_READ_BYTES + 1 - total))
        if not chunk:
            return b"".join(chunks)
        total += len(chunk)
        if total > MAX_READ_BYTES:  # it grew since fstat
            raise _too_large(uri, name, None)
        chunks.append(chunk)
        want = 1 << 16


def _too_large(uri: str, name: str, size: int | None) -> jsonrpc.JsonRpcError:
    what = f"{size} bytes" if size is not None else f"more than {MAX_READ_BYTES} bytes"
    return jsonrpc.JsonRpcError(
        RESOURCE_TOO_LARGE,
        f"Resource too large: {display(name)} is {what}; resources/read returns files of at most {MAX_READ_BYTES} bytes",
        {"uri": uri, "size": size, "limit": MAX_READ_BYTES} if size is not None else {"uri": uri, "limit": MAX_READ_BYTES},
    )


class FileResource(Resource):
    """A listed file. Its type and size are looked up when a page is rendered, so they are current,
    and only for the files on that page."""

    __slots__ = ("path", "roots")

    def __init__(self, uri: str, name: str, path: str, roots: Roots) -> None:
        super().__init__(uri, name)
        self.path = path
        self.roots = roots

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"uri": self.uri, "name": self.name}
        out["mimeType"], size = self.describe()
        if size is not None:
            out["size"] = size
        return out

    def describe(self) -> tuple[str, int | None]:
        """(MIME type, size in bytes) as the file is now; no size when it is gone or no longer a plain file."""
        known = guess_mime_type(self.path)
        if known is None:
            head, size = _peek(self.roots, self.path)
            return mime_type(self.path, head), size
        try:
            info = os.lstat(self.path)
        except (OSError, ValueError):
            return known, None
        return known, info.st_size if stat.S_ISREG(info.st_mode) else None


class Snapshot:
    """One walk of one root: the names of its first MAX_LISTED_FILES files, in path order.

    Only the names are kept (a str each: 120 to 150 bytes a file in all, measured): resources are
    made for the page being rendered, and a folder's entries are a range of the sorted names, found by
    bisection, so a snapshot costs no more than its names (the FileResource of every file, with its
    URI, name and path, cost about 500 bytes).
    """

    __slots__ = ("_folders", "expired", "names", "prefix", "root", "root_uri", "roots", "taken", "total")

    def __init__(self, roots: Roots, root: str, names: list[str], taken: float) -> None:
        self.roots = roots
        self.root = root
        self.taken = taken
        self.expired = False
        self.root_uri = root_uri(root)
        self.prefix = root.rstrip("/") + "/"
        self.total = len(names)  # files the walk found; list_files sorts them, so the cut keeps the first
        if self.total > MAX_LISTED_FILES:
            while len(names) > MAX_LISTED_FILES:  # in steps: freeing a million names at once holds the GIL ~10 ms
                del names[max(MAX_LISTED_FILES, len(names) - 65_536):]
            # The names kept are scattered over the memory of all those freed, which then cannot go back to
            # the system: made again, side by side, they leave it free (a million-file walk keeps 24 MB, not 41).
            joined = "\0".join(names)
            names.clear()
            names = joined.split("\0")
            del joined
        names.sort()  # sorted already, so nearly free; bisection depends on it
        self.names = names
        self._folders: set[str] | None = None

    @property
    def truncated(self) -> bool:
        return self.total > len(self.names)

    def resource(self, rel: str) -> FileResource:
        return FileResource(self.root_uri + encode_path(rel), display(rel), self.prefix + rel, self.roots)

    def has_file(self, rel: str) -> bool:
        names = self.names
        at = bisect_left(names, rel)
        return at < len(names) and names[at] == rel

    def _inside(self, rel: str) -> tuple[int, int]:
        """The range of names below the folder `rel` ("" is the root): sorted, they are contiguous, and
        every one that starts with 'rel/' sorts before 'rel0', since '0' follows '/'."""
        if not rel:
            return 0, len(self.names)
        return bisect_left(self.names, rel + "/"), bisect_left(self.names, rel + "0")

    def entries_starting(self, rel: str, start: str, limit: int) -> list[tuple[str, bool]]:
        """The first `limit` direct entries of the folder `rel` whose names start with `start`: (name, is a
        folder), in path order; found by bisection, so a folder of a million names costs no more than a few."""
        names = self.names
        low, end = self._inside(rel)
        cut = len(rel) + 1 if rel else 0
        prefix = (rel + "/" if rel else "") + start
        at = bisect_left(names, prefix, low, end)
        out: list[tuple[str, bool]] = []
        while at < end and len(out) < limit and names[at].startswith(prefix):
            head, slash, _ = names[at][cut:].partition("/")
            out.append((head, bool(slash)))
            at = bisect_left(names, names[at][:cut] + head + "0", at, end) if slash else at + 1
        return out

    def names_under(self, rel: str) -> list[str]:
        """The listed files below the folder `rel` ("" is the root), in path order."""
        low, high = self._inside(rel)
        return self.names[low:high]

    def has_folder(self, rel: str) -> bool:
        low, high = self._inside(rel)
        return low < high

    def entries(self, rel: str) -> dict[str, bool]:
        """The direct entries of the folder `rel` that hold listed files: name -> is a folder."""
        names = self.names
        at, end = self._inside(rel)
        cut = len(rel) + 1 if rel else 0
        out: dict[str, bool] = {}
        while at < end:
            head, slash, _ = names[at][cut:].partition("/")
            out[head] = bool(slash)
            if slash:  # skip the sub-folder's files in one step
                at = bisect_left(names, names[at][:cut] + head + "0", at, end)
            else:
                at += 1
        return out

    def folders(self) -> set[str]:
        """Every folder that holds a listed file, even deep down ("" is the root); computed once."""
        if self._folders is None:
            found = {""}
            last = None
            for name in self.names:
                parent = name.rpartition("/")[0]
                if parent == last:
                    continue
                last = parent
                while parent not in found:
                    found.add(parent)
                    parent = parent.rpartition("/")[0]
            self._folders = found
        return self._folders

    def shows(self, rel: str, directory: bool) -> bool:
        return (rel == "" or self.has_folder(rel)) if directory else self.has_file(rel)


class Listing(ResourceParts):
    """What resources/list pages through: the roots' names in order, a file once (under the first root
    that lists it); each root's snapshot holds at most MAX_LISTED_FILES names, and what a snapshot
    holds is exactly what resources/read serves. Resources are made only for the page asked for."""

    def __init__(self, snapshots: Sequence[Snapshot]) -> None:
        super().__init__()
        self.snapshots = tuple(snapshots)
        self._parts: list[tuple[Snapshot, list[str]]] = []
        self._starts = []
        total = 0
        for number, snap in enumerate(snapshots):
            names = snap.names
            nested = [other for other in snapshots[:number] if inside(other.root, snap.root) or inside(snap.root, other.root)]
            if nested:  # nested roots: drop what an earlier root lists already
                names = [name for name in names if not any(
                    inside(snap.prefix + name, other.root) and other.has_file((snap.prefix + name)[len(other.prefix):])
                    for other in nested)]
            self._starts.append(total)
            self._parts.append((snap, names))
            total += len(names)
        self._starts.append(total)
        if any(snap.truncated for snap in snapshots):
            self.meta = {TRUNCATED_META_KEY: {"listed": total, "limit": MAX_LISTED_FILES,
                                              "files": sum(snap.total for snap in snapshots)}}

    def _item(self, part: int, offset: int) -> Resource:
        snap, names = self._parts[part]
        return snap.resource(names[offset])


class WorkspaceResources:
    """The resources feature: the snapshots of the roots, resources/list's source and the reader."""

    def __init__(self, roots: Roots) -> None:
        self.roots = roots
        self._snapshots: dict[str, Snapshot] = {}
        self._walking: dict[str, threading.Lock] = {}  # one walk of a root at a time
        self._lock = threading.Lock()
        self._listing: Listing | None = None  # the last one made, kept while its snapshots are current
        self._warned: set[str] = set()  # roots said to be cut, on stderr, once each
        self._before_listing: list[Callable[[], None]] = []  # see wait_before_listing

    # -- snapshots ---------------------------------------------------------------------------------
    def snapshot(self, root: str, max_age: float) -> Snapshot:
        """The walk of `root`, reused if it is at most `max_age` seconds old and nothing expired it."""
        asked = time.monotonic()
        current = self._snapshots.get(root)
        if current is not None and not current.expired and asked - current.taken <= max_age:
            return current
        with self._lock:
            walking = self._walking.get(root)
            if walking is None:
                walking = self._walking[root] = threading.Lock()
        with walking:
            current = self._snapshots.get(root)
            if current is not None and not current.expired and current.taken >= asked:
                return current  # another thread walked while we waited: that walk is fresh enough
            taken = time.monotonic()
            try:
                names = list_files(root)
            except ToolError as err:  # no ripgrep, or the root went away: say so rather than "Internal error"
                raise jsonrpc.JsonRpcError(jsonrpc.INTERNAL_ERROR, f"Listing the workspace failed: {err}") from None
            fresh = Snapshot(self.roots, root, names, taken)
            if fresh.truncated and root not in self._warned:
                self._warned.add(root)
                log.warning(f"resources: {display(root)} holds {fresh.total} files; resources/list lists the first "
                            f"{MAX_LISTED_FILES} in path order and serves only those (the tools see every file)")
            self._snapshots[root] = fresh
            return fresh

    def expire(self, root: str) -> None:
        """Make the next listing or read walk `root` again (the watcher saw something change)."""
        current = self._snapshots.get(root)
        if current is not None:
            current.expired = True

    # -- resources/list ----------------------------------------------------------------------------
    def wait_before_listing(self, wait: Callable[[], None]) -> None:
        """Call `wait()` when a client starts a listing, before the walk (--watch: until changes are watched)."""
        self._before_listing.append(wait)

    def start_listing(self) -> None:
        """A client starts resources/list (no cursor): walk every root now, so it sees the tree as it is."""
        for wait in self._before_listing:
            wait()
        paths = self.roots.paths
        for gone in [root for root in self._snapshots if root not in paths]:  # the client's roots changed
            self._snapshots.pop(gone, None)
        for root in paths:
            self.snapshot(root, 0.0)

    def listed(self) -> Listing:
        """Every listed file of every root, roots in order, each root's files sorted by path (see Listing)."""
        snapshots = [self.snapshot(root, SNAPSHOT_SECONDS) for root in self.roots.paths]
        listing = self._listing
        if listing is None or listing.snapshots != tuple(snapshots):  # snapshots compare by identity
            listing = self._listing = Listing(snapshots)
        return listing

    # -- resources/read ----------------------------------------------------------------------------
    def locate(self, uri: str) -> tuple[str, Snapshot, str, bool]:
        """(real path, snapshot, path relative to its root, is a folder) of a listed file or folder.

        Anything else raises the one ResourceNotFound, whatever the reason.
        """
        path = uri_path(uri)
        if path is None:
            raise ResourceNotFound(uri)
        try:
            real = self.roots.resolve(path)
            directory = stat.S_ISDIR(os.stat(real).st_mode)
        except (OutsideRoots, OSError, ValueError):
            raise ResourceNotFound(uri) from None
        for root in self.roots.containing(real):
            rel = real[len(root.rstrip("/")) + 1:] if real != root else ""
            # A folder's entries must be current; a file missing from a recent walk may be new.
            for max_age in ((0.0,) if directory else (SNAPSHOT_SECONDS, 0.0)):
                snap = self.snapshot(root, max_age)
                if snap.shows(rel, directory):
                    return real, snap, rel, directory
        raise ResourceNotFound(uri)

    def read(self, context: Context, uri: str, variables: dict[str, str]) -> list[Content]:
        """resources/read of a file (text or blob) or a folder (its entries); the template's reader."""
        real, snap, rel, directory = self.locate(uri)
        if directory:
            return self._read_folder(uri, snap, rel)
        try:
            fd, info = open_file(self.roots, real, display(rel))
        except (ToolError, OSError, ValueError):
            if os.path.isfile(real) and not os.access(real, os.R_OK):  # listed, so saying so reveals nothing
                raise jsonrpc.JsonRpcError(jsonrpc.INTERNAL_ERROR, f"Permission denied: cannot read {display(rel)}",
                                           {"uri": uri}) from None
            raise ResourceNotFound(uri) from None  # gone, swapped for a link or a special file since the walk
        try:
            data = _read_all(fd, uri, rel, info.st_size)
        finally:
            os.close(fd)
        kind = mime_type(rel, data[:SNIFF_BYTES])
        text = as_text(data)
        return [text_resource(uri, text, kind) if text is not None else blob_resource(uri, data, kind)]

    def _read_folder(self, uri: str, snap: Snapshot, rel: str) -> list[Content]:
        """One item per direct entry, in name order; the item's text is the entry's name, not its content."""
        entries = sorted(snap.entries(rel).items())
        prefix = f"{rel}/" if rel else ""
        items: list[Content] = []
        for name, folder in entries[:MAX_DIRECTORY_ENTRIES]:
            if folder:
                child_uri = snap.root_uri + encode_path(prefix + name) + "/"
                items.append(text_resource(child_uri, display(name) + "/", DIRECTORY_MIME_TYPE))
            else:
                child = snap.resource(prefix + name)
                items.append(text_resource(child.uri, child.name.rpartition("/")[2], child.describe()[0]))
        left_out = len(entries) - MAX_DIRECTORY_ENTRIES
        if left_out > 0:
            items.append(text_resource(uri, f"... and {left_out} more entries, not shown: a folder reads as at most "
                                            f"{MAX_DIRECTORY_ENTRIES} entries; resources/list lists every file", "text/plain"))
        return items

"""completion/complete for workspace paths (--prompts): what a client offers as a person types a path.

One folder level at a time, as a shell completes: `src/sh` offers `src/shipcode_mcp/` and `src/shell.py`,
a folder ending in '/' so the next level follows. The names come from the listing resources/list serves
(resource_tree.Snapshot, reused for SNAPSHOT_SECONDS), so what is offered is exactly what can be read: never
an ignored file, .git/, or anything outside a root, whatever is typed ('..', links, absolute paths elsewhere
complete to nothing). At most MAX_VALUES + 1 entries are looked at (by bisection in the sorted names), so a
folder of a million files answers as fast as a small one; past MAX_VALUES the answer says there are more
without counting them.

Two forms: a resource template's `{+path}` (percent-encoded, relative to that template's root, as the URI
takes it) and a prompt's `path` argument (plain text, relative to the first root or absolute inside one, as
the tools take it). A root of more files than a listing holds (resource_limits.MAX_LISTED_FILES) is listed
only in part; the template completes what it serves, but a prompt's path is a tool's, and the tools see
every file: there the folder itself is read (its entries, links and .git left out; the ignore rules are not
applied).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from .. import jsonrpc
from ..primitives import Completion
from .resource_limits import SNAPSHOT_SECONDS
from .roots import OutsideRoots
from .uris import encode_path, root_uri, uri_path

if TYPE_CHECKING:
    from collections.abc import Callable

    from .resource_tree import Snapshot
    from .roots import Roots

MAX_VALUES = 100
"""The values one answer sends (the spec's limit); one more is looked for, to tell that there are more."""


def _answer(values: list[str]) -> Completion:
    return Completion(values, None if len(values) > MAX_VALUES else len(values))


def _paths(prefix: str, entries: list[tuple[str, bool]]) -> Completion:
    """(name, is a folder) entries as paths after `prefix`, a folder's ending in '/' so the next level follows."""
    return _answer([prefix + name + ("/" if is_folder else "") for name, is_folder in entries])


def entries_completing(snapshot: Snapshot, typed: str) -> Completion:
    """The entries of the folder `typed` ends in whose names start with what follows its last '/', each as the
    path from the root (a folder ending in '/'), in path order; none for a folder the listing does not hold."""
    folder, slash, start = typed.rpartition("/")
    if slash and not folder:  # ('/x' names no listed folder; one not listed has no entries)
        return _answer([])
    return _paths(folder + slash, snapshot.entries_starting(folder, start, MAX_VALUES + 1))


class PathCompleter:
    """Completes paths of `roots` from the listing `snapshot(root, max_age)` gives (Files.snapshot)."""

    def __init__(self, roots: Roots, snapshot: Callable[[str, float], Snapshot]) -> None:
        self._roots = roots
        self._snapshot = snapshot

    def _listing(self, root: str) -> Snapshot | None:
        try:
            return self._snapshot(root, SNAPSHOT_SECONDS)
        except jsonrpc.JsonRpcError:  # the root cannot be walked (gone): nothing to offer
            return None

    def template(self, root: str) -> Callable[[str, dict[str, str]], list[str]]:
        """The completer of the `{+path}` of `root`'s template: percent-encoded values, as the URI takes them."""

        def complete(typed: str, _known: dict[str, str]) -> list[str]:
            if root not in self._roots.paths:  # the client's roots changed since the template was listed
                return _answer([])
            path = uri_path(root_uri(root) + typed)  # a bad or unfinished %-escape, '?' or '#': nothing to offer
            prefix = root.rstrip("/") + "/"
            snapshot = self._listing(root)
            if path is None or not path.startswith(prefix) or snapshot is None:
                return _answer([])
            found = entries_completing(snapshot, path[len(prefix):])
            return Completion([encode_path(rel) for rel in found], found.total)

        return complete

    def argument(self, typed: str, _known: dict[str, str]) -> list[str]:
        """A prompt's `path`: relative to the first root, or absolute inside one (an absolute start completes to
        the roots it begins); each value once, whatever roots nest."""
        roots = list(self._roots.paths)
        if not roots:
            return _answer([])
        if not typed.startswith("/"):
            return self._in_root(roots[0], typed, "")
        out: list[str] = []
        for root in roots:
            prefix = root.rstrip("/") + "/"
            if typed.startswith(prefix):
                out += self._in_root(root, typed[len(prefix):], prefix)
            elif prefix.startswith(typed):
                out.append(prefix)
        return _answer(list(dict.fromkeys(out))[:MAX_VALUES + 1])

    def _in_root(self, root: str, typed: str, shown: str) -> list[str]:
        snapshot = self._listing(root)
        if snapshot is None:
            return _answer([])
        found = entries_completing(snapshot, typed) if not snapshot.truncated else self._read_folder(root, typed)
        return Completion([shown + rel for rel in found], found.total)

    def _read_folder(self, root: str, typed: str) -> Completion:
        """The entries of the folder `typed` ends in, read from the folder itself (a listing cut short does not
        hold them all): confined as a tool's path, links and .git left out, sorted, at most MAX_VALUES + 1."""
        folder, slash, start = typed.rpartition("/")
        if slash and not folder:
            return _answer([])
        try:
            real = self._roots.resolve(os.path.join(root, folder))
            with os.scandir(real) as entries:
                named = sorted((entry.name, entry.is_dir(follow_symlinks=False)) for entry in entries
                               if entry.name.startswith(start) and entry.name != ".git" and not entry.is_symlink())
        except (OutsideRoots, OSError):
            return _answer([])
        return _paths(folder + slash, named[:MAX_VALUES + 1])

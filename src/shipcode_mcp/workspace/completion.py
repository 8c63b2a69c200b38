"""completion/complete for workspace paths (--prompts): what a client offers as a person types a path.

One folder level at a time, as a shell completes: `src/sh` offers `src/shipcode_mcp/` and `src/shell.py`,
a folder ending in '/' so the next level follows. The names come from the listing resources/list serves
(resource_tree.Snapshot, reused for SNAPSHOT_SECONDS), so what is offered is exactly what can be read: never
an ignored file, .git/, or anything outside a root, whatever is typed ('..', links, absolute paths elsewhere
complete to nothing).

Two forms: a resource template's `{+path}` (percent-encoded, relative to that template's root, as the URI
takes it) and a prompt's `path` argument (plain text, relative to the first root or absolute inside one, as
the tools take it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .resource_limits import SNAPSHOT_SECONDS
from .uris import encode_path, root_uri, uri_path

if TYPE_CHECKING:
    from collections.abc import Callable

    from .resource_tree import Snapshot
    from .roots import Roots


def entries_completing(snapshot: Snapshot, typed: str) -> list[str]:
    """The entries of the folder `typed` ends in whose names start with what follows its last '/', each as the
    path from the root (a folder ending in '/'), in name order; [] for a folder the listing does not hold."""
    folder, slash, start = typed.rpartition("/")
    if slash and (not folder or not snapshot.has_folder(folder)):  # ('/x' and 'a//x' name no listed folder)
        return []
    prefix = folder + slash
    return [prefix + name + ("/" if is_folder else "")
            for name, is_folder in sorted(snapshot.entries(folder).items()) if name.startswith(start)]


class PathCompleter:
    """Completes paths of `roots` from the listing `snapshot(root, max_age)` gives (WorkspaceResources.snapshot)."""

    def __init__(self, roots: Roots, snapshot: Callable[[str, float], Snapshot]) -> None:
        self._roots = roots
        self._snapshot = snapshot

    def template(self, root: str) -> Callable[[str, dict[str, str]], list[str]]:
        """The completer of the `{+path}` of `root`'s template: percent-encoded values, as the URI takes them."""

        def complete(typed: str, _known: dict[str, str]) -> list[str]:
            if root not in self._roots.paths:  # the client's roots changed since the template was listed
                return []
            base = root_uri(root)
            path = uri_path(base + typed)  # a bad or unfinished %-escape, '?' or '#': nothing to offer
            prefix = root.rstrip("/") + "/"
            if path is None or not path.startswith(prefix):
                return []
            found = entries_completing(self._snapshot(root, SNAPSHOT_SECONDS), path[len(prefix):])
            return [encode_path(rel) for rel in found]

        return complete

    def argument(self, typed: str, _known: dict[str, str]) -> list[str]:
        """A prompt's `path`: relative to the first root, or absolute inside one (an absolute start completes to
        the roots it begins)."""
        roots = list(self._roots.paths)
        if not typed.startswith("/"):
            return entries_completing(self._snapshot(roots[0], SNAPSHOT_SECONDS), typed) if roots else []
        out: list[str] = []
        for root in roots:
            prefix = root.rstrip("/") + "/"
            if typed.startswith(prefix):
                out += [prefix + rel for rel in entries_completing(self._snapshot(root, SNAPSHOT_SECONDS),
                                                                   typed[len(prefix):])]
            elif prefix.startswith(typed):
                out.append(prefix)
        return out

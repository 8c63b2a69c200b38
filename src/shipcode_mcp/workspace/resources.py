"""The workspace as MCP resources: every listed file as a file:// URI, one template per root, reads.

What is listed is exactly what the workspace tools list (`listing.list_files`: ripgrep's walk with
the .gitignore/.ignore rules, .git/ hidden), and what is not listed cannot be read: an ignored,
missing, outside or malformed URI all get the same -32002 "Resource not found", so an answer never
tells what lies outside a root or why a URI was refused.

A listing is a snapshot: one walk per root. The first page of resources/list always walks afresh;
the server pins what it gives (listings.py), so the later pages of that listing read the same walk
however slowly they come, and a cursor of a listing no longer pinned is refused (-32602). Reads reuse a
walk for SNAPSHOT_SECONDS (or until --watch sees a change). Listing, reading and subscribing run off
the reading loop (the server defers them), so a walk of a million files never holds up `ping` or
cancellation.

A root of more than MAX_LISTED_FILES files is cut: its first MAX_LISTED_FILES files in path order
are listed and served, every page of resources/list says so in `_meta` (TRUNCATED_META_KEY), and
stderr says so once. The tools still see every file.

This module is on the start-up path, so it only registers; the work is in resource_tree.py (and
mime.py), imported on the first listing or read, and the limits above are in resource_limits.py.
"""

from __future__ import annotations

import os
import threading

from ..primitives import ResourceTemplate
from .resource_limits import display
from .uris import root_uri

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    from ..context import Context
    from ..primitives import Content, Resource, TemplateReader
    from ..server import Server
    from .completion import PathCompleter
    from .resource_tree import Snapshot, WorkspaceResources
    from .roots import Roots

# -- registration ----------------------------------------------------------------------------------
def install_resources(server: Server, roots: Roots, *, watch: bool = False, complete: bool = False) -> Files:
    """Offer every file of `roots` as a resource; with `watch`, also subscriptions and change notifications;
    with `complete`, completion of the templates' paths (and `Files.completer`, for other paths: completion.py).
    The Files returned is the feature, for others that read what it serves (skills.py)."""
    files = Files(roots, complete)
    server.add_resource_source(files.listed, on_new_listing=files.start_listing)
    server.add_template_source(files.templates)
    if watch:
        from .watch import install_watch  # only with --watch (watchfiles)

        install_watch(server, files.get())
    return files


def root_names(paths: Sequence[str]) -> list[str]:
    """Each root's name, as its template and its skills' URIs give it: its folder's name, numbered from the
    second root of the same name on (`src`, `src-2`), names that differ only in case counted the same (a URI's
    host is read without case)."""
    used: set[str] = set()
    names: list[str] = []
    for root in paths:
        base = os.path.basename(root.rstrip("/")) or "root"
        name, number = base, 1
        while name.lower() in used:  # two roots with the same folder name
            number += 1
            name = f"{base}-{number}"
        used.add(name.lower())
        names.append(name)
    return names


def templates(roots: Roots, reader: TemplateReader, completer: PathCompleter | None = None) -> Iterator[ResourceTemplate]:
    """One template per root, `file:///abs/root/{+path}`: any file or folder of it, without listing first; its
    path completed by `completer` where given."""
    paths = roots.paths  # (replaced in one assignment when the client's roots change)
    for root, name in zip(paths, root_names(paths), strict=True):
        shown = display(root)
        yield ResourceTemplate(
            root_uri(root) + "{+path}", display(name), reader, title=f"Files in {shown}",
            description=f"A file or folder of the workspace root {shown}; path is relative to the root and "
                        "percent-encoded (RFC 3986). A file reads as UTF-8 text or a base64 blob, a folder as one "
                        "item per entry. Ignored files (.gitignore, .ignore) and .git/ are not served.",
            completers=None if completer is None else {"path": completer.template(root)},
        )


class Files:
    """The resources feature: stands in for WorkspaceResources until a client lists or reads, so start-up does
    not import it; `completer` completes paths from its listing (with `complete`)."""

    def __init__(self, roots: Roots, complete: bool) -> None:
        self.roots = roots
        self.completer: PathCompleter | None = None
        if complete:
            from .completion import PathCompleter  # only with --prompts

            self.completer = PathCompleter(roots, self.snapshot)
        self._feature: WorkspaceResources | None = None
        self._templates: tuple[list[str], list[ResourceTemplate]] | None = None
        self._lock = threading.Lock()

    def get(self) -> WorkspaceResources:
        if self._feature is None:
            with self._lock:
                if self._feature is None:
                    from .resource_tree import WorkspaceResources  # off the start-up budget: from the first listing or read

                    self._feature = WorkspaceResources(self.roots)
        return self._feature

    def listed(self) -> Sequence[Resource]:
        return self.get().listed()

    def start_listing(self) -> None:
        self.get().start_listing()

    def read(self, context: Context, uri: str, variables: dict[str, str]) -> list[Content]:
        return self.get().read(context, uri, variables)

    def snapshot(self, root: str, max_age: float) -> Snapshot:
        """The listing of `root`, at most `max_age` seconds old (WorkspaceResources.snapshot)."""
        return self.get().snapshot(root, max_age)


    def templates(self) -> list[ResourceTemplate]:
        """The templates of the current roots (they follow a client's roots), made once per set of roots."""
        paths = list(self.roots.paths)
        if self._templates is None or self._templates[0] != paths:
            self._templates = (paths, list(templates(self.roots, self.read, self.completer)))
        return self._templates[1]

"""The workspace as MCP resources: every listed file as a file:// URI, one template per root, reads.

What is listed is exactly what the workspace tools list (`listing.list_files`: ripgrep's walk with
the .gitignore/.ignore rules, .git/ hidden), and what is not listed cannot be read: an ignored,
missing, outside or malformed URI all get the same -32002 "Resource not found", so an answer never
tells what lies outside a root or why a URI was refused.

A listing is a snapshot: one walk per root. The first page of resources/list always walks afresh;
its later pages reuse that walk for SNAPSHOT_SECONDS (or until --watch sees a change), so paging
through 10 000 files walks once rather than a hundred times. After that the tree is walked again,
and a cursor that no longer fits it is refused (-32602) by the server's fingerprinted cursors.

This module is on the start-up path, so it only registers; the work is in resource_tree.py (and
mime.py), imported on the first listing or read.
"""

from __future__ import annotations

import os

from ..primitives import ResourceTemplate
from .roots import MAX_PATH_LENGTH

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator

    from ..context import RequestContext
    from ..primitives import ReadResult, Resource, TemplateReader
    from ..server import Server
    from .resource_tree import WorkspaceResources
    from .roots import Roots

MAX_READ_BYTES = 10 * 1024 * 1024
"""resources/read refuses a larger file (RESOURCE_TOO_LARGE) without reading any of it."""

RESOURCE_TOO_LARGE = -32003
"""Our error code, in JSON-RPC's range for implementation-defined server errors: the file is over the limit."""

MAX_DIRECTORY_ENTRIES = 10_000
"""A folder reads as at most this many entries, then one item that says how many were left out."""

SNAPSHOT_SECONDS = 5.0
"""How long the later pages of a listing may reuse the walk its first page made."""

MAX_URI_LENGTH = 3 * MAX_PATH_LENGTH + 32  # the longest path, every byte percent-encoded
DIRECTORY_MIME_TYPE = "inode/directory"
IGNORE_FILES = frozenset({".gitignore", ".ignore", ".rgignore"})
"""Files whose change can change what is listed although no file appeared or disappeared."""

_UNRESERVED = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~/"  # RFC 3986, and '/'
_UNRESERVED_SET = frozenset(_UNRESERVED)
_HEX = frozenset("0123456789abcdefABCDEF")


# -- file:// URIs (RFC 8089, RFC 3986) -------------------------------------------------------------
def encode_path(path: str) -> str:
    """`path` for a URI: each byte of its file-system encoding %XX-escaped, but unreserved ones and '/'."""
    raw = os.fsencode(path)
    if not raw.translate(None, _UNRESERVED):  # the usual case: nothing to escape
        return raw.decode("ascii")
    return "".join(chr(byte) if byte in _UNRESERVED_SET else f"%{byte:02X}" for byte in raw)


def file_uri(path: str) -> str:
    """The file:// URI of an absolute path; `uri_path` gives the path back, byte for byte."""
    return "file://" + encode_path(path)


def root_uri(root: str) -> str:
    """A root's URI, ending in '/': its files' URIs and its template start with it."""
    return file_uri(root.rstrip("/") + "/")


def uri_path(uri: str) -> str | None:
    """The absolute local path a file:// URI names, or None when it is malformed or names no local file.

    Takes `file:///p`, `file://localhost/p` and `file:/p`. Refuses a query or a fragment (a '?' or
    '#' in a name is written %3F or %23), a bad %-escape, control characters, a raw backslash, an
    encoded NUL and any other host. Raw spaces and non-ASCII letters are taken as they are (IRI style).
    """
    if len(uri) > MAX_URI_LENGTH or any(ord(ch) < 0x20 or ch in "\x7f\\?#" for ch in uri):
        return None
    scheme, colon, rest = uri.partition(":")
    if not colon or scheme.lower() != "file":
        return None
    if rest.startswith("//"):
        authority, slash, tail = rest[2:].partition("/")
        if not slash or authority.lower() not in ("", "localhost"):
            return None
        rest = "/" + tail
    if not rest.startswith("/"):
        return None
    first, *escaped = rest.split("%")
    try:
        raw = bytearray(first.encode("utf-8"))
        for part in escaped:
            if len(part) < 2 or part[0] not in _HEX or part[1] not in _HEX:
                return None
            raw.append(int(part[:2], 16))
            raw += part[2:].encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate
        return None
    if 0 in raw:
        return None
    return os.fsdecode(bytes(raw))


def display(name: str) -> str:
    """A path for people and for JSON: bytes that are not UTF-8 (kept by surrogateescape) become U+FFFD."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    return name


# -- registration ----------------------------------------------------------------------------------
def install_resources(server: Server, roots: Roots, *, watch: bool = False) -> None:
    """Offer every file of `roots` as a resource; with `watch`, also subscriptions and change notifications."""
    feature = _OnFirstUse(roots)
    server.add_resource_source(feature.listed, on_new_listing=feature.start_listing)
    for template in templates(roots, feature.read):
        server.add_resource_template(template)
    if watch:
        from .watch import install_watch

        install_watch(server, feature.get())


def templates(roots: Roots, reader: TemplateReader) -> Iterator[ResourceTemplate]:
    """One template per root, `file:///abs/root/{+path}`: any file or folder of it, without listing first."""
    used: set[str] = set()
    for root in roots.paths:
        base = os.path.basename(root.rstrip("/")) or "root"
        name, number = base, 1
        while name in used:  # two roots with the same folder name
            number += 1
            name = f"{base}-{number}"
        used.add(name)
        shown = display(root)
        yield ResourceTemplate(
            root_uri(root) + "{+path}", display(name), reader, title=f"Files in {shown}",
            description=f"A file or folder of the workspace root {shown}; path is relative to the root and "
                        "percent-encoded (RFC 3986). A file reads as UTF-8 text or a base64 blob, a folder as one "
                        "item per entry. Ignored files (.gitignore, .ignore) and .git/ are not served.",
        )


class _OnFirstUse:
    """Stands in for WorkspaceResources until a client lists or reads, so start-up does not import it."""

    def __init__(self, roots: Roots) -> None:
        import threading  # loaded already by the session; imported here to keep this module's header minimal

        self.roots = roots
        self._feature: WorkspaceResources | None = None
        self._lock = threading.Lock()

    def get(self) -> WorkspaceResources:
        if self._feature is None:
            with self._lock:
                if self._feature is None:
                    from .resource_tree import WorkspaceResources

                    self._feature = WorkspaceResources(self.roots)
        return self._feature

    def listed(self) -> list[Resource]:
        return self.get().listed()

    def start_listing(self) -> None:
        self.get().start_listing()

    def read(self, context: RequestContext, uri: str, variables: dict[str, str]) -> ReadResult:
        return self.get().read(context, uri, variables)

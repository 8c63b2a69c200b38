"""What the workspace's file:// resources promise, shared by the registration (resources.py, on the
start-up path), the listing and reading (resource_tree.py) and the watcher (watch.py): the limits, our
error code, and how a path is shown. A leaf: no imports."""

from __future__ import annotations

MAX_READ_BYTES = 10 * 1024 * 1024
"""resources/read refuses a larger file (RESOURCE_TOO_LARGE) without reading any of it."""

RESOURCE_TOO_LARGE = -32003
"""Our error code, in JSON-RPC's range for implementation-defined server errors: the file is over the limit."""

MAX_DIRECTORY_ENTRIES = 10_000
"""A folder reads as at most this many entries, then one item that says how many were left out."""

MAX_LISTED_FILES = 100_000
"""The most files a root's snapshot keeps, lists and serves (a thousand pages). Kept as names only, they
cost 120 to 150 bytes each, so a cut root holds about 15 MB whatever its tree holds."""

TRUNCATED_META_KEY = "shipcode-mcp/truncated"
"""The `_meta` key of a resources/list result whose listing was cut: {"listed", "limit", "files"}, where
`limit` is per root and `files` counts every root's files."""

SNAPSHOT_SECONDS = 5.0
"""How long a resources/read may reuse the last walk (a listing's pages always read their own: listings.py),
and how long a cursor from another process is read against it."""

DIRECTORY_MIME_TYPE = "inode/directory"
IGNORE_FILES = frozenset({".gitignore", ".ignore", ".rgignore"})
"""Files whose change can change what is listed although no file appeared or disappeared."""


def display(name: str) -> str:
    """A path for people and for JSON: bytes that are not UTF-8 (kept by surrogateescape) become U+FFFD."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    return name

"""file:// URIs (RFC 8089, RFC 3986) of local paths, both ways, byte for byte.

The one codec of the workspace: tools (Roots.resolve), client roots and resources all read URIs
through `uri_path`, so a URI means the same thing wherever a client sends it.
"""

from __future__ import annotations

import os

MAX_PATH_LENGTH = 4096
"""The longest path a client may send, as text or inside a URI."""
MAX_URI_LENGTH = 3 * MAX_PATH_LENGTH + 32  # the longest path, every byte percent-encoded

_UNRESERVED = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~/"  # RFC 3986, and '/'
_UNRESERVED_SET = frozenset(_UNRESERVED)
_HEX = frozenset("0123456789abcdefABCDEF")


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

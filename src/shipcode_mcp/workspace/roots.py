"""Path confinement: the security boundary of the workspace.

Every path a client sends (relative, absolute or a file:// URI) goes through `Roots.resolve`, which
resolves it the way the kernel would (symlinks included) and refuses anything that does not land
inside a root. Refusals say nothing about what lies outside.
"""

from __future__ import annotations

import os

from ..primitives import ToolError

MAX_PATH_LENGTH = 4096


class OutsideRoots(ToolError):
    """A path that is malformed or leads outside every root; the message reveals nothing more."""

    def __init__(self, given: str | None = None) -> None:
        shown = given if given is not None and len(given) <= 200 and "\x00" not in given else "that path"
        super().__init__(f"Access denied: {shown!s} is not inside the workspace roots")


class Roots:
    """The workspace folders, absolute and with symlinks resolved once, at start."""

    def __init__(self, folders: list[str]) -> None:
        if not folders:
            raise ValueError("at least one root is needed")
        resolved: list[str] = []
        for folder in folders:
            real = os.path.realpath(folder)
            if not os.path.isdir(real):
                raise ValueError(f"not a directory: {folder}")
            if real not in resolved:
                resolved.append(real)
        self.paths = resolved

    @property
    def first(self) -> str:
        return self.paths[0]

    def root_of(self, real: str) -> str | None:
        """The root that contains the resolved path `real`, or None."""
        for root in self.paths:
            if real == root or real.startswith(root.rstrip(os.sep) + os.sep):
                return root
        return None

    def resolve(self, given: object) -> str:
        """The real absolute path `given` names, which is inside a root; else OutsideRoots."""
        if not isinstance(given, str) or "\x00" in given or len(given) > MAX_PATH_LENGTH:
            raise OutsideRoots(given if isinstance(given, str) else None)
        path = given
        if path.startswith("file:"):
            local = _file_uri_path(path)
            if local is None:
                raise OutsideRoots(given)
            path = local
        if path == "":
            path = "."
        candidate = path if os.path.isabs(path) else os.path.join(self.first, path)
        try:
            real = os.path.realpath(candidate)
        except (OSError, ValueError):
            raise OutsideRoots(given) from None
        if self.root_of(real) is None:
            raise OutsideRoots(given)
        return real

    def display(self, real: str) -> str:
        """How to show a resolved path: relative to the first root, absolute for the others."""
        root = self.root_of(real)
        if root == self.first:
            relative = os.path.relpath(real, root)
            return relative.replace(os.sep, "/")
        return real


def _file_uri_path(uri: str) -> str | None:
    """The local path of a file:// URI (RFC 8089), or None when it names no local file."""
    from urllib.parse import unquote, urlsplit

    try:
        parts = urlsplit(uri)
    except ValueError:
        return None
    if parts.scheme != "file" or parts.netloc not in ("", "localhost") or parts.query or parts.fragment:
        return None
    try:
        path = unquote(parts.path, errors="strict")
    except UnicodeDecodeError:
        return None
    if "\x00" in path or not path.startswith("/"):
        return None
    return path

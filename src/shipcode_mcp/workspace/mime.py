"""MIME types of workspace files: from the name (source code included), else from the first bytes.

Imported when a listing is rendered or a file is read, never at start-up.
"""

from __future__ import annotations

import mimetypes

SNIFF_BYTES = 8192
"""How much of a file whose name says nothing is read to tell text from binary."""

# Source code and friends, which the standard table misses or types as application/* or text/plain.
_TYPES_BY_SUFFIX = {
    ".py": "text/x-python", ".pyi": "text/x-python", ".pyx": "text/x-cython", ".ipynb": "application/x-ipynb+json",
    ".js": "text/javascript", ".mjs": "text/javascript", ".cjs": "text/javascript", ".jsx": "text/jsx",
    ".ts": "text/x-typescript", ".mts": "text/x-typescript", ".cts": "text/x-typescript", ".tsx": "text/tsx",
    ".json": "application/json", ".jsonc": "application/json", ".json5": "application/json5",
    ".jsonl": "application/jsonl", ".ndjson": "application/x-ndjson", ".geojson": "application/geo+json",
    ".md": "text/markdown", ".markdown": "text/markdown", ".mdx": "text/mdx", ".rst": "text/x-rst",
    ".adoc": "text/asciidoc", ".tex": "text/x-tex", ".txt": "text/plain", ".log": "text/plain",
    ".c": "text/x-c", ".h": "text/x-c", ".cc": "text/x-c++", ".cpp": "text/x-c++", ".cxx": "text/x-c++",
    ".hh": "text/x-c++", ".hpp": "text/x-c++", ".hxx": "text/x-c++", ".m": "text/x-objective-c",
    ".mm": "text/x-objective-c++", ".cs": "text/x-csharp", ".fs": "text/x-fsharp", ".java": "text/x-java",
    ".kt": "text/x-kotlin", ".kts": "text/x-kotlin", ".scala": "text/x-scala", ".groovy": "text/x-groovy",
    ".gradle": "text/x-groovy", ".clj": "text/x-clojure", ".go": "text/x-go", ".rs": "text/x-rust",
    ".swift": "text/x-swift", ".zig": "text/x-zig", ".nim": "text/x-nim", ".d": "text/x-d", ".dart": "text/x-dart",
    ".rb": "text/x-ruby", ".php": "text/x-php", ".pl": "text/x-perl", ".pm": "text/x-perl", ".lua": "text/x-lua",
    ".r": "text/x-r", ".jl": "text/x-julia", ".ex": "text/x-elixir", ".exs": "text/x-elixir",
    ".erl": "text/x-erlang", ".hs": "text/x-haskell", ".ml": "text/x-ocaml", ".mli": "text/x-ocaml",
    ".elm": "text/x-elm", ".vue": "text/x-vue", ".svelte": "text/x-svelte", ".astro": "text/x-astro",
    ".sh": "text/x-shellscript", ".bash": "text/x-shellscript", ".zsh": "text/x-shellscript",
    ".fish": "text/x-shellscript", ".ps1": "text/x-powershell", ".bat": "text/x-msdos-batch",
    ".cmd": "text/x-msdos-batch", ".sql": "application/sql", ".graphql": "application/graphql",
    ".gql": "application/graphql", ".proto": "text/x-protobuf", ".thrift": "text/x-thrift",
    ".html": "text/html", ".htm": "text/html", ".css": "text/css", ".scss": "text/x-scss", ".sass": "text/x-sass",
    ".less": "text/x-less", ".xml": "application/xml", ".xsd": "application/xml", ".xsl": "application/xslt+xml",
    ".svg": "image/svg+xml", ".csv": "text/csv", ".tsv": "text/tab-separated-values",
    ".yaml": "application/yaml", ".yml": "application/yaml", ".toml": "application/toml",
    ".ini": "text/plain", ".cfg": "text/plain", ".conf": "text/plain", ".properties": "text/x-java-properties",
    ".env": "text/plain", ".lock": "text/plain", ".tf": "text/x-terraform", ".hcl": "text/x-hcl",
    ".nix": "text/x-nix", ".cmake": "text/x-cmake", ".mk": "text/x-makefile", ".diff": "text/x-diff",
    ".patch": "text/x-diff", ".gz": "application/gzip", ".tgz": "application/gzip", ".bz2": "application/x-bzip2",
    ".xz": "application/x-xz", ".zst": "application/zstd", ".br": "application/x-brotli",
}
_TYPES_BY_NAME = {
    "Dockerfile": "text/x-dockerfile", "Containerfile": "text/x-dockerfile", "Makefile": "text/x-makefile",
    "GNUmakefile": "text/x-makefile", "makefile": "text/x-makefile", "CMakeLists.txt": "text/x-cmake",
    "Rakefile": "text/x-ruby", "Gemfile": "text/x-ruby", "Vagrantfile": "text/x-ruby", "Jenkinsfile": "text/x-groovy",
    "BUILD": "text/x-python", "WORKSPACE": "text/x-python", "go.mod": "text/plain", "go.sum": "text/plain",
}
_standard_types: dict[str, str] | None = None  # the mimetypes module's built-in table, loaded on first use


def guess_mime_type(name: str) -> str | None:
    """The type a file's name implies: our table for source code, else the standard `mimetypes` one.

    Only the standard module's built-in table is used, never the machine's /etc/mime.types, so the
    answer is the same everywhere (some systems call every .ts file an MPEG stream).
    """
    global _standard_types
    base = name.rpartition("/")[2]
    known = _TYPES_BY_NAME.get(base)
    if known is not None:
        return known
    dot = base.rfind(".")
    if dot <= 0:  # no suffix, or a dotfile such as .gitignore: decided by the content
        return None
    suffix = base[dot:].lower()
    known = _TYPES_BY_SUFFIX.get(suffix)
    if known is not None:
        return known
    if _standard_types is None:
        table = mimetypes.MimeTypes()
        _standard_types = {**table.types_map[False], **table.types_map[True]}
    return _standard_types.get(suffix)


def as_text(data: bytes) -> str | None:
    """The text of a whole file: UTF-8 without NUL bytes (a NUL means binary, git's rule), else None."""
    if b"\0" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def looks_like_text(head: bytes) -> bool:
    """Whether the first bytes of a file are text; a character cut off at the end of `head` is fine."""
    if b"\0" in head:
        return False
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as err:
        return err.reason == "unexpected end of data"
    return True


def mime_type(name: str, head: bytes | None) -> str:
    """The type of a file from its name, else from the start of its content (`head`; None if unreadable)."""
    known = guess_mime_type(name)
    if known is not None:
        return known
    return "text/plain" if head is not None and looks_like_text(head) else "application/octet-stream"



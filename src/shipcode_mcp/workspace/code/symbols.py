"""The shared data model: a Symbol, the language of a file, and a source text's outline.

A symbol's `line`..`end_line` (1-based, inclusive) is the whole definition as a reader wants it:
its decorators or attributes and the doc comment right above it, then the definition through the
last line of its body. `def_line` is the line of the definition itself (the `def`, `class`, `fn`
keyword line; Python's `ast` calls it lineno). Kinds are lower-case words from KINDS.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterator

KINDS = ("class", "interface", "struct", "enum", "trait", "module", "function", "method", "constructor",
         "property", "field", "constant", "variable", "type", "macro")

_EXTENSIONS = {
    ".py": "python", ".pyi": "python", ".pyw": "python",
    ".js": "javascript", ".mjs": "javascript", ".cjs": "javascript", ".jsx": "javascript",
    ".ts": "typescript", ".mts": "typescript", ".cts": "typescript",
    ".tsx": "tsx",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
    ".kt": "kotlin", ".kts": "kotlin",
    ".c": "c", ".h": "c",
    ".cc": "cpp", ".cpp": "cpp", ".cxx": "cpp", ".c++": "cpp", ".hpp": "cpp", ".hh": "cpp", ".hxx": "cpp",
    ".h++": "cpp", ".ipp": "cpp", ".tpp": "cpp", ".inl": "cpp",
    ".cs": "csharp",
    ".rb": "ruby", ".rake": "ruby", ".gemspec": "ruby",
    ".php": "php",
    ".swift": "swift",
    ".scala": "scala", ".sc": "scala",
    ".lua": "lua",
    ".sh": "bash", ".bash": "bash",
}
_NAMES = {"Rakefile": "ruby", "Gemfile": "ruby", ".bashrc": "bash", ".bash_profile": "bash", ".profile": "bash"}

LANGUAGES = tuple(sorted(set(_EXTENSIONS.values())))
"""The languages outlined (ast-grep's names for them)."""


def language_for(path: str) -> str | None:
    """The language of a file from its name (ast-grep's name for it), None if it is not outlined."""
    base = os.path.basename(path)
    named = _NAMES.get(base)
    if named is not None:
        return named
    return _EXTENSIONS.get(os.path.splitext(base)[1].lower())


@dataclass(frozen=True)
class Symbol:
    """One definition: where it is, what it is, and the definitions nested in it."""

    name: str
    qualified_name: str
    kind: str
    line: int
    end_line: int
    signature: str
    children: tuple[Symbol, ...]
    def_line: int

    def walk(self) -> Iterator[Symbol]:
        """This symbol, then every symbol nested in it, in source order (without recursion: code nests
        deeper than Python's recursion limit)."""
        stack = [self]
        while stack:
            symbol = stack.pop()
            yield symbol
            stack.extend(reversed(symbol.children))

    def item(self, path: str) -> dict[str, Any]:
        """The structured form of the tools' answers (without children)."""
        return {"name": self.name, "qualified_name": self.qualified_name, "kind": self.kind, "path": path,
                "line": self.line, "end_line": self.end_line, "def_line": self.def_line, "signature": self.signature}


def walk(symbols: list[Symbol] | tuple[Symbol, ...]) -> Iterator[Symbol]:
    """Every symbol of an outline, in source order."""
    for symbol in symbols:
        yield from symbol.walk()

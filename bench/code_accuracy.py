"""Python outlines measured against the standard library's `ast`, on CPython's own library.

The reference is `ast`: every `def`, `async def` and `class` of a file, at any depth (in a class, in a
function, under an `if` or a `try`), with its name, its qualified name (the enclosing definitions' names
and its own, joined by dots: `Class.method`, `outer.inner`) and its line range: from its first decorator
(or its `def`/`class` line) to the last line of its body, 1-based and inclusive, as the shared `Symbol`
model defines a definition's range. The outline's symbols of the same kinds are flattened the same way,
and the two multisets are compared: precision is the share of the outline's definitions that `ast` has
too (same name, qualified name, first and last line), recall the share of `ast`'s that the outline has.

A file counts when the running interpreter's `ast` parses it (a library's test folder holds files that
are broken on purpose, and files for other versions of Python): the others are listed, not scored.

    .venv/bin/python bench/code_accuracy.py                 # the running interpreter's whole library
    .venv/bin/python bench/code_accuracy.py --every 10      # one file in ten: what the test suite checks
    .venv/bin/python bench/code_accuracy.py --show 20       # and 20 of the differences, with their files

tests/workspace/code/test_accuracy_python.py asserts the figures on a sample; bench/code_intel.py reports
them for the whole library. Standard library and shipcode_mcp only.
"""

from __future__ import annotations

import argparse
import ast
import io
import sys
import sysconfig
import time
import tokenize
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

# The outline's kinds that are a `def` or a `class` in Python (a property or a constructor is a `def` too);
# variables, constants and the like are not what `ast` lists here, and are not scored.
DEFINITION_KINDS = frozenset({"class", "function", "method", "constructor", "property"})


class Definition(NamedTuple):
    """One def or class, as both sides describe it."""

    qualified_name: str
    name: str
    line: int
    end_line: int


def stdlib() -> Path:
    """The running interpreter's standard library folder (Lib/ of a CPython checkout, lib/pythonX.Y installed)."""
    return Path(sysconfig.get_paths()["stdlib"])


def library_files(root: Path) -> list[Path]:
    """The library's .py files in path order, without installed third-party packages."""
    return sorted(path for path in root.rglob("*.py")
                  if "site-packages" not in path.relative_to(root).parts and path.is_file())


def sample(files: list[Path], every: int) -> list[Path]:
    """One file in `every`, by path order: the same files on every run of the same library."""
    return files[::every]


def source_text(path: Path) -> str:
    """The file's text decoded as Python decodes it (its coding cookie, else UTF-8): the same lines `ast` numbers."""
    data = path.read_bytes()
    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    return data.decode(encoding)


def ast_definitions(text: str) -> list[Definition]:
    """Every def, async def and class of a module, at any depth, with the range the shared model gives it."""
    found: list[Definition] = []

    def visit(node: ast.AST, scope: tuple[str, ...]) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                first = min([child.lineno, *(decorator.lineno for decorator in child.decorator_list)])
                qualified = (*scope, child.name)
                assert child.end_lineno is not None
                found.append(Definition(".".join(qualified), child.name, first, child.end_lineno))
                visit(child, qualified)
            else:
                visit(child, scope)

    visit(ast.parse(text), ())
    return found


def outline_definitions(symbols: Iterable[Any]) -> list[Definition]:
    """The outline's defs and classes, flattened: the same shape as `ast_definitions`' (symbols are `Symbol`s)."""
    found: list[Definition] = []

    def visit(items: Iterable[Any]) -> None:
        for symbol in items:
            if symbol.kind in DEFINITION_KINDS:
                found.append(Definition(symbol.qualified_name, symbol.name, symbol.line, symbol.end_line))
            visit(symbol.children)

    visit(symbols)
    return found


@dataclass
class Score:
    """Definitions matched, expected (by `ast`) and found (by the outline), and where they differ."""

    files: int = 0
    skipped: list[str] = field(default_factory=list)  # files `ast` does not parse: not scored
    expected: int = 0
    found: int = 0
    matched: int = 0
    missing: list[tuple[str, Definition]] = field(default_factory=list)  # in ast, not in the outline
    extra: list[tuple[str, Definition]] = field(default_factory=list)  # in the outline, not in ast
    parse_seconds: float = 0.0  # the outline's time (ast's is not counted)
    lines: int = 0

    @property
    def precision(self) -> float:
        return self.matched / self.found if self.found else 1.0

    @property
    def recall(self) -> float:
        return self.matched / self.expected if self.expected else 1.0

    def add(self, where: str, expected: list[Definition], found: list[Definition]) -> None:
        self.files += 1
        self.expected += len(expected)
        self.found += len(found)
        wanted, got = Counter(expected), Counter(found)
        self.matched += sum((wanted & got).values())
        self.missing += [(where, item) for item in (wanted - got).elements()]
        self.extra += [(where, item) for item in (got - wanted).elements()]


def score(files: Iterable[Path], root: Path) -> Score:
    """Outline every file that `ast` parses, and compare (imports the engine: the `code` extra)."""
    from shipcode_mcp.workspace.code.outline import outline_source

    result = Score()
    for path in files:
        where = str(path.relative_to(root))
        try:
            text = source_text(path)
            expected = ast_definitions(text)
        except (SyntaxError, UnicodeDecodeError, ValueError):
            result.skipped.append(where)
            continue
        started = time.perf_counter()
        symbols = outline_source(text, "python")
        result.parse_seconds += time.perf_counter() - started
        result.lines += text.count("\n")
        result.add(where, expected, outline_definitions(symbols))
    return result


def near_misses(result: Score) -> Iterator[str]:
    """The differences, each missing definition paired with an extra one of the same name in the same file
    when there is one (a range or a qualified name that differs), so a reader sees what went wrong."""
    extra_by_key: dict[tuple[str, str], list[Definition]] = {}
    for where, item in result.extra:
        extra_by_key.setdefault((where, item.name), []).append(item)
    for where, item in result.missing:
        twins = extra_by_key.get((where, item.name))
        if twins:
            twin = twins.pop(0)
            yield f"{where}: ast {item} / outline {twin}"
        else:
            yield f"{where}: missing {item}"
    for (where, _), items in extra_by_key.items():
        for item in items:
            yield f"{where}: extra {item}"


def summary(result: Score) -> dict[str, Any]:
    return {"files": result.files, "skipped": len(result.skipped), "lines": result.lines, "expected": result.expected,
            "found": result.found, "matched": result.matched, "precision": result.precision, "recall": result.recall,
            "outline_seconds": result.parse_seconds}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Python outlines against ast on CPython's library")
    parser.add_argument("--stdlib", type=Path, default=stdlib(), help="the library folder (default: this interpreter's)")
    parser.add_argument("--every", type=int, default=1, help="score one file in EVERY (default: all)")
    parser.add_argument("--show", type=int, default=10, help="differences to print")
    args = parser.parse_args(argv)
    root = args.stdlib.resolve()
    result = score(sample(library_files(root), args.every), root)
    print(f"{root} (Python {sys.version.split()[0]}'s ast): {result.files} files, {result.lines:,} lines, "
          f"{len(result.skipped)} left out (ast does not parse them)")
    print(f"definitions: ast {result.expected:,}, outline {result.found:,}, matched {result.matched:,}; "
          f"precision {result.precision:.4%}, recall {result.recall:.4%}; outline time {result.parse_seconds:.2f} s")
    for line in list(near_misses(result))[:args.show]:
        print("  " + line)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""search_structure on real code: a decorated Python def pattern matches the defs real code writes (with a return
type, under more decorators than the pattern names), and a pattern that matches whole classes answers with each
match's first lines, not the classes."""

from __future__ import annotations

import ast
import json
import shutil
import sysconfig
from collections.abc import Iterator
from pathlib import Path

import pytest

from workspace_support import Tools

pytest.importorskip("ast_grep_py")

from shipcode_mcp.workspace.code.structure import MATCH_LINES

# click 8.1.7 (its sdist, as bench/references_precision.py pins it), src/click/core.py: the first line of
# class Argument and its human_readable_name (lines 2969 and 2999-3003). Every property of click has a return type.
CLICK = '''class Argument(Parameter):
    @property
    def human_readable_name(self) -> str:
        if self.metavar is not None:
            return self.metavar
        return self.name.upper()  # type: ignore
'''
# CPython 3.11.7, Lib/numbers.py, lines 32-69 (class Complex to its imag): two properties that are abstract too.
NUMBERS = '''class Complex(Number):
    """Complex defines the operations that work on the builtin complex type.

    In short, those are: a conversion to complex, .real, .imag, +, -,
    *, /, **, abs(), .conjugate, ==, and !=.

    If it is given heterogeneous arguments, and doesn't have special
    knowledge about them, it should fall back to the builtin complex
    type as described below.
    """

    __slots__ = ()

    @abstractmethod
    def __complex__(self):
        """Return a builtin complex instance. Called for complex(self)."""

    def __bool__(self):
        """True if self != 0. Called for bool(self)."""
        return self != 0

    @property
    @abstractmethod
    def real(self):
        """Retrieve the real component of this number.

        This should subclass Real.
        """
        raise NotImplementedError

    @property
    @abstractmethod
    def imag(self):
        """Retrieve the imaginary component of this number.

        This should subclass Real.
        """
        raise NotImplementedError
'''


@pytest.fixture(scope="module")
def tools(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tools]:
    root = tmp_path_factory.mktemp("real")
    (root / "core.py").write_text(CLICK)
    (root / "numbers.py").write_text(NUMBERS)
    with Tools(root) as server:
        yield server


def _found(tools: Tools, pattern: str) -> list[tuple[str, int, str]]:
    data = tools.data("search_structure", {"pattern": pattern, "language": "python"})
    return [(m["path"], m["line"], m["variables"].get("F", "")) for m in data["matches"]]


# -- 7. a decorated def pattern matches a def with more decorators, or with a return type --------------
def test_a_decorated_def_pattern_matches_the_properties_real_code_writes(tools: Tools) -> None:
    """ast-grep parses `@property\\ndef $F(self): $$$B` to a decorated_definition and matched it node for node:
    click's properties (`-> str`) and numbers.py's (`@property` over `@abstractmethod`) were none of them."""
    properties = [("core.py", 2, "human_readable_name"), ("numbers.py", 22, "real"), ("numbers.py", 31, "imag")]
    assert _found(tools, "@property\ndef $F(self): $$$B") == properties
    assert _found(tools, "    @property\n    def $F(self):\n        $$$B") == properties  # as copied from a class
    assert _found(tools, "@$D\ndef $F($$$A): $$$B") == [
        ("core.py", 2, "human_readable_name"), ("numbers.py", 14, "__complex__"), *properties[1:]]
    assert _found(tools, "@abstractmethod\n@property\ndef $F(self): $$$B") == properties[1:]  # in any order
    assert _found(tools, "@property\ndef $F(self) -> str: $$$B") == properties[:1]  # a return type written is one
    data = tools.data("search_structure", {"pattern": "@property\ndef $F(self): $$$B", "language": "python"})
    assert data["matches"][0]["variables"]["B"].startswith("if self.metavar is not None:")
    assert data["matches"][1]["text"].startswith("@property\n    @abstractmethod\n    def real(self):")


def test_a_def_pattern_without_a_return_type_matches_defs_with_one(tools: Tools) -> None:
    assert _found(tools, "def $F(self): $$$B") == [
        ("core.py", 3, "human_readable_name"), ("numbers.py", 15, "__complex__"), ("numbers.py", 18, "__bool__"),
        ("numbers.py", 24, "real"), ("numbers.py", 33, "imag")]
    assert _found(tools, "def $F(self) -> str: $$$B") == [("core.py", 3, "human_readable_name")]


def test_a_decorated_pattern_that_matches_nothing_still_says_why(tools: Tools) -> None:
    text = tools.text("search_structure", {"pattern": "@property\ndef $F(self, other): $$$B", "language": "python"})
    assert "[The pattern is a decorated python def, and the files searched hold some, but none matched" in text
    assert "others may be there too" in text and "the decorator alone" in text


# -- 6. matches of whole classes are shown by their first lines -------------------------------------
def test_a_pattern_matching_whole_classes_answers_with_their_first_lines(tmp_path: Path) -> None:
    """On the standard library that runs the tests (CPython's Lib: _pydecimal.py's Decimal alone is some 3 000
    lines), `limit` 19 classes: each match and capture is its first MATCH_LINES lines and says what is left
    out, the answer is a small part of the classes' text, and a class longer than the worker's MATCH_SPAN
    has its captures too."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    for name in ("_pydecimal.py", "fractions.py", "numbers.py"):
        shutil.copy(stdlib / name, tmp_path / name)
    with Tools(tmp_path) as tools:
        result = tools.call("search_structure", {"pattern": "class $C($$$B): $$$BODY", "language": "python",
                                                 "limit": 19})
    data = result["structuredContent"]
    assert len(data["matches"]) == 19 and data["truncated"] is True
    whole = 0
    for match in data["matches"]:
        source = (tmp_path / match["path"]).read_text().split("\n")
        whole += len("\n".join(source[match["line"] - 1:match["end_line"]]))
        for shown in (match["text"], match["variables"]["BODY"]):
            head, _, cut = shown.partition("… [cut: ")
            assert head.count("\n") < MATCH_LINES and (not cut or cut.endswith(" more lines]"))
    text = result["content"][0]["text"]
    assert len(text.splitlines()) == 20 and all(line.count(" … (") <= 1 for line in text.splitlines())
    answer = len(text) + len(json.dumps(data))  # 6 KB and 13 KB on 3.11, of 194 KB of classes (31 KB with full)
    assert answer < 32 * 1024 and answer * 8 < whole, (whole, answer)
    classes = {node.name for name in ("_pydecimal.py", "fractions.py", "numbers.py")
               for node in ast.walk(ast.parse((tmp_path / name).read_text())) if isinstance(node, ast.ClassDef)}
    names = [match["variables"].get("C") for match in data["matches"]]  # a match over 16 KB lost its captures
    assert {"Decimal", "Context"} <= set(names) and set(names) <= classes

"""Which of the files that mention a name can define it, from the lines ripgrep printed, before any parse.

A parse costs some 5 ms a file; a line test costs microseconds. For a language where every definition
the outline reports puts a recognisable shape on a line that holds the name, a file none of whose
matching lines has that shape cannot define the name, and is not parsed. Each shape is a strict
superset of what the outline reports (tests/workspace/code and bench/code_intel.py compare the
answers with and without it). A language without such a shape keeps every file that mentions the name.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from .names import glob_matcher, word_regex

LONG_LINE = "[Omitted long "
"""How rg shows a line longer than --max-columns (`[Omitted long matching line]` in ripgrep 14, `[Omitted
long line with N matches]` before): such a line is kept (it might hold a definition)."""

_PYTHON = (
    # def/class NAME; NAME first on its line (an assignment at module or class level, or the name of a
    # def continued with a backslash); after `;` (`a = 1; NAME = 2`) or after a one-line class's colon;
    # a later target of a chain (`a = NAME = 1`).
    r"\b(?:def|class)\s+{w}|^\s*{w}|;\s*{w}|\bclass\b.*:\s*{w}|=\s*{w}\s*=(?!=)"
)
_SHAPES: dict[str, str] = {"python": _PYTHON}
_compiled: dict[tuple[str, str], re.Pattern[str]] = {}


_GLOB_SHAPE = re.compile(r"\b(?:def|class)\s+(?=(\w+))|^\s*(?=(\w+))|[;:]\s*(?=(\w+))|=\s*(?=(\w+)\s*=(?!=))")
"""Python's shapes, the name left open: each match is the place of one word that could be defined there
(the word itself only looked ahead at, so that the search goes on from its start: `def` first on a line
is one such place, and so is the name after it). Each alternative is a fixed word or a run of spaces
before a word (the last, a later target of a chain, `a = NAME = 1`, also the `=` after it): one pass over
the line, whatever it holds."""
_CLASS = re.compile(r"\bclass\b")


def definition_test(language: str | None, word: str) -> Callable[[str], bool] | None:
    """A test of one line: could it hold a definition of `word` (a name, or a glob with `*` and `?` as
    find_symbol's last part)? None when the language has no shape: every file that mentions the word is
    kept. A glob is never made a backtracking regex (twelve stars against a 44-character name took
    hours): each word in a place of the shape is matched by the linear glob match of navigate.py."""
    shape = _SHAPES.get(language or "")
    if shape is None:
        return None
    if not any(char in word for char in "*?"):
        search = _pattern(shape, word_regex(word)).search
        return lambda line: line.startswith(LONG_LINE) or search(line) is not None
    matches = glob_matcher(word)

    def test(line: str) -> bool:
        if line.startswith(LONG_LINE):
            return True
        after_class = -1
        for found in _GLOB_SHAPE.finditer(line):
            name = found.group(1) or found.group(2) or found.group(3) or found.group(4)
            if found.group(3) is not None and line[found.start()] == ":":  # `class A: name = 1` only
                if after_class < 0:
                    first = _CLASS.search(line)
                    after_class = first.end() if first is not None else len(line) + 1
                if found.start() < after_class:
                    continue
            if matches(name):
                return True
        return False
    return test


# find_references marks a use that is a definition. In Python a use right after `def`/`class` is one
# (every def and class is in the outline, with that line); one shaped like a module or class
# assignment may be (the outline says); on any other line, none is.
_PYTHON_DEFINES = r"\b(?:def|class)\s+{w}"
_PYTHON_MAY_DEFINE = r"(?:^\s*|;\s*|\bclass\b.*:\s*){w}\s*(?:=(?!=)|:)|=\s*{w}\s*=(?!=)"
_DEFINING: dict[str, tuple[str, str]] = {"python": (_PYTHON_DEFINES, _PYTHON_MAY_DEFINE)}


def defining_lines(language: str, word: str) -> tuple[re.Pattern[str], re.Pattern[str]] | None:
    """Two tests of a line that holds a use of `word` in code: it defines the word (no outline needed),
    it may (the outline says); None when the language has no such shapes (the outline says always)."""
    shapes = _DEFINING.get(language)
    if shapes is None:
        return None
    return (_pattern(shapes[0], word), _pattern(shapes[1], word))


def _pattern(shape: str, word: str) -> re.Pattern[str]:
    key = (shape, word)
    pattern = _compiled.get(key)
    if pattern is None:
        if len(_compiled) > 1024:
            _compiled.clear()
        pattern = _compiled[key] = re.compile(shape.replace("{w}", f"(?:{word})"))
    return pattern

"""How the code tools match a name: as a whole word for rg (`word_regex`), and as a glob over a qualified
name in linear time (`glob_matcher`). A leaf, so that the walk (source.py), the definition prefilter and
the tools (navigate.py) share it without importing each other."""

from __future__ import annotations

import re
from collections.abc import Callable

from ...primitives import ToolError
from ..text import printable


def word_regex(name: str) -> str:
    """An rg regex for the identifier `name` as a whole word; `*` and `?` are wildcards. A word boundary
    is required only next to a word character (`operator=`, `~Vec` are names in C++)."""
    parts = re.split(r"([*?])", name)
    body = "".join({"*": r"\w*", "?": r"\w"}.get(part) or re.escape(part) for part in parts)
    start = r"\b" if re.match(r"[\w*?]", name) else ""
    end = r"\b" if re.search(r"[\w*?]$", name) else ""
    return f"{start}{body}{end}"


MAX_GLOB_CHARS = 200
"""A longer name or glob is refused (identifiers are shorter; it bounds a match's work)."""
MAX_GLOB_STARS = 16
"""A glob with more `*` is refused: each star is a place the match may go back to."""
_STAR = "*"
_ANY = "?"
_Token = str | tuple[bool, tuple[tuple[str, str], ...]]
"""One part of a glob segment: `*`, `?`, a literal character, or a class (negated, its ranges)."""


def _glob_tokens(pattern: str) -> list[list[_Token]]:
    """A glob's segments (split at each `.` outside a class), each a list of tokens. Wildcards and classes
    never match a `.`: a segment matches one part of a qualified name. ToolError for a bad glob."""
    if len(pattern) > MAX_GLOB_CHARS:
        raise ToolError(f"name is too long ({len(pattern)} characters; at most {MAX_GLOB_CHARS})")
    if pattern.count("*") > MAX_GLOB_STARS:
        raise ToolError(f"name has too many * wildcards ({pattern.count('*')}; at most {MAX_GLOB_STARS})")
    if "\\" in pattern:
        raise ToolError("name cannot hold a backslash: a glob has no escapes (identifiers have no backslash)")
    segments: list[list[_Token]] = [[]]
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if char == "[":
            close = pattern.find("]", index + 2)
            if close < 0:
                raise ToolError(f"name has a '[' without its ']' (a character class such as [a-z]): '{printable(pattern)}'")
            body = pattern[index + 1:close]
            negated = body.startswith("!")
            if negated:
                body = body[1:]
                if not body:
                    raise ToolError("name has an empty character class '[!]'")
            ranges: list[tuple[str, str]] = []
            at = 0
            while at < len(body):
                if at + 2 < len(body) and body[at + 1] == "-":
                    low, high = body[at], body[at + 2]
                    if low > high:
                        raise ToolError(f"name has a bad character class: the range {low}-{high} is empty")
                    ranges.append((low, high))
                    at += 3
                else:
                    ranges.append((body[at], body[at]))
                    at += 1
            segments[-1].append((negated, tuple(ranges)))
            index = close + 1
            continue
        if char == ".":
            segments.append([])
        else:
            segments[-1].append(char)
        index += 1
    return segments


def _one(token: _Token, char: str) -> bool:
    if token == _ANY:
        return True
    if isinstance(token, str):
        return token == char
    negated, ranges = token
    return any(low <= char <= high for low, high in ranges) != negated


def _segment_matches(tokens: list[_Token], text: str) -> bool:
    """Whether `text` (no `.` in it) matches a glob segment: the greedy match that goes back only to the
    last `*` seen (a later star can take over whatever an earlier one would): at most len(text) x
    len(tokens) steps, never exponential."""
    token = at = 0
    star = -1
    mark = 0
    while at < len(text):
        if token < len(tokens) and tokens[token] == _STAR:
            star, mark = token, at
            token += 1
        elif token < len(tokens) and _one(tokens[token], text[at]):
            token += 1
            at += 1
        elif star >= 0:
            mark += 1
            token, at = star + 1, mark
        else:
            return False
    while token < len(tokens) and tokens[token] == _STAR:
        token += 1
    return token == len(tokens)


def glob_matcher(pattern: str) -> Callable[[str], bool]:
    """A test of a (qualified) name against a glob where `*` and `?` do not cross a `.` (`Thread.*` is
    Thread's direct members): the name's last parts, as many as the glob's, each match their segment."""
    segments = _glob_tokens(pattern)
    count = len(segments)

    def test(name: str) -> bool:
        parts = name.split(".")
        if len(parts) < count:
            return False
        return all(_segment_matches(tokens, part) for tokens, part in zip(segments, parts[-count:], strict=True))
    return test

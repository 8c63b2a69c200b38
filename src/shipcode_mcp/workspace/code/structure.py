"""search_structure: ast-grep patterns (`$A.foo($$$ARGS)`) over the workspace's files of one language.

Files are narrowed first with ripgrep by the pattern's longest plain identifier (a match has that
word in its text), then parsed; each match gives its text, place and captured metavariables.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from ...primitives import ToolError
from ..text import place, plural, printable, result
from .source import Folder, parse_source, read_source, word_regex
from .symbols import LANGUAGES, language_for

if TYPE_CHECKING:
    from collections.abc import Iterator

    from ast_grep_py import SgNode

    from ...context import Context
    from ...primitives import ToolResult
    from ..roots import Roots

MAX_MATCH_CHARS = 2000
"""A longer match is shown cut (its structured text too)."""
MATCH_SPAN = 16 * 1024
"""find_all is asked of subtrees of at most this many characters (see _matches)."""
_VARIABLE = re.compile(r"\$(\$\$)?([A-Z_][A-Z0-9_]*)")
_ANY_VARIABLE = re.compile(r"\$\$\$(?:[A-Z_][A-Z0-9_]*)?|\$[A-Z_][A-Z0-9_]*")
_WORD = re.compile(r"(?<![\w$])[A-Za-z_]\w*")


def search_structure(ctx: Context, roots: Roots, pattern: str, language: str, path: str, limit: int) -> ToolResult:
    from .outline import parse

    language = language.strip().lower()
    if language not in LANGUAGES:
        raise ToolError(f"Unknown language '{printable(language)}'; search_structure knows {', '.join(LANGUAGES)}")
    try:
        parse("", language).find(pattern=pattern)
    except (RuntimeError, ValueError) as err:
        raise ToolError(f"The pattern cannot be parsed as {language}: {str(err).splitlines()[0]}") from None
    broken = _syntax_error(pattern, language)
    variables = [(bool(many), name) for many, name in dict.fromkeys(_VARIABLE.findall(pattern)) if name != "_"]
    words = _WORD.findall(_VARIABLE.sub(" ", pattern))
    folder = Folder(roots, path)
    if not folder.is_dir and language_for(folder.real) != language:
        raise ToolError(f"{printable(folder.shown)} is not a {language} file (by its name)")
    word = max(words, key=len) if words else None
    names = folder.candidates(ctx, word_regex(word), language) if word else folder.files(ctx, language)
    found: list[dict[str, Any]] = []
    files: set[str] = set()
    truncated = False

    def parsed(real: str, shown: str) -> SgNode:
        return parse_source(read_source(roots, real, shown, language))

    for shown, root in folder.parsed(ctx, names, "file", parsed):
        for node in _matches(root, pattern):
            if len(found) >= limit:
                truncated = True
                break
            where = node.range()
            text = node.text()
            captured: dict[str, str] = {}
            for many, name in variables:
                if many:
                    parts = [part.text() for part in node.get_multiple_matches(name)]
                    captured[name] = ", ".join(part for part in parts if part.strip(",") != "")
                else:
                    match = node.get_match(name)
                    if match is not None:
                        captured[name] = match.text()
            found.append({"path": shown, "line": where.start.line + 1, "column": where.start.column + 1,
                          "end_line": where.end.line + 1, "text": _cut(text), "variables": captured})
            files.add(shown)
        if truncated:
            break
    ctx.report_progress(len(names), len(names), f"done: {plural(len(found), 'match')}")
    out: list[str] = []
    for item in found:
        first = item["text"].split("\n", 1)[0]
        more = f" … ({item['end_line'] - item['line'] + 1} lines)" if item["end_line"] > item["line"] else ""
        shown = "".join(f" ${key}={printable(value)!r}" for key, value in item["variables"].items())
        out.append(f"{printable(item['path'])}:{item['line']}:{item['column']}: {printable(first)}{more}{shown}")
    if not found and broken is not None:
        raise ToolError(f"The pattern is not valid {language} code ({broken}) and matched nothing; write it as code "
                        "of the language with $NAME for any node and $$$NAME for any number of nodes")
    if broken is not None:
        out.append(f"[The pattern does not parse cleanly as {language} ({broken}); the matches may be partial.]")
    if not found:
        out.append(f"No matches for the {language} pattern in {place(folder.shown)}.")
    elif truncated:
        out.append(f"[Showing the first {plural(len(found), 'match')}; there are more. Narrow with path, or raise limit.]")
    else:
        out.append(f"[{plural(len(found), 'match')} in {plural(len(files), 'file')}.]")
    out += folder.skipped_note()
    return result("\n".join(out), {"pattern": pattern, "language": language, "matches": found,
                                   "file_count": len(files), "truncated": truncated, "skipped": folder.skipped})


def _matches(root: SgNode, pattern: str) -> Iterator[SgNode]:
    """The matches of `pattern` under `root`, in source order, made a subtree at a time: find_all makes a
    list of every match (`$A` matches every node: hundreds of MB for a large file), so it is asked only of
    subtrees of at most MATCH_SPAN characters, and a caller that stops at its limit makes no more."""
    stack = [root]
    while stack:
        node = stack.pop()
        where = node.range()
        if where.end.index - where.start.index <= MATCH_SPAN:
            yield from node.find_all(pattern=pattern)
            continue
        if node.matches(pattern=pattern):
            yield node
        stack.extend(reversed(node.children()))


def _syntax_error(pattern: str, language: str) -> str | None:
    """Where the pattern, its metavariables made identifiers, fails to parse; None if it parses.
    Not refused outright: a fragment (a Rust statement, outside any function) may fail alone and
    still match, as ast-grep parses it in context."""
    from .outline import parse

    plain = _ANY_VARIABLE.sub("z_sg_", pattern)
    error = parse(plain, language).find(kind="ERROR")
    if error is None:
        return None
    where = error.range().start
    return f"syntax error at line {where.line + 1}, column {where.column + 1}"


def _cut(text: str) -> str:
    return text if len(text) <= MAX_MATCH_CHARS else text[:MAX_MATCH_CHARS] + f"… [cut: {len(text)} characters]"

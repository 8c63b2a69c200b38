"""search_structure: ast-grep patterns (`$A.foo($$$ARGS)`) over the workspace's files of one language.

Files are narrowed first with ripgrep by the pattern's longest plain identifier (a match has that
word in its text), then parsed; each match gives its text, place and captured metavariables. The pattern
and every file are parsed and matched in a parse worker (parsers.py, worker.py), which answers with
places in the text; the text shown is sliced here from the file as read.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from ...primitives import ToolError
from ..text import cut_line, cut_text, place, plural, printable, result
from .names import word_regex
from .parsers import POOL, Failed
from .source import Folder, check_parsable, parse_failed, read_source
from .symbols import LANGUAGES, language_for

if TYPE_CHECKING:
    from ...context import Context
    from ...primitives import ToolResult
    from ..roots import Roots

MAX_MATCH_CHARS = 2000
"""A longer match, or a longer capture of a metavariable, is cut (its structured text too), at a line
break where one is near, with a marker that says how much was left out."""
MATCH_LINES = 5
"""Unless `full` is asked, a match's text and each capture are their first this many lines (the matched
lines and a few of what follows, not a whole class body), and past MAX_MATCH_CHARS cut as well."""
SHOWN_CHARS = 200
"""In the text, a match's first line and each capture are shown cut to this many characters (the
structured text holds up to MAX_MATCH_CHARS)."""
RESULT_CHARS = 64 * 1024
"""The matches stop once their texts and captures pass this many characters (as outline's text stops
at its budget): `limit` matches of whole function bodies would otherwise be megabytes."""
MAX_PATTERN_CHARS = 4096
"""A longer pattern is refused: a pattern is a few lines of code, and it is parsed like a file."""
_VARIABLE = re.compile(r"\$(\$\$)?([A-Z_][A-Z0-9_]*)")
_WORD = re.compile(r"(?<![\w$])[A-Za-z_]\w*")


def search_structure(ctx: Context, roots: Roots, pattern: str, language: str, path: str, limit: int,
                     full: bool) -> ToolResult:
    language = language.strip().lower()
    if language not in LANGUAGES:
        raise ToolError(f"Unknown language '{printable(language)}'; search_structure knows {', '.join(LANGUAGES)}")
    if len(pattern) > MAX_PATTERN_CHARS:
        raise ToolError(f"The pattern is {len(pattern)} characters; search_structure takes patterns of at most "
                        f"{MAX_PATTERN_CHARS}")
    try:  # parsed in a worker like any file: a pattern can crash a grammar too
        checked = POOL.ask({"op": "pattern", "pattern": pattern, "language": language}, ctx.check_cancelled)
    except Failed as err:
        raise ToolError(f"The pattern {err}") from None
    if checked["error"] is not None:
        raise ToolError(f"The pattern cannot be parsed as {language}: {_refusal(checked['error'])}")
    broken: str | None = checked["broken"]
    variables = [(bool(many), name) for many, name in dict.fromkeys(_VARIABLE.findall(pattern)) if name != "_"]
    words = _WORD.findall(_VARIABLE.sub(" ", pattern))
    folder = Folder(roots, path)
    if not folder.is_dir and language_for(folder.real) != language:
        raise ToolError(f"{printable(folder.shown)} is not a {language} file (by its name)")
    word = max(words, key=len) if words else None
    # In path order as they are found: the search stops at its limit without the whole tree listed (OrderedNames).
    names = folder.in_order(ctx, word_regex(word) if word else None, language)
    kind: str | None = None if broken is not None else checked["kind"]
    kind_seen = False  # a file searched holds a node of the pattern's kind (looked at only while none matched)
    found: list[dict[str, Any]] = []
    out: list[str] = []
    files: set[str] = set()
    truncated = at_size = False
    used = 0

    def parsed(real: str, shown: str) -> tuple[str, dict[str, Any]]:
        """The file's text, and its matches (at most one more than the limit leaves room for) made in a
        worker, with whether it holds a node of the pattern's kind (asked while nothing matched)."""
        source = read_source(roots, real, shown, language)
        check_parsable(source)
        try:
            answer: dict[str, Any] = POOL.ask(
                {"op": "matches", "text": source.text, "language": language, "pattern": pattern,
                 "variables": variables, "limit": limit - len(found) + 1,
                 "kind": kind if not found and not kind_seen else None}, ctx.check_cancelled)
        except Failed as err:
            raise parse_failed(source, err) from None
        return source.text, answer

    for shown, (source, answer) in folder.parsed(ctx, names, "file", parsed):
        for place_of in answer["matches"]:
            if len(found) >= limit or used >= RESULT_CHARS:
                truncated, at_size = True, used >= RESULT_CHARS
                break
            item, line = _match(place_of, shown, source, None if full else MATCH_LINES)
            used += len(item["text"]) + sum(map(len, item["variables"].values())) + len(line)
            found.append(item)
            out.append(line)
            files.add(shown)
        if truncated:
            break
        kind_seen = kind_seen or bool(answer["kind_seen"])
    searched = names.total if names.total is not None else names.given
    ctx.report_progress(searched, searched, f"done: {plural(len(found), 'match')}")
    if broken is not None and found:
        out.append(f"[The pattern does not parse cleanly as {language} ({broken}); the matches may be partial.]")
    if not found:
        out.append(f"No matches for the {language} pattern in {place(folder.shown)}.")
        if broken is not None:
            out.append(_broken_hint(language, broken))
        elif kind is not None and kind_seen:
            out.append(_decorated_hint() if kind == "decorated_definition" else _kind_hint(language, kind))
    elif at_size:
        out.append(f"[Showing the first {plural(len(found), 'match')}: the result is at its size limit "
                   f"({RESULT_CHARS // 1024} KiB of matched text); there are more. Narrow with path or the pattern.]")
    elif truncated:
        out.append(f"[Showing the first {plural(len(found), 'match')}; there are more. Narrow with path, or raise limit.]")
    else:
        out.append(f"[{plural(len(found), 'match')} in {plural(len(files), 'file')}.]")
    out += folder.skipped_note()
    return result("\n".join(out), {"pattern": pattern, "language": language, "matches": found,
                                   "file_count": len(files), "truncated": truncated, "skipped": folder.skipped,
                                   "skipped_files": folder.skipped_files})


def _match(place_of: dict[str, Any], shown: str, source: str, lines: int | None) -> tuple[dict[str, Any], str]:
    """One match (its place, and the places of its captures, as the worker found them in `source`) as
    structuredContent holds it (its text and captures cut to MAX_MATCH_CHARS and to `lines` lines) and its
    line of the text: the match's first line, and each capture as a Python string literal, so that a line
    break (`\\n` in the literal) never reads as a backslash and an n written in the code (`\\\\n`)."""
    start, end = place_of["span"]
    text = source[start:end]
    captured = {name: source[first:last] for name, (first, last) in place_of["captures"].items()}
    line_number, column, end_line = place_of["line"], place_of["column"], place_of["end_line"]
    first = text.split("\n", 1)[0]
    more = f" … ({end_line - line_number + 1} lines)" if end_line > line_number else ""
    line = (f"{printable(shown)}:{line_number}:{column}: "
            f"{printable(cut_line(first, SHOWN_CHARS))}{more}" + "".join(f" ${key}={_literal(value)}"
                                                                          for key, value in captured.items()))
    item = {"path": shown, "line": line_number, "column": column, "end_line": end_line,
            "text": cut_text(text, MAX_MATCH_CHARS, lines),
            "variables": {key: cut_text(value, MAX_MATCH_CHARS, lines) for key, value in captured.items()}}
    return item, line


def _literal(value: str) -> str:
    """A capture in the text: a Python string literal (repr escapes every character printable would,
    and the backslash too), cut to SHOWN_CHARS with the cut said outside the quotes."""
    if len(value) <= SHOWN_CHARS:
        return repr(value)
    head, _, cut = cut_text(value, SHOWN_CHARS).rpartition("… [cut: ")
    return f"{head!r}… [cut: {cut}"


def _refusal(message: str) -> str:
    """Why ast-grep refused a pattern, from its error: the innermost cause (the first line is only
    `cannot get matcher`), the backtrace left out."""
    if "Multiple AST nodes" in message:
        return ("it is more than one node (two statements, say); a pattern matches one node: search for one "
                "statement or expression, or for the block or body that holds them")
    causes = [re.sub(r"^\d+: ", "", line.strip()) for line in message.split("Stack backtrace")[0].splitlines()]
    causes = [cause for cause in causes if cause and cause != "Caused by:"]
    return printable(causes[-1]) if causes else "ast-grep refused it"


def _broken_hint(language: str, broken: str) -> str:
    return (f"[The pattern is not valid {language} code ({broken}), which may be why nothing matched: a pattern is "
            f"code of the language, whole (a Python def with its colon and a body, a call with both parentheses), "
            "with $NAME for any one node and $$$NAME for any number of them.]")


def _kind_hint(language: str, kind: str) -> str:
    return (f"[The pattern is a {language} {kind}, and the files searched hold some, but none matched: a pattern "
            "matches only code with the same parts, so one that leaves out a part the code has (a return type, "
            "type annotations, a modifier, a receiver) matches none of them. Write that part as a metavariable "
            "($RET), or search a smaller part of the node.]")


def _decorated_hint() -> str:
    return ("[The pattern is a decorated python def, and the files searched hold some, but none matched: it matches "
            "a def that has its decorators (others may be there too) and its other parts (the same parameters: "
            "`$$$A` stands for any; `async`; a return type, when the pattern has one). To find every def a "
            "decorator is on, search the decorator alone (`@property`: each match's line is above its def), or "
            "the def without decorators (`def $F($$$A): $$$B` matches decorated ones too).]")

"""search_structure: ast-grep patterns (`$A.foo($$$ARGS)`) over the workspace's files of one language.

Files are narrowed first with ripgrep by the pattern's longest plain identifier (a match has that
word in its text), then parsed; each match gives its text, place and captured metavariables.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from ...primitives import ToolError
from ..text import cut_line, cut_text, place, plural, printable, result
from .source import Folder, parse_source, read_source, word_regex
from .symbols import LANGUAGES, language_for

if TYPE_CHECKING:
    from collections.abc import Iterator

    from ast_grep_py import SgNode

    from ...context import Context
    from ...primitives import ToolResult
    from ..roots import Roots

MAX_MATCH_CHARS = 2000
"""A longer match, or a longer capture of a metavariable, is cut (its structured text too), at a line
break where one is near, with a marker that says how much was left out."""
SHOWN_CHARS = 200
"""In the text, a match's first line and each capture are shown cut to this many characters (the
structured text holds up to MAX_MATCH_CHARS)."""
RESULT_CHARS = 64 * 1024
"""The matches stop once their texts and captures pass this many characters (as outline's text stops
at its budget): `limit` matches of whole function bodies would otherwise be megabytes."""
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
        raise ToolError(f"The pattern cannot be parsed as {language}: {_refusal(str(err))}") from None
    broken = _syntax_error(pattern, language)
    variables = [(bool(many), name) for many, name in dict.fromkeys(_VARIABLE.findall(pattern)) if name != "_"]
    words = _WORD.findall(_VARIABLE.sub(" ", pattern))
    folder = Folder(roots, path)
    if not folder.is_dir and language_for(folder.real) != language:
        raise ToolError(f"{printable(folder.shown)} is not a {language} file (by its name)")
    word = max(words, key=len) if words else None
    names = folder.candidates(ctx, word_regex(word), language) if word else folder.files(ctx, language)
    kind = None if broken is not None else _pattern_kind(pattern, language)
    kind_seen = False  # a file searched holds a node of the pattern's kind (looked at only while none matched)
    found: list[dict[str, Any]] = []
    out: list[str] = []
    files: set[str] = set()
    truncated = full = False
    used = 0

    def parsed(real: str, shown: str) -> tuple[str, SgNode]:
        source = read_source(roots, real, shown, language)
        return source.text, parse_source(source)

    for shown, (source, root) in folder.parsed(ctx, names, "file", parsed):
        for node in _matches(root, pattern):
            if len(found) >= limit or used >= RESULT_CHARS:
                truncated, full = True, used >= RESULT_CHARS
                break
            item, line = _match(node, shown, source, variables)
            used += len(item["text"]) + sum(map(len, item["variables"].values())) + len(line)
            found.append(item)
            out.append(line)
            files.add(shown)
        if truncated:
            break
        if not found and kind is not None and not kind_seen:
            kind_seen = root.find(kind=kind) is not None
    ctx.report_progress(len(names), len(names), f"done: {plural(len(found), 'match')}")
    if broken is not None and found:
        out.append(f"[The pattern does not parse cleanly as {language} ({broken}); the matches may be partial.]")
    if not found:
        out.append(f"No matches for the {language} pattern in {place(folder.shown)}.")
        if broken is not None:
            out.append(_broken_hint(language, broken))
        elif kind is not None and kind_seen:
            out.append(_kind_hint(language, kind))
    elif full:
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


def _match(node: SgNode, shown: str, source: str, variables: list[tuple[bool, str]]) -> tuple[dict[str, Any], str]:
    """One match as structuredContent holds it (its text and captures cut to MAX_MATCH_CHARS) and its line
    of the text: the match's first line, and each capture as a Python string literal, so that a line break
    (`\\n` in the literal) never reads as a backslash and an n written in the code (`\\\\n`)."""
    where = node.range()
    text = node.text()
    captured: dict[str, str] = {}
    for many, name in variables:
        if many:
            captured[name] = _span(node.get_multiple_matches(name), source)
        else:
            match = node.get_match(name)
            if match is not None:
                captured[name] = match.text()
    first = text.split("\n", 1)[0]
    more = f" … ({where.end.line - where.start.line + 1} lines)" if where.end.line > where.start.line else ""
    line = (f"{printable(shown)}:{where.start.line + 1}:{where.start.column + 1}: "
            f"{printable(cut_line(first, SHOWN_CHARS))}{more}" + "".join(f" ${key}={_literal(value)}"
                                                                          for key, value in captured.items()))
    item = {"path": shown, "line": where.start.line + 1, "column": where.start.column + 1,
            "end_line": where.end.line + 1, "text": cut_text(text, MAX_MATCH_CHARS),
            "variables": {key: cut_text(value, MAX_MATCH_CHARS) for key, value in captured.items()}}
    return item, line


def _span(parts: list[SgNode], source: str) -> str:
    """What a $$$ metavariable captured: the source text from its first node to its last, as written
    (comments and line breaks between them kept), without a separator that ends or starts the list."""
    while parts and parts[-1].text() == ",":
        parts = parts[:-1]
    while parts and parts[0].text() == ",":
        parts = parts[1:]
    if not parts:
        return ""
    return source[parts[0].range().start.index:parts[-1].range().end.index]


def _literal(value: str) -> str:
    """A capture in the text: a Python string literal (repr escapes every character printable would,
    and the backslash too), cut to SHOWN_CHARS with the cut said outside the quotes."""
    if len(value) <= SHOWN_CHARS:
        return repr(value)
    head, _, cut = cut_text(value, SHOWN_CHARS).rpartition("… [cut: ")
    return f"{head!r}… [cut: {cut}"


def _pattern_kind(pattern: str, language: str) -> str | None:
    """The kind of definition the pattern is (`function_declaration`), as the node that spans all of it with
    its metavariables made identifiers; None for any other pattern. A definition is where code has parts a
    pattern easily leaves out (a return type, modifiers), and then matches none of the definitions."""
    from .languages import RULES
    from .outline import parse

    plain = _ANY_VARIABLE.sub("z_sg_", pattern).strip()
    node: SgNode | None = parse(plain, language)
    kind = None
    while node is not None:
        children = [child for child in node.children() if child.is_named()]
        if len(children) != 1:
            break
        node = children[0]
        where = node.range()
        if where.end.index - where.start.index >= len(plain) - 1:  # an expression statement's `;` aside
            kind = node.kind()
    spec = RULES.get(language)
    return kind if spec is not None and kind in spec.defs else None


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

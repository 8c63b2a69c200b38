"""replace_symbol and insert_symbol (with --allow-write and the code extra): change code by its structure.

A symbol is found as read_symbol finds it (its name or qualified name in the file's outline), and its
extent is the outline's: decorators or attributes and the doc comment above it, through the last line of
its body. The new code is given as it would be written at the top level; it is indented as the symbol
it replaces or sits beside (the common indentation of its lines taken off, the symbol's put on, tabs or
spaces as the file has them), and its line ends are the file's. A new symbol is set apart from its
neighbours by blank lines as the file sets them apart (the lines between the symbol and the one before
it; two at the top level of a Python file, one elsewhere, when there is nothing to go by).

Each call is one write through writes.rewrite: atomic, under the root's lock, refused when it adds syntax
errors (the outline's languages are the syntax check's), with dry_run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...primitives import ToolError
from ..text import printable
from ..writes import checked_result, rewrite, target
from .navigate import matching_symbols, no_such_symbol
from .parsers import POOL, Failed
from .source import Skipped, Source, fresh_outline, known_language, text_language
from .symbols import Symbol

if TYPE_CHECKING:
    from ...context import Context
    from ...primitives import ToolResult
    from ..roots import Roots

POSITIONS = ("before", "after", "end")


def replace_symbol(ctx: Context, roots: Roots, path: str, name: str, text: str, line: int | None, body: bool,
                   dry_run: bool, allow_syntax_errors: bool, expected_sha256: str | None) -> ToolResult:
    real, shown = target(roots, path, "replace_symbol")
    named = known_language(real, shown)
    replaced: list[Symbol] = []

    def change(old: str, _: int) -> str:
        language = text_language(real, named, old)
        symbols, symbol = _one(old, real, shown, language, name, line, ctx)
        replaced.append(symbol)
        if body:
            return _with_body(old, symbol, text, language, shown, ctx)
        _refuse_shared_lines(symbols, symbol, language, shown)
        lines = old.split("\n")
        indent = _indent_of(lines[symbol.line - 1])
        new = _shaped(text, indent, _line_end(old), language) if text.strip() else []
        if symbol.end_line >= len(lines) and new:  # the file's last line, without a line end: none after it
            new[-1] = new[-1].removesuffix("\r")
        return "\n".join(lines[:symbol.line - 1] + new + lines[symbol.end_line:])

    shown, diff, edited = rewrite(ctx, roots, path, "replace_symbol", change, dry_run, allow_syntax_errors, expected_sha256)
    symbol = replaced[0]
    what = (f"{'body of the ' if body else ''}{symbol.kind} {printable(symbol.qualified_name)} "
            f"(lines {symbol.line}-{symbol.end_line})")
    done = f"Dry run: would replace the {what} of {printable(shown)}; nothing was written" if dry_run else \
        f"Replaced the {what} of {printable(shown)}"
    return checked_result(ctx, roots, f"{done}.\n{diff}".rstrip("\n"),
                          {**symbol.item(shown), "body": body, "diff": diff, "dry_run": dry_run}, edited)


def _with_body(old: str, symbol: Symbol, text: str, language: str, shown: str, ctx: Context) -> str:
    """`old` with the body of `symbol` replaced by `text`: the code between its header (and in Python its
    docstring, which stays) or opening brace and its end or closing brace, indented as that code is (one level
    inside the header when it has none). Refused where the body shares a line with the header or a brace."""
    what = f"the {symbol.kind} {printable(symbol.qualified_name)} of {printable(shown)}"
    try:
        where = POOL.ask({"op": "body", "text": old, "language": language, "line": symbol.line,
                          "def_line": symbol.def_line}, ctx.check_cancelled)
    except Failed:
        raise ToolError(f"The parse of {printable(shown)} failed: replace the whole symbol instead (body false)") from None
    if where is None:
        raise ToolError(f"{what[0].upper()}{what[1:]} has no body replace_symbol can find (a declaration, or a "
                        "language whose grammar names no body); replace it whole (body false)")
    lines = old.split("\n")
    after, last, closing = where["after"], where["last"], where["closing"]
    braced = closing >= 0
    if where["inline"] or (braced and (not lines[after].rstrip("\r").rstrip().endswith("{")
                                       or not lines[closing].lstrip().startswith("}"))):
        raise ToolError(f"The body of {what} shares a line with its header or its braces; replace the whole symbol "
                        "(body false)")
    inside = [row for row in range(after + 1, last + 1) if lines[row].strip()]
    indent = (_indent_of(lines[inside[0]]) if inside else
              _indent_of(lines[closing if braced else symbol.def_line - 1]) + _unit(lines))
    new = _shaped(text, indent, _line_end(old), language) if text.strip() else []
    return "\n".join(lines[:after + 1] + new + lines[last + 1:])


def insert_symbol(ctx: Context, roots: Roots, path: str, text: str, position: str, name: str | None, line: int | None,
                  dry_run: bool, allow_syntax_errors: bool, expected_sha256: str | None) -> ToolResult:
    real, shown = target(roots, path, "insert_symbol")
    named = known_language(real, shown)
    if position in ("before", "after") and not name:
        raise ToolError(f"position {position} needs the name of the symbol to insert {position}")
    where: list[str] = []

    def change(old: str, _: int) -> str:
        language = text_language(real, named, old)
        end = _line_end(old)
        if old and not old.endswith("\n"):
            old += end  # the last line gets its line end before anything goes after it
        lines = old.split("\n")
        if name is None:  # the end of the file
            at = len(lines) - (1 if lines[-1] == "" else 0)
            gap = _gap(language, 0, lines, None) if old.strip() else 0
            where.append("at the end of the file")
            return _inserted(lines, at, _shaped(text, "", end, language), gap, gap_after=0)
        symbols, symbol = _one(old, real, shown, language, name, line, ctx)
        if position == "end":
            return _at_end_of(symbol, lines, text, end, language, where)
        _refuse_shared_lines(symbols, symbol, language, shown)
        indent = _indent_of(lines[symbol.line - 1])
        gap = _gap(language, symbol.qualified_name.count("."), lines, symbol)
        where.append(f"{position} the {symbol.kind} {symbol.qualified_name}")
        if position == "before":
            return _inserted(lines, symbol.line - 1, _shaped(text, indent, end, language), 0, gap_after=gap)
        return _inserted(lines, symbol.end_line, _shaped(text, indent, end, language), gap, gap_after=0)

    shown, diff, edited = rewrite(ctx, roots, path, "insert_symbol", change, dry_run, allow_syntax_errors, expected_sha256)
    done = f"Dry run: would insert the code {where[0]} in {printable(shown)}; nothing was written" if dry_run else \
        f"Inserted the code {where[0]} in {printable(shown)}"
    return checked_result(ctx, roots, f"{printable(done)}.\n{diff}".rstrip("\n"),
                          {"path": shown, "where": where[0], "diff": diff, "dry_run": dry_run}, edited)


def _one(text: str, real: str, shown: str, language: str, name: str, line: int | None,
         ctx: Context) -> tuple[list[Symbol], Symbol]:
    """The file's outline and the one symbol `name` names in it (`line`: the one whose lines hold it, when
    several share the name); a ToolError when none or several do (listing them)."""
    try:
        symbols = fresh_outline(Source(real, shown, language, text, (real, -1, -1, -1, -1)), ctx.check_cancelled)
    except Skipped as err:
        raise ToolError(str(err)) from None
    found = matching_symbols(symbols, name)
    if not found:
        raise no_such_symbol(symbols, name, shown)
    if line is not None:
        found = [symbol for symbol in found if symbol.line <= line <= symbol.end_line]
        if not found:
            raise ToolError(f"No symbol '{printable(name)}' of {printable(shown)} holds line {line}")
        found = found[-1:]  # the innermost of those that hold it
    if len(found) > 1:
        listed = ", ".join(f"{printable(symbol.qualified_name)} ({symbol.kind}, lines {symbol.line}-{symbol.end_line})"
                           for symbol in found[:10])
        raise ToolError(f"'{printable(name)}' names {len(found)} symbols in {printable(shown)}: {listed}. Name one by "
                        "its qualified name (Class.method), or give line: a line of the one meant")
    return symbols, found[0]


def _refuse_shared_lines(symbols: list[Symbol], symbol: Symbol, language: str, shown: str) -> None:
    """Refuse when the symbol's first or last line also holds code outside it (a one-line class, `f(); g()`,
    a closing brace of the class around it): changing its lines whole would change that code too."""
    around = [other for top in symbols for other in top.walk() if other is not symbol]
    inside = {id(nested) for nested in symbol.walk()}
    for other in around:
        if id(other) in inside:
            continue
        holds = other.line <= symbol.line and symbol.end_line <= other.end_line
        if holds:  # an enclosing symbol: its header or, with braces, its closing line must be elsewhere
            if other.def_line in (symbol.line, symbol.end_line) or (
                    language != "python" and other.end_line in (symbol.line, symbol.end_line)):
                break
            continue
        if other.line <= symbol.end_line and symbol.line <= other.end_line:
            break
    else:
        return
    raise ToolError(f"Refused: lines {symbol.line}-{symbol.end_line} of {printable(shown)} hold code outside "
                    f"{printable(symbol.qualified_name)} ({printable(other.qualified_name)} shares them); the symbol "
                    "edits change whole lines, so edit_file or apply_patch changes it")


def _at_end_of(symbol: Symbol, lines: list[str], text: str, end: str, language: str, where: list[str]) -> str:
    """The code put last inside `symbol` (a class, struct, ...): after its last member, indented as its members;
    in a language of braces, before the line that closes it (which must hold nothing else)."""
    if not symbol.children and symbol.kind not in ("class", "interface", "struct", "enum", "trait", "module"):
        raise ToolError(f"{printable(symbol.qualified_name)} is a {symbol.kind}; position end puts code at the end of a "
                        "class, struct, interface, enum, trait or module")
    closing = lines[symbol.end_line - 1].strip()
    braces = language not in ("python", "ruby", "lua", "bash")
    last = symbol.children[-1] if symbol.children else None
    if symbol.def_line == symbol.end_line or (braces and (closing not in ("}", "};", "end") or (
            last is not None and last.end_line == symbol.end_line))):
        raise ToolError(f"Refused: {printable(symbol.qualified_name)} (lines {symbol.line}-{symbol.end_line}) has no line "
                        "of its own that closes it, or holds its body on its first line; insert after its last member "
                        "(position after) or edit it with edit_file")
    where.append(f"at the end of the {symbol.kind} {symbol.qualified_name}")
    if last is not None:
        indent = _indent_of(lines[last.line - 1])
        gap = _gap(language, 1, lines, last)
        if not braces or last.end_line < symbol.end_line:
            return _inserted(lines, last.end_line, _shaped(text, indent, end, language), gap, gap_after=0)
    indent = _indent_of(lines[symbol.def_line - 1]) + _unit(lines)
    if not braces:
        return _inserted(lines, symbol.end_line - (0 if language == "python" else 1),
                         _shaped(text, indent, end, language), 0, gap_after=0)
    return _inserted(lines, symbol.end_line - 1, _shaped(text, indent, end, language), 0, gap_after=0)


def _unit(lines: list[str]) -> str:
    """One level of indentation as the file writes it: a tab, or its narrowest run of leading spaces."""
    widths = set()
    for line in lines:
        if line.startswith("\t"):
            return "\t"
        if line.startswith(" ") and line.strip():
            widths.add(len(line) - len(line.lstrip(" ")))
    return " " * (min(widths) if widths else 4)


def _inserted(lines: list[str], at: int, new: list[str], gap: int, gap_after: int) -> str:
    """`new` put before line index `at`, with `gap` blank lines before it and `gap_after` after it."""
    blank = "\r" if any(line.endswith("\r") for line in lines) else ""
    return "\n".join(lines[:at] + [blank] * gap + new + [blank] * gap_after + lines[at:])


def _gap(language: str, depth: int, lines: list[str], symbol: Symbol | None) -> int:
    """How many blank lines set a symbol apart here: as many as above `symbol` (when it has any), else two at
    a Python file's top level and one elsewhere."""
    if symbol is not None:
        count = 0
        at = symbol.line - 2
        while at >= 0 and not lines[at].strip():
            count += 1
            at -= 1
        if at >= 0 and (count or symbol.kind in ("field", "property", "constant", "variable")):
            return min(count, 2)
    return 2 if language == "python" and depth == 0 else 1


def _indent_of(line: str) -> str:
    return line[:len(line) - len(line.lstrip(" \t"))]


def _line_end(text: str) -> str:
    return "\r\n" if "\r\n" in text and text.count("\r\n") == text.count("\n") else "\n"


def _shaped(text: str, indent: str, end: str, language: str) -> list[str]:
    """The lines of `text` (its trailing line end dropped) moved to `indent`: the indentation of its first line
    is replaced by `indent` on every line that starts with it; a line indented less, and in Python a line
    inside a multi-line string, is left as written. Each ends as the file's lines end
    (`\r` kept on each when the file is CRLF: joined by `\n`)."""
    lines = text.replace("\r\n", "\n").rstrip("\n").split("\n")
    first = next((line for line in lines if line.strip()), "")
    base = _indent_of(first)
    kept = _inside_strings(text) if language == "python" else set()
    cr = "\r" if end == "\r\n" else ""
    out = []
    for number, line in enumerate(lines, 1):
        if number in kept or not line.startswith(base) or indent == base:
            out.append(line + cr)  # a string's text, a line indented less (a preprocessor line, a heredoc's end)
        else:
            out.append((indent + line[len(base):] if line.strip() else "") + cr)
    return out


def _inside_strings(text: str) -> set[int]:
    """The numbers of the lines a Python multi-line string continues on (its own text: not to be re-indented);
    none when the text does not tokenize."""
    # only for a Python symbol's edit
    import io
    import tokenize

    inside: set[int] = set()
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.STRING or getattr(tokenize, "FSTRING_MIDDLE", -1) == token.type:
                inside.update(range(token.start[0] + 1, token.end[0] + 1))
    except (tokenize.TokenError, SyntaxError, ValueError):
        return set()
    return inside

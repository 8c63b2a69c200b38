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
from ..text import printable, result
from ..writes import rewrite, target
from .navigate import matching_symbols, no_such_symbol
from .source import Skipped, Source, fresh_outline, known_language
from .symbols import Symbol

if TYPE_CHECKING:
    from ...context import Context
    from ...primitives import ToolResult
    from ..roots import Roots

POSITIONS = ("before", "after", "end")


def replace_symbol(ctx: Context, roots: Roots, path: str, name: str, text: str, dry_run: bool,
                   allow_syntax_errors: bool) -> ToolResult:
    real, shown = target(roots, path, "replace_symbol")
    language = known_language(real, shown)
    replaced: list[Symbol] = []

    def change(old: str, _: int) -> str:
        symbol = _one(old, real, shown, language, name, ctx)
        replaced.append(symbol)
        lines = old.split("\n")
        indent = _indent_of(lines[symbol.line - 1])
        new = _shaped(text, indent, _line_end(old))
        return "\n".join(lines[:symbol.line - 1] + new + lines[symbol.end_line:])

    shown, diff = rewrite(ctx, roots, path, "replace_symbol", change, dry_run, allow_syntax_errors)
    symbol = replaced[0]
    what = f"{symbol.kind} {printable(symbol.qualified_name)} (lines {symbol.line}-{symbol.end_line})"
    done = f"Dry run: would replace the {what} of {printable(shown)}; nothing was written" if dry_run else \
        f"Replaced the {what} of {printable(shown)}"
    return result(f"{done}.\n{diff}".rstrip("\n"), {**symbol.item(shown), "diff": diff, "dry_run": dry_run})


def insert_symbol(ctx: Context, roots: Roots, path: str, text: str, position: str, name: str | None, dry_run: bool,
                  allow_syntax_errors: bool) -> ToolResult:
    real, shown = target(roots, path, "insert_symbol")
    language = known_language(real, shown)
    if position in ("before", "after") and not name:
        raise ToolError(f"position {position} needs the name of the symbol to insert {position}")
    where: list[str] = []

    def change(old: str, _: int) -> str:
        lines = old.split("\n")
        end = _line_end(old)
        if name is None:  # the end of the file
            at, indent, gap = len(lines) - (1 if lines[-1] == "" else 0), "", _gap(language, 0, lines, None)
            where.append("at the end of the file")
            return _inserted(lines, at, _shaped(text, indent, end), gap, gap_after=0)
        symbol = _one(old, real, shown, language, name, ctx)
        depth = symbol.qualified_name.count(".")
        if position == "end":
            return _at_end_of(symbol, lines, text, end, language, where)
        indent = _indent_of(lines[symbol.line - 1])
        gap = _gap(language, depth, lines, symbol)
        where.append(f"{position} the {symbol.kind} {symbol.qualified_name}")
        if position == "before":
            return _inserted(lines, symbol.line - 1, _shaped(text, indent, end), 0, gap_after=gap)
        return _inserted(lines, symbol.end_line, _shaped(text, indent, end), gap, gap_after=0)

    shown, diff = rewrite(ctx, roots, path, "insert_symbol", change, dry_run, allow_syntax_errors)
    done = f"Dry run: would insert the code {where[0]} in {printable(shown)}; nothing was written" if dry_run else \
        f"Inserted the code {where[0]} in {printable(shown)}"
    return result(f"{printable(done)}.\n{diff}".rstrip("\n"), {"path": shown, "where": where[0], "diff": diff,
                                                               "dry_run": dry_run})


def _one(text: str, real: str, shown: str, language: str, name: str, ctx: Context) -> Symbol:
    """The one symbol `name` names in the file; a ToolError when none or several do (listing them)."""
    try:
        symbols = fresh_outline(Source(real, shown, language, text, (real, -1, -1)), ctx.check_cancelled)
    except Skipped as err:
        raise ToolError(str(err)) from None
    found = matching_symbols(symbols, name)
    if not found:
        raise no_such_symbol(symbols, name, shown)
    if len(found) > 1:
        listed = ", ".join(f"{printable(symbol.qualified_name)} ({symbol.kind}, lines {symbol.line}-{symbol.end_line})"
                           for symbol in found[:10])
        raise ToolError(f"'{printable(name)}' names {len(found)} symbols in {printable(shown)}: {listed}. Name one by "
                        "its qualified name (Class.method)")
    return found[0]


def _at_end_of(symbol: Symbol, lines: list[str], text: str, end: str, language: str, where: list[str]) -> str:
    """The code put last inside `symbol` (a class, struct, ...): after its last member, indented as its members;
    in a language of braces, before the line that closes it."""
    if not symbol.children and symbol.kind not in ("class", "interface", "struct", "enum", "trait", "module"):
        raise ToolError(f"{printable(symbol.qualified_name)} is a {symbol.kind}; position end puts code at the end of a "
                        "class, struct, interface, enum, trait or module")
    where.append(f"at the end of the {symbol.kind} {symbol.qualified_name}")
    head = _indent_of(lines[symbol.def_line - 1])
    if symbol.children:
        last = symbol.children[-1]
        indent = _indent_of(lines[last.line - 1])
        gap = _gap(language, 1, lines, last)
        if language == "python" or last.end_line < symbol.end_line:
            at = last.end_line
            return _inserted(lines, at, _shaped(text, indent, end), gap, gap_after=0)
    unit = "\t" if head.startswith("\t") else "    "
    indent = head + unit
    if language == "python":
        return _inserted(lines, symbol.end_line, _shaped(text, indent, end), 0, gap_after=0)
    closing = symbol.end_line - 1  # the line of the closing brace
    return _inserted(lines, closing, _shaped(text, indent, end), 0, gap_after=0)


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
        if count and at >= 0:
            return min(count, 3)
    return 2 if language == "python" and depth == 0 else 1


def _indent_of(line: str) -> str:
    return line[:len(line) - len(line.lstrip(" \t"))]


def _line_end(text: str) -> str:
    return "\r\n" if "\r\n" in text and text.count("\r\n") == text.count("\n") else "\n"


def _shaped(text: str, indent: str, end: str) -> list[str]:
    """The lines of `text` (its trailing line end dropped), their common indentation replaced by `indent`,
    each ending as the file's lines end (`\\r` kept on each when the file is CRLF: joined by `\\n`)."""
    lines = text.replace("\r\n", "\n").rstrip("\n").split("\n")
    filled = [line for line in lines if line.strip()]
    common = min((len(_indent_of(line)) for line in filled), default=0)
    cr = "\r" if end == "\r\n" else ""
    return [(indent + line[common:] if line.strip() else "") + cr for line in lines]

"""outline, find_symbol and read_symbol: a file's symbols, where a name is defined, one symbol's source."""

from __future__ import annotations

import os
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

from ...primitives import ToolError
from ..text import cut_line, place, plural, printable, result
from .index import Narrow, Unavailable, definitions
from .names import MAX_GLOB_CHARS, glob_matcher, word_regex
from .source import Folder, Skipped, cached_outline, known_language, outline_of, read_source
from .symbols import Symbol, language_for, walk

if TYPE_CHECKING:
    from ...context import Context
    from ...primitives import ToolResult
    from ..roots import Roots

OUTLINE_BUDGET = 64 * 1024
"""An outline's text stops near this many characters and says it was cut."""
READ_SYMBOL_BYTES = 256 * 1024
"""read_symbol shows at most this much source (read_file's page)."""
MAX_LINE_CHARS = 2000


def _entry(symbol: Symbol, depth: int) -> str:
    """One outline line: `first-last kind signature`, the kind left out when the signature starts with
    it (`class Fraction(...)`, not `class class Fraction(...)`)."""
    header = printable(symbol.signature or symbol.name)
    kind = "" if header.startswith(symbol.kind + " ") else symbol.kind + " "
    return f"{'  ' * depth}{symbol.line}-{symbol.end_line} {kind}{header}"


def _flat(symbols: list[Symbol] | tuple[Symbol, ...], depth: int, limit: int) -> list[tuple[Symbol, int]]:
    """Each symbol with its depth, in source order, down to depth `limit` (without recursion)."""
    out: list[tuple[Symbol, int]] = []
    stack = [(symbol, depth) for symbol in reversed(symbols)]
    while stack:
        symbol, level = stack.pop()
        out.append((symbol, level))
        if level + 1 < limit:
            stack.extend((child, level + 1) for child in reversed(symbol.children))
    return out


def outline(ctx: Context, roots: Roots, path: str, depth: int | None) -> ToolResult:
    """A file's symbols, or the top-level symbols of each file under a folder within OUTLINE_BUDGET.
    Each file is parsed in a parse worker (parsers.py), with a deadline, and cancellable."""
    folder = Folder(roots, path)
    lines: list[str] = []
    items: list[dict[str, Any]] = []
    used = 0
    truncated = False
    if not folder.is_dir:
        if language_for(folder.real) is None:
            raise ToolError(f"{printable(folder.shown)}: no outline for this kind of file (by its name); "
                            "outline knows Python, JavaScript, TypeScript, Go, Rust, Java, Kotlin, C, C++, C#, Ruby, PHP, "
                            "Swift, Scala, Lua and Bash")
        symbols = cached_outline(roots, folder.real, folder.shown, ctx.check_cancelled)
        for symbol, level in _flat(symbols, 0, depth or 100):
            entry = _entry(symbol, level)
            if used + len(entry) > OUTLINE_BUDGET:
                truncated = True
                break
            used += len(entry) + 1
            lines.append(entry)
            items.append({**symbol.item(folder.shown), "depth": level})
        files = 1
        if not items:
            lines.append(f"No definitions found in {printable(folder.shown)}.")
        elif truncated:
            lines.append(f"[Outline cut after {plural(len(items), 'symbol')}; pass a smaller depth, or read_symbol "
                         "a part.]")
    else:
        names = folder.files(ctx)
        files = 0
        outline = partial(cached_outline, roots, check=ctx.check_cancelled)
        for shown, symbols in folder.parsed(ctx, names, "file", outline, doing="outlining"):
            block = [printable(shown)] + [_entry(symbol, level + 1) for symbol, level in _flat(symbols, 0, depth or 1)]
            size = sum(len(line) + 1 for line in block)
            if used + size > OUTLINE_BUDGET:
                truncated = True
                lines.append(f"[Outline cut after {plural(files, 'file')} of {len(names)}; pass a deeper path.]")
                break
            used += size
            files += 1
            lines.extend(block)
            items.extend({**symbol.item(shown), "depth": level} for symbol, level in _flat(symbols, 0, depth or 1))
        if not names:
            lines.append(f"No source files the outline knows under {place(folder.shown)}.")
        lines += folder.skipped_note()
    data = {"path": folder.shown, "symbols": items, "files": files, "truncated": truncated, "skipped": folder.skipped,
            "skipped_files": folder.skipped_files}
    return result("\n".join(lines), data)


# -- find_symbol -----------------------------------------------------------------------------------------
_WILDCARDS = "*?["


def _matcher(name: str) -> tuple[str, Callable[[Symbol], bool]]:
    """The word rg looks for and a test of a symbol: exact name, qualified name (`A.b`; C++'s `A::b` is the
    same, qualified names always join with `.`), or a glob. A qualified name matches at the end of the
    symbol's qualified name (`Circle.area` finds `geo.Circle.area`). The rg word is the last part with a
    character that is not a wildcard (`Thread.*` looks in the files that mention Thread); "" when every
    part is wildcards only. ToolError for a name too long or a bad glob."""
    name = name.replace("::", ".")
    if len(name) > MAX_GLOB_CHARS:
        raise ToolError(f"name is too long ({len(name)} characters; at most {MAX_GLOB_CHARS})")
    parts = name.split(".")
    word = next((part for part in reversed(parts) if part.strip(_WILDCARDS)), "")
    if "[" in word:  # rg looks for a wider word: what comes before the character class, then anything
        word = word[:word.index("[")] + "*" if word.index("[") else ""
    qualified = len(parts) > 1
    if any(c in name for c in _WILDCARDS):
        matches = glob_matcher(name)
        if qualified:
            return word, lambda symbol: matches(symbol.qualified_name)
        return word, lambda symbol: "." not in symbol.name and matches(symbol.name)
    if qualified:
        return word, lambda symbol: symbol.qualified_name == name or symbol.qualified_name.endswith("." + name)
    return word, lambda symbol: symbol.name == name


def _narrow(name: str) -> Narrow:
    """What the index narrows a query by (index.Narrow): the last part of a plain or qualified name; for a glob its
    literal start and its longest literal part (none for a glob with a class: a class may hold anything)."""
    name = name.replace("::", ".")
    qualified = "." in name
    if not any(c in name for c in _WILDCARDS):
        return Narrow(last=name.split(".")[-1])
    if "[" in name:
        return Narrow()
    parts = [part for chunk in name.replace("?", "*").split("*") for part in ([chunk] if qualified else chunk.split("."))]
    start = name[:min(name.find(c) for c in "*?" if c in name)]
    return Narrow(start=start, part=max(parts, key=len), qualified=qualified)


def find_symbol(ctx: Context, roots: Roots, name: str, kind: str | None, path: str, limit: int, *,
                prefilter: bool = True, index: bool = True) -> ToolResult:
    """Definitions of `name`: from the code index of the folder's root where it is ready (code/index.py,
    made fresh first), otherwise in the files that mention it; with `prefilter` (always, but for the tests and
    the bench that prove it changes nothing) only those with a line shaped like a definition are parsed."""
    if not name.strip() or "\n" in name or "\x00" in name:
        raise ToolError("name must be an identifier, a qualified name such as Class.method, or a glob such as get_*")
    word, test = _matcher(name.strip())
    if not word:
        raise ToolError("name needs at least one character that is not a wildcard (in its last part, or in an "
                        "earlier part as in Class.*)")
    folder = Folder(roots, path)
    if not folder.is_dir:
        known_language(folder.real, folder.shown)  # a file of another language cannot define it: say so
    regex = word_regex(word)
    outlined = partial(cached_outline, roots, check=ctx.check_cancelled)
    try:
        if not index:
            raise Unavailable("")
        indexed, skipped = definitions(ctx, roots, folder, _narrow(name.strip()), test, kind)
    except Unavailable as why:
        found, truncated, names = _scanned(ctx, folder, regex, word, test, kind, limit, outlined, prefilter)
        state, index_note = ("building" if why.building else "off"), str(why)
    else:
        wanted = [(folder.file(relative)[1], seq, symbol) for relative, seq, symbol in indexed]
        if len(wanted) > limit:  # the scan stops in the file of the first definition past the limit
            skipped = [relative for relative in skipped if folder.file(relative)[1] < wanted[limit][0]]
        # what the index could not read, as the scan reads it
        names = (folder.definition_candidates(ctx, regex, word, among=skipped) if prefilter
                 else folder.candidates(ctx, regex, among=skipped)) if skipped else []
        for shown, symbols in folder.parsed(ctx, names, "candidate file", outlined, code_only=True):
            wanted += [(shown, seq, symbol) for seq, symbol in enumerate(walk(symbols))
                       if test(symbol) and (kind is None or symbol.kind == kind)]
        wanted.sort(key=lambda item: (item[0], item[1]))
        truncated = len(wanted) > limit
        found = [symbol.item(shown) for shown, _, symbol in wanted[:limit]]
        state, index_note = "fresh", ""
    ctx.report_progress(1, 1, f"done: {plural(len(found), 'definition')}")
    lines = [f"{printable(item['path'])}:{item['line']}-{item['end_line']} {item['kind']} {printable(item['qualified_name'])}: "
             f"{printable(item['signature'])}" for item in found]
    what = f"'{printable(name)}'" + (f" of kind {kind}" if kind else "")
    if not found:
        where = "the code index" if state == "fresh" else plural(len(names), "file") + " could define it"
        lines.append(f"No definition of {what} in {place(folder.shown)} ({where}).")
    elif truncated:
        lines.append(f"[Showing the first {plural(len(found), 'definition')}; there are more. Narrow with path or kind, "
                     "or raise limit.]")
    lines += folder.skipped_note()
    if index_note:
        lines.append(f"[{printable(index_note)}.]")
    return result("\n".join(lines), {"name": name, "symbols": found, "truncated": truncated, "skipped": folder.skipped,
            "skipped_files": folder.skipped_files, "index": state})


def _scanned(ctx: Context, folder: Folder, regex: str, word: str, test: Callable[[Symbol], bool], kind: str | None,
             limit: int, outlined: Callable[[str, str], list[Symbol]],
             prefilter: bool) -> tuple[list[dict[str, Any]], bool, list[str]]:
    """find_symbol without the index: the definitions in the files that may define the name, the first
    `limit` of them, whether there are more, and the files looked at."""
    names = folder.definition_candidates(ctx, regex, word) if prefilter else folder.candidates(ctx, regex)
    found: list[dict[str, Any]] = []
    for shown, symbols in folder.parsed(ctx, names, "candidate file", outlined, code_only=True):
        for symbol in walk(symbols):
            if test(symbol) and (kind is None or symbol.kind == kind):
                if len(found) >= limit:
                    return found, True, names
                found.append(symbol.item(shown))
    return found, False, names


# -- read_symbol ----------------------------------------------------------------------------------------
def matching_symbols(symbols: list[Symbol], name: str) -> list[Symbol]:
    """The symbols of an outline that `name` names (a name, a qualified name, a glob), in source order."""
    _, test = _matcher(name.strip())
    return [symbol for top in symbols for symbol in top.walk() if test(symbol)]


def no_such_symbol(symbols: list[Symbol], name: str, shown: str) -> ToolError:
    """The error for a name no symbol of the file has, with the names most like it."""
    near = sorted({symbol.qualified_name for top in symbols for symbol in top.walk()
                   if name.rsplit(".", 1)[-1].lower() in symbol.name.lower()})[:10]
    hint = f" Similar: {', '.join(near)}." if near else " outline lists the file's symbols."
    return ToolError(f"No symbol '{printable(name)}' in {printable(shown)}.{hint}")


def read_symbol(ctx: Context, roots: Roots, path: str, name: str) -> ToolResult:
    real = roots.resolve(path)
    shown = roots.display(real)
    if os.path.isdir(real):
        raise ToolError(f"{printable(shown)} is a folder; read_symbol reads one symbol of a file (find_symbol finds it)")
    try:
        source = read_source(roots, real, shown)
    except Skipped as err:
        raise ToolError(str(err)) from None
    symbols = outline_of(source, ctx.check_cancelled)
    matches = matching_symbols(symbols, name)
    if not matches:
        raise no_such_symbol(symbols, name, shown)
    symbol = matches[0]
    text_lines = source.text.split("\n")
    body = text_lines[symbol.line - 1:symbol.end_line]
    width = max(6, len(str(symbol.end_line)))
    out: list[str] = []
    used = 0
    end = symbol.line - 1
    for number, line in enumerate(body, symbol.line):
        line = line.rstrip("\r")
        if len(line) > MAX_LINE_CHARS:
            line = cut_line(line, MAX_LINE_CHARS)
        if out and used + len(line) > READ_SYMBOL_BYTES:
            break
        used += len(line) + 1
        out.append(line)
        end = number
    truncated = end < symbol.end_line
    numbered = [f"{number:>{width}}\t{line}" for number, line in enumerate(out, symbol.line)]
    notes = [f"[{symbol.kind} {printable(symbol.qualified_name)}, lines {symbol.line}-{symbol.end_line} of {printable(shown)}]"]
    if truncated:
        notes.append(f"[Cut at line {end}; read_file with offset={end + 1} reads on.]")
    others = [other.item(shown) for other in matches[1:]]
    if others:
        notes.append(f"[{plural(len(others), 'other symbol')} match: " + ", ".join(
            f"{printable(other['qualified_name'])} ({other['line']}-{other['end_line']})" for other in others[:10]) + "]")
    data = {**symbol.item(shown), "text": "\n".join(out), "truncated": truncated, "others": others}
    return result("\n".join(numbered + notes), data)

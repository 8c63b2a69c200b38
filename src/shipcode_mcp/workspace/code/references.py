"""find_references: where an identifier is used, from the syntax tree, so not in comments or strings.

ripgrep names the files where the word occurs; each is parsed and only identifier nodes whose text
is the name count (one native search a file). A Python file is scanned instead (pyscan.py: its
comments and strings found by one regex, some 5x cheaper than the parse), unless the scan says only
the tree can tell. A use on a definition's own line, first on that line,
is the definition itself and is marked so. The uses found in a file are kept in the outline cache
under the file's (path, size, mtime) and the name: asked again, a file that has not changed is not
read nor parsed, and the call costs the rg and a look-up.

Parsing the candidates on two threads was measured and does not help: ast-grep-py holds the GIL while
it parses (48 files: 754 ms on one thread, 719 ms on two; a Python loop beside a parse ran at a
fifth of its speed), so they are parsed one after the other.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ...primitives import ToolError
from .. import safe_open
from ..text import cut_line, place, plural, printable, result
from .names import word_regex
from .parsers import POOL, Failed, symbols_from
from .prefilter import defining_lines
from .pyscan import python_uses
from .source import (
    CACHE,
    Folder,
    Reference,
    Source,
    check_parsable,
    known_language,
    outline_of,
    parse_failed,
    source_from,
)
from .symbols import Symbol

if TYPE_CHECKING:
    from ...context import Context
    from ...primitives import ToolResult
    from ..roots import Roots

MAX_LINE_CHARS = 2000
"""A longer line is shown as a window of this many characters around the use."""
_IDENTIFIER = re.compile(r"[A-Za-z_$][\w$]*")
def _parsed_positions(source: Source, name: str, check: Callable[[], None] | None,
                      ) -> tuple[list[tuple[int, int]], list[Symbol] | None]:
    """(line, column), 0-based, of the identifier nodes whose text is `name`, found in a parse worker, and
    the file's outline made from the same parse when it is not cached and the language has no line shapes
    that tell definitions (then the outline always does: _uses); None when not made or no use was found."""
    check_parsable(source)
    outlined = defining_lines(source.language, "") is None and CACHE.get(source.key) is None
    try:
        answer = POOL.ask({"op": "positions", "text": source.text, "language": source.language, "name": name,
                           "outline": outlined}, check)
    except Failed as err:
        raise parse_failed(source, err) from None
    symbols = symbols_from(answer["outline"]) if answer["outline"] is not None else None
    if symbols is not None:
        CACHE.put(source.key, symbols)
    return [(line, column) for line, column in answer["positions"]], symbols


def _scanned_positions(text: str, offsets: list[int]) -> list[tuple[int, int]]:
    """(line, column), 0-based, of offsets in `text` (in order)."""
    out = []
    line = 0
    line_start = 0
    last = 0
    for offset in offsets:
        newlines = text.count("\n", last, offset)
        if newlines:
            line += newlines
            line_start = text.rfind("\n", last, offset) + 1
        last = offset
        out.append((line, offset - line_start))
    return out


def _uses(source: Source, name: str, positions: list[tuple[int, int]], symbols: list[Symbol] | None,
          check: Callable[[], None] | None) -> tuple[Reference, ...]:
    """The uses at `positions`, in source order, each marked when it is a definition: from the line
    where that is certain (prefilter.defining_lines), else from the outline (`symbols` when the worker
    made it with the positions), and only where a use is on a line that may define the name. Each line is looked at once,
    however many uses it holds (a long line must not cost its length once a use)."""
    if not positions:
        return ()
    lines = source.text.split("\n")
    numbers = dict.fromkeys(line for line, _ in positions)
    shapes = defining_lines(source.language, rf"\b{re.escape(name)}\b")
    definitions: set[int] = set()
    if shapes is None:
        outlined = True
    else:
        defines, may_define = shapes
        definitions = {line + 1 for line in numbers if defines.search(lines[line])}
        outlined = any(may_define.search(lines[line]) for line in numbers)
    if outlined:
        outline = symbols if symbols is not None else outline_of(source, check)
        definitions |= {symbol.def_line for top in outline for symbol in top.walk() if symbol.name == name}
    marked: set[int] = set()
    out: list[Reference] = []
    shown: dict[int, tuple[str, int]] = {}
    for line, column in positions:
        number = line + 1
        definition = number in definitions and number not in marked
        if definition:
            marked.add(number)
        held = shown.get(line)
        if held is None:
            text = lines[line].rstrip("\r")
            stripped = text.lstrip()
            held = shown[line] = (stripped.rstrip(), len(text) - len(stripped))
        text, indent = held
        out.append((number, column + 1, cut_line(text, MAX_LINE_CHARS, max(0, column - indent)), definition))
    return tuple(out)


def file_references(roots: Roots, real: str, shown: str, name: str, scan: bool = True, bound: int | None = None,
                    check: Callable[[], None] | None = None) -> tuple[tuple[Reference, ...], bool]:
    """The uses of `name` in one file, at most `bound` of them, and whether that is all of them: from the
    cache when the file has not changed since they were all found (the file is still opened through
    safe_open, so confinement is checked every time); else, in Python, from pyscan's scan when it can
    tell (`scan`), or from the tree. Only a complete list is cached; `check` is called now and then."""
    language = known_language(real, shown)
    fd, info = safe_open.open_file(roots, real, shown)
    try:
        found = CACHE.references((real, info.st_size, info.st_mtime_ns), name) if scan else None
        if found is not None:
            return (found if bound is None else found[:bound]), bound is None or len(found) <= bound
        source = source_from(fd, info, real, shown, language)
    finally:
        os.close(fd)
    offsets = python_uses(source.text, name, None if bound is None else bound + 1, check) \
        if scan and source.language == "python" else None
    if offsets is not None:
        complete = bound is None or len(offsets) <= bound
        found = _uses(source, name, _scanned_positions(source.text, offsets[:bound]), None, check)
    else:
        positions, symbols = _parsed_positions(source, name, check)
        complete = bound is None or len(positions) <= bound
        found = _uses(source, name, positions[:bound], symbols, check)
    if scan and complete:
        CACHE.put_references(source.key, name, found)
    return found, complete


def find_references(ctx: Context, roots: Roots, name: str, path: str, limit: int, *, scan: bool = True) -> ToolResult:
    """Uses of `name` in the files that mention it; `scan` off (for the tests and the bench that compare
    the two) parses every file and leaves the cache alone."""
    name = name.strip()
    if not _IDENTIFIER.fullmatch(name):
        raise ToolError(f"name must be one identifier (such as parse_args), not '{printable(name)}'")
    folder = Folder(roots, path)
    if not folder.is_dir:
        known_language(folder.real, folder.shown)  # a file of another language has no uses in code: say so
    names = folder.candidates(ctx, word_regex(name))
    found: list[dict[str, Any]] = []
    files: set[str] = set()
    truncated = False

    def uses_in(real: str, shown: str) -> tuple[Reference, ...]:
        return file_references(roots, real, shown, name, scan, limit - len(found) + 1, ctx.check_cancelled)[0]

    for shown, uses in folder.parsed(ctx, names, "candidate file", uses_in, code_only=True):
        for number, column, text, definition in uses:
            if len(found) >= limit:
                truncated = True
                break
            found.append({"path": shown, "line": number, "column": column, "text": text, "definition": definition})
            files.add(shown)
        if truncated:
            break
    ctx.report_progress(len(names), len(names), f"done: {plural(len(found), 'reference')}")
    out = [f"{printable(item['path'])}:{item['line']}:{item['column']}:{' [definition]' if item['definition'] else ''} "
           f"{printable(item['text'])}" for item in found]
    if not found:
        out.append(f"No uses of '{printable(name)}' in code under {place(folder.shown)} "
                   f"({plural(len(names), 'file')} {'mentions' if len(names) == 1 else 'mention'} the word in text, "
                   "comments or strings only).")
    elif truncated:
        out.append(f"[Showing the first {plural(len(found), 'reference')}; there are more. Narrow with path, or raise limit.]")
    else:
        out.append(f"[{plural(len(found), 'reference')} in {plural(len(files), 'file')}.]")
    out += folder.skipped_note()
    return result("\n".join(out), {"name": name, "references": found, "file_count": len(files), "truncated": truncated,
                                    "skipped": folder.skipped, "skipped_files": folder.skipped_files})

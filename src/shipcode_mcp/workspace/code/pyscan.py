"""Where a name is used in Python source, from one regex scan of its comments and strings, not a parse.

A Python parse costs some 5 ms a file and find_references parses every file rg names; telling a
name in code from one in a comment or a string needs only a lexer, which one compiled regex does
(comments, strings with their prefixes and triple quotes, and the name, leftmost first). Where the
scan could disagree with the tree it answers None and the caller parses: a name that is a keyword
in some Python (`print`, `match`, `type`...), a match inside an f-string (an expression there is
code) or inside a string that does not end, a line with Python 2's backquotes. Code that does not
parse otherwise may still be read differently by the scan and by the tree's error recovery.
bench/code_intel.py's 'scan' phase and the tests compare both on every use.
"""

from __future__ import annotations

import keyword
import re
from collections.abc import Callable

_SPANS = re.compile(
    # comments and strings, found from their first character (`#` or a quote: re skips to those fast);
    # a prefix (r, b, f...) does not change where a string ends (`\\'` does not end even a raw one);
    # a group `eN` holds the closing quotes of a string that ends
    r"#[^\n]*"
    r"|'''[^'\\]*(?:(?:\\.|'(?!''))[^'\\]*)*(?:(?P<e1>''')|\Z)"
    r'|"""[^"\\]*(?:(?:\\.|"(?!""))[^"\\]*)*(?:(?P<e2>""")|\Z)'
    r"|'[^'\\\n]*(?:\\.[^'\\\n]*)*(?:(?P<e3>')|$)"
    r'|"[^"\\\n]*(?:\\.[^"\\\n]*)*(?:(?P<e4>")|$)',
    re.DOTALL | re.MULTILINE)
_PARSE_ONLY = frozenset({*keyword.kwlist, *keyword.softkwlist, "print", "exec"})
"""Names the tree may hold as keywords (Python 2's print and exec statements, soft keywords)."""


def _continues(char: str) -> bool:
    """Whether `char` may be part of an identifier (Unicode's XID_Continue, as the grammar has it)."""
    return char.isalnum() or char == "_" or ("a" + char).isidentifier()


def python_uses(text: str, name: str, bound: int | None = None,
                check: Callable[[], None] | None = None) -> list[int] | None:
    """The offsets in `text` where `name` is used in code, in order, at most `bound` of them; None when only
    a parse can tell. Linear in the text (a long line is looked at once, not once a hit); `check` is
    called now and then (cancellation)."""
    if name in _PARSE_ONLY:
        return None
    size = len(name)
    length = len(text)
    out: list[int] = []
    spans = _SPANS.finditer(text)
    span = None
    span_end = -1
    line_start = 0
    line_end = -1  # where the line of the last hit ends (its `\n`, or the text's end)
    last = 0
    seen = 0
    start = text.find(name)
    while start >= 0:
        end = start + size
        if (start and _continues(text[start - 1])) or (end < length and _continues(text[end])):
            start = text.find(name, end)
            continue
        seen += 1
        if check is not None and not seen % 1024:
            check()
        hit = start
        start = text.find(name, end)
        while span_end <= hit:
            span = next(spans, None)
            if span is None:
                span_end = length + 1
                break
            span_end = span.end()
        if span is None or hit < span.start():
            if hit > line_end:  # a new line: find its ends once, and look for backquotes once
                newline = text.rfind("\n", last, hit)
                if newline >= 0:
                    line_start = newline + 1
                line_end = text.find("\n", hit)
                if line_end < 0:
                    line_end = length
                if "`" in text[line_start:line_end]:
                    return None  # Python 2's `repr`: the tree has no rule for it
            last = hit
            out.append(hit)
            if bound is not None and len(out) >= bound:
                break
        elif text[span.start()] != "#":
            prefix = text[max(0, span.start() - 2):span.start()]
            if "f" in prefix or "F" in prefix:
                return None  # perhaps in an f-string's {expression}: the tree says
            if span.lastgroup is None:
                return None  # a string that does not end: code that does not parse, where the tree recovers its way
    return out

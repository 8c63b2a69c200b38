"""Keeping tool output readable and bounded: binary sniffing, cutting long lines and long outputs.

A model reads every character a tool returns, so each result has a budget and says when it was cut.
"""

from __future__ import annotations

from ..primitives import ToolResult, text_content

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

SNIFF_BYTES = 8000
"""A NUL byte in this many leading bytes makes a file binary (git's rule, and ripgrep's)."""


def is_binary(sample: bytes) -> bool:
    return b"\x00" in sample[:SNIFF_BYTES]


def split_lines(text: str) -> list[str]:
    """Lines with their line ends; only '\\n' ends a line (str.splitlines also breaks at '\\r', '\\f' and
    more, which neither git nor a diff does)."""
    lines = [line + "\n" for line in text.split("\n")]
    lines[-1] = lines[-1][:-1]
    return lines if lines[-1] else lines[:-1]


def cut_line(line: str, limit: int, focus: int = 0, size: str | None = None) -> str:
    """`line` if it has at most `limit` characters, else a `limit`-character window around `focus`;
    `size` says how long the line was when `line` is only its head."""
    if len(line) <= limit and size is None:
        return line
    start = max(0, min(focus - limit // 4, len(line) - limit))
    head = "…" if start else ""
    tail = "…" if start + limit < len(line) else ""
    if size is not None:
        return f"{head}{line[start:start + limit]}… [line cut: {size}]"
    return f"{head}{line[start:start + limit]}{tail} [line cut: {len(line)} characters]"


def cut_text(text: str, limit: int, lines: int | None = None) -> str:
    """`text` if it has at most `limit` characters (and at most `lines` lines), else its head, ended at its
    last line break within the limit when that keeps at least half of it (mid-line otherwise), and a marker
    that says how many characters and lines were left out: a cut is never mistaken for the whole."""
    end = -1
    if lines is not None:
        for _ in range(lines):
            end = text.find("\n", end + 1)
            if end < 0:
                break
    if not 0 <= end <= limit:
        if len(text) <= limit:
            return text
        end = text.rfind("\n", 0, limit + 1)
        if end < limit // 2:
            end = limit
    rest = text[end:].removeprefix("\n")
    count = rest.count("\n") + 1 if rest else 0
    return f"{text[:end]}… [cut: {len(rest)} more characters in {plural(count, 'more line')}]"


def cut_output(data: bytes, truncated: bool) -> str:
    """Decode command output; when it was cut, drop the partial last line so no line is half shown."""
    if truncated:
        end = data.rfind(b"\n")
        if end >= 0:
            data = data[: end + 1]
    return data.decode("utf-8", "replace")


def size_text(size: int) -> str:
    """1536 -> '1.5 KiB': sizes for people and models."""
    if size < 1024:
        return f"{size} bytes"
    value = size / 1024
    for unit in ("KiB", "MiB"):
        if value < 1024:
            return f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GiB"


def _escape(code: int) -> str:
    named = {9: "\\t", 10: "\\n", 13: "\\r"}
    return named.get(code) or (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")


MASKED = frozenset([
    *range(0x20), *range(0x7F, 0xA0),  # C0 controls, DEL, C1 controls (NEL is a line break to some readers)
    0x2028, 0x2029,  # the Unicode line and paragraph separators
    0x200E, 0x200F, 0x061C,  # bidi marks (LRM, RLM, ALM)
    *range(0x202A, 0x202F), *range(0x2066, 0x206A),  # bidi embeddings, overrides and isolates
])
"""The code points `printable` shows escaped: whatever can break a line or reorder what a reader sees."""

_ESCAPES = {code: _escape(code) for code in MASKED}


def printable(text: str) -> str:
    """`text` with control characters and bidi controls escaped, for the text a model reads.

    One rule everywhere (file names, paths, refs, error messages, diff headers): a file named
    'a<LF>b.txt' must not forge a second line of a listing, and a U+202E in a name must not reverse
    what follows it on screen. Each masked code point becomes a readable escape: \\t, \\n and \\r by
    name, the other C0 and C1 controls and DEL as \\xHH, the line separators and bidi controls as
    \\uHHHH. A backslash already in the text is left as it is, on purpose, so that printable(printable(x)) ==
    printable(x) (a message built from text masked earlier is unchanged) and regex patterns and commit
    subjects stay readable. The price: a name that really holds a backslash and an 'n' reads like one
    holding a line break; the exact name is always in structuredContent. Other invisible characters
    (joiners inside emoji, non-breaking spaces) are kept: they neither break nor reorder a line.
    """
    return text if text.isprintable() else text.translate(_ESCAPES)  # the test alone is 20x cheaper


def place(shown: str) -> str:
    """A display path as a place in a sentence ('.' reads badly before a full stop), made printable."""
    return "the workspace root" if shown == "." else printable(shown)


def plural(count: int, word: str) -> str:
    """'1 file', '2 files', '2 matches'."""
    if count == 1:
        return f"{count} {word}"
    return f"{count} {word}es" if word.endswith(("s", "sh", "ch", "x")) else f"{count} {word}s"


def result(text: str, data: dict[str, Any]) -> ToolResult:
    """What a tool returns: the text a model reads, and the same facts as structuredContent."""
    return ToolResult([text_content(text)], data)

"""Shared text helpers of the workspace tools: the one masking rule."""

from __future__ import annotations

import time

from hypothesis import given
from hypothesis import strategies as st

from shipcode_mcp.workspace.text import printable

_BIDI = "\u200e\u200f\u061c\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"


def _expected(char: str) -> str:
    """The rule, written out independently of the implementation."""
    code = ord(char)
    if char == "\t":
        return "\\t"
    if char == "\n":
        return "\\n"
    if char == "\r":
        return "\\r"
    if code < 0x20 or 0x7F <= code < 0xA0:
        return f"\\x{code:02x}"
    if char in "\u2028\u2029" or char in _BIDI:
        return f"\\u{code:04x}"
    return char


# Text that is mostly the interesting code points, so every run meets them.
_TEXTS = st.text(st.one_of(st.characters(), st.sampled_from([*_BIDI, "\u2028", "\u2029", "\x85", "\x7f", "\\", "\n"])))


@given(_TEXTS)
def test_printable_escapes_exactly_the_control_and_bidi_characters(text: str) -> None:
    assert printable(text) == "".join(_expected(char) for char in text)


@given(_TEXTS)
def test_printable_text_is_one_line_without_bidi_controls_and_masking_twice_changes_nothing(text: str) -> None:
    masked = printable(text)
    assert len(masked.splitlines()) <= 1  # splitlines breaks on \x1c-\x1e, \x85, \u2028 too
    assert not any(char in masked for char in _BIDI)
    assert printable(masked) == masked


def test_examples() -> None:
    assert printable("new\nline.txt") == "new\\nline.txt"
    assert printable("\x1b[31mred\x1b[0m\tx\r") == "\\x1b[31mred\\x1b[0m\\tx\\r"
    assert printable("invoice\u202egpj.exe") == "invoice\\u202egpj.exe"
    assert printable("nel\x85 del\x7f \u2028 \u2066x\u2069") == "nel\\x85 del\\x7f \\u2028 \\u2066x\\u2069"
    kept = "caf\u00e9 \u00a0nbsp \U0001F468\u200d\U0001F469 \\n back\\slash \u05d0\u05d1"  # letters, joiners, RTL script
    assert printable(kept) == kept


def test_printable_is_fast_on_ordinary_names() -> None:
    """A 20,000-name listing goes through it: ordinary names take the isprintable() shortcut."""
    names = [f"src/package_{i % 50}/module_{i}.py" for i in range(20_000)]
    timings = []
    for _ in range(5):
        start = time.perf_counter()
        masked = [printable(name) for name in names]
        timings.append(time.perf_counter() - start)
    assert masked == names
    assert min(timings) < 0.05  # the best pass: load slows some passes, it does not change what printable costs

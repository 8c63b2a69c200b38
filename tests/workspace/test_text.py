"""Shared text helpers of the workspace tools: the one masking rule."""

from __future__ import annotations

import time

from hypothesis import given
from hypothesis import strategies as st

from shipcode_mcp.workspace.text import cut_text, printable

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


def test_cut_text_ends_at_a_line_break_in_the_second_half_and_counts_what_it_left_out() -> None:
    text = "\n".join(f"line {index:02}" for index in range(10))  # 10 lines of 7 characters
    assert cut_text(text, len(text)) == text
    assert cut_text(text, 20) == "line 00\nline 01… [cut: 63 more characters in 8 more lines]"
    one_line = "x" * 50 + "\n" + "y" * 100
    assert cut_text(one_line, 120) == "x" * 50 + "\n" + "y" * 69 + "… [cut: 31 more characters in 1 more line]"


@given(st.text(alphabet="ab\n", max_size=60), st.integers(min_value=1, max_value=40))
def test_cut_text_is_a_head_of_the_text_and_says_exactly_how_much_follows(text: str, limit: int) -> None:
    cut = cut_text(text, limit)
    if len(text) <= limit:
        assert cut == text
        return
    head, marker = cut.split("… [cut: ")
    rest = text[len(head):].removeprefix("\n")
    assert text.startswith(head) and len(head) <= limit
    lines = rest.count("\n") + 1 if rest else 0
    assert marker == f"{len(rest)} more characters in {lines} more line{'s' if lines != 1 else ''}]"


@given(st.text(alphabet="ab\n", max_size=60), st.integers(min_value=1, max_value=40), st.integers(min_value=1, max_value=6))
def test_cut_text_to_lines_keeps_at_most_that_many_and_says_exactly_how_much_follows(text: str, limit: int,
                                                                                   lines: int) -> None:
    cut = cut_text(text, limit, lines)
    if len(text) <= limit and text.count("\n") < lines:
        assert cut == text
        return
    head, marker = cut.split("… [cut: ")
    rest = text[len(head):].removeprefix("\n")
    assert text.startswith(head) and len(head) <= limit and head.count("\n") < lines
    if text.count("\n") >= lines and len("\n".join(text.split("\n")[:lines])) <= limit:
        assert head == "\n".join(text.split("\n")[:lines])  # the first `lines` lines, whole
    count = rest.count("\n") + 1 if rest else 0
    assert marker == f"{len(rest)} more characters in {count} more line{'s' if count != 1 else ''}]"

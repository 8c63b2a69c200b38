"""Shared text helpers of the workspace tools."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from shipcode_mcp.workspace.text import printable


@given(st.text())
def test_printable_masks_exactly_the_control_characters(text: str) -> None:
    masked = printable(text)
    assert len(masked) == len(text)
    for before, after in zip(text, masked, strict=True):
        control = ord(before) < 32 or 127 <= ord(before) < 160 or before in "\u2028\u2029"
        assert after == ("?" if control else before)

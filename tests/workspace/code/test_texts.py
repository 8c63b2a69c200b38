"""The code tools' texts read as English: no kind said twice, a verb that agrees with its count."""

from __future__ import annotations

from pathlib import Path

import pytest

from workspace_support import Tools

pytest.importorskip("ast_grep_py")


def test_outline_does_not_repeat_a_kind_its_signature_starts_with_and_references_agree(tmp_path: Path) -> None:
    (tmp_path / "shapes.py").write_text("class Fraction:\n    def half(self):\n        return 'Fraction'\n")
    with Tools(tmp_path) as tools:
        assert tools.text("outline", {"path": "shapes.py"}).split("\n") == [
            "1-3 class Fraction", "  2-3 method def half(self)"]
        (tmp_path / "notes.py").write_text("# fraction_word only in a comment\n")
        text = tools.text("find_references", {"name": "fraction_word"})
        assert "(1 file mentions the word in text, comments or strings only)." in text

"""Python outlines against the standard library's `ast` on CPython's own library: precision and recall of
every def, async def and class (name, qualified name, line range) are at least 99.5 %.

The library is the running interpreter's (so each Python the suite runs on checks its own library, which
its own `ast` parses); the test scores one file in SAMPLE_EVERY, by path order, to keep its time small.
bench/code_accuracy.py scores the whole library with the same code and prints the differences;
bench/code_intel.py reports its figures with the others.
"""

from __future__ import annotations

from types import ModuleType

import pytest

from support import REPO, load_script

SAMPLE_EVERY = 16  # 112 files of CPython 3.11's 1 790 (tests and all), about 10 000 lines: 2 to 3 seconds
TARGET = 0.995


@pytest.fixture(scope="module")
def accuracy() -> ModuleType:
    return load_script(REPO / "bench" / "code_accuracy.py", "bench_code_accuracy")


def test_outlines_find_the_defs_and_classes_ast_finds(accuracy: ModuleType) -> None:
    root = accuracy.stdlib()
    files = accuracy.sample(accuracy.library_files(root), SAMPLE_EVERY)
    assert len(files) > 80, f"{root} holds too few .py files to measure anything"
    result = accuracy.score(files, root)
    assert result.files > 80 and result.expected > 2_000, accuracy.summary(result)
    differences = "\n".join(list(accuracy.near_misses(result))[:30])
    assert result.precision >= TARGET, f"{accuracy.summary(result)}\n{differences}"
    assert result.recall >= TARGET, f"{accuracy.summary(result)}\n{differences}"


def test_the_reference_is_ast_with_decorators_and_nesting(accuracy: ModuleType) -> None:
    """What the comparison counts as a definition, on a file whose answer is written out by hand."""
    text = (
        "import functools\n"                      # 1
        "\n"                                      # 2
        "@functools.cache\n"                      # 3
        "@staticmethod\n"                         # 4
        "def top(x):\n"                           # 5
        "    def inner():\n"                      # 6
        "        return x\n"                      # 7
        "    return inner\n"                      # 8
        "\n"                                      # 9
        "class Box:\n"                            # 10
        "    size = 3\n"                          # 11
        "    async def get(self):\n"              # 12
        "        class Local: pass\n"             # 13
        "        return Local\n"                  # 14
        "if True:\n"                              # 15
        "    def guarded(): pass\n"               # 16
    )
    definition = accuracy.Definition
    assert accuracy.ast_definitions(text) == [
        definition("top", "top", 3, 8), definition("top.inner", "inner", 6, 7), definition("Box", "Box", 10, 14),
        definition("Box.get", "get", 12, 14), definition("Box.get.Local", "Local", 13, 13),
        definition("guarded", "guarded", 16, 16),
    ]


def test_a_wrong_outline_scores_below_the_target(accuracy: ModuleType) -> None:
    """The score sees a shifted range, a wrong qualified name, a missing and an extra definition."""
    definition = accuracy.Definition
    expected = [definition("A", "A", 1, 9), definition("A.f", "f", 2, 4), definition("g", "g", 11, 12)]
    score = accuracy.Score()
    score.add("x.py", expected, [definition("A", "A", 1, 9), definition("A.f", "f", 2, 5), definition("h", "h", 14, 15)])
    assert (score.expected, score.found, score.matched) == (3, 3, 1)
    assert score.precision == score.recall == pytest.approx(1 / 3)
    lines = list(accuracy.near_misses(score))
    assert "x.py: ast Definition(qualified_name='A.f', name='f', line=2, end_line=4) / outline " \
           "Definition(qualified_name='A.f', name='f', line=2, end_line=5)" in lines
    assert any(line.startswith("x.py: missing Definition(qualified_name='g'") for line in lines)
    assert any(line.startswith("x.py: extra Definition(qualified_name='h'") for line in lines)
    renamed = accuracy.Score()
    renamed.add("y.py", expected, [definition("A", "A", 1, 9), definition("f", "f", 2, 4), definition("g", "g", 11, 12)])
    assert renamed.matched == 2


def test_outline_kinds_that_are_not_definitions_are_left_out(accuracy: ModuleType) -> None:
    """Variables, constants and fields are in the outline but not in `ast`'s list: only defs and classes count."""
    from shipcode_mcp.workspace.code.outline import outline_source

    text = "LIMIT = 3\nname = 'x'\n\nclass C:\n    field = 1\n\n    def m(self):\n        pass\n"
    found = accuracy.outline_definitions(outline_source(text, "python"))
    assert found == accuracy.ast_definitions(text) == [accuracy.Definition("C", "C", 4, 8),
                                                       accuracy.Definition("C.m", "m", 7, 8)]

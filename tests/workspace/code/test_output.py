"""What the code tools show is the code: a signature without the comment after it, captures that are the
source text and say where they were cut, a text that tells a line break from a backslash and an n, the
skipped files named, and a hint when a pattern matches nothing for a reason of syntax. On files in the
shapes of Django's and rich's code (tests/data/styles)."""

from __future__ import annotations

import pytest

from support import REPO

pytest.importorskip("ast_grep_py")

from shipcode_mcp.workspace.code.outline import outline

STYLES = REPO / "tests" / "data" / "styles"
DJANGO = (STYLES / "django_style.py").read_text()


def _signatures(text: str, language: str) -> dict[str, str]:
    found: dict[str, str] = {}
    stack = list(outline(text, language))
    while stack:
        symbol = stack.pop()
        found[symbol.qualified_name] = symbol.signature
        stack.extend(symbol.children)
    return found


# -- 1. a signature is the header, never the comment after it ----------------------------------------
def test_a_python_signature_leaves_out_the_comment_that_starts_the_body() -> None:
    signatures = _signatures(DJANGO, "python")
    assert signatures["capfirst"] == "def capfirst(x)"  # `def capfirst(x):  # Capitalize ...`
    assert signatures["slugify"] == "def slugify(value, allow_unicode=False)"  # a comment on the next line
    assert signatures["Field.clean"] == "def clean(self, value)"
    assert signatures["Field.__init__"] == "def __init__( self, *, required=True, label=None, initial=None, )"
    assert signatures["Field.error_messages"] == "def error_messages(self)"
    assert signatures["QuerySet.exists"] == "def exists(self)"
    assert all("#" not in signature and not signature.endswith(":") for signature in signatures.values()), signatures


@pytest.mark.parametrize(("language", "text", "expected"), [
    ("python", "class Meta:  # options\n    ordering = ['name']\n", "class Meta"),
    ("javascript", "function area(w, h) // the product\n{\n  return w * h\n}\n", "function area(w, h)"),
    ("rust", "fn area(w: u32, h: u32) -> u32 // the product\n{\n    w * h\n}\n", "fn area(w: u32, h: u32) -> u32"),
    ("c", "int area(int w, int h) /* the product */\n{\n  return w * h;\n}\n", "int area(int w, int h)"),
    ("kotlin", "fun area(w: Int, h: Int): Int // the product\n{\n  return w * h\n}\n", "fun area(w: Int, h: Int): Int"),
    ("scala", "def area(w: Int, h: Int): Int = // the product\n  w * h\n", "def area(w: Int, h: Int): Int"),
    ("ruby", "def area(w, h) # the product\n  w * h\nend\n", "def area(w, h)"),
    ("lua", "function area(w, h) -- the product\n  return w * h\nend\n", "function area(w, h)"),
    ("bash", "area() # the product\n{\n  echo $(($1 * $2))\n}\n", "area()"),
])
def test_no_language_s_signature_holds_the_comment_after_its_header(language: str, text: str, expected: str) -> None:
    signatures = _signatures(text, language)
    assert signatures[expected.split("(")[0].split()[-1]] == expected, signatures

"""Code intelligence: outlines, definitions, references and structural search over tree-sitter trees.

Parsing is ast-grep-py's (tree-sitter grammars built into its wheel, nothing fetched at run time),
an optional dependency (the `code` extra): `available()` says whether it is installed, and nothing
here imports it before the first call, so start-up never pays for it.
"""

from __future__ import annotations


def available() -> bool:
    """Whether ast-grep-py can be imported (the tools are offered only then); cheap: no import."""
    from importlib.util import find_spec

    return find_spec("ast_grep_py") is not None

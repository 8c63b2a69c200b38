"""Code intelligence: outlines, definitions, references and structural search over tree-sitter trees.

Parsing is ast-grep-py's (tree-sitter grammars built into its wheel, nothing fetched at run time),
an optional dependency (the `code` extra): workspace/tools.py offers the tools only when it is
installed, and nothing imports this package before the first call, so start-up never pays for it.
"""


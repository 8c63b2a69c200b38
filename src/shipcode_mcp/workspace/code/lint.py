"""What a file's own text says is wrong, in the parse worker: syntax errors in every language (the
tree-sitter grammar's ERROR nodes; CPython's own parser for Python), and in Python what pyflakes finds
(undefined names, unused imports and variables, redefinitions, `return` outside a function, ...).

No type checker and no project configuration: the text alone, so it is the same answer on every machine
and needs nothing but the `code` extra. Runs in the parse worker (worker.py), like every parse of hostile
text: pyflakes walks the tree recursively, and a grammar may abort.
"""

from __future__ import annotations

import ast
from typing import Any

MAX_FINDINGS = 1000
"""Findings of one file sent back at most (a generated file may have thousands)."""
MAX_SHOWN = 60
"""Characters of a syntax error's text quoted in its message."""
ERRORS = frozenset({
    "UndefinedName", "UndefinedExport", "UndefinedLocal", "DuplicateArgument", "ReturnOutsideFunction",
    "YieldOutsideFunction", "ContinueOutsideLoop", "BreakOutsideLoop", "DefaultExceptNotLast",
    "TwoStarredExpressions", "TooManyExpressionsInStarredAssignment", "FutureFeatureNotDefined", "LateFutureImport",
    "ImportStarNotPermitted", "StringDotFormatExtraPositionalArguments", "StringDotFormatExtraNamedArguments",
    "StringDotFormatMissingArgument", "StringDotFormatInvalidFormat", "StringDotFormatMixingAutomatic",
    "PercentFormatInvalidFormat", "PercentFormatMixedPositionalAndNamed", "PercentFormatUnsupportedFormatCharacter",
    "PercentFormatPositionalCountMismatch", "PercentFormatExtraNamedArguments", "PercentFormatMissingArgument",
    "PercentFormatExpectedMapping", "PercentFormatExpectedSequence", "PercentFormatStarRequiresSequence",
    "ForwardAnnotationSyntaxError", "RaiseNotImplemented", "InvalidPrintSyntax",
})
"""pyflakes' findings that are errors: the code fails there when it runs (a name never bound, a format that
raises, `return` outside a function); its others (an unused import or variable, a redefinition, a star
import, `if (a, b):`, `x is "literal"`) are warnings."""


def findings(text: str, language: str, package: bool = False) -> dict[str, Any]:
    """`findings`: [line, column (1-based), severity, code, message] in source order, at most MAX_FINDINGS;
    `checked`: what looked (`python+pyflakes`, `python`, or `syntax`). In a package's `__init__.py`
    (`package`) an import nothing uses is what the package exports, not a finding."""
    if language == "python":
        return _python(text, package)
    from .outline import parse  # no package until _bootstrap, as in worker.parse

    root = parse(text, language)
    found: dict[tuple[int, int], list[Any]] = {}
    for node in root.find_all(kind="ERROR"):  # what the grammar could not read
        if len(found) >= MAX_FINDINGS:
            break
        if node.inside(kind="ERROR"):
            continue  # one error, not each node of it
        start = node.range().start
        shown = node.text().split("\n", 1)[0].strip()
        shown = shown if len(shown) <= MAX_SHOWN else shown[:MAX_SHOWN] + "…"
        found.setdefault((start.line, start.column), [start.line + 1, start.column + 1, "error", "syntax-error",
                         f"syntax error: the grammar cannot read `{shown}` here" if shown else "syntax error"])
    for node in root.find_all(regex="^$"):  # what it had to assume: a MISSING node, the only ones of no width
        if len(found) >= MAX_FINDINGS:
            break
        where = node.range()
        if where.start.index != where.end.index or not node.is_leaf():
            continue
        what = f"`{node.kind()}`" if not node.is_named() else f"an {node.kind()}" if node.kind()[:1] in "aeiou" \
            else f"a {node.kind()}"
        found.setdefault((where.start.line, where.start.column), [
            where.start.line + 1, where.start.column + 1, "error", "syntax-error", f"syntax error: {what} is missing here"])
    return {"findings": sorted(found.values())[:MAX_FINDINGS], "checked": "syntax"}


def _python(text: str, package: bool) -> dict[str, Any]:
    bom = text.startswith("\ufeff")
    source = text[1:] if bom else text  # (CPython refuses it in a str; it is not a column of line 1)
    try:
        tree = ast.parse(source)
    except SyntaxError as err:
        line, column = err.lineno or 1, err.offset or 1
        return {"findings": [[line, column + (bom and line == 1), "error", "syntax-error", err.msg]], "checked": "python"}
    except (ValueError, MemoryError, RecursionError) as err:  # a NUL byte, nesting too deep for the parser
        return {"findings": [[1, 1, "error", "syntax-error", f"the file cannot be parsed: {err}"]], "checked": "python"}
    try:
        from pyflakes import checker  # type: ignore[import-untyped]
    except ImportError:  # not installed (an environment without the `code` extra's pyflakes)
        return {"findings": [], "checked": "python"}
    try:
        messages = checker.Checker(tree, filename="<file>").messages
    except (RecursionError, MemoryError):
        return {"findings": [], "checked": "python"}
    dynamic = any(isinstance(node, ast.FunctionDef | ast.Assign) and "__getattr__" in (
        [node.name] if isinstance(node, ast.FunctionDef) else [getattr(target, "id", "") for target in node.targets])
        for node in tree.body)  # PEP 562: the module makes any name on demand, those __all__ lists too
    found: list[list[Any]] = []
    for message in sorted(messages, key=lambda item: (item.lineno, getattr(item, "col", 0))):
        code = type(message).__name__
        if (package and code == "UnusedImport") or (dynamic and code == "UndefinedExport"):
            continue
        line, column = message.lineno, getattr(message, "col", 0) + 1
        found.append([line, column + (bom and line == 1), "error" if code in ERRORS else "warning", code,
                      message.message % message.message_args])
        if len(found) >= MAX_FINDINGS:
            break
    return {"findings": found, "checked": "python+pyflakes"}

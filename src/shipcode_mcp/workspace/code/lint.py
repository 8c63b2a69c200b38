"""What a file's own text says is wrong, in the parse worker: syntax errors in every language (the
tree-sitter grammar's ERROR nodes; CPython's own parser for Python), and in Python what pyflakes finds
(undefined names, unused imports and variables, redefinitions, `return` outside a function, ...).

No type checker and no project configuration: the text alone, so it is the same answer on every machine
and needs nothing but the `code` extra. Runs in the parse worker (worker.py), like every parse of hostile
text: pyflakes walks the tree recursively, and a grammar may abort.
"""

from __future__ import annotations

import ast
import sys
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


def findings(text: str, language: str, name: str = "", syntax_only: bool = False) -> dict[str, Any]:
    """`findings`: [line, column (1-based), severity, code, message] in source order, at most MAX_FINDINGS;
    `checked`: what looked (`python+pyflakes`, `syntax`, or `python` with why pyflakes did not). `name` is the file's (pyflakes reads
    a package's `__init__.py` and a stub's `.pyi` apart). `syntax_only`: the syntax errors alone (pyflakes not run)."""
    if language == "python":
        found = _python(text, name, syntax_only)
        if syntax_only and found["findings"] and not found.pop("indentation", False) \
                and not _grammar_errors(text, language)["findings"]:
            return {"findings": [], "checked": "python (its error is none to the grammar: newer syntax?)"}
        found.pop("indentation", None)
        return found
    return _grammar_errors(text, language)


def _grammar_errors(text: str, language: str) -> dict[str, Any]:
    """The tree-sitter grammar's syntax errors: its ERROR nodes and the MISSING ones it had to assume."""
    from .outline import parse  # no package until _bootstrap, as in worker.parse

    root = parse(text, language)
    found: dict[tuple[int, int], list[Any]] = {}
    for node in root.find_all(kind="ERROR"):  # what the grammar could not read
        if len(found) >= MAX_FINDINGS:
            break
        whole = node.text()
        shown = whole.split("\n", 1)[0].strip()
        if node.inside(kind="ERROR") or _misread(language, whole):
            continue  # one error, not each node of it; or what the grammar is known to misread
        start = node.range().start
        shown = shown if len(shown) <= MAX_SHOWN else shown[:MAX_SHOWN] + "…"
        found.setdefault((start.line, start.column), [start.line + 1, start.column + 1, "error", "syntax-error",
                         f"syntax error: the grammar cannot read `{shown}` here" if shown else "syntax error"])
    for node in root.find_all(regex="^$"):  # what it had to assume: a MISSING node, of no width
        if len(found) >= MAX_FINDINGS:
            break
        where = node.range()
        kind = node.kind()
        if where.start.index != where.end.index or not node.is_leaf() or (node.is_named() and not kind.endswith("identifier")):
            continue  # an empty string's or heredoc's content is of no width too, and no error
        what = f"`{kind}`" if not node.is_named() else f"an {kind}" if kind[:1] in "aeiou" else f"a {kind}"
        found.setdefault((where.start.line, where.start.column), [
            where.start.line + 1, where.start.column + 1, "error", "syntax-error", f"syntax error: {what} is missing here"])
    return {"findings": sorted(found.values())[:MAX_FINDINGS], "checked": "syntax"}


def _misread(language: str, text: str) -> bool:
    """What a grammar reads as an error in valid code: PHP's template around `?>` and `<?=`, a preprocessor
    line inside a C or C++ expression (`#ifdef` in an initializer)."""
    if language == "php":
        return text.lstrip().startswith(("?>", "<?"))
    return language in ("c", "cpp") and any(line.lstrip().startswith("#") for line in text.split("\n"))


def _python(text: str, name: str, syntax_only: bool = False) -> dict[str, Any]:
    bom = text.startswith("\ufeff")
    source = text[1:] if bom else text  # (CPython refuses it in a str; it is not a column of line 1)
    lines = source.split("\n")
    version = f"Python {sys.version_info[0]}.{sys.version_info[1]}"
    try:
        tree = ast.parse(source)
    except SyntaxError as err:
        line, column = err.lineno or 1, err.offset or 1
        return {"findings": [[line, column + (bom and line == 1), "error", "syntax-error",  # (a character's column)
                              f"{err.msg} (as {version} reads it)"]], "checked": "python",
                "indentation": isinstance(err, IndentationError)}  # (TabError too: no newer Python reads it)
    except (ValueError, MemoryError, RecursionError) as err:  # a NUL byte, nesting too deep for the parser
        return {"findings": [[1, 1, "error", "syntax-error", f"the file cannot be parsed: {err}"]], "checked": "python"}
    if syntax_only:
        return {"findings": [], "checked": "python"}
    if name.endswith(".pyi"):  # a stub's annotations are never run: a name defined further down is no error
        tree.body.insert(0, ast.ImportFrom(module="__future__", names=[ast.alias("annotations")], level=0,
                                           lineno=1, col_offset=0))
    try:
        # optional (the code extra brings it) and only a Python file's check needs it
        from pyflakes import checker  # type: ignore[import-untyped]
    except ImportError:
        return {"findings": [], "checked": "python (pyflakes is not installed)"}
    try:
        messages = checker.Checker(tree, filename=name or "<file>").messages
    except (RecursionError, MemoryError):
        return {"findings": [], "checked": "python (pyflakes gave up: the code nests too deeply)"}
    package = name in ("__init__.py", "__init__.pyi")
    dynamic = _makes_names(tree)
    found: list[list[Any]] = []
    for message in sorted(messages, key=lambda item: (item.lineno, getattr(item, "col", 0))):
        code = type(message).__name__
        if code == "UnusedImport" and (package or str(message.message_args[0]).endswith("__getattr__")):
            continue  # what a package exports; a module's PEP 562 __getattr__, which Python itself calls
        if dynamic and code == "UndefinedExport":
            continue
        line = message.lineno
        column = _character(lines, line, getattr(message, "col", 0)) + 1
        found.append([line, column + (bom and line == 1), "error" if code in ERRORS else "warning", code,
                      message.message % message.message_args])
        if len(found) >= MAX_FINDINGS:
            break
    return {"findings": found, "checked": "python+pyflakes"}


def _makes_names(tree: ast.Module) -> bool:
    """Whether the module has a module-level `__getattr__` (PEP 562: it makes any name on demand, the names
    its `__all__` lists too): a def, an assignment or an import of it."""
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == "__getattr__":
            return True
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        if any(isinstance(target, ast.Name) and target.id == "__getattr__" for target in targets):
            return True
        if isinstance(node, ast.ImportFrom | ast.Import) and any(
                (alias.asname or alias.name) == "__getattr__" for alias in node.names):
            return True
    return False


def _character(lines: list[str], line: int, byte_column: int) -> int:
    """The character column of a UTF-8 byte offset on `line` (1-based) of the text (ast's and pyflakes')."""
    text = lines[line - 1] if 0 < line <= len(lines) else ""
    return len(text.encode("utf-8", "surrogatepass")[:max(byte_column, 0)].decode("utf-8", "replace"))

"""The rule for local imports: every import inside a function or method says why it is there.

Most local imports keep a module off the start-up path (tests/test_startup.py, docs/performance.md),
break an import cycle, or load an optional extra only where it is used. Each one is justified in one of
two ways, or this test names it (`path:line: import X`):

- every module it imports is one of OPTIONAL below: an optional or heavy third-party package, local
  wherever it is used, so it needs no word of its own;
- it carries a one-line reason: a `#` comment on the import's own line, or a comment line right above a
  run of consecutive import lines (one comment justifies the run that follows it; a blank line ends it).
  A bare pragma (`# noqa: F401`, `# type: ignore`) is no reason.

An import under `if TYPE_CHECKING:` is not run, so it is never counted. When an import has no reason to
be local (a standard-library module that start-up loads anyway, no cycle), it belongs at the top.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "src" / "shipcode_mcp"

OPTIONAL = {
    "uvicorn": "the http extra: the server that runs the app, only with --http",
    "starlette": "the http extra: the ASGI app of Streamable HTTP",
    "h11": "the http extra (uvicorn's): the HTTP/1.1 protocol the front subclasses",
    "jwt": "the auth extra (pyjwt): JWT access tokens, only with --auth-issuer",
    "cryptography": "the auth extra (pyjwt[crypto]): the issuer's keys",
    "ast_grep_py": "the code extra: tree-sitter grammars in one wheel, ~45 MB",
    "watchfiles": "the watch extra: native file notifications, only with --watch",
    "landlockpy": "Linux only: the sandbox binding, loaded where a child's ruleset is built",
    "jsonschema_rs": "heavy: the schema validator doubles a small server's RSS (docs/performance.md)",
}
"""Third-party modules (top-level names) imported where they are used, and why each is optional or heavy."""

_PRAGMA = re.compile(r"^(?:noqa(?::\s*[A-Z]+[0-9]*(?:\s*,\s*[A-Z]+[0-9]*)*)?|type:\s*ignore(?:\[[^\]]*\])?|pragma:[^#]*)\s*")
_WORD = re.compile(r"[A-Za-z]{2,}")


def _imported(node: ast.Import | ast.ImportFrom) -> list[str]:
    """The modules an import statement loads: `from .x import y` is ours (''), `import a.b` is 'a.b'."""
    if isinstance(node, ast.ImportFrom):
        return [""] if node.level else [node.module or ""]
    return [alias.name for alias in node.names]


def _optional(node: ast.Import | ast.ImportFrom) -> bool:
    return all(name and name.split(".")[0] in OPTIONAL for name in _imported(node))


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def local_imports(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement inside a function or method, at any depth; none under `if TYPE_CHECKING:`."""
    found: list[ast.Import | ast.ImportFrom] = []

    def visit(node: ast.AST, local: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                for other in child.orelse:
                    visit_one(other, local)
                continue
            visit_one(child, local)

    def visit_one(node: ast.AST, local: bool) -> None:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            if local:
                found.append(node)
            return
        visit(node, local or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))

    visit(tree, False)
    return found


def _comments(source: str) -> dict[int, tuple[str, bool]]:
    """line -> (the text of its comment, whether the line holds nothing else)."""
    found: dict[int, tuple[str, bool]] = {}
    lines = source.splitlines()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            line = token.start[0]
            found[line] = (token.string, not lines[line - 1][:token.start[1]].strip())
    return found


def _a_reason(comment: str) -> bool:
    text = comment.lstrip("#").strip()
    while True:
        stripped = _PRAGMA.sub("", text, count=1).strip()
        if stripped == text:
            break
        text = stripped
    return len(_WORD.findall(text)) >= 2


def unjustified(source: str) -> list[ast.Import | ast.ImportFrom]:
    """The local imports of `source` justified neither by OPTIONAL nor by a reason."""
    tree = ast.parse(source)
    comments = _comments(source)
    ending = {node.end_lineno: node for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))}
    refused = []
    for node in local_imports(tree):
        if _optional(node):
            continue
        end = node.end_lineno or node.lineno
        if any(line in comments and _a_reason(comments[line][0]) for line in range(node.lineno, end + 1)):
            continue
        first = node
        while first.lineno - 1 in ending:  # up the run of consecutive import lines
            first = ending[first.lineno - 1]
        above = comments.get(first.lineno - 1)
        if above is not None and above[1] and _a_reason(above[0]):
            continue
        refused.append(node)
    return refused


def test_every_local_import_is_optional_or_says_why() -> None:
    named, counted = [], 0
    for path in sorted(PACKAGE.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        counted += len(local_imports(ast.parse(source)))
        named += [f"{path.relative_to(ROOT)}:{node.lineno}: {ast.unparse(node)}" for node in unjustified(source)]
    assert counted > 50  # the walk reads the package (cli.py alone holds dozens)
    assert not named, (f"{len(named)} local import(s) without a reason: give each a `#` comment on its line (or on "
                       "the line above its run of imports) saying why it is local, or move it to the module's top:\n"
                       + "\n".join(named))


SAMPLE = '''\
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import typing_only


def f():
    import json
    import uvicorn.config
    from starlette import routing, responses
    import re  # a reason: on its own line
    # a reason for the run below
    import os
    import sys

    import time
    import io  # noqa: F401
    import array  # noqa: F401  (but a reason after the pragma)


class C:
    def method(self):
        def inner():
            from . import nested
        if TYPE_CHECKING:
            import skipped
        return lambda: None
'''


def test_the_rule_on_a_sample() -> None:
    tree = ast.parse(SAMPLE)
    assert [ast.unparse(node) for node in local_imports(tree)] == [
        "import json", "import uvicorn.config", "from starlette import routing, responses", "import re", "import os",
        "import sys", "import time", "import io", "import array", "from . import nested"]
    assert [ast.unparse(node) for node in unjustified(SAMPLE)] == ["import json", "import time", "import io",
                                                                   "from . import nested"]

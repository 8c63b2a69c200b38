"""Definitions that real projects write and the outline missed or misnamed: Go's `var ( ... )` groups and
specs of several names, JavaScript and TypeScript names bound by a destructuring pattern (not the
pattern's text), TypeScript method overloads, methods defined by assignment (`inst.lte = (v, p) => ...`,
`Foo.prototype.bar = function`), Python's chained assignments and module names bound inside `if` and `try`.
On files in the shapes of cobra's, zod's, Express's and requests' code (tests/data/styles), through
outline and find_symbol, with the prefilter and without."""

from __future__ import annotations

import shutil

import pytest

from support import REPO

pytest.importorskip("ast_grep_py")

from shipcode_mcp.context import Context
from shipcode_mcp.workspace.code.navigate import find_symbol
from shipcode_mcp.workspace.code.outline import outline_source
from shipcode_mcp.workspace.code.source import CACHE
from shipcode_mcp.workspace.code.symbols import language_for, walk
from shipcode_mcp.workspace.roots import Roots

STYLES = REPO / "tests" / "data" / "styles"

EXPECTED: dict[str, list[tuple[str, str, int, int]]] = {
    "cobra_style.go": [
        ("variable", "ErrSubCommandRequired", 11, 12),  # in `var ( ... )`, with its doc comment
        ("variable", "ErrUnknownFlag", 13, 13),
        ("variable", "initializers", 15, 15),  # `initializers, finalizers []func()`
        ("variable", "finalizers", 15, 15),
        ("variable", "templateFuncs", 18, 20),
        ("constant", "ShellCompDirectiveError", 23, 24),
        ("constant", "ShellCompDirectiveNoSpace", 25, 25),
        ("constant", "minUsagePadding", 26, 26),
        ("constant", "defaultPrefix", 26, 26),
        ("type", "PositionalArgs", 30, 31),
        ("type", "ShellCompDirective", 32, 32),
        ("struct", "flagGroup", 33, 35),
        ("field", "flagGroup.names", 34, 34),
        ("struct", "Command", 39, 41),
        ("field", "Command.Use", 40, 40),
        ("method", "Command.Name", 43, 47),
    ],
    "zod_style.ts": [
        ("constant", "isFunction", 6, 6),
        ("constant", "lazy", 6, 6),  # `defineLazy: lazy` binds lazy
        ("constant", "jsonStringifyReplacer", 6, 6),
        ("constant", "helpers", 6, 6),
        ("constant", "MIN_INT", 7, 7),
        ("constant", "MAX_INT", 7, 7),
        ("constant", "formatIssues", 8, 8),
        ("interface", "ZodNumber", 10, 12),
        ("method", "ZodNumber.gt", 11, 11),
        ("constant", "ZodNumber", 14, 23),
        ("method", "ZodNumber.inst.gt", 16, 16),
        ("method", "ZodNumber.inst.lte", 17, 18),
        ("method", "ZodNumber.inst.positive", 19, 21),
        ("class", "ZodError", 25, 31),
        ("method", "ZodError.format", 26, 30),  # its overload signatures and implementation, one method
        ("method", "ZodError.toString", 33, 36),
        ("function", "parse", 38, 41),
    ],
    "express_style.js": [
        ("variable", "deprecate", 4, 4),
        ("variable", "formatMessage", 4, 4),
        ("constant", "encodeUrl", 5, 5),
        ("constant", "escapeHtml", 5, 5),
        ("variable", "res", 7, 7),
        ("method", "res.status", 11, 17),
        ("method", "res.links", 19, 22),
        ("function", "Router", 24, 29),
        ("method", "Router.handle", 26, 28),  # `this.handle = function` in the constructor function
        ("method", "Router.use", 31, 33),  # `Router.prototype.use = function use(fn)`
    ],
    "requests_style.py": [
        ("variable", "has_simplejson", 8, 8),  # bound again in the except: one name, where it is first
        ("variable", "JSONDecodeError", 14, 14),
        ("variable", "_imported", 16, 16),
        ("variable", "HeadersType", 21, 21),
        ("constant", "TOML_LOADER", 26, 26),
        ("constant", "DEFAULT_CA_BUNDLE_PATH", 32, 32),
        ("constant", "DEFAULT_PORTS", 32, 32),
        ("variable", "basestring", 33, 33),
        ("variable", "builtin_str", 33, 33),
        ("class", "Session", 36, 45),
        ("field", "Session.trust_env", 37, 37),
        ("field", "Session.proxies_env", 37, 37),
        ("field", "Session.path_sep", 40, 40),
        ("method", "Session.send", 42, 45),
        ("function", "_helper", 51, 56),
    ],
}
NOT_DEFINED = ["name", "rest", "charset", "locals", "minValue", "timeout", "local_only", "_loop_value", "_name"]
"""Locals, loop variables and plain values assigned to an object: not definitions."""


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_outline_finds_every_name_these_shapes_define(name: str) -> None:
    text = (STYLES / name).read_text()
    language = language_for(name)
    assert language is not None
    found = [(s.kind, s.qualified_name, s.line, s.end_line) for s in walk(outline_source(text, language))]
    assert found == EXPECTED[name]


@pytest.fixture(scope="module")
def roots(tmp_path_factory: pytest.TempPathFactory) -> Roots:
    folder = tmp_path_factory.mktemp("shapes")
    for name in EXPECTED:
        shutil.copy(STYLES / name, folder)
    return Roots([str(folder)])


def _found(roots: Roots, name: str, prefilter: bool) -> list[tuple[str, str, int]]:
    CACHE.clear()
    answer = find_symbol(Context(None, 1, "tools/call", {}), roots, name, None, ".", 1000, prefilter=prefilter)
    assert answer.structured is not None
    return [(item["path"], item["qualified_name"], item["line"]) for item in answer.structured["symbols"]]


@pytest.mark.parametrize("prefilter", [True, False])
def test_find_symbol_finds_each_of_them_by_name_and_by_qualified_name(roots: Roots, prefilter: bool) -> None:
    """Every expected definition is found by its name and by its qualified name (`inst.lte` finds
    `ZodNumber.inst.lte`, `Router.use` the prototype's method), with Python's definition prefilter
    (a chain's later target is not first on its line) and without it."""
    for path, expected in EXPECTED.items():
        for _kind, qualified, line, _end in expected:
            for query in {qualified, qualified.rpartition(".")[2], ".".join(qualified.split(".")[-2:])}:
                assert (path, qualified, line) in _found(roots, query, prefilter), (query, path, line)


def test_find_symbol_does_not_take_locals_or_assigned_values_for_definitions(roots: Roots) -> None:
    for name in NOT_DEFINED:
        assert _found(roots, name, True) == [], name
    every = [s.name for name in EXPECTED for s in walk(outline_source((STYLES / name).read_text(),
                                                                     language_for(name) or ""))]
    assert all(name.isidentifier() for name in every), every  # never a pattern's text: `{ isFunction }`

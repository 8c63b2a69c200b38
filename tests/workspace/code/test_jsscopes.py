"""find_references in JavaScript and TypeScript: the uses their scopes tie to the definition asked about (`scoped`),
the ones only types could tell (`name`), and the ones they rule out (left out, counted), from the syntax tree alone
(code/jsscopes.py, in the parse worker). The real projects' figures are tests/workspace/lsp/test_typescript_server.py's
(immer, express and preact against typescript-language-server)."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

from shipcode_mcp.context import Context
from shipcode_mcp.workspace.code.references import find_references
from shipcode_mcp.workspace.roots import Roots


def write(root: Path, files: dict[str, str]) -> Roots:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(textwrap.dedent(text).lstrip("\n"))
    return Roots([str(root)])


def uses(roots: Roots, query: str, path: str = ".") -> tuple[dict[tuple[str, int, int], str], dict[str, Any]]:
    """Each use find_references returns, (path, line, column) -> its precision; and the whole answer."""
    data = find_references(Context(None, 1, "tools/call", {}), roots, query, path, 1000).structured or {}
    return {(item["path"], item["line"], item["column"]): item["precision"] for item in data["references"]}, data


PARSE = """
    export function parse(input: string): number {
      return input.length;
    }
    export const again = parse("x");
    function shadow(parse: string) { return parse; }
    function local() { const parse = 1; for (const parse of []) {} try {} catch (parse) {} return parse; }
    const { parse: renamed } = JSON;
    export const holder = { parse: 1 };
    holder.parse;
"""


def test_locals_parameters_and_keys_are_not_the_module_level_function(tmp_path: Path) -> None:
    roots = write(tmp_path, {"src/parse.ts": PARSE})
    found, data = uses(roots, "parse.parse")
    assert found == {("src/parse.ts", 1, 17): "scoped", ("src/parse.ts", 4, 22): "scoped"}
    # the parameter and its use; the const, the loop and catch variables and the local's use; the destructured key,
    # the object's key, the member
    assert data["excluded"] == 2 + 4 + 3
    assert [item["definition"] for item in data["references"]] == [True, False]
    # A bare name is any definition of it, the outline's or not (the object's key is one): only locals are left out.
    found, data = uses(roots, "parse")
    assert found == {("src/parse.ts", 1, 17): "scoped", ("src/parse.ts", 4, 22): "scoped",
                     ("src/parse.ts", 7, 9): "name", ("src/parse.ts", 8, 25): "name", ("src/parse.ts", 9, 8): "name"}
    assert data["excluded"] == 2 + 4


def test_an_import_from_the_definitions_file_is_scoped_from_another_file_by_name(tmp_path: Path) -> None:
    roots = write(tmp_path, {"src/core/parse.ts": PARSE, "src/core/index.ts": 'export { parse } from "./parse";\n',
                             "src/use.ts": """
        import { parse } from "./core/parse.js";
        import * as core from "./core/parse";
        import { parse as p2 } from "./core/parse";
        import { other as parse2 } from "./core/parse";
        const a = parse("1") + core.parse("2") + p2("3");
        """, "src/again.ts": """
        import { parse } from "./core";
        parse("4");
        """, "src/elsewhere.ts": """
        import { parse } from "some-package";
        parse("5");
        function parse2() {}
        """, "src/own.ts": """
        function parse() {}
        parse();
        """})
    found, data = uses(roots, "core.parse.parse")
    assert found[("src/use.ts", 1, 10)] == found[("src/use.ts", 5, 11)] == found[("src/use.ts", 5, 29)] == "scoped"
    assert found[("src/use.ts", 3, 10)] == found[("src/core/index.ts", 1, 10)] == "scoped"
    assert found[("src/again.ts", 1, 10)] == found[("src/again.ts", 2, 1)] == "name"
    assert found[("src/elsewhere.ts", 1, 10)] == found[("src/elsewhere.ts", 2, 1)] == "name"
    assert not any(path == "src/own.ts" for path, _, _ in found)  # another file's own parse
    assert data["definitions"] == [{"path": "src/core/parse.ts", "line": 1, "qualified_name": "parse",
                                    "kind": "function"}]


def test_a_member_through_this_in_its_class_and_the_class_name_never_as_a_bare_name(tmp_path: Path) -> None:
    roots = write(tmp_path, {"src/schema.ts": """
        export class Schema {
          parse(x: unknown) { return this.parse(x); }
          static make() { return Schema.parse; }
          other() { const parse = () => 1; return parse() + [1].map(() => this.parse(2)); }
        }
        class Unrelated { parse() { return this.parse(); } }
        class Derived extends Base { run() { return this.parse(); } }
        function helper(s: Schema) { return s.parse(1); }
        const literal = { parse() { return this.parse(); } };
        export function parse() {}
        """})
    found, data = uses(roots, "Schema.parse")
    assert found == {
        ("src/schema.ts", 2, 3): "scoped", ("src/schema.ts", 2, 35): "scoped",  # the method; this.parse in it
        ("src/schema.ts", 3, 33): "scoped",  # Schema.parse
        ("src/schema.ts", 4, 72): "scoped",  # this.parse in an arrow function in a method
        ("src/schema.ts", 7, 50): "name",  # this.parse in a class that derives from another: maybe inherited
        ("src/schema.ts", 8, 39): "name",  # s.parse: types would tell
        ("src/schema.ts", 9, 19): "name", ("src/schema.ts", 9, 41): "name",  # an object literal's: maybe typed so
    }
    # the local and its use; Unrelated's method and its this.parse; the module-level function
    assert data["excluded"] == 2 + 2 + 1


def test_commonjs_requires_and_assigned_methods(tmp_path: Path) -> None:
    roots = write(tmp_path, {"lib/utils.js": """
        exports.compileETag = function compileETag(value) { return value; };
        """, "lib/view.js": """
        module.exports = View;
        function View(name) { this.name = name; }
        View.prototype.render = function render(options) { return options; };
        """, "lib/app.js": """
        var compileETag = require('./utils').compileETag;
        var utils = require('./utils');
        var { compileETag: again } = require('./utils');
        var View = require('./view');
        function make(compileETag) { return compileETag; }
        compileETag(1); utils.compileETag(2); new View('x').render({});
        """})
    found, data = uses(roots, "utils.compileETag")
    assert {key: value for key, value in found.items() if key[0] == "lib/app.js"} == {
        ("lib/app.js", 1, 5): "scoped", ("lib/app.js", 1, 38): "scoped",  # `var x = require(m).x`, both names
        ("lib/app.js", 3, 7): "scoped",  # the key of a destructured require
        ("lib/app.js", 6, 1): "scoped", ("lib/app.js", 6, 23): "scoped",  # its uses; utils.compileETag
    }
    # utils.js's exports.compileETag is its definition; the function's own name there is seen only inside it
    assert found[("lib/utils.js", 1, 9)] == "scoped"
    assert data["excluded"] == 1 + 2  # that name; the parameter and its use
    found, _ = uses(roots, "View")
    assert found[("lib/app.js", 4, 5)] == found[("lib/app.js", 6, 43)] == "scoped"  # require of module.exports = View
    found, _ = uses(roots, "View.render")
    assert found[("lib/app.js", 6, 53)] == "name"  # on an object of unknown type


def test_with_no_definition_in_the_workspace_only_what_is_bound_locally_is_left_out(tmp_path: Path) -> None:
    roots = write(tmp_path, {"lib/request.js": """
        defineGetter(req, 'host', function host() {
          var host = this.host;
          return host;
        });
        module.exports.host = other.host;
        """})
    found, data = uses(roots, "host")
    assert found == {("lib/request.js", 1, 36): "name", ("lib/request.js", 2, 19): "name",
                     ("lib/request.js", 5, 16): "name", ("lib/request.js", 5, 29): "name"}
    assert data["excluded"] == 2  # the local var and its use


# -- what a review found (each reproduced first) -------------------------------------------------------------
def test_destructuring_binds_at_module_level_and_an_assignment_binds_nothing(tmp_path: Path) -> None:
    roots = write(tmp_path, {"src/p.ts": """
        export const { parse, stringify } = makeParsers();
        parse("x");
        export function reset(d: any) { ({ parse } = d); return parse("z"); }
        export function later(p = parse) { var parse = 1; return p; }
        """})
    found, data = uses(roots, "p.parse")
    assert found == {("src/p.ts", 1, 16): "scoped", ("src/p.ts", 2, 1): "scoped", ("src/p.ts", 3, 36): "scoped",
                     ("src/p.ts", 3, 57): "scoped", ("src/p.ts", 4, 27): "scoped"}  # the default sees the outer parse
    assert data["excluded"] == 1  # the var
    assert data["references"][0]["definition"]


def test_types_and_values_are_two_spaces_and_parameter_properties_are_members(tmp_path: Path) -> None:
    roots = write(tmp_path, {"src/node.ts": """
        export interface Node { id: number }
        export function visit(Node: unknown): Node { return Node as Node; }
        export class Schema {
          constructor(private readonly parse: (x: string) => number) {}
          run() { return this.parse("1"); }
        }
        """})
    found, data = uses(roots, "node.Node")
    assert found == {("src/node.ts", 1, 18): "scoped", ("src/node.ts", 2, 39): "scoped", ("src/node.ts", 2, 61): "scoped"}
    assert data["excluded"] == 2  # the parameter and its use, which do not hide the type
    found, _ = uses(roots, "parse")  # a member the outline does not list: by name, not left out as a parameter
    assert found == {("src/node.ts", 4, 32): "name", ("src/node.ts", 5, 23): "name"}


def test_jsx_tags_attributes_and_labels_are_not_names_of_symbols(tmp_path: Path) -> None:
    roots = write(tmp_path, {"src/app.tsx": """
        export function header() { return 1; }
        export const A = () => <header title="x">{header()}</header>;
        header: for (;;) { break header; }
        """, "src/b.jsx": """
        import { header } from "./app";
        export const B = () => <header />;
        """})
    found, data = uses(roots, "app.header")
    assert found == {("src/app.tsx", 1, 17): "scoped", ("src/app.tsx", 2, 43): "scoped", ("src/b.jsx", 1, 10): "scoped"}
    assert data["excluded"] == 2 + 2 + 1  # the tags, the labels, the intrinsic element of b.jsx


def test_a_default_import_is_the_default_export_only(tmp_path: Path) -> None:
    roots = write(tmp_path, {"src/parse.ts": """
        export function parse(x: string) { return x; }
        export default 42;
        """, "src/u.ts": """
        import parse from "./parse";
        parse;
        """, "lib/parse.js": """
        exports.parse = function (x) { return x; };
        """, "lib/u.js": """
        const parse = require("./parse");
        parse.other;
        """, "src/v.ts": """
        import { default as answer } from "./parse";
        """})
    found, _ = uses(roots, "parse.parse")
    assert found[("src/u.ts", 1, 8)] == found[("src/u.ts", 2, 1)] == "name"  # 42, not parse
    assert found[("lib/u.js", 1, 7)] == found[("lib/u.js", 2, 1)] == "name"  # the module object

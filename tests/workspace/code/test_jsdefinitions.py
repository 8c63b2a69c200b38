"""find_definition in JavaScript and TypeScript by scopes and imports, without a language server
(code/jsdefinitions.py over jsscopes.definition_at); on real projects against typescript-language-server:
tests/workspace/lsp/test_typescript_server.py."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

from shipcode_mcp.context import Context
from shipcode_mcp.workspace.code.definition import find_definition
from shipcode_mcp.workspace.roots import Roots

FILES = {
    "src/core/parse.ts": """
        export function parse(input: string): number {
          return input.length;
        }
        export class Schema {
          parse(x: unknown) { return this.parse(x); }
        }
        export default class Main {}
        """,
    "src/core/index.ts": """
        export { parse } from "./parse";
        export * from "./parse";
        """,
    "src/use.ts": """
        import { parse, Schema } from "./core";
        import * as core from "./core/parse";
        import Main from "./core/parse";
        import React from "react";
        function f(x: number) { const y = x; return y + parse("a") + core.parse("b"); }
        new Main(); React.createElement("div"); new Schema();
        import { nothing } from "../../../../../../etc/passwd";
        """,
    "lib/utils.js": """
        exports.compileETag = function (v) { return v; };
        """,
    "lib/app.js": """
        var compileETag = require('./utils').compileETag;
        var utils = require('./utils');
        compileETag(1); utils.compileETag(2);
        """,
}


def definitions(tmp_path: Path, path: str, line: int, name: str) -> tuple[list[tuple[str, int, int]], dict[str, Any]]:
    for file, text in FILES.items():
        (tmp_path / file).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / file).write_text(textwrap.dedent(text).lstrip("\n"))
    data = find_definition(Context(None, 1, "tools/call", {}), Roots([str(tmp_path)]), path, line, name, None).structured
    assert data is not None
    return [(item["path"], item["line"], item["column"]) for item in data["definitions"]], data


def test_locals_and_parameters_are_defined_in_the_file(tmp_path: Path) -> None:
    found, data = definitions(tmp_path, "src/use.ts", 5, "y")
    assert found == [("src/use.ts", 5, 31)] and data["precision"] == "scoped"
    found, _ = definitions(tmp_path, "src/use.ts", 5, "x")
    assert found == [("src/use.ts", 5, 12)]


def test_an_import_leads_through_the_modules_that_export_it_again(tmp_path: Path) -> None:
    found, data = definitions(tmp_path, "src/use.ts", 5, "parse")  # from ./core: its index's `export { } from`
    assert found == [("src/core/parse.ts", 1, 17)] and data["precision"] == "scoped"
    assert data["definitions"][0]["kind"] == "function"
    found, _ = definitions(tmp_path, "src/use.ts", 6, "Main")  # a default import: the module's default export
    assert found == [("src/core/parse.ts", 7, 22)]
    found, _ = definitions(tmp_path, "src/use.ts", 6, "Schema")  # through `export * from`
    assert found == [("src/core/parse.ts", 4, 14)]
    found, _ = definitions(tmp_path, "src/use.ts", 2, "core")  # a namespace import is defined where it is made
    assert found == [("src/use.ts", 2, 13)]


def test_a_member_through_this_and_a_module_object(tmp_path: Path) -> None:
    found, _ = definitions(tmp_path, "src/core/parse.ts", 5, "parse")  # the method itself, first on the line
    assert found == [("src/core/parse.ts", 5, 3)]
    found, _ = definitions(tmp_path, "lib/app.js", 3, "compileETag")  # var x = require(m).x: the export
    assert found == [("lib/utils.js", 1, 9)]


def test_a_packages_module_is_outside_and_a_path_out_of_the_roots_is_no_module(tmp_path: Path) -> None:
    found, data = definitions(tmp_path, "src/use.ts", 6, "React")
    assert found == [] and data["external"] == ["react"]
    assert "defined outside the workspace" in str(find_definition(
        Context(None, 1, "tools/call", {}), Roots([str(tmp_path)]), "src/use.ts", 6, "React", None).content)
    found, data = definitions(tmp_path, "src/use.ts", 7, "nothing")
    assert found == [] or all(path.startswith("src/") for path, _, _ in found)  # never a file outside the roots
    assert data["precision"] == "name"  # the module is nowhere in the workspace: the name is looked for instead


# -- what a review found (each reproduced first) -------------------------------------------------------------
def workspace(tmp_path: Path, files: dict[str, str]) -> Roots:
    for file, text in files.items():
        (tmp_path / file).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / file).write_text(textwrap.dedent(text).lstrip("\n"))
    return Roots([str(tmp_path)])


def places(roots: Roots, path: str, line: int, name: str) -> tuple[list[tuple[str, int, int]], str]:
    data = find_definition(Context(None, 1, "tools/call", {}), roots, path, line, name, None).structured or {}
    return [(item["path"], item["line"], item["column"]) for item in data["definitions"]], data["precision"]


def test_a_module_exports_what_it_says_it_exports(tmp_path: Path) -> None:
    roots = workspace(tmp_path, {
        "m.ts": 'const x = 1;\nexport * from "./n";\n', "n.ts": "export const y = 0;\nexport const x = 2;\n",
        "alias.ts": "const local = 1;\nexport { local as renamed };\n",
        "index.ts": 'export { default as Button } from "./button";\n', "button.tsx": "export default function Button() {}\n",
        "api.ts": "export default class Api { static foo() {} }\nexport function foo() {}\n",
        "lib/utils.js": "exports.compile = function (v) { return v; };\nif (!exports.compile) {}\n",
        "lib/app.js": "var utils = require('./utils');\nutils.compile(1);\n",
        "use.ts": """
            import { x } from "./m";
            import { renamed } from "./alias";
            import { Button } from "./index";
            import Api from "./api";
            x; renamed; Button; Api.foo();
            """})
    assert places(roots, "use.ts", 5, "x") == ([("n.ts", 2, 14)], "scoped")  # m's own x is not exported
    assert places(roots, "use.ts", 5, "renamed") == ([("alias.ts", 1, 7)], "scoped")
    assert places(roots, "use.ts", 5, "Button") == ([("button.tsx", 1, 25)], "scoped")
    assert places(roots, "lib/app.js", 2, "compile") == ([("lib/utils.js", 1, 9)], "scoped")  # not the read on line 2
    found, precision = places(roots, "use.ts", 5, "foo")  # Api's static foo, not the module's: by name
    assert precision == "name" and ("api.ts", 1, 35) in found


def test_modules_resolve_as_typescript_resolves_them(tmp_path: Path) -> None:
    roots = workspace(tmp_path, {
        "src/utils.ts": "export const helper = 1;\n", "src/utils/index.ts": "export const helper = 2;\n",
        "src/m.ts": "export const v = 1;\n", "src/m.mts": "export const v = 2;\n",
        "src/dir.ts": "export const d = 1;\n", "src/dir/index.ts": "export const d = 2;\n",
        "src/use.ts": """
            import { helper } from "./utils/index";
            import { v } from "./m.mjs";
            import { d } from "./dir/";
            helper; v; d;
            """})
    assert places(roots, "src/use.ts", 4, "helper")[0] == [("src/utils/index.ts", 1, 14)]
    assert places(roots, "src/use.ts", 4, "v")[0] == [("src/m.mts", 1, 14)]
    assert places(roots, "src/use.ts", 4, "d")[0] == [("src/dir/index.ts", 1, 14)]


def test_a_members_column_is_its_name_not_a_decorators_argument(tmp_path: Path) -> None:
    roots = workspace(tmp_path, {"e.ts": """
        export class Entity {
          @Column({ type: "varchar" }) type: string = "";
          show() { return this.type; }
        }
        """})
    assert places(roots, "e.ts", 3, "type") == ([("e.ts", 2, 32)], "scoped")

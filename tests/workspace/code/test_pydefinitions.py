"""pydefinitions.py and find_definition: each scope rule on a case where the definitions named like the
use (what find_symbol or a grep for `def name` gives) hold the wrong one, in real files through the
tool, a module's imports followed to the file that defines the name."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path
from typing import Any

import pytest

from shipcode_mcp.context import Context
from shipcode_mcp.primitives import ToolError
from shipcode_mcp.workspace.code.definition import find_definition
from shipcode_mcp.workspace.code.pydefinitions import definition_at, definition_of, word_at
from shipcode_mcp.workspace.roots import Roots

pytest.importorskip("ast_grep_py")


def where(code: str, line: int, name: str, nth: int = 0) -> list[dict[str, Any]]:
    """The targets of the `nth` `name` written on `line` of `code`."""
    text = textwrap.dedent(code)
    row = text.split("\n")[line - 1]
    column = [found.start() + 1 for found in re.finditer(rf"\b{re.escape(name)}\b", row)][nth]
    answer = definition_at(text, "pkg/mod.py", line, column)
    assert answer is not None and answer["name"] == name
    targets: list[dict[str, Any]] = answer["targets"]
    return targets


def plain(targets: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The targets, each a first choice only (`from m import x`: m's x, not its submodule x)."""
    return [plain(target["first_of"][:1])[0] if "first_of" in target else target for target in targets]


def places(targets: list[dict[str, Any]]) -> list[int]:
    """The lines of the definitions in the same file."""
    return [row for target in targets for row, _ in target.get("places", [])]


def defined(code: str, name: str) -> list[int]:
    """Where a name search finds definitions of `name`: each def, class or assignment of it."""
    return [number for number, row in enumerate(textwrap.dedent(code).split("\n"), 1)
            if re.search(rf"\b(def|class)\s+{re.escape(name)}\b|\b{re.escape(name)}\s*=[^=]", row)]


LOCALS = """\
    def get():
        return 1
    def use(get):
        return get()
    def other():
        get = lambda: 2
        return get()
    print(get())
    """


def test_a_parameter_and_a_local_are_their_functions_own_and_the_module_def_is_the_modules() -> None:
    assert places(where(LOCALS, 4, "get")) == [3]  # the parameter
    assert places(where(LOCALS, 7, "get")) == [6]  # the local
    assert places(where(LOCALS, 8, "get")) == [1]  # the module's def
    assert defined(LOCALS, "get") == [1, 6]  # a name search: two definitions, never the parameter


MEMBERS = """\
    class Base:
        def close(self):
            pass
        def run(self):
            return self.close()
    class File(Base):
        def close(self):
            super().close()
        def use(self):
            self.close()
            other = Base()
            other.close()
            mine: File = make()
            mine.close()
    def close():
        pass
    """


def test_self_super_an_instance_and_an_annotation_lead_to_their_classs_member() -> None:
    assert places(where(MEMBERS, 5, "close")) == [2]  # self in Base
    assert places(where(MEMBERS, 8, "close")) == [2]  # super() in File: the base's
    assert places(where(MEMBERS, 10, "close")) == [7]  # self in File: its own
    assert places(where(MEMBERS, 12, "close")) == [2]  # other = Base()
    assert places(where(MEMBERS, 14, "close")) == [7]  # mine: File
    assert defined(MEMBERS, "close") == [2, 7, 15]


def test_an_inherited_member_is_found_in_the_base_and_an_imported_base_leads_to_its_module() -> None:
    code = """\
        from .models import Model
        class Local:
            def save(self):
                pass
        class Child(Local):
            pass
        class Remote(Model):
            def go(self):
                return self.save()
        Child().save()
        """
    assert places(where(code, 10, "save")) == [3]
    assert plain(where(code, 9, "save")) == [{"module": ["pkg", "models"], "path": ["Model", "save"]}]


def test_imports_lead_to_the_module_that_defines_the_name() -> None:
    code = """\
        import os.path
        from . import sessions
        from ..util import helper as assist
        import json
        assist(os.path.join("a"), json.loads("1"))
        sessions.Session().get()
        """
    assert where(code, 5, "assist") == [{"first_of": [{"module": ["util"], "path": ["helper"]},  # pkg/mod.py: `..`
                                                      {"module": ["util", "helper"], "path": []}]}]  # or a submodule
    assert where(code, 5, "path") == [{"first_of": [{"module": ["os"], "path": ["path"]},  # os's name path
                                                    {"module": ["os", "path"], "path": []}]}]  # or its submodule
    assert where(code, 5, "join") == [{"first_of": [{"module": ["os"], "path": ["path", "join"]},
                                                    {"module": ["os", "path"], "path": ["join"]},
                                                    {"module": ["os", "path", "join"], "path": []}]}]
    assert plain(where(code, 5, "loads")) == [{"module": ["json"], "path": ["loads"]}]
    assert plain(where(code, 6, "get")) == [{"module": ["pkg", "sessions"], "path": ["Session", "get"]}]


def test_builtins_global_and_comprehension_variables() -> None:
    code = """\
        total = 0
        def add(items):
            global total
            total = sum(x for x in items)
            return [total for total in items]
        len(add([]))
        """
    assert places(where(code, 4, "total")) == [1, 4]  # global: the module's bindings
    assert places(where(code, 5, "total")) == [5]  # the comprehension's own
    assert where(code, 6, "len") == [{"builtin": "len"}]
    assert places(where(code, 4, "x", 1)) == [4]


def test_a_members_declared_bindings_are_its_definition_and_overloads_give_way_to_the_implementation() -> None:
    code = """\
        from typing import overload
        class Bar:
            __slots__ = ("width", "other")
            def __init__(self, width):
                self.width: int = width
                self.height = 1
            def grow(self):
                self.width = self.width + 1
                self.height = 2
                return self.height
        @overload
        def pick(x: int) -> int: ...
        @overload
        def pick(x: str) -> str: ...
        def pick(x):
            return x
        pick(1)
        def show(value: int):
            value = str(value)
            return value
        """
    assert places(where(code, 8, "width", 1)) == [5]  # annotated: the declaration (not the slot, not line 8)
    assert places(where(code, 10, "height")) == [6, 9]  # none annotated: every assignment
    assert places(where(code, 17, "pick")) == [15]  # the implementation, not the two signatures
    assert places(where(code, 20, "value")) == [18, 19]  # a variable's every binding, the annotated parameter too
    no_annotation = code.replace("self.width: int = width", "self.width = width")
    assert places(where(no_annotation, 8, "width", 1)) == [3, 5, 8]  # the slot declares it too


def test_an_attribute_of_an_object_of_unknown_class_is_unknown_not_guessed() -> None:
    code = """\
        def use(client):
            return client.fetch()
        """
    assert where(code, 2, "fetch") == [{"unknown": True}]


def test_a_modules_name_and_a_classs_member_as_another_file_asks_for_them() -> None:
    code = textwrap.dedent("""\
        from .api import get
        class Session:
            verify = True
            def __init__(self):
                self.headers = {}
        """)
    assert plain(definition_of(code, "pkg/__init__.py", ["get"]) or []) == [{"module": ["pkg", "api"], "path": ["get"]}]
    assert definition_of(code, "pkg/__init__.py", ["Session", "verify"]) == [{"places": [[3, 5]]}]
    assert definition_of(code, "pkg/__init__.py", ["Session", "headers"]) == [{"places": [[5, 14]]}]
    assert definition_of("def (:\n", "pkg/x.py", ["get"]) is None


def test_the_word_at_a_column_and_nothing_in_comments_or_strings() -> None:
    assert word_at("x = alpha.beta\n", 1, 11) == ("beta", 11)
    assert word_at("x = alpha.beta\n", 1, 15) == ("beta", 11)  # right after it
    assert word_at("x = alpha.beta\n", 1, 10) == ("alpha", 5)
    assert definition_at("x = 1  # x here\n", "m.py", 1, 10) is None
    assert definition_at("s = 'x'\n", "m.py", 1, 6) is None
    assert definition_at("\ufeffx = 1\nx\n", "m.py", 2, 1) == {"name": "x", "column": 1, "targets": [{"places": [[1, 2]]}]}


# -- the tool, on files ---------------------------------------------------------------------------------
@pytest.fixture
def project(tmp_path: Path) -> Roots:
    package = tmp_path / "src" / "shop"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("from .api import get\nfrom .cart import Cart\n")
    (package / "api.py").write_text("def get(url):\n    return url\n")
    (package / "cart.py").write_text(textwrap.dedent("""\
        from .base import Store
        class Cart(Store):
            def add(self, item):
                self.items.append(item)
                return self.total()
        """))
    (package / "base.py").write_text(textwrap.dedent("""\
        class Store:
            def total(self):
                return 0
        """))
    (tmp_path / "other.py").write_text("def get():\n    pass\ndef total():\n    pass\n")
    (package / "units.py").write_text("GRAM = 1\n")
    (tmp_path / "app.py").write_text(textwrap.dedent("""\
        import json
        from shop import get, Cart
        cart = Cart()
        cart.total()
        get(json.dumps({}))
        print(cart)
        def use(x):
            return x.total()
        from shop import units
        units.GRAM
        """))
    return Roots([str(tmp_path)])


def found(roots: Roots, path: str, line: int, name: str) -> dict[str, Any]:
    answer = find_definition(Context(None, 1, "tools/call", {}), roots, path, line, name, None)
    data: dict[str, Any] = answer.structured or {}
    return data


def test_an_import_is_followed_through_the_packages_re_export_to_the_def(project: Roots) -> None:
    data = found(project, "app.py", 5, "get")
    assert [(item["path"], item["line"], item["kind"]) for item in data["definitions"]] == \
        [("src/shop/api.py", 1, "function")]  # not other.py's get, which a name search lists too
    assert data["precision"] == "scoped"


def test_an_inherited_method_of_an_instance_is_found_in_its_base_in_another_module(project: Roots) -> None:
    data = found(project, "app.py", 4, "total")
    assert [(item["path"], item["line"]) for item in data["definitions"]] == [("src/shop/base.py", 2)]
    assert [(item["path"], item["line"]) for item in found(project, "src/shop/cart.py", 5, "total")["definitions"]] == \
        [("src/shop/base.py", 2)]


def test_a_name_a_package_does_not_define_is_its_submodule(project: Roots) -> None:
    data = found(project, "app.py", 9, "units")
    assert [(item["path"], item["line"], item["kind"]) for item in data["definitions"]] == [("src/shop/units.py", 1, "module")]
    assert [(item["path"], item["line"]) for item in found(project, "app.py", 10, "GRAM")["definitions"]] == \
        [("src/shop/units.py", 1)]


def test_builtins_and_modules_outside_the_workspace_are_said_and_unknown_objects_answer_by_name(project: Roots) -> None:
    assert found(project, "app.py", 6, "print")["builtin"] == "print"
    data = found(project, "app.py", 5, "dumps")
    assert data["definitions"] == [] and data["external"] == ["json.dumps"]
    by_name = found(project, "app.py", 8, "total")
    assert by_name["precision"] == "name"
    assert {(item["path"], item["line"]) for item in by_name["definitions"]} == {("src/shop/base.py", 2)}  # members only


def test_bad_places_are_tool_errors(project: Roots) -> None:
    ctx = Context(None, 1, "tools/call", {})
    with pytest.raises(ToolError, match="past the end"):
        find_definition(ctx, project, "app.py", 99, "cart", None)
    with pytest.raises(ToolError, match="not written on line 1"):
        find_definition(ctx, project, "app.py", 1, "nothing", None)
    with pytest.raises(ToolError, match="one name as written"):
        find_definition(ctx, project, "app.py", 4, "cart.total", None)
    with pytest.raises(ToolError, match="is a folder"):
        find_definition(ctx, project, "src", 1, "x", None)


def test_the_column_picks_one_of_the_names_written_twice_on_a_line(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("def f(x):\n    return x\nx = 1\nprint(f(x), x)\n")
    roots = Roots([str(tmp_path)])
    ctx = Context(None, 1, "tools/call", {})
    first = find_definition(ctx, roots, "m.py", 1, "x", None).structured or {}
    assert [(item["line"], item["column"]) for item in first["definitions"]] == [(1, 7)]  # the parameter
    assert [item["line"] for item in (find_definition(ctx, roots, "m.py", 2, "x", 12).structured or {})["definitions"]] == [1]
    assert [item["line"] for item in (find_definition(ctx, roots, "m.py", 4, "x", 13).structured or {})["definitions"]] == [3]


# -- hostile input ------------------------------------------------------------------------------------
def test_paths_outside_the_roots_and_links_out_of_them_are_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.py").write_text("token = 'hunter2'\n")
    root = tmp_path / "root"
    root.mkdir()
    (root / "link.py").symlink_to(outside / "secret.py")
    (root / "secret.py").symlink_to(outside / "secret.py")  # a module name an import would find
    (root / "app.py").write_text("from secret import token\nprint(token)\n")
    assert (root / "link.py").read_text() == "token = 'hunter2'\n"  # the links do reach the file, without us
    roots = Roots([str(root)])
    ctx = Context(None, 1, "tools/call", {})
    for path in ["../outside/secret.py", str(outside / "secret.py"), "link.py"]:
        with pytest.raises(ToolError) as refused:
            find_definition(ctx, roots, path, 1, "token", None)
        assert "hunter2" not in str(refused.value)
    data = find_definition(ctx, roots, "app.py", 2, "token", None).structured or {}
    assert all(item["path"] == "app.py" for item in data["definitions"]), data  # never the file behind the link
    assert "hunter2" not in str(data)


def test_a_cycle_of_re_exports_and_deep_nesting_end_with_an_answer(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("from b import thing\n")
    (tmp_path / "b.py").write_text("from a import thing\n")
    (tmp_path / "app.py").write_text("from a import thing\nthing()\n")
    (tmp_path / "deep.py").write_text("x = " + "[" * 5000 + "]" * 5000 + "\nprint(x)\n")
    roots = Roots([str(tmp_path)])
    ctx = Context(None, 1, "tools/call", {})
    data = find_definition(ctx, roots, "app.py", 2, "thing", None).structured or {}
    assert data["definitions"] == [] and data["external"] == [] and data["precision"] == "name"  # nothing defines it
    deep = find_definition(ctx, roots, "deep.py", 2, "x", None).structured or {}  # too deep for ast: by name
    assert deep["precision"] == "name"


def test_modules_are_found_where_an_import_starts_and_elsewhere_by_their_path(tmp_path: Path) -> None:
    """Under a root, its src/, a folder above the importing file that is not a package (a monorepo's
    package), and, failing those, anywhere its dotted path ends a file's under a folder that is not a package
    (a vendored tree)."""
    package = tmp_path / "packages" / "shop" / "src" / "shop"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "api.py").write_text("from shop.models import Item\nItem()\n")
    (package / "models.py").write_text("class Item:\n    pass\n")
    (tmp_path / "vendor" / "third").mkdir(parents=True)
    (tmp_path / "vendor" / "third" / "tool.py").write_text("def run():\n    pass\n")
    (tmp_path / "json.py").write_text("def loads(text):\n    return text\n")  # shadows the standard library's, as Python does
    (tmp_path / "app.py").write_text("from third.tool import run\nimport json\nrun()\njson.loads('1')\n")
    roots = Roots([str(tmp_path)])
    assert [(item["path"], item["line"]) for item in found(roots, "packages/shop/src/shop/api.py", 2, "Item")["definitions"]] \
        == [("packages/shop/src/shop/models.py", 1)]
    assert [(item["path"], item["line"]) for item in found(roots, "app.py", 3, "run")["definitions"]] == \
        [("vendor/third/tool.py", 1)]
    assert [(item["path"], item["line"]) for item in found(roots, "app.py", 4, "loads")["definitions"]] == [("json.py", 1)]


def write(root: Path, files: dict[str, str]) -> Roots:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(textwrap.dedent(text))
    return Roots([str(root)])


def lines_of(data: dict[str, Any]) -> list[tuple[str, int]]:
    return [(item["path"], item["line"]) for item in data["definitions"]]


def test_members_of_imported_classes_and_of_every_base_in_turn(tmp_path: Path) -> None:
    roots = write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/models.py": """\
            from typing import Generic, TypeVar
            T = TypeVar("T")
            class Outer:
                top = 1
                class Inner:
                    def m(self):
                        pass
            class Base:
                pass
            class Mixin:
                def mix(self):
                    pass
            class Both(Generic[T], Base, Mixin):
                def go(self):
                    return self.mix()
            """,
        "app.py": """\
            from pkg.models import Outer, Base, Mixin
            from pkg import models
            class Mine(Base, Mixin):
                def run(self):
                    return self.mix()
            Outer.top
            Outer.Inner().m()
            models.Outer.top
            """})
    assert lines_of(found(roots, "app.py", 6, "top")) == [("pkg/models.py", 4)]  # a member of an imported class
    assert lines_of(found(roots, "app.py", 7, "m")) == [("pkg/models.py", 6)]  # of its nested class
    assert lines_of(found(roots, "app.py", 8, "top")) == [("pkg/models.py", 4)]  # through the module
    assert lines_of(found(roots, "app.py", 5, "mix")) == [("pkg/models.py", 11)]  # Base has none: Mixin's
    assert lines_of(found(roots, "pkg/models.py", 15, "mix")) == [("pkg/models.py", 11)]  # Generic[T] adds nothing


def test_star_imports_slots_and_a_second_roots_relative_imports(tmp_path: Path) -> None:
    first, second = tmp_path / "one", tmp_path / "two"
    write(first, {"main.py": "x = 1\n"})
    write(second, {
        "pkg/__init__.py": "",
        "pkg/core.py": "def thing():\n    pass\n",
        "pkg/use.py": """\
            from .core import thing as alias
            from .core import *
            alias()
            len(thing())
            class Point:
                __slots__ = ("x", "len")
                def __init__(self):
                    self.x = 0
            """})
    roots = Roots([str(first), str(second)])
    use = str(second / "pkg" / "use.py")
    shown = roots.display(use)
    core = roots.display(str(second / "pkg" / "core.py"))
    assert lines_of(found(roots, use, 3, "alias")) == [(core, 1)]  # a relative import in the second root
    assert lines_of(found(roots, use, 4, "thing")) == [(core, 1)]  # by the star import
    assert found(roots, use, 4, "len")["builtin"] == "len"  # not from the star import: the builtin
    slot = found(roots, use, 6, "x")  # the slot's string: the attribute it declares
    assert lines_of(slot) == [(shown, 6), (shown, 8)] and slot["precision"] == "scoped"


def test_an_absolute_import_does_not_take_a_module_of_its_own_package(tmp_path: Path) -> None:
    roots = write(tmp_path, {
        "click/__init__.py": "",
        "click/types.py": "class ParamType:\n    pass\n",
        "click/decorators.py": "import types\nfrom . import types as own\ntypes.FunctionType\nown.ParamType\n",
    })
    data = found(roots, "click/decorators.py", 3, "FunctionType")  # the standard library's types, not click.types
    assert data["definitions"] == [] and data["external"] == ["types.FunctionType"]
    assert lines_of(found(roots, "click/decorators.py", 4, "ParamType")) == [("click/types.py", 1)]


def test_a_name_a_found_module_does_not_define_is_not_said_to_be_outside(tmp_path: Path) -> None:
    roots = write(tmp_path, {"compat.py": "from urllib.parse import urlencode\n", "lib.py": "x = 1\n",
                             "app.py": "import compat, lib\ncompat.urlencode\nlib.nothing\n"})
    through = found(roots, "app.py", 2, "urlencode")
    assert through["definitions"] == [] and through["external"] == ["urllib.parse.urlencode"]  # where it really is
    missing = found(roots, "app.py", 3, "nothing")
    assert missing["external"] == [] and missing["precision"] == "name"  # lib.py is here, and defines no nothing


def test_many_bindings_are_cut_at_the_bound_and_the_column_finds_the_name_in_code(tmp_path: Path) -> None:
    roots = write(tmp_path, {"many.py": "x = 1\n" * 3000 + "print(x)\n",
                             "col.py": "foo = 1\nprint('foo', foo)\nasync def bar():\n    pass\n",
                             "use.js": "bar();\n"})
    many = found(roots, "many.py", 3001, "x")
    assert len(many["definitions"]) == 50 and many["truncated"]
    assert lines_of(found(roots, "col.py", 2, "foo")) == [("col.py", 1)]  # its first place, in a string, is passed
    by_name = found(roots, "use.js", 1, "bar")
    assert [(item["path"], item["line"], item["column"]) for item in by_name["definitions"]] == [("col.py", 3, 11)]

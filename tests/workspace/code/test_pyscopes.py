"""pyscopes.py: each scope rule on a case that a plain name search gets wrong.

Every case holds uses of the name that a name search counts (it finds every one of them, `all_uses`),
and the scopes sort them: `scoped` where they reach the definition asked for, `name` where only types
could tell, left out (counted in `excluded`) where they are bound to something else.
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

from shipcode_mcp.context import Context
from shipcode_mcp.workspace.code.pyscopes import Reading, module_path, readings, scoped_uses
from shipcode_mcp.workspace.code.references import find_references
from shipcode_mcp.workspace.roots import Roots


def decided(code: str, query: str, shown: str = "pkg/mod.py", chosen: list[Reading] | None = None,
            ) -> tuple[dict[int, str], int]:
    """{line: label} of the query's uses in `code` (the surest label of a line), and how many were left out."""
    text = textwrap.dedent(code)
    found = scoped_uses(text, query.rsplit(".", 1)[-1], shown, chosen if chosen is not None else readings(query))
    assert found is not None
    lines: dict[int, str] = {}
    for line, _, label, _ in found["uses"]:
        if lines.get(line + 1) != "scoped":
            lines[line + 1] = label
    return lines, found["excluded"]


def all_uses(code: str, name: str) -> int:
    """What a name search counts: every whole-word occurrence."""
    return len(re.findall(rf"\b{re.escape(name)}\b", textwrap.dedent(code)))


def test_locals_parameters_comprehension_variables_and_keyword_arguments_are_not_the_function() -> None:
    code = """\
        def get():
            return 1
        def use(get):
            return get()
        def other(items):
            get = 1
            values = [get for get in items]
            return fetch(get=get)
        get()
        """
    lines, excluded = decided(code, "get")
    assert lines == {1: "scoped", 9: "scoped"}
    assert excluded == 7 and all_uses(code, "get") == 9


def test_a_class_bodys_names_are_members_out_of_sight_of_its_methods() -> None:
    code = """\
        size = 10
        class Box:
            size = 1
            double = size * 2
            def area(self):
                return size * self.size
        """
    assert decided(code, "Box.size") == ({3: "scoped", 4: "scoped", 6: "scoped"}, 2)  # line 6: self.size only
    assert decided(code, "mod.size") == ({1: "scoped", 6: "scoped"}, 3)  # line 6: the bare size only


def test_self_reaches_the_methods_class_and_what_it_derives_from_not_other_classes() -> None:
    code = """\
        from lib import Base
        class Client:
            def get(self): ...
            def run(self): return self.get()
        class Other:
            def get(self): ...
            def run(self): return self.get()
        class Child(Client):
            def run(self): return self.get()
        class Override(Client):
            def get(self): return super().get()
            def run(self): return self.get()
        class Unknown(Base):
            def run(self): return self.get()
        """
    lines, excluded = decided(code, "Client.get")
    assert lines == {3: "scoped", 4: "scoped", 9: "scoped", 11: "scoped", 14: "name"}  # Base may derive from Client
    assert excluded == 4 and all_uses(code, "get") == 9  # Other's two, Override's def and its self.get


def test_an_objects_class_from_its_assignments_and_annotations() -> None:
    code = """\
        class Client:
            def get(self): ...
        class Other:
            def get(self): ...
        def run(param: Client, other: "Other", unknown):
            made = Client()
            made.get()
            Client().get()
            Client.get(made)
            param.get()
            other.get()
            Other().get()
            unknown.get()
            {}.get(1)
            dict.get({}, 1)
        """
    lines, excluded = decided(code, "Client.get")
    assert lines == {2: "scoped", 7: "scoped", 8: "scoped", 9: "scoped", 10: "scoped", 13: "name"}
    assert excluded == 5  # Other's def, other.get, Other().get, a dict's get twice (the standard library's classes
    # cannot derive from the workspace's)


def test_an_attributes_class_from_what_the_class_assigns_it_and_declares() -> None:
    code = """\
        from lib import make
        class Client:
            def get(self): ...
        class Holder:
            declared: Client
            def __init__(self, factory):
                self.client = Client()
                self.maybe = None
                self.maybe = Client()
                self.typed: Client = factory()
                self.made = make()
                self.plain = {}
            def run(self):
                self.client.get(); self.maybe.get(); self.declared.get(); self.typed.get()
                self.made.get()
                self.plain.get()
                cast(Client, self.made).get()
        """
    lines, excluded = decided(code, "Client.get")
    assert lines == {3: "scoped", 14: "scoped", 15: "name", 17: "scoped"}  # make() could make anything
    assert excluded == 1 and all_uses(code, "get") == 8  # a dict's get


def test_a_with_statements_target_and_the_result_of_a_function_annotated_to_return_the_class() -> None:
    code = """\
        class Session:
            def get(self): ...
            def clone(self) -> "Session": ...
        def make() -> Session: ...
        def other(): ...
        def run():
            with Session() as session:
                session.get()
            made = make(); made.get()
            unknown = other(); unknown.get()
            Session().clone().get()
        """
    assert decided(code, "Session.get") == ({2: "scoped", 8: "scoped", 9: "scoped", 10: "name", 11: "name"}, 0)


def test_a_module_lists_its_names_in_all() -> None:
    code = """\
        __all__ = ["get", "post"]
        __all__ += ("get",)
        def get(): ...
        """
    text = textwrap.dedent(code)
    found = scoped_uses(text, "get", "m.py", readings("m.get"))
    assert found is not None and [use[:3] for use in found["uses"]] == [[0, 12, "scoped"], [1, 13, "scoped"], [2, 4, "scoped"]]


def test_a_class_of_another_module_derives_from_the_readings_only_if_a_class_statement_says_so() -> None:
    code = """\
        from .models import Child, Unrelated
        from .helpers import Mixin
        def run(child: Child, other: Unrelated, mixed: Mixin):
            child.get(); other.get(); mixed.get()
        """
    base = Reading(("pkg", "base"), "Base", (), True, frozenset({"Child"}))
    # Child derives from Base (it may override get: by name); Unrelated and Mixin do not
    assert decided(code, "get", "pkg/run.py", [base]) == ({4: "name"}, 2)
    unknown = Reading(("pkg", "base"), "Base", (), True, None)  # the class statements were not all read
    found = scoped_uses(textwrap.dedent(code), "get", "pkg/run.py", [unknown])
    assert found is not None and [use[2] for use in found["uses"]] == ["name"] * 3


def test_string_annotations_and_casts_are_read_as_code_at_their_own_columns() -> None:
    code = """\
        class Node: ...
        def parent(node: "Node", rest: "list[Node]") -> "Node | None":
            return cast("Node", node)
        label = "Node"
        """
    text = textwrap.dedent(code)
    found = scoped_uses(text, "Node", "tree.py", readings("tree.Node"))
    assert found is not None
    places = [(line + 1, column) for line, column, label, _ in found["uses"] if label == "scoped"]
    lines = text.split("\n")
    assert all(lines[line - 1][column:column + 4] == "Node" for line, column in places)
    assert [line for line, _ in places] == [1, 2, 2, 2, 3]  # not the plain string of line 4


def test_the_calls_of_a_class_are_the_uses_of_its_constructor() -> None:
    code = """\
        class Client:
            def __init__(self): ...
        class Other:
            def __init__(self): ...
        made = Client()
        Other()
        """
    assert decided(code, "Client.__init__") == ({2: "scoped", 5: "scoped"}, 1)


def test_globals_and_nested_functions() -> None:
    code = """\
        counter = 0
        def bump():
            global counter
            counter = counter + 1
        def outer():
            def counter():
                return 1
            return counter()
        """
    lines, excluded = decided(code, "mod.counter")
    assert lines == {1: "scoped", 3: "name", 4: "scoped"} and excluded == 2  # outer's own counter
    assert decided(code, "counter")[0] == {1: "scoped", 3: "name", 4: "scoped", 6: "scoped", 8: "scoped"}


def test_module_paths_are_dotted_from_the_workspace() -> None:
    assert module_path("src/requests/sessions.py") == ("src", "requests", "sessions")
    assert module_path("pkg/__init__.py") == ("pkg",)
    assert module_path("./tool.pyi") == ("tool",)


def test_text_that_does_not_parse_is_left_to_the_name_search() -> None:
    assert scoped_uses("print 'hello'\n", "print", "old.py", readings("print")) is None
    deep = "x = " + "(" * 1000 + ")" * 1000 + "\n"
    assert scoped_uses(deep, "x", "deep.py", readings("x")) is None


# -- across modules, through find_references ---------------------------------------------------------
def workspace(tmp_path: Path) -> Roots:
    files = {
        "pkg/__init__.py": "from .api import get\n",
        "pkg/api.py": "def get(url):\n    return url\n\n\ndef head(url):\n    return get(url)\n",
        "pkg/other.py": "def get(url):\n    return None\n",
        "app.py": "from pkg import get\nimport pkg.api\n\nget('a')\npkg.api.get('b')\n",
        "elsewhere.py": "from pkg.other import get\nimport pkg.other as other\n\nget('c')\nother.get('d')\n",
        "own.py": "def get(url):\n    return url\n\n\nget('e')\n",
        "py2.py": "print 'old'\nget('f')\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return Roots([str(tmp_path)])


def uses(roots: Roots, query: str) -> tuple[list[tuple[str, int, str]], dict[str, object]]:
    found = find_references(Context(None, 1, "tools/call", {}), roots, query, ".", 100).structured
    assert found is not None
    references = found["references"]
    assert isinstance(references, list)
    return [(item["path"], item["line"], item["precision"]) for item in references], found


def test_an_import_binds_a_name_to_its_module_and_a_package_may_export_it_again(tmp_path: Path) -> None:
    roots = workspace(tmp_path)
    found, data = uses(roots, "api.get")
    assert found == [("app.py", 5, "scoped"), ("pkg/__init__.py", 1, "scoped"), ("pkg/api.py", 1, "scoped"),
                     ("pkg/api.py", 6, "scoped"),
                     ("app.py", 1, "name"), ("app.py", 4, "name"), ("py2.py", 2, "name")]  # scoped first
    assert data["excluded"] == 6  # other.py's, elsewhere.py's and own.py's
    assert data["definitions"] == [{"path": "pkg/api.py", "line": 1, "qualified_name": "get", "kind": "function"}]
    assert len(uses(roots, "get")[0]) == 13  # the name alone: every definition's uses, elsewhere's included


def test_a_qualified_name_with_no_definition_in_the_workspace_is_read_from_its_words(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("import json\nimport other\n\njson.loads('1')\nother.loads('2')\n")
    found, data = uses(Roots([str(tmp_path)]), "json.loads")
    # `other` could be a package that exports json's loads again: without json's source, only by name
    assert found == [("a.py", 4, "scoped"), ("a.py", 5, "name")] and data["definitions"] == []
    text = find_references(Context(None, 1, "tools/call", {}), Roots([str(tmp_path)]), "json.loads", ".", 100).content
    assert "[No definition of json.loads under the workspace root: its uses were read from the words of the " \
           "name alone.]" in str(text)


# -- the review's cases ------------------------------------------------------------------------------------
def test_a_packages_init_imports_relative_to_itself() -> None:
    code = "from .api import get\nfrom . import api\napi.get()\n"
    exact = [Reading(("src", "requests", "api"), None, (), True)]
    assert decided(code, "get", "src/requests/__init__.py", exact) == ({1: "scoped", 3: "scoped"}, 0)
    assert decided(code, "get", "src/requests/sessions.py", exact) == ({1: "scoped", 3: "scoped"}, 0)
    assert decided(code, "get", "src/other/__init__.py", exact) == ({}, 2)  # src.other.api is another module


def test_a_name_rebound_to_an_unknown_value_is_no_longer_known() -> None:
    code = """\
        class Session:
            def get(self): ...
        class Other:
            def get(self): ...
        def run(sessions):
            v = Other()
            for v in sessions:
                v.get()
            if (w := Session()):
                w.get()
        """
    assert decided(code, "Session.get") == ({2: "scoped", 8: "name", 10: "scoped"}, 1)


def test_a_subclass_that_sets_an_inherited_attribute_uses_it() -> None:
    code = """\
        class Base:
            def __init__(self):
                self.timeout = 1
        class Child(Base):
            def __init__(self):
                self.timeout = 2
            def wait(self):
                return self.timeout
        """
    assert decided(code, "Base.timeout") == ({3: "scoped", 6: "scoped", 8: "scoped"}, 0)


def test_a_def_under_global_binds_the_module_name() -> None:
    code = "def setup():\n    global get\n    def get(): ...\nget()\n"
    assert decided(code, "mod.get")[0] == {2: "name", 3: "scoped", 4: "scoped"}


def test_literal_values_and_annotated_metadata_are_not_code() -> None:
    code = "def f(x: Literal['get'], y: Annotated[int, 'get'], z: 'get') -> None: ...\ndef get(): ...\n"
    assert decided(code, "mod.get")[0] == {1: "scoped", 2: "scoped"}  # only z's annotation and the def
    found = scoped_uses(code, "get", "mod.py", readings("mod.get"))
    assert found is not None and [use[:2] for use in found["uses"]] == [[0, 55], [1, 4]]


def test_a_byte_order_mark_and_wide_characters_keep_the_columns_right() -> None:
    text = "\ufeffx = 'é' ; get = 1 ; print(get, 'ü', get)\n"
    found = scoped_uses(text, "get", "mod.py", readings("get"))
    assert found is not None
    assert [text[column:column + 3] for _, column, _, _ in found["uses"]] == ["get"] * 3
    many = "s = 'é'\nget = 0\n" + "x = ['é', " + ", ".join(["get"] * 20_000) + "]\n"  # one long line, quickly
    found = scoped_uses(many, "get", "mod.py", readings("get"))
    assert found is not None and len(found["uses"]) == 20_001


def test_a_module_level_variable_holds_its_class() -> None:
    code = "class Session:\n    def get(self): ...\nshared = Session()\nshared.get()\n"
    assert decided(code, "Session.get") == ({2: "scoped", 4: "scoped"}, 0)


def test_a_name_only_in_all_is_still_a_use(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "api.py").write_text("def get(): ...\n")
    (tmp_path / "pkg" / "__init__.py").write_text("from .api import *\n__all__ = ['get']\n")
    found, _ = uses(Roots([str(tmp_path)]), "api.get")
    assert found == [("pkg/__init__.py", 2, "scoped"), ("pkg/api.py", 1, "scoped")]


def test_match_patterns_bind_names_and_read_a_classs_attributes() -> None:
    code = """\
        class Point:
            x = 0
        def where(value, x):
            match value:
                case Point(x=0):
                    return x
                case [1, *x]:
                    return x
        """
    assert decided(code, "Point.x") == ({2: "scoped", 5: "scoped"}, 4)  # the parameter, the capture and their uses


def test_the_worker_keeps_the_trees_of_the_last_texts_within_its_bound() -> None:
    from shipcode_mcp.workspace.code.pyscopes import _Trees

    trees = _Trees(limit=30)
    first = trees.parsed("a = 1\n")
    assert first is not None and trees.parsed("a = 1\n") is first  # parsed once
    assert trees.parsed("print 'x'\n") is None and trees.parsed("print 'x'\n") is None
    trees.parsed("b = 2\n" * 4)  # 24 characters: the first text goes
    again = trees.parsed("a = 1\n")
    assert again is not None and again is not first
    assert trees.parsed("c = 3\n" * 10) is not None  # longer than the bound: parsed, not kept


def test_a_variables_annotation_is_read_only_where_its_values_say_no_class() -> None:
    code = """\
        from typing import Any, Optional
        class Session:
            def get(self):
                pass
        def use(make):
            a: Any = Session()
            a.get()
            b: Optional[Session] = Session()
            b.get()
            c: Session = make()
            c.get()
        """
    assert decided(code, "Session.get") == ({3: "scoped", 7: "scoped", 9: "scoped", 11: "scoped"}, 0)

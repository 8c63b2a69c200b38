"""The outline of one fixture file per language (tests/data/code), against definitions listed by hand:
kind, qualified name, and the line range (with decorators, attributes and the doc comment above)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("ast_grep_py")

from shipcode_mcp.workspace.code.outline import outline_source
from shipcode_mcp.workspace.code.symbols import LANGUAGES, language_for, walk

DATA = Path(__file__).resolve().parents[2] / "data" / "code"

EXPECTED: dict[str, list[tuple[str, str, int, int]]] = {
    "Sample.java": [
        ("interface", "Shape", 6, 9),
        ("method", "Shape.area", 8, 8),
        ("class", "Circle", 11, 29),
        ("field", "Circle.PI", 12, 12),
        ("field", "Circle.radius", 13, 13),
        ("constructor", "Circle.Circle", 15, 17),
        ("method", "Circle.area", 19, 22),
        ("class", "Circle.Builder", 24, 28),
        ("method", "Circle.Builder.build", 25, 27),
        ("enum", "Color", 31, 38),
        ("constant", "Color.RED", 32, 32),
        ("constant", "Color.GREEN", 33, 33),
        ("method", "Color.warm", 35, 37),
        ("class", "Pair", 40, 40),
        ("field", "Pair.a", 40, 40),
        ("field", "Pair.b", 40, 40),
    ],
    "sample.c": [
        ("macro", "MAX", 4, 4),
        ("macro", "SQUARE", 5, 5),
        ("struct", "point", 7, 10),
        ("field", "point.x", 8, 8),
        ("field", "point.y", 9, 9),
        ("type", "point_t", 12, 12),
        ("enum", "color", 14, 14),
        ("constant", "color.RED", 14, 14),
        ("constant", "color.GREEN", 14, 14),
        ("variable", "counter", 16, 16),
        ("function", "add", 18, 21),
        ("function", "name_of", 23, 25),
        ("function", "main", 27, 30),
    ],
    "sample.cpp": [
        ("module", "geo", 4, 27),
        ("class", "geo.Shape", 6, 10),
        ("method", "geo.Shape.~Shape", 8, 8),
        ("method", "geo.Shape.area", 9, 9),
        ("class", "geo.Circle", 12, 19),
        ("constructor", "geo.Circle.Circle", 14, 14),
        ("method", "geo.Circle.area", 15, 15),
        ("field", "geo.Circle.r_", 18, 18),
        ("struct", "geo.Point", 21, 23),
        ("field", "geo.Point.x", 22, 22),
        ("function", "geo.Circle_perimeter", 25, 25),
        ("function", "maximum", 29, 32),
        ("function", "geo.Circle_perimeter", 34, 36),
        ("function", "main", 38, 40),
    ],
    "sample.cs": [
        ("module", "Sample", 4, 34),
        ("interface", "Sample.IShape", 6, 10),
        ("method", "Sample.IShape.Area", 9, 9),
        ("class", "Sample.Circle", 12, 24),
        ("field", "Sample.Circle.radius", 14, 14),
        ("constructor", "Sample.Circle.Circle", 16, 19),
        ("property", "Sample.Circle.Radius", 21, 21),
        ("method", "Sample.Circle.Area", 23, 23),
        ("struct", "Sample.Point", 26, 29),
        ("field", "Sample.Point.X", 28, 28),
        ("enum", "Sample.Color", 31, 31),
        ("constant", "Sample.Color.Red", 31, 31),
        ("constant", "Sample.Color.Green", 31, 31),
        ("class", "Sample.Pair", 33, 33),
        ("property", "Sample.Pair.A", 33, 33),
        ("property", "Sample.Pair.B", 33, 33),
    ],
    "sample.go": [
        ("constant", "MaxSize", 6, 6),
        ("variable", "counter", 8, 8),
        ("interface", "Shape", 11, 13),
        ("method", "Shape.Area", 12, 12),
        ("struct", "Rect", 16, 18),
        ("field", "Rect.W", 17, 17),
        ("type", "ID", 20, 20),
        ("method", "Rect.Area", 22, 25),
        ("function", "NewRect", 27, 29),
        ("function", "main", 31, 33),
    ],
    "sample.js": [
        ("constant", "LIMIT", 4, 4),
        ("function", "add", 6, 9),
        ("function", "square", 11, 11),
        ("class", "Counter", 13, 26),
        ("constructor", "Counter.constructor", 14, 17),
        ("method", "Counter.increment", 19, 21),
        ("method", "Counter.create", 23, 25),
        ("function", "ids", 28, 30),
    ],
    "sample.kt": [
        ("constant", "MAX", 4, 4),
        ("variable", "greeting", 6, 6),
        ("interface", "Shape", 8, 11),
        ("method", "Shape.area", 10, 10),
        ("class", "Circle", 13, 19),
        ("property", "Circle.radius", 13, 13),
        ("method", "Circle.area", 14, 14),
        ("class", "Circle.Companion", 16, 18),
        ("method", "Circle.Companion.unit", 17, 17),
        ("class", "Registry", 21, 27),
        ("property", "Registry.shapes", 22, 22),
        ("method", "Registry.register", 24, 26),
        ("enum", "Color", 29, 31),
        ("constant", "Color.RED", 30, 30),
        ("constant", "Color.GREEN", 30, 30),
        ("type", "Shapes", 33, 33),
        ("function", "main", 35, 37),
    ],
    "sample.lua": [
        ("variable", "M", 1, 2),
        ("constant", "MAX", 4, 4),
        ("function", "add", 6, 9),
        ("function", "helper", 11, 13),
        ("function", "M.greet", 15, 17),
        ("method", "M.method", 19, 21),
        ("function", "M.square", 23, 25),
    ],
    "sample.php": [
        ("module", "App", 2, 3),
        ("constant", "VERSION", 5, 5),
        ("interface", "Shape", 7, 10),
        ("method", "Shape.area", 9, 9),
        ("trait", "Named", 12, 18),
        ("method", "Named.name", 14, 17),
        ("class", "Circle", 20, 36),
        ("property", "Circle.$radius", 25, 25),
        ("constructor", "Circle.__construct", 27, 30),
        ("method", "Circle.area", 32, 35),
        ("enum", "Suit", 38, 41),
        ("constant", "Suit.Hearts", 40, 40),
        ("function", "helper", 43, 46),
    ],
    "sample.py": [
        ("constant", "MAX_SIZE", 5, 5),
        ("variable", "default_name", 6, 6),
        ("function", "top", 9, 15),
        ("function", "top.inner", 12, 13),
        ("function", "decorated", 18, 21),
        ("class", "Shape", 24, 38),
        ("field", "Shape.sides", 27, 27),
        ("method", "Shape.__init__", 29, 30),
        ("method", "Shape.area", 32, 34),
        ("class", "Shape.Inner", 36, 38),
        ("method", "Shape.Inner.deep", 37, 38),
        ("function", "fetch", 41, 43),
    ],
    "sample.rb": [
        ("constant", "MAX", 4, 4),
        ("module", "Geometry", 6, 23),
        ("class", "Geometry.Shape", 8, 22),
        ("method", "Geometry.Shape.initialize", 11, 13),
        ("method", "Geometry.Shape.area", 15, 17),
        ("method", "Geometry.Shape.create", 19, 21),
        ("function", "helper", 25, 27),
    ],
    "sample.rs": [
        ("constant", "MAX", 4, 4),
        ("constant", "GREETING", 5, 5),
        ("struct", "Point", 7, 12),
        ("field", "Point.x", 10, 10),
        ("field", "Point.y", 11, 11),
        ("enum", "Shape", 14, 17),
        ("constant", "Shape.Circle", 15, 15),
        ("constant", "Shape.Square", 16, 16),
        ("trait", "Area", 19, 21),
        ("method", "Area.area", 20, 20),
        ("module", "Shape", 23, 30),
        ("method", "Shape.area", 24, 29),
        ("module", "Point", 32, 37),
        ("method", "Point.new", 33, 36),
        ("type", "Pair", 39, 39),
        ("macro", "square", 41, 45),
        ("module", "inner", 47, 49),
        ("function", "inner.helper", 48, 48),
        ("function", "main", 51, 53),
    ],
    "sample.scala": [
        ("trait", "Shape", 4, 7),
        ("method", "Shape.area", 6, 6),
        ("class", "Circle", 9, 11),
        ("method", "Circle.area", 10, 10),
        ("class", "Registry", 13, 19),
        ("constant", "Registry.limit", 14, 14),
        ("method", "Registry.register", 16, 18),
        ("class", "Box", 21, 23),
        ("method", "Box.double", 22, 22),
        ("type", "Shapes", 25, 25),
        ("function", "helper", 27, 27),
    ],
    "sample.sh": [
        ("constant", "MAX", 5, 5),
        ("variable", "name", 6, 6),
        ("function", "greet", 8, 11),
        ("function", "cleanup", 13, 15),
        ("function", "main", 17, 20),
    ],
    "sample.swift": [
        ("constant", "maxSize", 4, 4),
        ("interface", "Shape", 6, 9),
        ("method", "Shape.area", 8, 8),
        ("struct", "Circle", 11, 21),
        ("property", "Circle.radius", 12, 12),
        ("constructor", "Circle.init", 14, 16),
        ("method", "Circle.area", 18, 20),
        ("class", "Registry", 23, 29),
        ("property", "Registry.shapes", 24, 24),
        ("method", "Registry.add", 26, 28),
        ("enum", "Color", 31, 34),
        ("constant", "Color.red", 32, 32),
        ("constant", "Color.green", 33, 33),
        ("module", "Circle", 36, 40),
        ("method", "Circle.diameter", 37, 39),
        ("type", "Shapes", 42, 42),
        ("function", "helper", 44, 46),
    ],
    "sample.ts": [
        ("interface", "Point", 1, 6),
        ("property", "Point.x", 3, 3),
        ("property", "Point.y", 4, 4),
        ("method", "Point.norm", 5, 5),
        ("type", "Id", 8, 8),
        ("enum", "Color", 10, 13),
        ("constant", "Color.Red", 11, 11),
        ("constant", "Color.Green", 12, 12),
        ("constant", "ORIGIN", 15, 15),
        ("class", "Repo", 17, 29),
        ("field", "Repo.items", 19, 19),
        ("constructor", "Repo.constructor", 21, 21),
        ("method", "Repo.add", 23, 26),
        ("method", "Repo.find", 28, 28),
        ("function", "distance", 31, 33),
        ("module", "Geometry", 35, 39),
        ("function", "Geometry.area", 36, 38),
    ],
    "sample.tsx": [
        ("interface", "ButtonProps", 4, 6),
        ("property", "ButtonProps.label", 5, 5),
        ("function", "Button", 8, 10),
        ("function", "Card", 12, 14),
        ("class", "Panel", 16, 20),
        ("method", "Panel.render", 17, 19),
    ],
}


def _language(name: str) -> str:
    """The language of the fixture `name` (each has one)."""
    language = language_for(name)
    assert language is not None, name
    return language


def test_every_language_has_a_fixture() -> None:
    assert sorted({_language(name) for name in EXPECTED}) == sorted(LANGUAGES)
    assert sorted(path.name for path in DATA.iterdir()) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_outline_finds_the_definitions_listed_by_hand(name: str) -> None:
    path = DATA / name
    language = language_for(str(path))
    assert language is not None
    found = [(s.kind, s.qualified_name, s.line, s.end_line) for s in walk(outline_source(path.read_text(), language))]
    assert found == EXPECTED[name]


def test_python_conventions() -> None:
    """line includes decorators, def_line is the `def` (ast's lineno), end_line is the body's last line
    (trailing comments left out), nested functions are children, methods are named Class.method."""
    text = ("import x\n\n@a\n@b(1)\ndef f(\n    x,\n):\n    def g():\n        pass\n    return g\n    # trailing\n\n"
            "class C:\n    def m(self): ...\n")
    f, c = outline_source(text, "python")  # `import x` defines nothing
    assert (f.name, f.line, f.def_line, f.end_line, f.signature) == ("f", 3, 5, 10, "def f( x, )")
    assert [(s.qualified_name, s.kind) for s in f.children] == [("f.g", "function")]
    assert [(s.qualified_name, s.kind, s.line, s.end_line) for s in c.children] == [("C.m", "method", 14, 14)]


def test_doc_comments_and_attributes_belong_to_the_definition_but_not_a_comment_after_a_blank_line() -> None:
    text = "// unrelated\n\n/// Doc.\n#[inline]\nfn a() {}\nlet_me = 1; // trailing\nfn b() {}\n"
    a, b = outline_source(text, "rust")
    assert (a.name, a.line, a.def_line) == ("a", 3, 5)
    assert (b.name, b.line) == ("b", 7)


def test_a_syntax_error_still_outlines_the_rest() -> None:
    symbols = outline_source("def ok():\n    pass\n\ndef broken(:\n\nclass After:\n    pass\n", "python")
    assert "ok" in [s.name for s in symbols]
    assert "After" in [s.name for s in symbols]


def test_language_for_reads_the_file_name() -> None:
    assert language_for("a/b/c.PY") == "python"
    assert language_for("x.tsx") == "tsx"
    assert language_for("lib.h") == "c"
    assert language_for("Rakefile") == "ruby"
    assert language_for("notes.txt") is None


CPP_DECLARATORS = """struct A {
  A &operator=(const A &other) { return *this; }
  int *ptr() { return 0; }
  ~A() {}
  A();
  bool operator==(const A&) const;
  A &operator<<(int);
};
int *make() { return 0; }
void Foo::bar() {}
A::A() {}
A::~A() {}
template <typename T>
T *build(T x) { return 0; }
template <typename T> void Foo<std::vector<T>>::baz() {}
A &A::operator=(A &&o) { return *this; }
bool operator<=>(const A &, const A &);
"""


def test_cpp_names_reach_through_reference_pointer_and_qualified_declarators() -> None:
    """`A &operator=(...)` is named operator= (a reference_declarator wraps the function_declarator); an
    out-of-class definition `void Foo::bar()` is named bar, qualified Foo.bar (template arguments left out);
    `A::A` is a constructor and `A::~A` a method even outside their class."""
    found = [(s.kind, s.name, s.qualified_name, s.line) for s in walk(outline_source(CPP_DECLARATORS, "cpp"))]
    assert found == [
        ("struct", "A", "A", 1),
        ("method", "operator=", "A.operator=", 2),
        ("method", "ptr", "A.ptr", 3),
        ("method", "~A", "A.~A", 4),
        ("constructor", "A", "A.A", 5),
        ("method", "operator==", "A.operator==", 6),
        ("method", "operator<<", "A.operator<<", 7),
        ("function", "make", "make", 9),
        ("function", "bar", "Foo.bar", 10),
        ("constructor", "A", "A.A", 11),
        ("method", "~A", "A.~A", 12),
        ("function", "build", "build", 13),
        ("function", "baz", "Foo.baz", 15),
        ("function", "operator=", "A.operator=", 16),
        ("function", "operator<=>", "operator<=>", 17),
    ]


def test_c_names_of_functions_returning_pointers() -> None:
    text = ("char **split(const char *s) { return 0; }\nint (*getf(void))(int) { return 0; }\n"
            "struct point *make_point(void);\nconst char *names[] = {\"a\"};\n")
    found = [(s.kind, s.name) for s in walk(outline_source(text, "c"))]
    assert found == [("function", "split"), ("function", "getf"), ("function", "make_point"), ("variable", "names")]


@pytest.mark.parametrize(("language", "text", "expected"), [
    ("typescript", "enum E {\n  A = 1,\n  B,\n}\n", [("enum", "E"), ("constant", "E.A"), ("constant", "E.B")]),
    ("rust", "enum E {\n    V { a: i32 },\n    W,\n}\n",
     [("enum", "E"), ("constant", "E.V"), ("field", "E.V.a"), ("constant", "E.W")]),
    ("cpp", "enum class Mode { Fast = 1, Slow };\n", [("enum", "Mode"), ("constant", "Mode.Fast"), ("constant", "Mode.Slow")]),
    ("kotlin", "data class P(val x: Int, var y: Int, z: Int)\n", [("class", "P"), ("property", "P.x"), ("property", "P.y")]),
    ("go", "type T struct {\n\tA int\n\tc string\n}\n", [("struct", "T"), ("field", "T.A"), ("field", "T.c")]),
])
def test_enum_members_and_record_fields_are_children(language: str, text: str, expected: list[tuple[str, str]]) -> None:
    """Enum members are constants; struct and record fields (record components, Kotlin's val/var
    parameters) are fields or properties, children of their type."""
    assert [(s.kind, s.qualified_name) for s in walk(outline_source(text, language))] == expected


def test_python_assignments_are_the_statements_of_the_module_and_of_class_bodies_only() -> None:
    """Found from those blocks' children (the native search skips assignments) and of an `if` or `try`
    there: not in a function or a method; annotated assignments count, tuple targets do not. Trailing comments and CRLF
    line ends do not extend a definition."""
    text = ("LIMIT = 1\nx: int = 2\na, b = 3, 4\nif True:\n    HIDDEN = 5\ndef f():\n    local = 6\nclass C:\n"
            "    field = 7\n    class D:\n        inner = 8\n    def m(self):\n        self.y = 9\n    # trailing\n\n"
            "# after\n")
    found = [(s.kind, s.qualified_name, s.line, s.end_line) for s in walk(outline_source(text, "python"))]
    assert found == [("constant", "LIMIT", 1, 1), ("variable", "x", 2, 2), ("constant", "HIDDEN", 5, 5),
                     ("function", "f", 6, 7),
                     ("class", "C", 8, 13), ("field", "C.field", 9, 9), ("class", "C.D", 10, 11),
                     ("field", "C.D.inner", 11, 11), ("method", "C.m", 12, 13)]
    crlf = [(s.name, s.line, s.end_line) for s in outline_source("def f():\r\n    pass\r\n    # c\r\n\r\nx = 1\r\n", "python")]
    assert crlf == [("f", 1, 2), ("x", 5, 5)]


TRICKY_PYTHON = '''import os
a = 1; after_semicolon = 2
class OneLine: in_one_line_class = 1
def \\
        continued():
    pass
annotated: int = 1
@staticmethod
async def decorated_async():
    pass
class Holder:
    field_one = 1
    def method_one(self):
        return self.field_one
'''
USES_ONLY = '''from tricky import after_semicolon, continued, annotated, Holder
print(after_semicolon, continued(), annotated, Holder().method_one(), Holder.field_one)
x = {"in_one_line_class": in_one_line_class}  # decorated_async
'''


def test_the_definition_prefilter_finds_every_definition_the_parse_finds(tmp_path: Path) -> None:
    """find_symbol with the definition-shaped prefilter (prefilter.py) answers exactly as without it, for
    every name and qualified name of every fixture in a language that has a shape, and of a Python file with the rare
    shapes (after `;`, in a one-line class, a def continued by a backslash); and it parses fewer files."""
    from shipcode_mcp.context import Context
    from shipcode_mcp.workspace.code.navigate import find_symbol
    from shipcode_mcp.workspace.code.prefilter import definition_test
    from shipcode_mcp.workspace.code.source import CACHE
    from shipcode_mcp.workspace.roots import Roots

    for path in DATA.iterdir():
        (tmp_path / path.name).write_bytes(path.read_bytes())
    (tmp_path / "tricky.py").write_text(TRICKY_PYTHON)
    (tmp_path / "uses.py").write_text(USES_ONLY)
    roots = Roots([str(tmp_path)])
    ctx = Context(None, 1, "tools/call", {})
    names: set[str] = set()
    for path in tmp_path.iterdir():
        language = language_for(path.name)
        assert language is not None
        if definition_test(language, "x") is None:
            continue  # no shape: every file that mentions the name is parsed, as without the prefilter
        for symbol in walk(outline_source(path.read_text(), language)):
            names.update((symbol.name, symbol.qualified_name))
    names.update(("in_one_line_class", "after_semicolon", "continued", "*_one", "Holder.*", "decorated_*"))
    answered = 0
    for name in sorted(names):
        CACHE.clear()
        filtered = find_symbol(ctx, roots, name, None, ".", 1000, prefilter=True)
        CACHE.clear()
        unfiltered = find_symbol(ctx, roots, name, None, ".", 1000, prefilter=False)
        assert filtered.structured is not None and unfiltered.structured is not None
        assert filtered.structured["symbols"] == unfiltered.structured["symbols"], name
        answered += bool(filtered.structured["symbols"])
    assert answered == len(names)
    for name in ("after_semicolon", "in_one_line_class", "continued", "decorated_async", "field_one"):
        CACHE.clear()
        misses = CACHE.misses
        found = find_symbol(ctx, roots, name, None, ".", 1000, prefilter=True)
        assert found.structured is not None and [item["path"] for item in found.structured["symbols"]] == ["tricky.py"]
        assert CACHE.misses - misses == 1, name  # uses.py mentions it but is not parsed

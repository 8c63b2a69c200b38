"""replace_symbol and insert_symbol through the server, on the sample of every outlined language and on click's
own source (its sdist from PyPI, pinned by hash, as the accuracy tests fetch it)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from support import REPO, fetched_corpora, load_script
from workspace_support import Tools, snapshot

pytest.importorskip("ast_grep_py")

SAMPLES = sorted(path.name for path in (REPO / "tests" / "data" / "code").iterdir())


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    shutil.copytree(REPO / "tests" / "data" / "code", root)
    return root


def _symbols(tools: Tools, path: str) -> list[dict[str, Any]]:
    return list(tools.data("outline", {"path": path, "depth": 20})["symbols"])


@pytest.mark.parametrize("sample", SAMPLES)
def test_a_symbol_replaced_by_itself_leaves_the_file_as_it_was_and_one_inserted_lands_beside_it(
        project: Path, sample: str) -> None:
    """The extent (decorators, doc comment), the indentation and the line ends round-trip exactly in every
    language; a copy inserted after a symbol is found there by the outline, and the file still parses."""
    with Tools(project, write=True) as tools:
        symbols = _symbols(tools, sample)
        nested = [symbol for symbol in symbols if symbol["depth"] > 0 and symbol["kind"] in ("method", "function")]
        names = [symbol["qualified_name"] for symbol in symbols]
        chosen = next((symbol for symbol in nested + symbols if names.count(symbol["qualified_name"]) == 1), None)
        assert chosen is not None, symbols
        original = (project / sample).read_bytes()
        source = tools.data("read_symbol", {"path": sample, "name": chosen["qualified_name"]})["text"]
        result = tools.data("replace_symbol", {"path": sample, "name": chosen["qualified_name"], "text": source})
        assert result["diff"] == "" and (project / sample).read_bytes() == original, sample
        tools.call("insert_symbol", {"path": sample, "name": chosen["qualified_name"], "position": "after",
                                     "text": source})
        after = [symbol for symbol in _symbols(tools, sample) if symbol["qualified_name"] == chosen["qualified_name"]]
        assert len(after) == 2 and after[1]["line"] > after[0]["end_line"], (sample, after)
        findings = tools.data("diagnostics", {"path": sample, "severity": "error"})["findings"]
        assert not [finding for finding in findings if finding["code"] == "syntax-error"], findings


def test_replace_and_insert_in_python_keep_the_layout_of_the_file(project: Path) -> None:
    (project / "m.py").write_text('class A:\n    """Doc."""\n\n    def f(self):\n        return 1\n\n    @property\n'
                                  '    def g(self):\n        return 2\n\n\ndef top():\n    pass\n')
    with Tools(project, write=True) as tools:
        tools.call("replace_symbol", {"path": "m.py", "name": "A.f", "text": "def f(self):\n    return 10\n"})
        tools.call("insert_symbol", {"path": "m.py", "name": "A", "position": "end", "text": "def z(self):\n    pass\n"})
        tools.call("insert_symbol", {"path": "m.py", "name": "top", "position": "before", "text": "def first():\n    pass"})
        tools.call("insert_symbol", {"path": "m.py", "position": "end", "text": "X = 1\n"})
    assert (project / "m.py").read_text() == (
        'class A:\n    """Doc."""\n\n    def f(self):\n        return 10\n\n    @property\n    def g(self):\n'
        '        return 2\n\n    def z(self):\n        pass\n\n\ndef first():\n    pass\n\n\ndef top():\n    pass\n\n\nX = 1\n')


def test_braces_crlf_and_tabs_are_the_files_own(project: Path) -> None:
    (project / "w.go").write_bytes(b"package w\r\n\r\ntype S struct {\r\n\tA int\r\n}\r\n\r\nfunc (s S) F() int {\r\n"
                                   b"\treturn 1\r\n}\r\n")
    with Tools(project, write=True) as tools:
        tools.call("insert_symbol", {"path": "w.go", "name": "S.F", "position": "after",
                                     "text": "func (s S) G() int {\n    return 2\n}\n"})
        tools.call("replace_symbol", {"path": "w.go", "name": "S.F", "text": "func (s S) F() int {\n\treturn 3\n}"})
    assert (project / "w.go").read_bytes() == (b"package w\r\n\r\ntype S struct {\r\n\tA int\r\n}\r\n\r\n"
                                               b"func (s S) F() int {\r\n\treturn 3\r\n}\r\n\r\n"
                                               b"func (s S) G() int {\r\n    return 2\r\n}\r\n")


def test_what_cannot_be_done_is_said_and_nothing_is_written(project: Path) -> None:
    (project / "two.py").write_text("class A:\n    def f(self):\n        pass\n\n\nclass B:\n    def f(self):\n        pass\n")
    before = snapshot(project)
    with Tools(project, write=True) as tools:
        assert tools.error("replace_symbol", {"path": "two.py", "name": "f", "text": "def f(self): pass"}) == (
            "'f' names 2 symbols in two.py: A.f (method, lines 2-3), B.f (method, lines 7-8). Name one by its "
            "qualified name (Class.method), or give line: a line of the one meant")
        assert tools.error("replace_symbol", {"path": "two.py", "name": "g", "text": "x"}).startswith("No symbol 'g'")
        assert tools.error("insert_symbol", {"path": "two.py", "position": "before", "text": "x = 1"}) == (
            "position before needs the name of the symbol to insert before")
        assert "position end puts code at the end of a class" in tools.error("insert_symbol", {
            "path": "two.py", "name": "A.f", "position": "end", "text": "x = 1"})
        assert "syntax errors" in tools.error("replace_symbol", {"path": "two.py", "name": "B.f", "text": "def f(:"})
        assert "Unknown tool" not in tools.error("replace_symbol", {"path": "notes.txt", "name": "x", "text": "y"})
    assert snapshot(project) == before


def _click(tmp_path: Path) -> Path:
    """A copy of click 8.1.7's sdist (fetched once, pinned by hash, as the accuracy benches fetch it)."""
    bench = load_script(REPO / "bench" / "references_precision.py", "bench_references_precision")
    [corpus] = fetched_corpora(bench, "click")
    root = tmp_path / "click"
    shutil.copytree(corpus, root)
    return root


def test_on_real_code_a_method_is_replaced_and_one_added_at_the_end_of_its_class(tmp_path: Path) -> None:
    root = _click(tmp_path)
    core = "click/core.py"
    original = (root / core).read_bytes()
    with Tools(root, write=True) as tools:
        invoke = tools.data("read_symbol", {"path": core, "name": "Command.invoke"})
        assert tools.data("replace_symbol", {"path": core, "name": "Command.invoke", "text": invoke["text"]})["diff"] == ""
        assert (root / core).read_bytes() == original
        tools.call("insert_symbol", {"path": core, "name": "Group", "position": "end",
                                     "text": "def describe(self) -> str:\n    return self.name or ''\n"})
        group = next(symbol for symbol in _symbols(tools, core) if symbol["qualified_name"] == "Group")
        members = [symbol for symbol in _symbols(tools, core) if symbol["qualified_name"].startswith("Group.")]
        assert members[-1]["qualified_name"] == "Group.describe" and members[-1]["end_line"] <= group["end_line"]
        assert tools.data("diagnostics", {"path": core, "severity": "error"})["errors"] == 0


def test_found_in_review_each_refused_or_kept_exact(project: Path) -> None:
    """What a whole-line edit would have broken is refused; strings, tabs and line ends are kept."""
    (project / "one.cpp").write_text("struct A { void f() {} void g() {} };\n")
    (project / "k.kt").write_text("class A { fun f() {} }\n")
    (project / "short.py").write_text("class A: pass\n")
    text = 'class A:\n    def f(self):\n        s = """\nraw\n   kept\n"""\n        return s\n'
    (project / "strings.py").write_text(text)
    (project / "tabs.py").write_text('class A:\n\t"""Doc."""\n')
    (project / "props.py").write_text("class A:\n    @property\n    def x(self):\n        return 1\n\n"
                                      "    @x.setter\n    def x(self, value):\n        pass\n")
    (project / "crlf.py").write_bytes(b"def f():\r\n    return 1")
    with Tools(project, write=True) as tools:
        before = snapshot(project)
        assert "hold code outside A.f" in tools.error("replace_symbol", {"path": "one.cpp", "name": "A.f",
                                                                          "text": "void f() { return; }"})
        for path in ("k.kt", "short.py"):
            assert "has no line of its own that closes it" in tools.error("insert_symbol", {
                "path": path, "name": "A", "position": "end", "text": "fun g() {}"}), path
        assert "unindent does not match" in tools.error("edit_file", {"path": "props.py", "old_text": "    @x.setter",
                                                                      "new_text": "  @x.setter"})  # (the grammar reads it)
        assert snapshot(project) == before
        method = tools.data("read_symbol", {"path": "strings.py", "name": "A.f"})["text"]
        tools.call("replace_symbol", {"path": "strings.py", "name": "A.f", "text": method})
        assert (project / "strings.py").read_text() == text
        tools.call("insert_symbol", {"path": "strings.py", "name": "A.f", "position": "after",
                                     "text": 'def g(self):\n    return """\nraw\n"""\n'})
        assert (project / "strings.py").read_text().endswith('\n\n    def g(self):\n        return """\nraw\n"""\n')
        tools.call("insert_symbol", {"path": "tabs.py", "name": "A", "position": "end", "text": "def g(self):\n    pass"})
        assert (project / "tabs.py").read_text() == 'class A:\n\t"""Doc."""\n\tdef g(self):\n\t    pass\n'
        tools.call("replace_symbol", {"path": "props.py", "name": "A.x", "line": 7,
                                      "text": "@x.setter\ndef x(self, value):\n    self._x = value"})
        assert (project / "props.py").read_text().endswith("    @x.setter\n    def x(self, value):\n        self._x = value\n")
        tools.call("insert_symbol", {"path": "crlf.py", "name": "f", "position": "after", "text": "def g():\n    return 2"})
        assert (project / "crlf.py").read_bytes() == b"def f():\r\n    return 1\r\n\r\n\r\ndef g():\r\n    return 2\r\n"


BODIES = {
    "a.py": ('class A:\n    @property\n    def f(self, x=lambda: 1):\n        """Doc."""\n        # old\n        return 1\n\n'
             '    def g(self):\n        return 2\n\n\ndef h(): return 3\n'),
    "b.go": "package main\n\n// F does it.\nfunc F(a int) int {\n\tif a > 0 {\n\t\treturn a\n\t}\n\treturn 0\n}\n\nfunc G() {}\n",
    "c.js": "class C {\n  m(a) {\n    return a + 1;\n  }\n}\n\nfunction k() {\n}\n",
    "d.rs": 'fn main() {\n    println!("hi");\n}\n',
    "e.java": 'class E {\n    @Override\n    public String toString() {\n        return "e";\n    }\n}\n',
}


def test_a_body_is_replaced_and_the_signature_decorators_and_docstring_stay(tmp_path: Path) -> None:
    for name, text in BODIES.items():
        (tmp_path / name).write_text(text)
    calls = [("a.py", "A.f", "return x() + 41\n"), ("a.py", "A.g", "value = 2\nreturn value\n"),
             ("b.go", "F", "return a * 2\n"), ("c.js", "C.m", "return a - 1;\n"), ("c.js", "k", "return 0;\n"),
             ("d.rs", "main", 'println!("bye");\n'), ("e.java", "E.toString", 'return "E";\n')]
    with Tools(tmp_path, write=True) as tools:
        for path, name, text in calls:
            data = tools.data("replace_symbol", {"path": path, "name": name, "text": text, "body": True})
            assert data["body"] is True and data["qualified_name"] == name
        for path, name in (("a.py", "h"), ("b.go", "G")):
            message = tools.error("replace_symbol", {"path": path, "name": name, "text": "x\n", "body": True})
            assert "shares a line with its header or its braces" in message
    assert (tmp_path / "a.py").read_text() == (
        'class A:\n    @property\n    def f(self, x=lambda: 1):\n        """Doc."""\n        return x() + 41\n\n'
        '    def g(self):\n        value = 2\n        return value\n\n\ndef h(): return 3\n')
    assert (tmp_path / "b.go").read_text() == "package main\n\n// F does it.\nfunc F(a int) int {\n\treturn a * 2\n}\n\nfunc G() {}\n"
    assert (tmp_path / "c.js").read_text() == ("class C {\n  m(a) {\n    return a - 1;\n  }\n}\n\n"
                                               "function k() {\n  return 0;\n}\n")
    assert (tmp_path / "d.rs").read_text() == 'fn main() {\n    println!("bye");\n}\n'
    assert (tmp_path / "e.java").read_text() == ('class E {\n    @Override\n    public String toString() {\n'
                                                 '        return "E";\n    }\n}\n')


def test_on_real_code_each_methods_body_replaced_by_itself_changes_nothing(tmp_path: Path) -> None:
    """click's core.py: the body of every method of Context, Command and Group, as CPython's parser delimits it
    (the lines after the header or the docstring, comments included, to the last statement), given back
    dedented, leaves the file byte for byte as it was."""
    import ast
    import textwrap

    root = _click(tmp_path)
    core = root / "click" / "core.py"
    original = core.read_bytes()
    lines = original.decode().split("\n")
    tree = ast.parse(original)
    methods: list[tuple[str, str]] = []
    for cls in tree.body:
        if isinstance(cls, ast.ClassDef) and cls.name in ("Context", "Command", "Group"):
            for node in cls.body:
                if isinstance(node, ast.FunctionDef) and node.body and node.body[0].lineno > node.lineno:
                    body = node.body[1:] if isinstance(node.body[0], ast.Expr) and isinstance(
                        getattr(node.body[0], "value", None), ast.Constant) else node.body
                    if body and sum(item.name == node.name for item in cls.body if isinstance(item, ast.FunctionDef)) == 1:
                        start = (node.body[0].end_lineno or 0) if body is not node.body else node.body[0].lineno - 1
                        while body is node.body and (not lines[start - 1].strip() or lines[start - 1].strip().startswith("#")):
                            start -= 1  # comments above the first statement are the body's too: up to the header
                        text = "\n".join(lines[start:body[-1].end_lineno or 0])
                        methods.append((f"{cls.name}.{node.name}", textwrap.dedent(text) + "\n"))
    assert len(methods) > 40
    with Tools(root, write=True) as tools:
        for name, text in methods:
            data = tools.data("replace_symbol", {"path": "click/core.py", "name": name, "text": text, "body": True})
            assert data["diff"] == "", (name, data["diff"][:600])
    assert core.read_bytes() == original

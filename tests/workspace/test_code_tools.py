"""The code tools end to end: a real server over stdio, the official SDK client, real files in a temp
folder (the per-language fixtures of tests/data/code and a few files written here)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from support import REPO
from workspace_support import Tools

pytest.importorskip("ast_grep_py")

CODE_TOOLS = ["outline", "find_symbol", "repo_map", "locate", "find_references", "find_definition", "find_implementations",
              "diagnostics", "read_symbol", "search_structure"]
USE = '''from sample import top, Shape

# top is mentioned in a comment
x = top(1)  # "top" in a string: "top"
s = Shape("a").area
'''

OPS = """struct Vec {
  Vec &operator=(const Vec &other);
  ~Vec();
};
Vec &Vec::operator=(const Vec &other) { return *this; }
Vec::~Vec() {}
"""


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("code") / "ws"
    shutil.copytree(REPO / "tests" / "data" / "code", folder / "src")
    (folder / "src" / "use.py").write_text(USE)
    (folder / "src" / "ops.cpp").write_text(OPS)
    (folder / "notes.txt").write_text("top Shape area\n")
    (folder / "ignored").mkdir()
    (folder / ".gitignore").write_text("ignored/\n")
    (folder / "ignored" / "hidden.py").write_text("def top():\n    pass\n")
    return folder


@pytest.fixture(scope="module")
def tools(root: Path) -> Any:
    with Tools(root) as server:
        yield server


def test_the_code_tools_are_read_only_and_follow_the_other_reading_tools(tools: Tools) -> None:
    assert tools.order[-len(CODE_TOOLS):] == CODE_TOOLS
    for name in CODE_TOOLS:
        assert tools.tools[name]["annotations"]["readOnlyHint"] is True
        assert tools.tools[name]["outputSchema"]["type"] == "object"


def test_outline_of_a_file_nests_members_with_line_ranges(tools: Tools) -> None:
    result = tools.call("outline", {"path": "src/sample.py"})
    symbols = result["structuredContent"]["symbols"]
    area = next(s for s in symbols if s["qualified_name"] == "Shape.area")
    assert area == {"name": "area", "qualified_name": "Shape.area", "kind": "method", "path": "src/sample.py",
                    "line": 32, "end_line": 34, "def_line": 33, "signature": "def area(self) -> float", "depth": 1}
    assert "  32-34 method def area(self) -> float" in result["content"][0]["text"].splitlines()
    top = tools.call("outline", {"path": "src/sample.py", "depth": 1})["structuredContent"]["symbols"]
    assert {s["depth"] for s in top} == {0}


def test_outline_of_a_folder_lists_each_file_top_level_only_and_skips_ignored_files(tools: Tools) -> None:
    data = tools.call("outline", {"path": "."})["structuredContent"]
    paths = {s["path"] for s in data["symbols"]}
    assert "src/sample.go" in paths
    assert [(s["name"], s["kind"]) for s in data["symbols"] if s["path"] == "src/use.py"] == [("x", "variable"),
                                                                                             ("s", "variable")]
    assert not any(p.startswith("ignored/") for p in paths)
    assert {s["depth"] for s in data["symbols"]} == {0}
    assert data["truncated"] is False


def test_find_symbol_by_name_qualified_name_glob_and_kind(tools: Tools) -> None:
    found = tools.call("find_symbol", {"name": "Shape.area"})["structuredContent"]["symbols"]
    assert ("src/sample.py", 32, 34) in [(s["path"], s["line"], s["end_line"]) for s in found]
    assert all(s["qualified_name"].endswith("Shape.area") for s in found)
    glob = tools.call("find_symbol", {"name": "Sha*", "kind": "class"})["structuredContent"]["symbols"]
    assert {(s["path"], s["name"]) for s in glob} == {("src/sample.py", "Shape"), ("src/sample.cpp", "Shape"),
                                                      ("src/sample.rb", "Shape")}
    limited = tools.call("find_symbol", {"name": "area", "limit": 2})["structuredContent"]
    assert len(limited["symbols"]) == 2 and limited["truncated"] is True
    none = tools.call("find_symbol", {"name": "no_such_name"})
    assert none["structuredContent"]["symbols"] == [] and "No definition" in none["content"][0]["text"]


def test_find_symbol_finds_cpp_operators_and_destructors_by_name_or_qualified_name(tools: Tools) -> None:
    """Names that end or start with a character that is not a word character (`operator=`, `~Vec`)."""
    for name in ("operator=", "Vec::operator=", "Vec.operator="):
        found = tools.call("find_symbol", {"name": name})["structuredContent"]["symbols"]
        assert [(s["qualified_name"], s["kind"], s["line"]) for s in found] == [
            ("Vec.operator=", "method", 2), ("Vec.operator=", "function", 5)], name
    found = tools.call("find_symbol", {"name": "Vec::~Vec"})["structuredContent"]["symbols"]
    assert [(s["qualified_name"], s["kind"], s["line"]) for s in found] == [("Vec.~Vec", "method", 3),
                                                                            ("Vec.~Vec", "method", 6)]


def test_find_symbol_lists_the_members_of_a_class_with_a_wildcard_last_part(tools: Tools) -> None:
    """`Circle.*`: the direct members of every class Circle (a `*` does not cross a `.`), found in the
    files that mention Circle; a pattern of wildcards only is still refused."""
    found = tools.call("find_symbol", {"name": "Circle.*", "limit": 200})["structuredContent"]
    java = [s["qualified_name"] for s in found["symbols"] if s["path"] == "src/Sample.java"]
    assert java == ["Circle.PI", "Circle.radius", "Circle.Circle", "Circle.area", "Circle.Builder"]
    cpp = [s["qualified_name"] for s in found["symbols"] if s["path"] == "src/sample.cpp"]
    assert cpp == ["geo.Circle.Circle", "geo.Circle.area", "geo.Circle.r_"]
    assert found["truncated"] is False
    methods = tools.call("find_symbol", {"name": "Circle.a*", "kind": "method"})["structuredContent"]["symbols"]
    assert methods and {(s["name"], s["qualified_name"].split(".")[-2]) for s in methods} == {("area", "Circle")}
    for pattern in ("*.*", "*", "?.*"):
        refused = tools.process.call_tool("find_symbol", {"name": pattern}, 30.0)
        assert refused.get("isError") is True, pattern
        assert "not a wildcard" in refused["content"][0]["text"]


def test_find_references_skips_comments_and_strings_and_marks_the_definition(tools: Tools) -> None:
    data = tools.call("find_references", {"name": "top"})["structuredContent"]
    places = [(r["path"], r["line"], r["column"], r["definition"]) for r in data["references"]]
    assert places == [("src/sample.py", 9, 5, True), ("src/use.py", 1, 20, False), ("src/use.py", 4, 5, False)]


def test_read_symbol_shows_the_decorators_and_body_numbered_like_read_file(tools: Tools) -> None:
    result = tools.call("read_symbol", {"path": "src/sample.py", "name": "Shape.area"})
    assert result["structuredContent"]["text"] == "    @property\n    def area(self) -> float:\n        return 0.0"
    assert result["content"][0]["text"].startswith("    32\t    @property\n    33\t    def area(self) -> float:\n")
    rust = tools.call("read_symbol", {"path": "src/sample.rs", "name": "Point.new"})["structuredContent"]
    assert rust["text"].splitlines()[0].strip() == "/// Makes a point."


def test_search_structure_captures_metavariables(tools: Tools) -> None:
    data = tools.call("search_structure", {"pattern": "$F($$$A)", "language": "python", "path": "src/use.py"})
    matches = data["structuredContent"]["matches"]
    assert [(m["line"], m["text"], m["variables"]) for m in matches] == [
        (4, "top(1)", {"F": "top", "A": "1"}), (5, 'Shape("a")', {"F": "Shape", "A": '"a"'})]
    go = tools.call("search_structure", {"pattern": "func ($R *Rect) $M() float64 { $$$ }", "language": "go"})
    assert [m["variables"]["M"] for m in go["structuredContent"]["matches"]] == ["Area"]


@pytest.mark.parametrize(("name", "arguments", "message"), [
    ("search_structure", {"pattern": "x = 1\ny = 2", "language": "python"}, "more than one node"),
    ("search_structure", {"pattern": "x", "language": "cobol"}, "cobol"),
    ("outline", {"path": "src/missing.py"}, "Not found"),
    ("outline", {"path": "/etc/passwd"}, "not inside the workspace roots"),
    ("outline", {"path": "notes.txt"}, "no outline"),
    ("read_symbol", {"path": "src/sample.py", "name": "nothing"}, "No symbol"),
    ("find_references", {"name": "a b"}, "an identifier"),
    ("find_references", {"name": "Session..get"}, "qualified with dots"),
])
def test_errors_are_tool_errors_with_a_clear_message(tools: Tools, name: str, arguments: dict[str, Any], message: str) -> None:
    result = tools.process.call_tool(name, arguments, 30.0)
    assert result.get("isError") is True or "error" in result, result
    text = result["content"][0]["text"] if "content" in result else result["error"]["message"]
    assert message.lower() in text.lower()


def test_official_sdk_client_calls_the_code_tools_with_progress(root: Path) -> None:
    params = StdioServerParameters(command=sys.executable, args=["-m", "shipcode_mcp", str(root)],
                                   env={"PYTHONPATH": str(REPO / "src")})

    async def main() -> None:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            names = [tool.name for tool in (await session.list_tools()).tools]
            assert names[-len(CODE_TOOLS):] == CODE_TOOLS
            reports: list[tuple[float, float | None, str | None]] = []

            async def on_progress(progress: float, total: float | None, message: str | None) -> None:
                reports.append((progress, total, message))

            found = await session.call_tool("find_symbol", {"name": "Circle"}, progress_callback=on_progress)
            assert found.is_error is False and found.structured_content is not None
            kinds = {(s["path"], s["kind"]) for s in found.structured_content["symbols"]}
            assert ("src/Sample.java", "class") in kinds and ("src/sample.swift", "struct") in kinds
            values = [value for value, _, _ in reports]
            assert values == sorted(set(values)) and reports[-1][0] == reports[-1][1]

            outline = await session.call_tool("outline", {"path": "src/sample.ts"})
            assert outline.structured_content is not None
            assert "Repo.add" in [s["qualified_name"] for s in outline.structured_content["symbols"]]
            failed = await session.call_tool("read_symbol", {"path": "/etc/passwd", "name": "x"})
            assert failed.is_error is True

    anyio.run(main)


def test_a_folder_outline_stops_between_files_once_cancelled(tmp_path: Path) -> None:
    """Cancelled while it reports progress on the third file, a folder outline parses no further file
    (in process, with a real Context whose transport cancels the request on that notification)."""
    from shipcode_mcp.context import Cancelled, Context
    from shipcode_mcp.runner import ThreadRunner
    from shipcode_mcp.server import Server
    from shipcode_mcp.workspace.code.navigate import outline
    from shipcode_mcp.workspace.code.source import CACHE
    from shipcode_mcp.workspace.roots import Roots

    for n in range(20):
        (tmp_path / f"m{n:02d}.py").write_text(f"def f{n}():\n    pass\n")

    def send(message: dict[str, Any], related: Any) -> None:
        if message.get("method") == "notifications/progress" and message["params"]["progress"] == 2:
            ctx.cancel()

    ctx = Context(ThreadRunner(Server("tests", "1"), send), 1, "tools/call", {"_meta": {"progressToken": "t"}})
    misses = CACHE.misses
    with pytest.raises(Cancelled):
        outline(ctx, Roots([str(tmp_path)]), ".", None)
    assert CACHE.misses - misses == 2  # m00.py and m01.py only


def test_find_references_asked_again_parses_nothing_until_a_file_changes(tmp_path: Path) -> None:
    """The uses found in a file are cached by (path, size, mtime) and name: the same question again reads
    and parses no file and answers the same; a changed file is parsed again and its new uses counted."""
    import os

    from shipcode_mcp.context import Context
    from shipcode_mcp.workspace.code.references import find_references
    from shipcode_mcp.workspace.code.source import CACHE
    from shipcode_mcp.workspace.roots import Roots

    (tmp_path / "a.py").write_text("def helper():\n    pass\n# helper in a comment\n")
    (tmp_path / "b.py").write_text("from a import helper\nhelper()\ns = 'helper'\n")
    roots = Roots([str(tmp_path)])
    ctx = Context(None, 1, "tools/call", {})
    CACHE.clear()
    first = find_references(ctx, roots, "helper", ".", 100).structured
    misses = CACHE.misses
    again = find_references(ctx, roots, "helper", ".", 100).structured
    assert CACHE.misses == misses and again == first
    assert first is not None and [(item["path"], item["line"], item["definition"]) for item in first["references"]] == [
        ("a.py", 1, True), ("b.py", 1, False), ("b.py", 2, False)]
    changed = tmp_path / "b.py"
    changed.write_text("from a import helper\nhelper()\nhelper(helper)\n")
    os.utime(changed, ns=(1, 1))  # a new mtime even on a coarse clock (and a new size)
    after = find_references(ctx, roots, "helper", ".", 100).structured
    assert after is not None and [(item["path"], item["line"]) for item in after["references"]] == [
        ("a.py", 1), ("b.py", 1), ("b.py", 2), ("b.py", 3), ("b.py", 3)]


def test_the_cache_keeps_outlines_and_references_within_one_bound() -> None:
    """Symbols and references share the cache's bound: past it the least recently used file goes."""
    from shipcode_mcp.workspace.code.source import OutlineCache

    cache = OutlineCache(limit=10)
    cache.put_references(("a", 1, 1, 1, 1), "x", ((1, 1, "x", False, "name"),) * 4)  # 1 + 5 units
    cache.put_references(("b", 1, 1, 1, 1), "x", ((1, 1, "x", False, "name"),) * 2)  # 1 + 3 units: 10 in all
    assert cache.references(("a", 1, 1, 1, 1), "x") is not None  # a is now the most recently used
    cache.put_references(("c", 1, 1, 1, 1), "y", ())  # 1 + 1 units: b goes
    assert cache.references(("b", 1, 1, 1, 1), "x") is None
    assert cache.references(("a", 1, 1, 1, 1), "x") is not None and cache.references(("c", 1, 1, 1, 1), "y") == ()
    assert cache.references(("a", 2, 1, 1, 1), "x") is None  # another version of a


SCANNED = '''import os  # helper in a comment
"""A docstring with helper and an escaped \\""" quote, helper"""
x = 'helper' + "it's helper" + r'\\\\' + helper
y = b"helper"; z = helper.attr + obj.helper
def helper(helper=helper):  # helper
    return rb"{helper}" + u'helper' + \\
        helper
s = \'\'\'
helper \\\'\'\' still helper
\'\'\' + helperish + _helper + helper_ + helper
xhelper\U000e0100 = helper\U000e0100 = 4
'''


def test_pythons_scan_finds_the_uses_the_parse_finds(tmp_path: Path) -> None:
    """find_references on Python scans comments and strings instead of parsing (pyscan.py): the same
    answers as the parse, for names in strings, escapes, triple quotes, prefixes, identifiers that
    continue with a combining character, and every name of the Python fixture; and the parse decides
    for keywords, f-strings, strings that do not end and Python 2's backquotes."""
    from shipcode_mcp.context import Context
    from shipcode_mcp.workspace.code.pyscan import python_uses
    from shipcode_mcp.workspace.code.references import find_references
    from shipcode_mcp.workspace.roots import Roots

    files = {"scanned.py": SCANNED, "sample.py": (REPO / "tests" / "data" / "code" / "sample.py").read_text(),
             "fstring.py": 'x = f"{helper}" + helper\n', "open.py": "x = r'\\' + helper\n",
             "py2.py": "print 'helper'\nx = `helper`\nexec 'helper'\n"}
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    roots = Roots([str(tmp_path)])
    ctx = Context(None, 1, "tools/call", {})
    names = {"helper", "print", "exec", "os", "x", "attr", "obj", "match", "xhelper"}
    names.update(word for word in files["sample.py"].split() if word.isidentifier())
    scanned = 0
    for path, text in files.items():
        for name in sorted(names) if path in ("scanned.py", "sample.py") else ["helper", "x"]:
            fast = find_references(ctx, roots, name, path, 1000, scopes=False).structured
            assert fast == find_references(ctx, roots, name, path, 1000, scan=False, scopes=False).structured, (path, name)
            scanned += python_uses(text, name) is not None
    assert scanned > len(names)  # most were answered by the scan, not the parse
    helper = find_references(ctx, roots, "helper", "scanned.py", 1000, scopes=False).structured
    assert helper is not None and [(item["line"], item["column"], item["definition"]) for item in helper["references"]] == [
        (3, 40, False), (4, 20, False), (4, 38, False), (5, 5, True), (5, 12, False), (5, 19, False), (7, 9, False),
        (10, 39, False)]
    assert python_uses(SCANNED, "helper") is not None
    for path in ("fstring.py", "open.py", "py2.py"):
        assert python_uses(files[path], "helper") is None, path
    assert python_uses(SCANNED, "print") is None and python_uses(SCANNED, "match") is None

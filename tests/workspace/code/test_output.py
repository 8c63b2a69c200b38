"""What the code tools show is the code: a signature without the comment after it, captures that are the
source text and say where they were cut, a text that tells a line break from a backslash and an n, the
skipped files named, and a hint when a pattern matches nothing for a reason of syntax. On files in the
shapes of Django's and rich's code (tests/data/styles)."""

from __future__ import annotations

import ast
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, cast

import pytest

from support import REPO
from workspace_support import Tools

pytest.importorskip("ast_grep_py")

if TYPE_CHECKING:
    from ast_grep_py import SgNode

from shipcode_mcp.workspace.code.outline import outline
from shipcode_mcp.workspace.code.source import MAX_PARSE_LINE, MAX_SKIPPED_NAMED, MAX_SOURCE_BYTES
from shipcode_mcp.workspace.code.structure import MATCH_LINES, MAX_MATCH_CHARS, RESULT_CHARS, SHOWN_CHARS
from shipcode_mcp.workspace.code.symbols import walk

STYLES = REPO / "tests" / "data" / "styles"
DJANGO = (STYLES / "django_style.py").read_text()
RICH = (STYLES / "rich_style.py").read_text()


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("styles")
    shutil.copy(STYLES / "django_style.py", folder)
    shutil.copy(STYLES / "rich_style.py", folder)
    (folder / "main.go").write_text("package main\n\nfunc area(w int, h int) int {\n\treturn w * h\n}\n")
    (folder / "main.ts").write_text("export function area(w: number, h: number): number {\n  return w * h;\n}\n")
    return folder


@pytest.fixture(scope="module")
def tools(root: Path) -> Iterator[Tools]:
    with Tools(root) as server:
        yield server


def _signatures(text: str, language: str) -> dict[str, str]:
    found: dict[str, str] = {}
    stack = list(outline(text, language))
    while stack:
        symbol = stack.pop()
        found[symbol.qualified_name] = symbol.signature
        stack.extend(symbol.children)
    return found


# -- 1. a signature is the header, never the comment after it ----------------------------------------
def test_a_python_signature_leaves_out_the_comment_that_starts_the_body() -> None:
    signatures = _signatures(DJANGO, "python")
    assert signatures["capfirst"] == "def capfirst(x)"  # `def capfirst(x):  # Capitalize ...`
    assert signatures["slugify"] == "def slugify(value, allow_unicode=False)"  # a comment on the next line
    assert signatures["Field.clean"] == "def clean(self, value)"
    assert signatures["Field.__init__"] == "def __init__( self, *, required=True, label=None, initial=None, )"
    assert signatures["Field.error_messages"] == "def error_messages(self)"
    assert signatures["QuerySet.exists"] == "def exists(self)"
    assert all("#" not in signature and not signature.endswith(":") for signature in signatures.values()), signatures


@pytest.mark.parametrize(("language", "text", "expected"), [
    ("python", "class Meta:  # options\n    ordering = ['name']\n", "class Meta"),
    ("javascript", "function area(w, h) // the product\n{\n  return w * h\n}\n", "function area(w, h)"),
    ("rust", "fn area(w: u32, h: u32) -> u32 // the product\n{\n    w * h\n}\n", "fn area(w: u32, h: u32) -> u32"),
    ("c", "int area(int w, int h) /* the product */\n{\n  return w * h;\n}\n", "int area(int w, int h)"),
    ("kotlin", "fun area(w: Int, h: Int): Int // the product\n{\n  return w * h\n}\n", "fun area(w: Int, h: Int): Int"),
    ("scala", "def area(w: Int, h: Int): Int = // the product\n  w * h\n", "def area(w: Int, h: Int): Int"),
    ("ruby", "def area(w, h) # the product\n  w * h\nend\n", "def area(w, h)"),
    ("lua", "function area(w, h) -- the product\n  return w * h\nend\n", "function area(w, h)"),
    ("bash", "area() # the product\n{\n  echo $(($1 * $2))\n}\n", "area()"),
])
def test_no_language_s_signature_holds_the_comment_after_its_header(language: str, text: str, expected: str) -> None:
    signatures = _signatures(text, language)
    assert signatures[expected.split("(")[0].split()[-1]] == expected, signatures


class _Counted:
    """An ast-grep node that counts the `range()` calls made on it and on every node reached from it."""

    def __init__(self, node: object, calls: list[int]) -> None:
        self._node, self._calls = node, calls

    def range(self) -> object:
        self._calls[0] += 1
        return self._node.range()  # type: ignore[attr-defined]

    def __getattr__(self, name: str) -> object:
        attribute = getattr(self._node, name)
        if not callable(attribute):
            return attribute

        def wrapped(*args: object, **kwargs: object) -> object:
            found = attribute(*args, **kwargs)
            if isinstance(found, list):
                return [_Counted(each, self._calls) for each in found]
            return _Counted(found, self._calls) if type(found).__name__ == "SgNode" else found
        return wrapped


def test_a_signature_on_a_minified_line_asks_where_only_the_header_s_comments_are() -> None:
    """`range()` costs as much as the column it reports, so on a minified file (one long line) an outline
    that asks it of every node overlapping each header took seconds: it is asked a bounded number of times
    a definition, however long the line and whatever the headers hold (`//` in strings, `/* */` comments)."""
    from ast_grep_py import SgRoot

    parts = []
    for i in range(60):
        parts += [f'function f{i}(a, b /* c */) {{ var u = "https://x.example/{i}"; return a + b + u }}',
                  f'var v{i} = function (a) {{ return "//" + a }}, w{i} = 1 /* n */, q{i} = "http://h/{i}"',
                  f'class C{i} {{ m(a /* x */) {{ return "//" }} n(b) {{ return b /* y */ }} }}']
    text = ";".join(parts) + ";\n"
    calls = [0]
    symbols = outline(text, "javascript", cast("SgNode", _Counted(SgRoot(text, "javascript").root(), calls)))
    signatures = {symbol.qualified_name: symbol.signature for symbol in walk(symbols)}
    assert signatures["f7"] == "function f7(a, b )" and signatures["C7.m"] == "m(a )"  # the comments left out
    assert signatures["q7"] == 'var v7 = function (a) { return "//" + a }, w7 = 1 , q7 = "http://h/7"'
    assert calls[0] <= 4 * len(signatures), (calls[0], len(signatures))


# -- 2. the text tells a line break from a backslash and an n -----------------------------------------
def test_search_structure_shows_a_line_break_and_a_written_backslash_n_differently(tools: Tools) -> None:
    body = tools.call("search_structure", {"pattern": "def render_lines($$$A) -> str: $$$B", "language": "python",
                                           "path": "rich_style.py"})
    captured = body["structuredContent"]["matches"][0]["variables"]["B"]
    assert captured.count("\n") == 1 and captured.count('"\\n"') == 2  # a real line break, and two written ones
    shown = body["content"][0]["text"].splitlines()[0].split(" $B=", 1)[1]
    assert shown.count("\\\\n") == 2 and shown.count("\\n") == 3  # each written one as \\n, the break as \n
    assert ast.literal_eval(shown) == captured  # the text reads back as exactly what was captured


# -- 3. every capture, every match and the whole result are bounded ----------------------------------
def test_a_long_capture_is_cut_at_a_line_break_and_says_how_much_was_left_out(tools: Tools) -> None:
    result = tools.call("search_structure", {"pattern": "def $F($$$A) -> $R: $$$B", "language": "python",
                                             "path": "rich_style.py", "limit": 20, "full": True})
    match = next(m for m in result["structuredContent"]["matches"] if m["variables"]["F"] == "__rich_console__")
    start = RICH.index("_padding = self.padding")
    whole = RICH[start:RICH.index("yield new_line\n", RICH.index("subtitle_text = align_text")) + len("yield new_line")]
    whole = whole[:whole.rindex("yield new_line")] + "yield new_line"
    body = match["variables"]["B"]
    head, marker = body.split("… [cut: ")
    assert len(head) <= MAX_MATCH_CHARS and whole.startswith(head) and whole[len(head)] == "\n"  # at a line break
    rest = whole[len(head) + 1:]
    assert marker == f"{len(rest)} more characters in {rest.count(chr(10)) + 1} more lines]"
    assert match["text"].startswith("def __rich_console__") and "… [cut: " in match["text"]
    assert len(match["text"].split("… [cut: ")[0]) <= MAX_MATCH_CHARS
    text = result["content"][0]["text"]
    assert max(map(len, text.splitlines())) < 3 * SHOWN_CHARS + 200, text  # was one line of the whole body
    assert "… [cut: " in text.splitlines()[[m["variables"]["F"] for m in result["structuredContent"]["matches"]]
                                           .index("__rich_console__")]


def test_the_whole_result_stops_at_its_size_limit_and_says_so(tmp_path: Path) -> None:
    for index in range(RESULT_CHARS // MAX_MATCH_CHARS):  # each holds over 2 * MAX_MATCH_CHARS of matches
        shutil.copy(STYLES / "rich_style.py", tmp_path / f"copy_{index:03}.py")
    with Tools(tmp_path, options=("--max-result-tokens", "0")) as tools:
        result = tools.call("search_structure", {"pattern": "def $F($$$A) -> $R: $$$B", "language": "python",
                                                 "limit": 2000, "full": True})
    data = result["structuredContent"]
    size = sum(len(m["text"]) + sum(map(len, m["variables"].values())) for m in data["matches"])
    assert data["truncated"] is True and RESULT_CHARS <= size + len(result["content"][0]["text"])
    assert size < RESULT_CHARS + 2 * MAX_MATCH_CHARS + 4 * 1024
    assert "the result is at its size limit (64 KiB of matched text)" in result["content"][0]["text"]


def test_a_match_is_its_first_lines_unless_full_is_asked(tools: Tools) -> None:
    """A class pattern's matches are the class's first MATCH_LINES lines and its body capture too (not the
    whole body, which grep would not show either), each saying what was left out; `full` (false in the
    schema) gives them whole, within MAX_MATCH_CHARS."""
    assert tools.tools["search_structure"]["inputSchema"]["properties"]["full"]["default"] is False
    pattern = {"pattern": "class $C: $$$BODY", "language": "python", "path": "django_style.py"}
    short = {m["variables"]["C"]: m for m in tools.data("search_structure", pattern)["matches"]}
    whole = {m["variables"]["C"]: m for m in tools.data("search_structure", {**pattern, "full": True})["matches"]}
    assert short.keys() == whole.keys() and short
    cut = 0
    for name, match in short.items():
        full_text = whole[name]["text"]
        assert "… [cut: " not in full_text  # these classes are under MAX_MATCH_CHARS
        lines = full_text.split("\n")
        for got, entire in ((match["text"], full_text), (match["variables"]["BODY"], whole[name]["variables"]["BODY"])):
            if entire.count("\n") < MATCH_LINES:
                assert got == entire
                continue
            cut += 1
            head, marker = got.split("… [cut: ")
            assert head == "\n".join(entire.split("\n")[:MATCH_LINES])
            rest = entire[len(head) + 1:]
            assert marker == f"{len(rest)} more characters in {rest.count(chr(10)) + 1} more lines]"
        assert match["line"] == whole[name]["line"] and match["end_line"] == whole[name]["end_line"] == (
            match["line"] + len(lines) - 1)
    assert cut >= 2
    assert sum(len(m["text"]) for m in short.values()) * 2 < sum(len(m["text"]) for m in whole.values())


# -- 4. a $$$ capture is the source text from its first node to its last ------------------------------
def test_a_multiple_capture_is_the_source_span_comments_and_line_breaks_kept(tools: Tools) -> None:
    data = tools.data("search_structure", {"pattern": "def $F($$$A): $$$B", "language": "python",
                                           "path": "django_style.py", "full": True})
    by_name = {m["variables"]["F"]: m["variables"] for m in data["matches"]}
    slugify = DJANGO[DJANGO.index("    # Convert spaces"):DJANGO.index('.strip("-_")') + len('.strip("-_")')]
    assert by_name["slugify"]["B"] == slugify.lstrip()
    assert by_name["slugify"]["A"] == "value, allow_unicode=False"
    assert by_name["clean"]["B"].startswith('# Validate the given value and return its "cleaned" value.\n        value =')
    assert by_name["__init__"]["A"] == ("self,\n        *,\n        required=True,\n        label=None,  # the human-readable "
                                        "name\n        initial=None")


# -- 5. the skipped files are named, with why ------------------------------------------------------
def test_the_skipped_files_are_named_with_why_and_the_list_is_bounded(tmp_path: Path) -> None:
    (tmp_path / "good.py").write_text("def good():\n    return 1\n")
    (tmp_path / "big.py").write_text("def good():\n    return 1\n" + "# padding\n" * (MAX_SOURCE_BYTES // 10 + 1))
    (tmp_path / "minified.py").write_text("good = 1;" + " " * MAX_PARSE_LINE + "\n")
    (tmp_path / "blob.py").write_bytes(b"good\0\n")
    with Tools(tmp_path) as tools:
        result = tools.call("outline", {"path": "."})
        assert result["structuredContent"]["skipped_files"] == [
            {"path": "big.py", "reason": "too large, 512.0 KiB, over 512.0 KiB"},
            {"path": "blob.py", "reason": "binary"},
            {"path": "minified.py", "reason": f"a line of {MAX_PARSE_LINE + 9} characters, over {MAX_PARSE_LINE}"}]
        assert result["content"][0]["text"].splitlines()[-1] == (
            f"[3 files skipped: big.py (too large, 512.0 KiB, over 512.0 KiB); blob.py (binary); minified.py "
            f"(a line of {MAX_PARSE_LINE + 9} characters, over {MAX_PARSE_LINE}).]")
        for tool, arguments in [("find_symbol", {"name": "good"}), ("find_references", {"name": "good"}),
                                ("search_structure", {"pattern": "good", "language": "python"})]:
            data = tools.data(tool, arguments)  # ripgrep leaves the binary file out of the candidates
            # find_references reads Python with CPython's parser, which takes the long line tree-sitter is not given
            skipped = ["big.py"] if tool == "find_references" else ["big.py", "minified.py"]
            assert [item["path"] for item in data["skipped_files"]] == skipped, tool
        for index in range(MAX_SKIPPED_NAMED + 5):
            (tmp_path / f"blob_{index:02}.py").write_bytes(b"good\0\n")
        many = tools.call("outline", {"path": "."})
    assert many["structuredContent"]["skipped"] == MAX_SKIPPED_NAMED + 8
    assert len(many["structuredContent"]["skipped_files"]) == MAX_SKIPPED_NAMED
    assert many["content"][0]["text"].endswith("; and 8 more.]")


# -- 6. a pattern that matches nothing for a reason of syntax says so -----------------------------
@pytest.mark.parametrize(("language", "pattern"), [("go", "func $F($$$A) { $$$B }"),
                                                   ("typescript", "function $F($$$A) { $$$B }")])
def test_a_definition_pattern_without_the_return_type_the_code_has_gets_a_hint(tools: Tools, language: str,
                                                                                pattern: str) -> None:
    result = tools.call("search_structure", {"pattern": pattern, "language": language})
    assert result["structuredContent"]["matches"] == []
    text = result["content"][0]["text"]
    assert f"The pattern is a {language} function_declaration, and the files searched hold some, but none matched" in text
    assert "a return type" in text
    fixed = tools.data("search_structure", {"pattern": pattern.replace(") {", ") $R {") if language == "go"
                                            else pattern.replace(") {", "): $R {"), "language": language})
    assert [m["variables"]["F"] for m in fixed["matches"]] == ["area"]  # what the hint suggests matches


def test_a_decorated_method_pattern_without_a_part_the_code_has_gets_a_hint_and_the_ways_it_names_match(
        tools: Tools) -> None:
    """rich's `@classmethod` methods have return types, which a pattern may leave out; one whose parameters
    differ from theirs (`self` for `cls`) matches none of them, and the hint names what does."""
    result = tools.call("search_structure", {"pattern": "@classmethod\ndef $F(self): $$$B", "language": "python"})
    assert result["structuredContent"]["matches"] == []
    text = result["content"][0]["text"]
    assert "[The pattern is a decorated python def, and the files searched hold some, but none matched" in text
    assert "`$$$A` stands for any" in text and "the decorator alone" in text
    for pattern in ("@classmethod\ndef $F($$$A) -> $R: $$$B", "@classmethod\ndef $F($$$A): $$$B"):
        found = tools.data("search_structure", {"pattern": pattern, "language": "python"})
        assert [(m["line"], m["variables"]["F"]) for m in found["matches"]] == [(10, "line"), (15, "split_lines")]
    alone = tools.data("search_structure", {"pattern": "@classmethod", "language": "python"})
    assert [(m["path"], m["line"]) for m in alone["matches"]] == [("rich_style.py", 10), ("rich_style.py", 15)]
    undecorated = tools.data("search_structure", {"pattern": "def $F(cls, $$$A) -> $R: $$$B", "language": "python"})
    assert [m["variables"]["F"] for m in undecorated["matches"]] == ["split_lines"]
    django = tools.data("search_structure", {"pattern": "@cached_property\ndef $F(self): $$$B", "language": "python"})
    assert [m["variables"]["F"] for m in django["matches"]] == ["error_messages"]  # indented in its class, as written


def test_a_pattern_that_is_not_valid_code_and_matches_nothing_is_a_result_that_says_why(tools: Tools) -> None:
    text = tools.text("search_structure", {"pattern": "def $F($$$A) return $X", "language": "python"})
    assert text.splitlines()[0] == "No matches for the python pattern in the workspace root."
    assert "[The pattern is not valid python code (syntax error at line 1" in text
    assert "a Python def with its colon and a body" in text


def test_a_pattern_of_several_nodes_is_an_error_that_says_so(tools: Tools) -> None:
    message = tools.error("search_structure", {"pattern": "value = 1\nvalue = 2", "language": "python"})
    assert "more than one node" in message and "cannot get matcher" not in message


def test_a_pattern_that_matches_nothing_for_want_of_such_code_gets_no_hint(tools: Tools) -> None:
    text = tools.text("search_structure", {"pattern": "$A.nothing_like_this()", "language": "python"})
    assert text == "No matches for the python pattern in the workspace root."

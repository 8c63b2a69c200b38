"""What the code tools do not parse, and say so: a file over MAX_SOURCE_BYTES, a file with a line over
MAX_PARSE_LINE (minified code). Alone it is a tool error; in a folder or a search it is counted as
skipped, the other files answered."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from workspace_support import Tools

pytest.importorskip("ast_grep_py")

from shipcode_mcp.workspace.code.source import MAX_PARSE_LINE, MAX_SOURCE_BYTES

MINIFIED = "function good(){return 1}" + ";" * MAX_PARSE_LINE


@pytest.fixture(scope="module")
def tools(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tools]:
    folder = tmp_path_factory.mktemp("limits")
    (folder / "good.py").write_text("def good():\n    return 1\n")
    (folder / "big.py").write_text("def good():\n    return 1\n" + "# padding\n" * (MAX_SOURCE_BYTES // 10 + 1))
    (folder / "minified.js").write_text(MINIFIED + "\n")
    (folder / "notes.txt").write_text("good\n")
    tools = Tools(folder)
    try:
        yield tools
    finally:
        tools.process.close()


@pytest.mark.parametrize(("path", "said"), [("big.py", "too large to parse"),
                                            ("minified.js", f"a line of {len(MINIFIED)} characters")])
def test_a_file_past_a_limit_alone_is_a_tool_error_that_says_why(tools: Tools, path: str, said: str) -> None:
    assert said in tools.error("outline", {"path": path})
    assert said in tools.error("read_symbol", {"path": path, "name": "good"})


def test_a_folder_outline_and_searches_count_the_files_past_a_limit_as_skipped(tools: Tools) -> None:
    outline = tools.call("outline", {"path": "."})
    assert outline["structuredContent"]["files"] == 1 and outline["structuredContent"]["skipped"] == 2
    assert outline["content"][0]["text"].endswith(
        f"[2 files skipped: big.py (too large, 512.0 KiB, over 512.0 KiB); minified.js (a line of {len(MINIFIED)} "
        f"characters, over {MAX_PARSE_LINE}).]")
    found = tools.call("find_symbol", {"name": "good"})
    assert [item["path"] for item in found["structuredContent"]["symbols"]] == ["good.py"]
    assert found["structuredContent"]["skipped"] == 2
    structure = tools.data("search_structure", {"pattern": "good()", "language": "javascript"})
    assert structure["skipped"] == 1 and structure["matches"] == []


@pytest.mark.parametrize("tool", ["find_symbol", "find_references"])
def test_a_file_of_a_language_the_tools_do_not_know_is_an_error_not_no_definition(tools: Tools, tool: str) -> None:
    assert "not in a language the code tools know" in tools.error(tool, {"name": "good", "path": "notes.txt"})

"""--resource-links through the real `shipcode-mcp` process: a result that names files links their file://
resources, each readable with resources/read; never without the option, never on an error.

Every line the server writes is checked against the official 2025-06-18 schema by `McpProcess`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from shipcode_mcp.workspace.links import MAX_LINKS
from shipcode_mcp.workspace.uris import file_uri
from support import McpProcess
from workspace_support import make_repo


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "project")


def start(root: Path, *args: str) -> McpProcess:
    process = McpProcess(*args, str(root))
    process.initialize()
    return process


def links(result: dict[str, Any]) -> list[tuple[str, str]]:
    """(uri, name) of each resource_link of a tools/call result, after its text (checked)."""
    content = result["content"]
    kinds = [item["type"] for item in content]
    assert kinds == sorted(kinds, key=lambda kind: kind == "resource_link"), kinds  # text first
    return [(item["uri"], item["name"]) for item in content if item["type"] == "resource_link"]


def test_results_link_the_files_they_name_and_each_link_reads(repo: Path) -> None:
    root = repo.resolve()
    app, helpers = file_uri(str(root / "src" / "app.py")), file_uri(str(root / "src" / "helpers.py"))
    with start(repo, "--resource-links") as process:
        assert links(process.call_tool("list_files", {"path": "src"})) == [(app, "src/app.py"), (helpers, "src/helpers.py")]
        # three matching lines of one file: one link
        searched = process.call_tool("search_code", {"pattern": "def|import|return", "path": "src/app.py"})
        assert searched["structuredContent"]["match_count"] > 1 and links(searched) == [(app, "src/app.py")]
        assert links(process.call_tool("find_symbol", {"name": "answer"})) == [(helpers, "src/helpers.py")]
        references = process.call_tool("find_references", {"name": "answer"})
        named = list(dict.fromkeys(item["path"] for item in references["structuredContent"]["references"]))
        assert sorted(named) == ["src/app.py", "src/helpers.py"]  # in the result's order (the definition first)
        assert links(references) == [(file_uri(str(root / name)), name) for name in named]
        assert links(process.call_tool("outline", {"path": "src"})) == [(app, "src/app.py"), (helpers, "src/helpers.py")]
        assert links(process.call_tool("search_structure", {"pattern": "util.answer()", "language": "python"})) == [
            (app, "src/app.py")]
        listed = {item["uri"]: item for item in process.request("resources/list")["result"]["resources"]}
        for uri in (app, helpers):
            link = next(item for item in process.call_tool("list_files", {"path": "src"})["content"]
                        if item.get("uri") == uri)
            assert link["mimeType"] == listed[uri]["mimeType"] == "text/x-python"
            read = process.request("resources/read", {"uri": uri})["result"]["contents"][0]
            assert read["text"] == Path(uri.removeprefix("file://")).read_text()
        for tool, arguments in (("read_file", {"path": "src/app.py"}), ("git_log", {"limit": 2}), ("git_status", {}),
                                ("list_files", {"path": "nowhere"}), ("search_code", {"pattern": "("})):
            assert links(process.call_tool(tool, arguments)) == [], tool  # nothing named, or an error


def test_without_the_option_no_result_links(repo: Path) -> None:
    with start(repo) as process:
        for tool, arguments in (("list_files", {}), ("search_code", {"pattern": "def"}), ("find_symbol", {"name": "main"})):
            assert links(process.call_tool(tool, arguments)) == [], tool


def test_links_are_bounded_follow_the_cut_and_encode_awkward_names(tmp_path: Path) -> None:
    root = tmp_path / "many"
    root.mkdir()
    for number in range(MAX_LINKS + 10):
        (root / f"f{number:03d}.txt").write_text("hit\n" * 200)
    (root / "z line\nbreak %.txt").write_text("hit\n")
    with start(root, "--resource-links") as process:
        listed = links(process.call_tool("list_files", {}))
        assert [name for _, name in listed] == [f"f{number:03d}.txt" for number in range(MAX_LINKS)]
        awkward = links(process.call_tool("list_files", {"pattern": "z*"}))
        assert awkward == [(file_uri(str(root.resolve())) + "/z%20line%0Abreak%20%25.txt", "z line\\nbreak %.txt")]
        assert process.request("resources/read", {"uri": awkward[0][0]})["result"]["contents"][0]["text"] == "hit\n"
    with start(root, "--resource-links", "--max-result-tokens", "1000") as process:
        few = process.call_tool("list_files", {"limit": 5})  # far under the budget: every file linked
        assert [name for _, name in links(few)] == [f"f{number:03d}.txt" for number in range(5)]
        result = process.call_tool("search_code", {"pattern": "hit", "limit": 2000})
        kept = sorted({line["path"] for line in result["structuredContent"]["lines"]})
        assert result["structuredContent"]["truncated"] and 0 < len(kept) < MAX_LINKS  # cut to the budget
        linked = [name for _, name in links(result)]
        assert linked == kept[:len(linked)]  # only files it kept, and only while the whole stays within it
        text = "".join(item.get("text", "") for item in result["content"])
        links_json = [item for item in result["content"] if item["type"] == "resource_link"]
        whole = len(text.encode()) + len(json.dumps([result["structuredContent"], links_json], separators=(",", ":")))
        assert whole <= 1000 * 3 + 100, whole


def test_a_link_is_the_served_file_the_result_names(tmp_path: Path) -> None:
    """Only files the resources serve are linked (not an ignored one, nothing in .git/), each by the listing's
    own URI, MIME type and size; a folder named `file:` is a folder, not a URI (its decoy was linked as the
    real file)."""
    root = tmp_path / "root"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text('TOKEN = "real"\n')
    decoy = root / ("file:" + str(root.resolve())) / "src" / "app.py"
    decoy.parent.mkdir(parents=True)
    decoy.write_text('TOKEN = "decoy"\n')
    (root / "ignored").mkdir()
    (root / "ignored" / "secret.py").write_text('TOKEN = "ignored"\n')
    (root / ".gitignore").write_text("ignored/\n")
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text('TOKEN = "git"\n')
    (root / "README").write_text("no suffix\n")
    with start(root, "--resource-links") as process:
        found = process.call_tool("search_code", {"pattern": "decoy"})
        [(uri, name)] = links(found)
        assert name == "file:" + str(root.resolve()) + "/src/app.py"
        assert process.request("resources/read", {"uri": uri})["result"]["contents"][0]["text"] == 'TOKEN = "decoy"\n'
        for arguments in ({"pattern": "TOKEN", "path": "ignored"}, {"pattern": "TOKEN", "path": ".git"}):
            result = process.call_tool("search_code", arguments)
            assert result["structuredContent"]["match_count"] == 1 and links(result) == [], arguments
        assert links(process.call_tool("list_files", {"path": ".git"})) == []
        listed = {item["uri"]: item for item in process.request("resources/list")["result"]["resources"]}
        for item in process.call_tool("list_files", {})["content"]:
            if item["type"] == "resource_link":
                assert (item.get("mimeType"), item.get("size")) == (listed[item["uri"]]["mimeType"],
                                                                    listed[item["uri"]].get("size")), item

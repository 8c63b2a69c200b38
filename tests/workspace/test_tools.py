"""The workspace tools as MCP sees them: tools/list, schemas, annotations, protocol errors, and the
official SDK client using them. What start-up imports is tests/test_startup.py's budget."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import anyio
import jsonschema
import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from shipcode_mcp.workspace import tools as tool_specs
from support import REPO
from workspace_support import Tools, make_repo

READ_ONLY = ["list_files", "read_file", "search_code", "git_status", "git_log", "git_diff", "git_show",
             "outline", "find_symbol", "repo_map", "locate", "find_references", "find_definition", "find_implementations", "diagnostics",
             "read_symbol", "search_structure"]
WRITING = ["write_file", "edit_file", "apply_patch", "create_directory", "move_path", "delete_path", "git_add",
           "git_commit", "git_branch", "git_switch", "git_restore", "git_stash", "replace_symbol", "insert_symbol",
           "rename_symbol"]


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_repo(tmp_path_factory.mktemp("tools") / "repo")


@pytest.fixture(scope="module")
def tools(repo: Path) -> Any:
    with Tools(repo, write=True) as server:
        yield server


def test_tools_are_listed_in_a_stable_order_and_writing_needs_allow_write(repo: Path, tools: Tools) -> None:
    assert tools.order == READ_ONLY + WRITING
    with Tools(repo) as read_only:
        assert read_only.order == READ_ONLY
        for name in WRITING:
            reply = read_only.process.request("tools/call", {"name": name, "arguments": {"path": "x", "content": ""}})
            assert reply["error"] == {"code": -32602, "message": f"Unknown tool: {name}"}
        assert not (repo / "x").exists()


def test_every_tool_is_fully_described(tools: Tools) -> None:
    meta = jsonschema.Draft202012Validator.META_SCHEMA
    for name, tool in tools.tools.items():
        assert list(tool) == ["name", "title", "description", "inputSchema", "outputSchema", "annotations"]
        assert tool["title"] and len(tool["description"]) > 150, name
        for key in ("inputSchema", "outputSchema"):
            schema = tool[key]
            jsonschema.Draft202012Validator(meta).validate(schema)
            assert schema["type"] == "object"
        inputs = tool["inputSchema"]
        # Open objects: google-genai's MCP conversion fails on a bool in additionalProperties, OpenAI's strict
        # mode refuses propertyNames and maxProperties; the tools refuse unknown arguments themselves.
        assert not {"additionalProperties", "propertyNames", "maxProperties"} & set(inputs), name
        required = inputs.get("required", [])
        for prop, spec in inputs["properties"].items():
            if prop in required:
                assert spec.get("description"), (name, prop)
                kind = spec["type"]
            else:  # optional: null is "not given", for strict function calling, which requires every property;
                # the description (and an enum) in the typed branch, where google-genai's conversion reads them
                assert "type" not in spec and "description" not in spec, (name, prop)
                typed = spec["anyOf"][0]
                assert spec["anyOf"][1] == {"type": "null"} and typed.get("description"), (name, prop)
                assert set(typed) == {"type", "description"} | ({"enum"} if "enum" in spec else set()) | (
                    {"items"} if typed["type"] == "array" else set()), (name, prop)  # (strict mode types the items)
                if "enum" in spec:
                    assert spec["enum"] == [*typed["enum"], None], (name, prop)
                kind = typed["type"]
            if kind == "integer":  # bounds; and when optional, a default, or one the description gives in words
                assert {"minimum", "maximum"} <= set(spec), (name, prop)  # (outline's depth: by path)
                description = spec.get("description") or spec["anyOf"][0]["description"]
                assert prop in required or "default" in spec or "default: " in description, (name, prop)
            if kind == "boolean":
                assert spec["default"] is False
        hints = tool["annotations"]
        assert set(hints) == {"readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"}
        assert hints["openWorldHint"] is False
        assert hints["readOnlyHint"] is (name in READ_ONLY)
        assert hints["destructiveHint"] is (name not in READ_ONLY and name != "create_directory")  # it only adds
    assert tools.tools["edit_file"]["annotations"]["idempotentHint"] is False
    assert tools.tools["write_file"]["annotations"]["idempotentHint"] is True
    assert tools.tools["read_file"]["inputSchema"]["required"] == ["path"]
    assert tools.tools["search_code"]["inputSchema"]["properties"]["context"]["maximum"] == 10
    assert tools.tools["git_status"]["inputSchema"] == {"type": "object", "properties": {}}


def _type_arrays(schema: Any, where: str = "") -> list[str]:
    """Where `schema` has a `type` that is a list, at any depth."""
    found = []
    if isinstance(schema, dict):
        if isinstance(schema.get("type"), list):
            found.append(where)
        for key, value in schema.items():
            found += _type_arrays(value, f"{where}/{key}")
    elif isinstance(schema, list):
        for index, value in enumerate(schema):
            found += _type_arrays(value, f"{where}/{index}")
    return found


def test_no_schema_has_a_type_array(tools: Tools) -> None:
    """The rule of the MCP Inspector's portability check (tests/test_provider_schemas.py runs the check
    itself): nullable is written anyOf, never ["integer", "null"]."""
    for name, tool in tools.tools.items():
        for key in ("inputSchema", "outputSchema"):
            assert _type_arrays(tool[key]) == [], (name, key)


@pytest.mark.parametrize("name", sorted(tool_specs.SPECS))
def test_a_tool_is_one_spec_and_one_function_whose_defaults_the_schema_alone_holds(name: str) -> None:
    """Each spec names its function; the function takes (ctx, roots) and then exactly the schema's arguments
    (keyword-only extras of its own aside), and gives none of them a default: the schema's is the only one,
    filled in by tools.run. And a client filling in the schema's defaults gets what leaving them out gets:
    no default in a schema differs from the tool's own behaviour (outline's depth, whose meaning depends on
    the path, has none)."""
    import importlib
    import inspect

    spec = tool_specs.SPECS[name]
    module, attribute = spec["run"].split(":")
    function = getattr(importlib.import_module(f"shipcode_mcp.workspace.{module}"), attribute)
    parameters = [parameter for parameter in inspect.signature(function).parameters.values()
                  if parameter.kind is not inspect.Parameter.KEYWORD_ONLY]
    assert [parameter.name for parameter in parameters[:2]] == ["ctx", "roots"]
    assert {parameter.name for parameter in parameters[2:]} == set(spec["input"]["properties"])
    assert [parameter.name for parameter in parameters if parameter.default is not inspect.Parameter.empty] == []


def test_a_default_filled_in_from_the_schema_is_the_argument_left_out(repo: Path, tools: Tools) -> None:
    (repo / "nested").mkdir()
    (repo / "nested" / "shapes.py").write_text("class Shape:\n    def area(self):\n        return 0\n")
    try:
        for name, arguments in [("outline", {"path": "nested"}), ("outline", {"path": "nested/shapes.py"}),
                                ("list_files", {}), ("read_file", {"path": "src/app.py"}), ("git_log", {}),
                                ("search_code", {"pattern": "answer"}), ("find_symbol", {"name": "answer"})]:
            properties = tools.tools[name]["inputSchema"]["properties"]
            filled = {key: value["default"] for key, value in properties.items() if "default" in value}
            assert tools.call(name, {**filled, **arguments}) == tools.call(name, arguments), (name, filled)
    finally:
        shutil.rmtree(repo / "nested")


@pytest.mark.parametrize(("name", "arguments", "left_out"), [
    ("git_show", {"ref": "v1.0", "path": None}, {"ref": "v1.0"}),
    ("git_diff", {"ref": None, "staged": None, "path": None}, {}),
    ("git_log", {"limit": None, "path": None, "ref": None}, {}),
    ("read_file", {"path": "src/app.py", "offset": None, "limit": None}, {"path": "src/app.py"}),
    ("list_files", {"path": None, "pattern": None, "limit": None}, {}),
    ("search_code", {"pattern": "answer", "path": None, "glob": None, "ignore_case": None, "fixed_strings": None,
                     "context": None, "limit": None}, {"pattern": "answer"}),
])
def test_null_for_an_optional_argument_is_the_argument_left_out(
        tools: Tools, name: str, arguments: dict[str, Any], left_out: dict[str, Any]) -> None:
    assert tools.call(name, arguments) == tools.call(name, left_out)


def test_null_for_an_optional_argument_of_edit_file_is_the_argument_left_out(repo: Path, tools: Tools) -> None:
    (repo / "twice.txt").write_text("a a\n")
    assert tools.error("edit_file", {"path": "twice.txt", "old_text": "a", "new_text": "b", "replace_all": None}) \
        == tools.error("edit_file", {"path": "twice.txt", "old_text": "a", "new_text": "b"})
    assert (repo / "twice.txt").read_text() == "a a\n"
    (repo / "twice.txt").unlink()


def test_cursor_is_accepted_and_a_bad_one_is_invalid_params(tools: Tools) -> None:
    assert "nextCursor" not in tools.process.request("tools/list", {})["result"]
    assert tools.process.request("tools/list", {"cursor": "bogus"})["error"]["code"] == -32602
    assert tools.process.request("tools/list", {"cursor": 7})["error"]["code"] == -32602


@pytest.mark.parametrize("arguments", [[], "path", 3, True])
def test_arguments_that_are_not_an_object_are_invalid_params(tools: Tools, arguments: Any) -> None:
    reply = tools.process.request("tools/call", {"name": "read_file", "arguments": arguments})
    assert reply["error"]["code"] == -32602


def test_unknown_tool(tools: Tools) -> None:
    reply = tools.process.request("tools/call", {"name": "rm_rf", "arguments": {}})
    assert reply["error"] == {"code": -32602, "message": "Unknown tool: rm_rf"}


@pytest.mark.parametrize(("name", "arguments", "named"), [
    ("read_file", {}, "path"),
    ("read_file", {"path": "README.md", "limit": 0}, "limit"),
    ("read_file", {"path": "README.md", "offset": "2"}, "offset"),
    ("read_file", {"path": "README.md", "bogus": 1}, "unknown argument 'bogus' (it takes path, offset, limit)"),
    ("read_file", {"path": "README.md", "bogus": None}, "unknown argument 'bogus'"),  # null is no way in either
    ("list_files", {"limit": 10001}, "limit"),
    ("search_code", {"pattern": ""}, "pattern"),
    ("search_code", {"pattern": "x", "context": 11}, "context"),
    ("search_code", {"pattern": "x", "ignore_case": "yes"}, "ignore_case"),
    ("git_log", {"limit": -1}, "limit"),
    ("git_status", {"path": "."}, "unknown argument 'path' (it takes no arguments)"),
    ("git_show", {}, "ref"),
    ("git_show", {"ref": None}, "ref"),
    ("git_show", {"ref": "HEAD", "path": ""}, "path"),
    ("read_file", {"path": None}, "path"),
    ("search_code", {"pattern": "x", "glob": ""}, "glob"),
    ("git_diff", {"staged": "yes"}, "staged"),
    ("git_status", {"path": None}, "path"),
    ("write_file", {"path": "x.txt", "content": None}, "content"),
    ("edit_file", {"path": "README.md", "old_text": "", "new_text": "x"}, "old_text"),
    ("write_file", {"path": "x.txt"}, "content"),
])
def test_arguments_failing_the_schema_are_an_error_result_naming_the_argument(
        tools: Tools, name: str, arguments: dict[str, Any], named: str) -> None:
    message = tools.error(name, arguments)
    assert message.startswith(f"Invalid arguments for tool {name}: ")
    assert named in message


def test_results_carry_the_same_data_as_text_and_structured_content(tools: Tools) -> None:
    result = tools.call("list_files", {"pattern": "*.md"})
    assert list(result) == ["content", "structuredContent", "isError"]
    assert result["structuredContent"]["files"] == ["README.md", "docs/guide.md"]
    assert result["content"][0]["text"].splitlines() == ["README.md", "docs/guide.md"]


def _params(root: Path) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "shipcode_mcp", str(root)],
                                 env={"PYTHONPATH": str(REPO / "src")})


def test_official_sdk_client_lists_tools_and_calls_search_code_and_read_file(repo: Path) -> None:
    async def main() -> None:
        async with stdio_client(_params(repo)) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            listed = await session.list_tools()
            assert [tool.name for tool in listed.tools] == READ_ONLY
            search = next(tool for tool in listed.tools if tool.name == "search_code")
            assert search.annotations is not None and search.annotations.read_only_hint is True
            assert search.output_schema is not None

            found = await session.call_tool("search_code", {"pattern": "def \\w+", "path": "src"})
            assert found.is_error is False
            assert found.structured_content is not None
            assert found.structured_content["match_count"] == 3
            text = found.content[0].text  # type: ignore[union-attr]
            assert "src/app.py:4:def main():" in text.splitlines()

            reports: list[tuple[float, float | None, str | None]] = []

            async def on_progress(progress: float, total: float | None, message: str | None) -> None:
                reports.append((progress, total, message))

            found = await session.call_tool("search_code", {"pattern": "answer"}, progress_callback=on_progress)
            assert found.structured_content is not None and found.structured_content["match_count"] == 2
            values = [value for value, _, _ in reports]
            assert values == sorted(set(values)) and reports[-1][0] == reports[-1][1]  # rising, then done

            page = await session.call_tool("read_file", {"path": "src/app.py", "offset": 4, "limit": 2})
            assert page.is_error is False
            assert page.structured_content is not None
            assert page.structured_content["text"] == "def main():\n    return util.answer()"
            assert page.structured_content["next_offset"] == 6
            assert page.content[0].text.startswith("     4\tdef main():\n     5\t    return util.answer()\n")  # type: ignore[union-attr]

            failed = await session.call_tool("read_file", {"path": "/etc/passwd"})
            assert failed.is_error is True

    anyio.run(main)


def test_structured_content_text_is_valid_json_only_where_promised(tools: Tools) -> None:
    """The text block is what a model reads (numbered lines, path:line:text); structuredContent holds
    the data. Both describe the same result."""
    result = tools.call("read_file", {"path": "README.md"})
    data = result["structuredContent"]
    numbered = result["content"][0]["text"].splitlines()
    assert [line.split("\t", 1)[1] for line in numbered] == data["text"].splitlines()
    json.dumps(data)

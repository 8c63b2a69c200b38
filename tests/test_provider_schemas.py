"""Every tool's schemas, as `shipcode-mcp --allow-write --allow-run` lists them, through the real converters of the
model providers' libraries and the MCP Inspector's portability check:

- google-genai's MCP conversion (`mcp_to_gemini_tool`) and `Schema.from_json_schema`;
- OpenAI strict function calling as openai-agents (`ensure_strict_json_schema`), langchain
  (`convert_to_openai_tool(strict=True)`, `ChatOpenAI.bind_tools(strict=True)`) and pydantic-ai (its
  OpenAI transformer, strict) write it: every property becomes required, so every call the docs show must
  still be expressible, an optional argument's "not given" as `null`; the server must then treat that
  null exactly as the argument left out;
- pydantic-ai's MCP toolset, on a real server process;
- anthropic's MCP helper (`mcp_tool`: the schema as the API receives it, unchanged) and `transform_schema`;
- the Inspector CLI's `--method tools/list --strict` (0 errors, 0 warnings);
- every argument's description and enum, as each converter hands the schema on (the conversion table,
  printed with `pytest -s`).

The converters and the Inspector live in a cache folder made by scripts/provider_converters.sh (their
dependencies clash with the test venv's); the tools come from a real server's `tools/list`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from support import REPO, installed
from workspace_support import Tools, make_repo

PROVIDERS = Path(__file__).parent / "providers"
ALL_TOOLS = ["list_files", "read_file", "search_code", "git_status", "git_log", "git_diff", "git_show",
             "outline", "find_symbol", "repo_map", "locate", "find_references", "find_definition", "find_implementations", "diagnostics",
             "read_symbol", "search_structure", "write_file", "edit_file", "apply_patch", "create_directory", "move_path",
             "delete_path", "git_add", "git_commit", "git_branch", "git_switch", "git_restore", "git_stash",
             "replace_symbol", "insert_symbol", "rename_symbol", "run_command"]
MODERN_META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
               "io.modelcontextprotocol/clientCapabilities": {},
               "io.modelcontextprotocol/clientInfo": {"name": "provider-schemas", "version": "1"}}
# A value for each required argument of the tools, so that a call can be made of them and nulls.
REQUIRED_VALUES = {"path": "README.md", "pattern": "answer", "ref": "HEAD", "content": "x\n",
                   "old_text": "Demo", "new_text": "Demo!", "name": "main", "language": "python", "line": 4,
                   "source": "README.md", "destination": "MOVED.md", "text": "def main():\n    pass\n",
                   "position": "after", "message": "Change", "paths": ["README.md"], "branch": "main",
                   "new_name": "renamed", "command": "true", "query": "the greeting",
                   "patch": "*** Begin Patch\n*** Update File: README.md\n-# Demo\n+# Demo!\n*** End Patch"}
FOR_TOOL = {"outline": {"path": "src/app.py"}, "read_symbol": {"path": "src/app.py"},
            "find_definition": {"path": "src/app.py"}, "replace_symbol": {"path": "src/app.py"},
            "insert_symbol": {"path": "src/app.py"}}  # the code tools read code


def _required(tool: dict[str, Any], name: str) -> Any:
    return FOR_TOOL.get(tool["name"], {}).get(name, REQUIRED_VALUES[name])
STRICT = ["openai-agents ensure_strict_json_schema", "langchain-core convert_to_openai_tool strict",
          "langchain-openai bind_tools strict"]
GOOGLE = ["google-genai mcp_to_gemini_tool", "google-genai Schema.from_json_schema inputSchema",
          "google-genai Schema.from_json_schema outputSchema"]


@pytest.fixture(scope="session")
def cache() -> Path:
    """The folder scripts/provider_converters.sh fills (once, from the system's python3, whichever Python
    runs the tests: the converters run as a process of their own; later runs reuse it)."""
    return installed("provider_converters.sh", "the providers' converters", timeout=900)


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = make_repo(tmp_path_factory.mktemp("providers") / "repo")
    (root / "README.md").write_text("# Demo\n\nA demo project, changed.\n")  # so git_diff has something to show
    return root


@pytest.fixture(scope="module")
def server(repo: Path) -> Any:
    with Tools(repo, write=True, options=("--allow-run",)) as tools:
        yield tools


@pytest.fixture(scope="module")
def listed(server: Tools) -> list[dict[str, Any]]:
    """The tools of a real `shipcode-mcp --allow-write --allow-run`, as both eras list them (the same)."""
    legacy = list(server.tools.values())
    modern = server.process.request("tools/list", {"_meta": MODERN_META})["result"]["tools"]
    assert modern == legacy
    assert [tool["name"] for tool in legacy] == ALL_TOOLS
    return legacy


@pytest.fixture(scope="module")
def converted(cache: Path, listed: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    done = subprocess.run([str(cache / "venv" / "bin" / "python"), str(PROVIDERS / "convert.py")],
                          input=json.dumps(listed), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    tools: dict[str, dict[str, Any]] = json.loads(done.stdout)["tools"]
    return tools


@pytest.fixture(scope="module")
def pydantic_ai(cache: Path, repo: Path) -> dict[str, Any]:
    """What pydantic-ai's MCPToolset made of a real server it spawned itself."""
    server = [sys.executable, "-m", "shipcode_mcp", "--allow-write", "--allow-run", str(repo)]
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    done = subprocess.run([str(cache / "venv" / "bin" / "python"), str(PROVIDERS / "pydantic_ai_tools.py"), *server],
                          capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def _ok(results: dict[str, Any], tool: str, converter: str) -> dict[str, Any]:
    result = results[converter]
    assert "ok" in result, f"{converter} rejects {tool}: {result['error']}"
    schema: dict[str, Any] = result["schema"]
    return schema


def _not_given(tool: dict[str, Any]) -> dict[str, Any]:
    """The call that gives only the required arguments, written as strict mode must write it: every
    other argument present, as null."""
    schema = tool["inputSchema"]
    required = schema.get("required", [])
    return {name: _required(tool, name) if name in required else None for name in schema.get("properties", {})}


def _all_given(tool: dict[str, Any]) -> dict[str, Any]:
    """A call that gives every argument a real value: the default where there is one, else one of its type."""
    schema = tool["inputSchema"]
    required = schema.get("required", [])
    call: dict[str, Any] = {}
    for name, spec in schema.get("properties", {}).items():
        call[name] = _required(tool, name) if name in required else _sample(spec)
    return call


def _sample(spec: dict[str, Any]) -> Any:
    """A value of an optional argument: its default, else its first enum value, else one of its type (an
    array: one item, each of whose properties is given a value the same way)."""
    if "default" in spec:
        return spec["default"]
    if "pattern" in spec:
        return "0" * 64  # expected_sha256, the one argument with a pattern
    if "enum" in spec:
        return spec["enum"][0]
    typed = spec["anyOf"][0] if "anyOf" in spec else spec
    if typed["type"] == "array":
        item = typed["items"]
        if item["type"] != "object":
            return ["SAMPLE=1"] if "pattern" in item else ["README.md"]  # run_command's env; paths
        return [{name: _sample(part) if "anyOf" in part or "default" in part else "x"
                 for name, part in item["properties"].items()}]
    return {"string": "x", "integer": 1, "boolean": False}[typed["type"]]


def test_google_genai_converts_every_tool(listed: list[dict[str, Any]],
                                          converted: dict[str, dict[str, Any]]) -> None:
    for tool in listed:
        for converter in GOOGLE:
            _ok(converted[tool["name"]], tool["name"], converter)
        declaration = _ok(converted[tool["name"]], tool["name"], "google-genai mcp_to_gemini_tool")
        parameters = declaration["parameters"]
        properties = tool["inputSchema"]["properties"]
        assert set(parameters.get("properties", {})) == set(properties), tool["name"]
        assert parameters.get("required", []) == tool["inputSchema"].get("required", []), tool["name"]
        for name, prop in parameters.get("properties", {}).items():
            # an optional argument stays typed, and nullable: Gemini may send null for "not given" too
            assert prop["type"] != "TYPE_UNSPECIFIED", (tool["name"], name)
            assert prop.get("nullable", False) is (name not in parameters.get("required", [])), (tool["name"], name)


@pytest.mark.parametrize("converter", STRICT)
def test_openai_strict_conversion_can_express_every_call(listed: list[dict[str, Any]],
                                                         converted: dict[str, dict[str, Any]], converter: str) -> None:
    for tool in listed:
        strict = _ok(converted[tool["name"]], tool["name"], converter)
        _check_strict(tool, strict)


def test_openai_agents_mcp_adapter_is_strict_for_every_tool_with_arguments(
        listed: list[dict[str, Any]], converted: dict[str, dict[str, Any]]) -> None:
    """Its MCP adapter accepts an argument-less object as strict only when it says
    `"additionalProperties": false`, which google-genai cannot read; git_status (no arguments) is then
    served non-strict, which for a call of no arguments changes nothing. Every other tool is strict."""
    for tool in listed:
        result = converted[tool["name"]]["openai-agents MCP adapter strict"]
        if tool["name"] == "git_status":
            assert "permits undeclared properties" in result["error"]
            continue
        _check_strict(tool, _ok(converted[tool["name"]], tool["name"], "openai-agents MCP adapter strict"))


def test_pydantic_ai_builds_every_tool_definition_and_its_strict_openai_form(
        listed: list[dict[str, Any]], pydantic_ai: dict[str, Any]) -> None:
    assert pydantic_ai["output"] == "listed"
    assert list(pydantic_ai["tools"]) == ALL_TOOLS
    for tool in listed:
        made = pydantic_ai["tools"][tool["name"]]
        assert made["parameters_json_schema"] == tool["inputSchema"]
        assert made["description"] == tool["description"]
        _ok(made, tool["name"], "google")
        _check_strict(tool, _ok(made, tool["name"], "openai strict"))


def _check_strict(tool: dict[str, Any], strict: dict[str, Any]) -> None:
    """Strict mode requires every property; "not given" must still be expressible (as null), each
    optional argument on its own too, and what strict mode can send the server must accept."""
    name = tool["name"]
    properties = tool["inputSchema"].get("properties", {})
    assert strict.get("required", []) == list(properties), name
    assert strict["additionalProperties"] is False, name
    call = _not_given(tool)
    validator = jsonschema.Draft202012Validator(strict)
    assert not list(validator.iter_errors(call)), (name, call, [e.message for e in validator.iter_errors(call)])
    jsonschema.Draft202012Validator(tool["inputSchema"]).validate(call)
    given = _all_given(tool)
    assert validator.is_valid(given), (name, given)
    for optional in set(properties) - set(tool["inputSchema"].get("required", [])):
        alone = {**given, optional: None}  # this one left out, every other one given
        assert validator.is_valid(alone), (name, optional, [e.message for e in validator.iter_errors(alone)])


def test_a_strict_call_with_nulls_is_the_call_without_them(listed: list[dict[str, Any]], server: Tools,
                                                           converted: dict[str, dict[str, Any]]) -> None:
    """git_show of a whole commit (no path) and the default git_diff (no ref) were not expressible under
    strict conversion; each read-only tool's strict call, nulls and all, now gets exactly the result of
    the call that leaves those arguments out."""
    for tool in listed:
        if not tool["annotations"]["readOnlyHint"]:
            continue
        strict = _ok(converted[tool["name"]], tool["name"], "openai-agents ensure_strict_json_schema")
        call = _not_given(tool)
        jsonschema.Draft202012Validator(strict).validate(call)
        left_out = {name: value for name, value in call.items() if value is not None}
        assert server.call(tool["name"], call) == server.call(tool["name"], left_out), tool["name"]
    show = server.call("git_show", {"ref": "HEAD", "path": None})["structuredContent"]
    assert show["type"] == "commit" and show["path"] is None and "Rename util to helpers" in show["text"]
    diff = server.call("git_diff", {"ref": None, "staged": None, "path": None})["structuredContent"]
    assert [entry["path"] for entry in diff["files"]] == ["README.md"]


def test_null_for_a_required_argument_is_still_refused(server: Tools) -> None:
    refusals: list[tuple[str, dict[str, Any], str]] = [
        ("git_show", {"ref": None}, "ref"), ("read_file", {"path": None}, "path"),
        ("write_file", {"path": "x.txt", "content": None}, "content")]
    for name, arguments, named in refusals:
        message = server.error(name, arguments)
        assert message.startswith(f"Invalid arguments for tool {name}: ") and named in message, message


def test_inspector_portability_check_finds_nothing(cache: Path, repo: Path, listed: list[dict[str, Any]]) -> None:
    node = cache / "node_modules" / "node" / "bin" / "node"
    inspector = cache / "node_modules" / "@modelcontextprotocol" / "inspector" / "clients" / "launcher" / "build"
    command = [str(node), str(inspector / "index.js"), "--cli", "--method", "tools/list", "--strict", "--format", "json",
               sys.executable, "-m", "shipcode_mcp", "--allow-write", "--allow-run", str(repo)]
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report.get("schemaFindings", []) == []
    assert "Warning:" not in done.stderr and "Error:" not in done.stderr and "portability" not in done.stderr
    assert [tool["name"] for tool in report["result"]["tools"]] == ALL_TOOLS
    assert report["result"]["tools"] == listed


def test_the_inspector_check_is_live(cache: Path, tmp_path: Path) -> None:
    """The same check on a server whose schema has a type array reports it: a pass above is a real pass."""
    server = tmp_path / "server.py"
    server.write_text(
        "from shipcode_mcp import Server\n"
        "server = Server('typed', '1')\n"
        "def t(n=None):\n"
        "    return 'ok'\n"
        "server.tool(t, name='t', description='t',\n"
        "            input_schema={'type': 'object', 'properties': {'n': {'type': ['integer', 'null']}}})\n"
        "server.run()\n")
    node = cache / "node_modules" / "node" / "bin" / "node"
    inspector = cache / "node_modules" / "@modelcontextprotocol" / "inspector" / "clients" / "launcher" / "build"
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    done = subprocess.run([str(node), str(inspector / "index.js"), "--cli", "--method", "tools/list", "--strict",
                           "--format", "json", sys.executable, str(server)],
                          capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    findings = json.loads(done.stdout)["schemaFindings"]
    assert [(f["toolName"], [(g["rule"], g["path"]) for g in f["findings"]]) for f in findings] == [
        ("t", [("type-union", "properties.n")])]



# -- descriptions and enums through every converter -----------------------------------------------------------------
ANTHROPIC = ["anthropic mcp_tool", "anthropic transform_schema"]
KEEPING = ["google-genai mcp_to_gemini_tool", "google-genai Schema.from_json_schema inputSchema", *STRICT,
           "openai-agents MCP adapter strict", "pydantic-ai openai strict", "pydantic-ai google", *ANTHROPIC]


def _kept(prop: Any, key: str, want: Any) -> bool:
    """`want` under `key` in the converted property or one of its anyOf branches (pydantic-ai appends the
    bounds it moves out, "(minLength=1)", to a description; an enum may lose or keep its null)."""
    if not isinstance(prop, dict):
        return False
    value = prop.get(key)
    if key == "description" and isinstance(value, str) and value.startswith(want):
        return True
    if key == "enum" and isinstance(value, list) and [v for v in value if v is not None] == [v for v in want if v is not None]:
        return True
    return any(_kept(branch, key, want) for branch in prop.get("anyOf", []) + prop.get("oneOf", []))


def _lost(tool: dict[str, Any], converted: dict[str, Any]) -> list[str]:
    """What of each argument's description and enum the converted parameters lack."""
    lost = []
    for name, spec in tool["inputSchema"].get("properties", {}).items():
        typed: dict[str, Any] = next((branch for branch in spec.get("anyOf", []) if branch != {"type": "null"}), {})
        description = spec.get("description") or typed.get("description")
        enum = spec.get("enum") or typed.get("enum")
        prop = converted.get("properties", {}).get(name)
        lost += [f"{name}.description"] * (not _kept(prop, "description", description))
        lost += [f"{name}.enum"] * bool(enum and not _kept(prop, "enum", enum))
    return lost


def _table(listed: list[dict[str, Any]], converted: dict[str, dict[str, Any]],
           pydantic_ai: dict[str, Any] | None) -> dict[str, dict[str, str]]:
    """{tool: {converter: "kept" | "lost a.description, ..." | "refused: ..."}}."""
    table: dict[str, dict[str, str]] = {}
    for tool in listed:
        results = dict(converted[tool["name"]])
        if pydantic_ai is not None:
            made = pydantic_ai["tools"][tool["name"]]
            results["pydantic-ai openai strict"], results["pydantic-ai google"] = made["openai strict"], made["google"]
        row = table[tool["name"]] = {}
        for converter in KEEPING:
            result = results.get(converter)
            if result is None:
                continue
            if "error" in result:
                row[converter] = f"refused: {result['error'][:100]}"
                continue
            schema = result["schema"]
            lost = _lost(tool, schema.get("parameters", schema) if converter.endswith("mcp_to_gemini_tool") else schema)
            row[converter] = f"lost {', '.join(lost)}" if lost else "kept"
    return table


def test_every_description_and_enum_survives_every_converter(listed: list[dict[str, Any]],
                                                             converted: dict[str, dict[str, Any]],
                                                             pydantic_ai: dict[str, Any]) -> None:
    """The conversion table: each tool through each converter keeps every argument's description and enum.
    The one refusal is openai-agents' MCP adapter on git_status (see the test above)."""
    table = _table(listed, converted, pydantic_ai)
    print(json.dumps(table, indent=1))
    for name, row in table.items():
        assert list(row) == KEEPING, name
        for converter, outcome in row.items():
            if (name, converter) == ("git_status", "openai-agents MCP adapter strict"):
                assert outcome.startswith("refused: "), outcome
                continue
            assert outcome == "kept", (name, converter, outcome)
    for tool in listed:  # Anthropic's MCP helper sends the schema as it is
        assert _ok(converted[tool["name"]], tool["name"], "anthropic mcp_tool") == tool["inputSchema"]
    kinds = listed[ALL_TOOLS.index("find_symbol")]["inputSchema"]["properties"]["kind"]
    gemini = _ok(converted["find_symbol"], "find_symbol", "google-genai mcp_to_gemini_tool")["parameters"]
    assert gemini["properties"]["kind"]["enum"] == kinds["anyOf"][0]["enum"]  # the enum Gemini used to lose


def test_the_loss_check_sees_a_description_written_beside_the_any_of(cache: Path, listed: list[dict[str, Any]]) -> None:
    """Control: the same tools with each optional argument's description and enum beside its `anyOf` (the
    former style) lose them in google-genai's conversion, and the table says so; the others keep them."""
    beside = json.loads(json.dumps(listed))
    moved = 0  # each description and enum moved out of a typed branch: what google-genai should lose
    for tool in beside:
        for spec in tool["inputSchema"]["properties"].values():
            if "anyOf" in spec:
                typed = spec["anyOf"][0]
                moved += ("description" in typed) + ("enum" in typed)
                spec.update({key: typed.pop(key) for key in ("description",) if key in typed})
                typed.pop("enum", None)
    assert moved >= 28  # 27 optional descriptions and find_symbol.kind's enum when this was written
    done = subprocess.run([str(cache / "venv" / "bin" / "python"), str(PROVIDERS / "convert.py")],
                          input=json.dumps(beside), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    table = _table(beside, json.loads(done.stdout)["tools"], None)
    gemini = [outcome for row in table.values() for converter, outcome in row.items()
              if converter == "google-genai mcp_to_gemini_tool"]
    lost = sum(outcome.count(".description") + outcome.count(".enum") for outcome in gemini)
    assert lost == moved and "kind.enum" in table["find_symbol"]["google-genai mcp_to_gemini_tool"], table
    assert all(outcome == "kept" for row in table.values() for converter, outcome in row.items()
               if converter in STRICT or converter in ANTHROPIC), table

"""Run the model providers' own schema converters on MCP tools, in the converters' venv (not the
project's): tests/test_provider_schemas.py feeds it `tools/list`'s tools as JSON on stdin and reads
one JSON object on stdout, {tool name: {converter: {"ok": true, "schema": ...} or {"error": "..."}}}.

Each converter is called the way its library calls it on an MCP tool or a JSON-Schema tool:
- google-genai: `_mcp_utils.mcp_to_gemini_tool` (its MCP session support), and
  `types.Schema.from_json_schema` on each schema as that conversion filters it;
- openai-agents: `agents.strict_schema.ensure_strict_json_schema` (function tools), and as its MCP
  adapter calls it with `convert_schemas_to_strict`;
- langchain-openai: `convert_to_openai_tool(..., strict=True)` and `ChatOpenAI.bind_tools(strict=True)`;
- anthropic: `lib.tools.mcp.mcp_tool` (its MCP helper for the tool runner; the schema as the API receives
  it) and `transform_schema`, the SDK's rewrite of a schema for strict structured output.
"""

from __future__ import annotations

import copy
import importlib.metadata
import json
import logging
import sys
from collections.abc import Callable
from typing import Any

logging.disable(logging.CRITICAL)  # google-genai logs a note on its first conversion

VERSIONS = {name: importlib.metadata.version(name)
            for name in ("google-genai", "openai-agents", "langchain-core", "langchain-openai", "anthropic", "mcp")}


def _genai_mcp(tool: dict[str, Any]) -> dict[str, Any]:
    import mcp.types
    from google.genai import _mcp_utils

    converted = _mcp_utils.mcp_to_gemini_tool(mcp.types.Tool.model_validate(tool))
    declaration = converted.function_declarations[0]  # type: ignore[index]
    return declaration.model_dump(mode="json", exclude_none=True)


def _genai_schema(schema: dict[str, Any]) -> dict[str, Any]:
    from google.genai import _mcp_utils, types

    json_schema = types.JSONSchema(**_mcp_utils._filter_to_supported_schema(schema))
    return types.Schema.from_json_schema(json_schema=json_schema).model_dump(mode="json", exclude_none=True)


def _agents_strict(tool: dict[str, Any]) -> dict[str, Any]:
    from agents.strict_schema import ensure_strict_json_schema

    return ensure_strict_json_schema(tool["inputSchema"])


def _agents_mcp_strict(tool: dict[str, Any]) -> dict[str, Any]:
    """As openai-agents' MCP adapter (`MCPUtil.to_function_tool`) converts with convert_schemas_to_strict:
    it also refuses an object without properties that is not closed by additionalProperties: false."""
    from agents.strict_schema import ensure_strict_json_schema

    return ensure_strict_json_schema(tool["inputSchema"], _reject_open_objects=tool["inputSchema"] != {})


def _langchain_strict(tool: dict[str, Any]) -> dict[str, Any]:
    from langchain_core.utils.function_calling import convert_to_openai_tool

    function = {"name": tool["name"], "description": tool["description"], "parameters": tool["inputSchema"]}
    converted = convert_to_openai_tool(function, strict=True)
    assert converted["function"]["strict"] is True
    return converted["function"]["parameters"]  # type: ignore[no-any-return]


def _langchain_openai_bind(tool: dict[str, Any]) -> dict[str, Any]:
    from langchain_openai import ChatOpenAI

    model = ChatOpenAI(model="gpt-4o", api_key="not-used")  # no request is made
    function = {"name": tool["name"], "description": tool["description"], "parameters": tool["inputSchema"]}
    bound = model.bind_tools([function], strict=True)
    sent = bound.kwargs["tools"][0]["function"]  # type: ignore[attr-defined]
    assert sent["strict"] is True
    return sent["parameters"]  # type: ignore[no-any-return]


def _anthropic_mcp(tool: dict[str, Any]) -> dict[str, Any]:
    import mcp.types
    from anthropic.lib.tools.mcp import mcp_tool

    converted = mcp_tool(mcp.types.Tool.model_validate(tool), None)  # type: ignore[arg-type]  # no call is made
    sent: dict[str, Any] = dict(converted.to_dict()["input_schema"])
    return sent


def _anthropic_strict(tool: dict[str, Any]) -> dict[str, Any]:
    from anthropic import transform_schema

    return transform_schema(tool["inputSchema"])


CONVERTERS: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "google-genai mcp_to_gemini_tool": _genai_mcp,
    "google-genai Schema.from_json_schema inputSchema": lambda tool: _genai_schema(tool["inputSchema"]),
    "google-genai Schema.from_json_schema outputSchema": lambda tool: _genai_schema(tool["outputSchema"]),
    "openai-agents ensure_strict_json_schema": _agents_strict,
    "openai-agents MCP adapter strict": _agents_mcp_strict,
    "langchain-core convert_to_openai_tool strict": _langchain_strict,
    "langchain-openai bind_tools strict": _langchain_openai_bind,
    "anthropic mcp_tool": _anthropic_mcp,
    "anthropic transform_schema": _anthropic_strict,
}


def convert(tool: dict[str, Any]) -> dict[str, Any]:
    results: dict[str, Any] = {}
    for name, converter in CONVERTERS.items():
        try:
            results[name] = {"ok": True, "schema": converter(copy.deepcopy(tool))}
        except Exception as err:  # what the converter raised is the result
            results[name] = {"error": f"{type(err).__name__}: {err}"}
    return results


def main() -> None:
    tools = json.load(sys.stdin)
    json.dump({"versions": VERSIONS, "tools": {tool["name"]: convert(tool) for tool in tools}}, sys.stdout)


if __name__ == "__main__":
    main()

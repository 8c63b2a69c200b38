"""pydantic-ai's MCP toolset on a real shipcode-mcp process, in the converters' venv: an agent whose
model is a local function (no provider is called) is given the server as a toolset, and the tool
definitions pydantic-ai builds from `tools/list` are printed as JSON, each also through the OpenAI
(strict) and Google schema transformers pydantic-ai applies before sending tools to those providers.

    python pydantic_ai_tools.py SERVER_COMMAND [ARG ...]
"""

from __future__ import annotations

import copy
import importlib.metadata
import json
import sys
from typing import Any

from fastmcp.client import Client
from fastmcp.client.transports import StdioTransport
from pydantic_ai import Agent
from pydantic_ai.mcp import MCPToolset
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.profiles.google import GoogleJsonSchemaTransformer
from pydantic_ai.profiles.openai import OpenAIJsonSchemaTransformer


def _transform(schema: dict[str, Any], transformer: Any, **options: Any) -> dict[str, Any]:
    try:
        return {"ok": True, "schema": transformer(copy.deepcopy(schema), **options).walk()}
    except Exception as err:  # what the transformer raised is the result
        return {"error": f"{type(err).__name__}: {err}"}


def main() -> None:
    command, *args = sys.argv[1:]
    toolset = MCPToolset(Client(StdioTransport(command=command, args=args)))
    seen: dict[str, Any] = {}

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        for tool in info.function_tools:
            schema = tool.parameters_json_schema
            seen[tool.name] = {
                "parameters_json_schema": schema,
                "description": tool.description,
                "openai strict": _transform(schema, OpenAIJsonSchemaTransformer, strict=True),
                "google": _transform(schema, GoogleJsonSchemaTransformer),
            }
        return ModelResponse(parts=[TextPart("listed")])

    agent = Agent(FunctionModel(model), toolsets=[toolset])
    output = agent.run_sync("List your tools.").output
    json.dump({"version": importlib.metadata.version("pydantic-ai-slim"), "output": output, "tools": seen},
              sys.stdout)


if __name__ == "__main__":
    main()

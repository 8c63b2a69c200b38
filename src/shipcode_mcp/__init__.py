"""shipcode-mcp: a fast, spec-exact MCP server for code workspaces, and the small library it is built on.

    from shipcode_mcp import Server

    server = Server("demo", "1.0.0")

    @server.tool
    def add(a: int, b: int) -> int:
        "Add two numbers."
        return a + b

    server.run()  # stdio; server.run(transport="http", port=8765) for Streamable HTTP
"""

from __future__ import annotations

__version__ = "1.0.0"

from .context import Cancelled, ClientRequestError, Context
from .jsonrpc import JsonRpcError
from .primitives import (
    Completion,
    Prompt,
    PromptArgument,
    Resource,
    ResourceNotFound,
    ResourceTemplate,
    Tool,
    ToolError,
    ToolResult,
    audio_content,
    blob_resource,
    embedded_resource,
    image_content,
    resource_link,
    text_content,
    text_resource,
)
from .server import Server

__all__ = [
    "Cancelled", "ClientRequestError", "Completion", "Context", "JsonRpcError", "Prompt", "PromptArgument", "Resource",
    "ResourceNotFound", "ResourceTemplate", "Server", "Tool", "ToolError", "ToolResult", "__version__",
    "audio_content", "blob_resource", "embedded_resource", "image_content", "resource_link", "text_content",
    "text_resource",
]

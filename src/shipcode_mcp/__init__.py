"""shipcode-mcp: a fast, spec-exact MCP server for code workspaces, and the small library it is built on.

    from shipcode_mcp import Server

    server = Server("demo", "1.0.0")

    @server.tool
    def add(a: int, b: int) -> int:
        "Add two numbers."
        return a + b

    server.run()  # stdio; server.run(transport="http", port=8765) for Streamable HTTP

The names below load on first use (module `__getattr__`), so `import shipcode_mcp` costs nothing
and the command-line server never pays for parts of the library it does not use.
"""

from __future__ import annotations

__version__ = "1.0.0"

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .context import Cancelled, ClientRequestError
    from .context import RequestContext as Context
    from .jsonrpc import JsonRpcError
    from .primitives import (
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
    "Cancelled", "ClientRequestError", "Context", "JsonRpcError", "Prompt", "PromptArgument", "Resource",
    "ResourceNotFound", "ResourceTemplate", "Server", "Tool", "ToolError", "ToolResult", "__version__",
    "audio_content", "blob_resource", "embedded_resource", "image_content", "resource_link", "text_content",
    "text_resource",
]

_MODULE_OF = {"Server": "server", "Context": "context", "Cancelled": "context", "ClientRequestError": "context",
              "JsonRpcError": "jsonrpc"}  # everything else is in primitives
_RENAMED = {"Context": "RequestContext"}


def __getattr__(name: str) -> object:
    if name not in __all__ or name == "__version__":
        raise AttributeError(f"module 'shipcode_mcp' has no attribute {name!r}")
    module = __import__(f"{__name__}.{_MODULE_OF.get(name, 'primitives')}", fromlist=["_"])  # importlib costs 0.4 ms
    value = getattr(module, _RENAMED.get(name, name))
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(__all__)

"""shipcode-mcp: a fast, spec-exact MCP server for code workspaces, and the small library it is built on."""

__version__ = "1.0.0"

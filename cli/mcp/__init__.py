"""acor mcp: the tools served to MCP clients."""

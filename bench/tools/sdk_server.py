"""The reference for the MCP per-call rows: a server on the official SDK
that answers a trivial tool in its own process (no subprocess per call),
over stdio, as `acor mcp` is reached."""

from mcp.server.mcpserver import MCPServer

server = MCPServer("sdk-reference")


@server.tool()
def ping() -> str:
    """Answer at once."""
    return "ok"


if __name__ == "__main__":
    server.run()

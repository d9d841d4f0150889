"""The reference for the MCP per-call rows: a server on the official SDK
that answers a trivial tool in its own process (no subprocess per call),
over stdio, as `acor mcp` is reached, or with ``--http PORT`` over
streamable HTTP on 127.0.0.1 (one uvicorn process, as `acor mcp --http`)."""

import sys

import uvicorn
from mcp.server.mcpserver import MCPServer

server = MCPServer("sdk-reference")


@server.tool()
def ping() -> str:
    """Answer at once."""
    return "ok"


if __name__ == "__main__":
    if sys.argv[1:2] == ["--http"]:
        # uvicorn as `acor mcp --http` configures it (no access log), at
        # info level only for the line that says it listens.
        uvicorn.run(server.streamable_http_app(), host="127.0.0.1",
                    port=int(sys.argv[2]), log_level="info", access_log=False)
    else:
        server.run()

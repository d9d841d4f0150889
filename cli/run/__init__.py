"""Running one tool: its request built once, its process spawned, its
stream relayed, its result built. No front end lives here: the terminal,
MCP and the commands sit above and hand the runner a request."""

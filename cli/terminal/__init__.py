"""The terminal front end: ``acor TOOL`` run by name in its format, and
a person at the terminal asked what a tool needs, then the tool run again.
Beside the MCP server (:mod:`acor.cli.mcp`) and the built-in commands
(:mod:`acor.cli.commands`), above the runner (:mod:`acor.cli.run`)."""

"""The wires ``acor mcp`` serves on, each named for its wire and kept
apart from the handlers (:mod:`acor.cli.mcp.server`): stdio, with the
SDK's side of it in its own module, and streamable HTTP with its options
read before the SDK is imported."""

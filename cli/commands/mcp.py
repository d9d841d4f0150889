"""``acor mcp``: the command that serves every tool to MCP clients
(:mod:`acor.cli.mcp` does the serving, and imports the SDK only then)."""

from __future__ import annotations

import os

import click

from acor.events import Error

from acor.cli.mcp.server import fail, parse_options, serve


@click.command("mcp")
@click.option("--tools", "tools", metavar="NAME,...",
              help="Serve only these tools (comma-separated names).")
@click.option("--timeout", metavar="S",
              help="Seconds before a call's tool is stopped (default: the "
                   "tool's manifest, the config, then 120).")
@click.pass_context
def mcp_command(ctx: click.Context, tools: str | None,
                timeout: str | None) -> int:
    """Serve every tool to MCP clients (Claude Code, Claude Desktop,
    Cursor...) over stdio: typed arguments, progress, input requests and
    cancellation. Needs the extra: pip install 'acor-cli[mcp]'."""
    try:
        only, seconds = parse_options(tools, timeout)
    except ValueError as exc:
        return fail(Error(str(exc), "E_USAGE", None,
                           "Run `acor mcp --help` for the options."))
    config = (ctx.obj or {}).get("config") or os.environ.get("ACOR_CONFIG")
    return serve(only, seconds, config)

"""``acor mcp``: the command that serves every tool to MCP clients
(:mod:`acor.cli.mcp` does the serving, and imports the SDK only then;
:mod:`acor.cli.commands.mcp_config` writes a client's config for it)."""

from __future__ import annotations

import os

import click

from acor.events import Error

from acor.cli.commands.mcp_config import CLIENTS
from acor.cli.mcp.server import fail, parse_options, serve


@click.command("mcp")
@click.option("--tools", "tools", metavar="NAME,...", multiple=True,
              help="Serve only these tools (comma-separated names; the "
                   "option may be repeated).")
@click.option("--timeout", metavar="S",
              help="Seconds before a call's tool is stopped (default: the "
                   "tool's manifest, the config, then 120).")
@click.option("--cwd", metavar="DIR",
              help="Work in DIR, the project: tools are found from there "
                   "and run there (as `git -C`: a relative --config starts "
                   "from DIR too). Clients start servers in a folder of "
                   "their own.")
@click.option("--print-config", "client", type=click.Choice(CLIENTS),
              help="Print the config that makes this client start acor "
                   "mcp for this project (absolute paths), and exit.")
@click.pass_context
def mcp_command(ctx: click.Context, tools: tuple[str, ...],
                timeout: str | None, cwd: str | None,
                client: str | None) -> int:
    """Serve every tool to MCP clients (Claude Code, Claude Desktop,
    Cursor, VS Code, Codex...) over stdio: typed arguments, progress, input
    requests and cancellation. Needs the extra: pip install
    'acor-cli[mcp]'. `acor mcp --print-config claude`, run in the
    project, writes the client's config."""
    try:
        only, seconds = parse_options(",".join(tools) if tools else None,
                                      timeout)
    except ValueError as exc:
        return fail(Error(str(exc), "E_USAGE", None,
                           "Run `acor mcp --help` for the options."))
    if cwd is not None:
        try:
            os.chdir(cwd)
        except OSError as exc:
            from acor.cli.textsafe import quote
            return fail(Error(f"--cwd {quote(cwd)}: {exc.strerror}",
                              "E_USAGE", None,
                              "Give the project's folder, as an absolute "
                              "path: --cwd /abs/project."))
    config = (ctx.obj or {}).get("config") or os.environ.get("ACOR_CONFIG")
    if client is not None:
        from acor.cli.commands.mcp_config import print_config
        return print_config(client, only, timeout, seconds, config)
    return serve(only, seconds, config)

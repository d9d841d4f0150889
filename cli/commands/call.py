"""``acor call TOOL JSON``: run a tool with typed arguments.

The JSON object is checked against the tool's argument schema (every
violation listed, nothing run, exit 2), turned into an argv (never a shell
string; ``--`` before positional values, so a value that starts with ``-``
cannot act as a flag) and run exactly as ``acor TOOL ARGV...`` runs. The MCP
server and the pytest plugin use the same conversion
(:func:`acor.cli.arguments.call_argv`).
"""

from __future__ import annotations

import json
import sys

import click

from acor.cli.arguments import call_argv
from acor.cli.errors import UsageError


@click.command("call")
@click.argument("tool")
@click.argument("arguments", default="{}", required=False,
                metavar="JSON|-")
@click.pass_context
def call_command(ctx: click.Context, tool: str, arguments: str) -> None:
    """Run TOOL with arguments given as a JSON object (or - to read it
    from stdin), checked against the tool's argument schema first."""
    from acor.cli.commands.context import command_registry
    from acor.cli.errors import unknown_tool
    from acor.cli.terminal.named import run_and_ask
    from acor.cli.signals import EarlySignals
    obj = ctx.find_root().obj or {}
    text = sys.stdin.read() if arguments == "-" else arguments
    try:
        values = json.loads(text)
    except ValueError as exc:
        raise UsageError(f"The arguments are not valid JSON: {exc}",
                         "Quote the JSON object for the shell, e.g. "
                         f"acor call {tool} '{{\"name\": \"x\"}}'.",
                         next=["acor", "show", tool]) from None
    except RecursionError:
        raise UsageError("The arguments are nested too deeply",
                         "Pass a flat JSON object of the tool's arguments.",
                         next=["acor", "show", tool]) from None
    registry = command_registry(ctx)
    spec = registry.get(tool)
    if spec is None:
        raise unknown_tool(tool, registry, (), ("acor", "call"))
    argv = call_argv(spec, values)
    options = {k: obj[k] for k in ("format", "timeout", "idle_timeout",
                                   "config") if obj.get(k) is not None}
    words = [w for k, v in options.items()
             for w in ("--" + k.replace("_", "-"), str(v))]
    if obj.get("sandbox") is not None:
        options["sandbox"] = obj["sandbox"]
        words.append("--sandbox" if obj["sandbox"] == "default" else
                     "--no-sandbox")
    ctx.exit(run_and_ask(tool, argv, options, words,
                         obj.get("early") or EarlySignals()))

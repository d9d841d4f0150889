"""``acor call TOOL JSON``: run a tool with typed arguments.

The JSON object is checked against the tool's argument schema (every
violation listed, nothing run, exit 2), turned into an argv (never a shell
string; ``--`` before positional values, so a value that starts with ``-``
cannot act as a flag) and run exactly as ``acor TOOL ARGV...`` runs. The MCP
server and the pytest plugin use the same conversion (:func:`call_argv`).
"""

from __future__ import annotations

import json
import sys

import click

from acor.cli.errors import UsageError

def call_argv(spec, values) -> list[str]:
    """The argv for ``values`` (a JSON object) under ``spec``'s schema;
    raises :class:`UsageError` listing every violation."""
    if not isinstance(values, dict):
        raise UsageError("The arguments must be a JSON object, not "
                         f"{type(values).__name__}", _hint(spec),
                         next=["acor", "show", spec.name])
    if not spec.args_schema:
        argv = values.get("argv", [])
        extra = sorted(set(values) - {"argv"})
        if extra or not isinstance(argv, list) or not all(
                isinstance(a, str) for a in argv):
            raise UsageError(
                f"Tool '{spec.name}' declares no argument schema: call it "
                'with {"argv": [strings]}', _hint(spec),
                details="unexpected: " + ", ".join(extra) if extra else
                "argv must be a list of strings",
                next=["acor", "call", spec.name, '{"argv": []}'])
        return list(argv)
    from acor.args import to_argv, validate
    problems = validate(spec.args_schema, values)
    if problems:
        raise UsageError(f"Invalid arguments for '{spec.name}': "
                         f"{problems[0]}" + (f" (and {len(problems) - 1} "
                                             "more)" if len(problems) > 1
                                             else ""), _hint(spec),
                         details="\n".join(problems),
                         next=["acor", "show", spec.name])
    return to_argv(spec.args_schema, values)


def _hint(spec) -> str:
    return (f"Fix the arguments: `acor show {spec.name}` shows the tool's "
            "arguments and their types.")


@click.command("call")
@click.argument("tool")
@click.argument("arguments", default="{}", required=False,
                metavar="JSON|-")
@click.pass_context
def call_command(ctx, tool, arguments):
    """Run TOOL with arguments given as a JSON object (or - to read it
    from stdin), checked against the tool's argument schema first."""
    from acor.cli.discovery.registry import load_registry
    from acor.cli.errors import invalid_manifest, unknown_tool
    from acor.cli.main import run_named
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
    import os
    registry = load_registry(config_path=obj.get("config") or
                             os.environ.get("ACOR_CONFIG"))
    spec = registry.get(tool)
    if spec is None:
        skipped = registry.skipped_named(tool)
        raise invalid_manifest(tool, skipped) if skipped else \
            unknown_tool(tool, registry, (), ("acor", "call"))
    argv = call_argv(spec, values)
    options = {k: obj[k] for k in ("format", "timeout", "idle_timeout",
                                   "config") if obj.get(k) is not None}
    words = [w for k, v in options.items()
             for w in ("--" + k.replace("_", "-"), str(v))]
    ctx.exit(run_named(tool, argv, options, words))

"""Built-in commands and help: the click application (the cold path).

``acor <tool>`` never comes here (see :mod:`cli.main`); ``acor``,
``acor --help``, ``acor list``, ``acor show``, ``acor parse`` and
``acor doctor`` do. Usage errors are reported in ACOR form with exit code 2,
like every other error an agent can cause.
"""

import json
import os
import sys

import click

from acor import __version__, exitcodes

from .errors import LauncherError, UsageError, config_error, report, \
    unknown_tool
from .formats import FORMATS
from .sessions_cmd import sessions


def _registry(ctx):
    """The registry, loaded once per command; ConfigError propagates."""
    obj = ctx.ensure_object(dict)
    if "registry" not in obj:
        from .discover import load_registry
        obj["registry"] = load_registry(
            config_path=obj.get("config") or os.environ.get("ACOR_CONFIG"))
    return obj["registry"]


class AcorGroup(click.Group):
    """Help lists the tools next to the built-in commands."""

    def format_commands(self, ctx, formatter):
        super().format_commands(ctx, formatter)
        from .config import ConfigError
        try:
            registry = _registry(ctx)
        except ConfigError as exc:
            with formatter.section("Tools"):
                formatter.write_text(f"(configuration error: {exc.reason}; "
                                     "run `acor doctor`)")
            return
        rows = [(name, spec.description) for name, spec in
                registry.tools.items()]
        with formatter.section("Tools"):
            if rows:
                formatter.write_dl(rows)
            else:
                formatter.write_text("(none found; see `acor doctor`)")


@click.group(cls=AcorGroup, invoke_without_command=True,
             context_settings={"help_option_names": ["-h", "--help"]},
             epilog="Run a tool: acor [OPTIONS] TOOL [ARGS]...  (everything "
                    "after TOOL goes to the tool, --help included)")
@click.option("--format", "fmt", type=click.Choice(FORMATS),
              help="Output: markdown (default when piped), json, rich "
                   "(default on a terminal).")
@click.option("--timeout", type=float, help="Seconds before the tool is "
              "stopped (default: manifest, config, then 120).")
@click.option("--idle-timeout", type=float, help="Seconds of silence "
              "(no output, no heartbeat) before the tool is stopped.")
@click.option("--config", type=click.Path(dir_okay=False),
              help="Config file (default: .acor/config.yaml found upward).")
@click.version_option(__version__, prog_name="acor")
@click.pass_context
def cli(ctx, fmt, timeout, idle_timeout, config):
    """acor: run command-line tools as a conversation an AI agent can read.

    Tools speak ACOR Markdown (## Status, ## Progress, ## Output Data, ...);
    acor finds them by their manifest.json, relays every section as it
    comes, and always ends a run with one final status and a meaningful
    exit code: 0 complete, 1 failed, 2 usage, 3 input needed, 124 timeout,
    130 cancelled.
    """
    obj = ctx.ensure_object(dict)
    obj.update(format=fmt, config=config)
    if ctx.invoked_subcommand == "sessions":
        # Sessions live where the launcher tells tools to keep them.
        from .config import ConfigError
        try:
            obj["state_dir"] = _registry(ctx).config.state_dir
        except ConfigError:
            pass  # `acor sessions` still works from ACOR_STATE_DIR
    if ctx.invoked_subcommand is None:
        click.echo(ctx.get_help())


@cli.command("list")
@click.option("--json", "as_json", is_flag=True, help="JSON for programs.")
@click.option("--all", "show_all", is_flag=True,
              help="Also show skipped and shadowed manifests, with reasons.")
@click.pass_context
def list_tools(ctx, as_json, show_all):
    """List the tools: name, version, kind, description, path."""
    registry = _registry(ctx)
    tools = [{"name": s.name, "version": s.version, "kind": s.kind,
              "description": s.description, "path": s.path}
             for s in registry.tools.values()]
    if as_json:
        data = {"tools": tools}
        if show_all:
            data["skipped"] = [{"path": s.path, "reason": s.reason,
                                "recovery": s.recovery}
                               for s in registry.skipped]
            data["shadowed"] = [{"name": s.name, "winner": s.winner_path,
                                 "loser": s.loser_path}
                                for s in registry.shadowed]
        click.echo(json.dumps(data, indent=2))
        return
    if not tools:
        click.echo("No tools found. Run `acor doctor` to see where acor "
                   "looked.")
    width = max((len(t["name"]) for t in tools), default=0)
    for t in tools:
        click.echo(f"{t['name']:<{width}}  {t['version']:<8} {t['kind']:<7} "
                   f"{t['description']}")
    if show_all:
        _echo_problems(registry)


def _echo_problems(registry):
    if registry.skipped:
        click.echo("\nSkipped manifests:")
        for s in registry.skipped:
            click.echo(f"  {s.path}\n    why:  {s.reason}\n    fix:  "
                       f"{s.recovery}")
    if registry.shadowed:
        click.echo("\nShadowed tools (the first tools dir wins):")
        for s in registry.shadowed:
            click.echo(f"  {s.name}: {s.loser_path} is hidden by "
                       f"{s.winner_path}")


@cli.command()
@click.pass_context
def doctor(ctx):
    """Show the configuration, where tools are looked for, and every
    manifest that was skipped or shadowed, with why and how to fix it."""
    registry = _registry(ctx)
    config = registry.config
    click.echo(f"config:     {config.path or '(none: defaults)'}")
    click.echo(f"root:       {config.root}")
    click.echo("tools dirs: " + ", ".join(config.tools_dirs))
    click.echo(f"timeout:    {config.timeout:g} s")
    for warning in config.warnings:
        click.echo(f"warning:    {warning}")
    for spec in registry.tools.values():
        for warning in spec.warnings:
            click.echo(f"warning:    {spec.name}: {warning}")
    click.echo(f"tools:      {len(registry.tools)} found")
    _echo_problems(registry)
    if not registry.skipped and not registry.shadowed:
        click.echo("No problems found.")


@cli.command()
@click.argument("tool")
@click.pass_context
def show(ctx, tool):
    """Show a tool's manifest and usage."""
    registry = _registry(ctx)
    spec = registry.get(tool)
    if spec is None:
        raise unknown_tool(tool, registry)
    click.echo(f"{spec.name} {spec.version} ({spec.kind})")
    click.echo(f"  {spec.description}")
    click.echo(f"  path:  {spec.path}")
    if spec.usage:
        click.echo(f"  usage: {spec.usage}")
    try:
        with open(spec.manifest_path, encoding="utf-8") as f:
            manifest = f.read()
    except OSError:
        manifest = "(manifest unreadable)"
    click.echo("\nmanifest.json:\n" + manifest.rstrip())


@cli.command()
@click.argument("source", default="-", required=False)
def parse(source):
    """Read ACOR Markdown (FILE, or - for stdin) and print its events as
    JSON lines."""
    from acor.grammar import Parser
    parser = Parser()
    try:
        stream = sys.stdin if source == "-" else open(source, encoding="utf-8",
                                                      errors="replace")
    except OSError as exc:
        raise LauncherError(
            f"Cannot read {source}: {exc.strerror}",
            "Check the path, or pipe the text in with `acor parse -`.",
            code="E_FILE_NOT_FOUND" if isinstance(exc, FileNotFoundError)
            else "E_FILE_READ", details=f"path: {os.path.abspath(source)}",
            exit_code=exitcodes.USAGE) from None
    with stream:
        while True:
            chunk = stream.read(1 << 16)
            events = parser.feed(chunk) if chunk else parser.close()
            for event in events:
                click.echo(json.dumps(event.to_dict(), ensure_ascii=False,
                                      default=str))
            if not chunk:
                break


cli.add_command(sessions)


def run_command(argv, fmt=None):
    """Run the click application; every failure is reported in ACOR form."""
    from .config import ConfigError
    try:
        result = cli.main(args=argv, prog_name="acor", standalone_mode=False)
    except LauncherError as exc:
        return report(exc, fmt)
    except ConfigError as exc:
        return report(config_error(exc), fmt)
    except click.UsageError as exc:
        hint = "Run `acor --help` for the commands and tools."
        next_argv = ["acor", "--help"]
        if exc.ctx is not None and exc.ctx.command is not cli:
            hint = f"Run `acor {exc.ctx.command.name} --help` for its usage."
            next_argv = ["acor", exc.ctx.command.name, "--help"]
        return report(UsageError(exc.format_message(), hint, next=next_argv),
                      fmt)
    except click.Abort:
        return exitcodes.CANCELLED
    except click.exceptions.Exit as exc:
        return exc.exit_code
    return result if isinstance(result, int) else exitcodes.OK

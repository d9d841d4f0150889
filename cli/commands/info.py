"""``acor list``, ``acor show``, ``acor doctor`` and ``acor schema``: what
acor knows, for people and (with ``--json``, or ``--format json``) for
programs.

Everything printed here comes from a repository (names, paths, manifest
values, reasons) or from a tool: it is data, written through
:mod:`acor.cli.textsafe`, so nothing can start a line that reads as a heading or
send a control sequence to the terminal.
"""

from __future__ import annotations

import os

import click

from acor import exitcodes

from acor.cli.commands.context import command_registry
from acor.cli.discovery.cache import cache_dir, cache_dir_problem
from acor.cli.discovery.trust import trusted_paths
from acor.cli.errors import LauncherError, unknown_tool
from acor.cli.output.jsonline import json_line
from acor.cli.output.person import at_terminal
from acor.cli.package_data import SCHEMAS, install_line, schema_text
from acor.cli.sandbox.kernel import offers, protections
from acor.cli.tasks.place import STORE_ENV, describe
from acor.cli.textsafe import printable, quote

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any

    from acor.cli.discovery.config import Config
    from acor.cli.discovery.registry import Registry, Skipped
    from acor.cli.discovery.spec import ToolSpec


def wants_json(ctx: click.Context, as_json: bool) -> bool:
    obj = ctx.find_root().obj or {}
    return as_json or obj.get("format") == "json"


def echo_json(data: dict[str, Any]) -> None:
    """``data`` as one line of JSON. What acor lists and shows comes from
    manifests and config, which refuse non-finite numbers."""
    click.echo(json_line(data, finite=True), nl=False)


def tool_record(spec: ToolSpec) -> dict[str, object]:
    record: dict[str, object] = {
        "name": spec.name, "version": spec.version, "kind": spec.kind,
        "description": spec.description, "path": spec.path,
        "origin": spec.origin, "usage": spec.usage,
        "args": spec.args_public, "annotations": spec.annotations,
        "sandbox": spec.sandbox}
    return record


def sandbox_note(spec: ToolSpec) -> str:
    """The tool's sandbox, in one line for people."""
    box = spec.sandbox
    if box is None:
        return "none declared (all your rights; `acor --sandbox` gives it " \
            "a default box)"
    write = ", ".join(printable(p) for p in box.get("write") or []) or \
        "nothing"
    read = "anything" if box.get("read") is None else \
        ", ".join(printable(p) for p in box["read"]) or "only what it runs on"
    network = "yes" if box.get("network") else "no"
    sockets = "; UNIX sockets outside it yes" if box.get("unix_sockets") \
        else ""
    return (f"write {write} (and its temp dir); read {read}; network "
            f"{network}{sockets}")


@click.command("list")
@click.option("--json", "as_json", is_flag=True, help="JSON for programs.")
@click.option("--all", "show_all", is_flag=True,
              help="Also show skipped and shadowed manifests, with reasons.")
@click.pass_context
def list_tools(ctx: click.Context, as_json: bool, show_all: bool) -> None:
    """List the tools: name, version, kind, description and where each
    came from (a project tools dir, the user's, or a package)."""
    reg = command_registry(ctx)
    if wants_json(ctx, as_json):
        data: dict[str, Any] = {
            "tools": [tool_record(s) for s in reg.tools.values()],
            "skipped": len(reg.skipped), "shadowed": len(reg.shadowed)}
        if show_all:
            data["skipped"] = [{**s.to_dict(), "problems": skipped_problems(s)}
                               for s in reg.skipped]
            data["shadowed"] = [{"name": s.name, "winner": s.winner_path,
                                 "loser": s.loser_path}
                                for s in reg.shadowed]
        echo_json(data)
        return
    tools = list(reg.tools.values())
    if not tools:
        click.echo("No tools found. Run `acor doctor` to see where acor "
                   "looked.")
    if tools and at_terminal():
        _tools_table(tools)
    else:
        width = max((len(s.name) for s in tools), default=0)
        for s in tools:
            click.echo(f"{s.name:<{width}}  {printable(s.version or ''):<8} "
                       f"{s.kind:<7} {printable(s.description or '')}  "
                       f"[{printable(s.origin or '')}]")
    if show_all:
        echo_problems(reg, [skipped_problems(s) for s in reg.skipped])
    elif reg.skipped:
        click.echo(f"\n{counted(len(reg.skipped), 'manifest')} skipped: "
                   "see why with `acor list --all`.")


def echo_problems(reg: Registry,
                  every: list[list[dict[str, Any]]] | None = None) -> None:
    """The skipped and shadowed manifests; ``every``: each skipped one's
    problems (:func:`skipped_problems`), where only its first is known
    otherwise (``acor list --all`` and ``acor doctor`` give them all)."""
    if reg.skipped:
        click.echo("\nSkipped manifests:")
        for i, s in enumerate(reg.skipped):
            found = every[i] if every is not None else []
            if len(found) < 2:
                click.echo(f"  {quote(s.path)}\n    why:  "
                           f"{printable(s.reason)}\n    fix:  "
                           f"{printable(s.recovery)}")
                continue
            click.echo(f"  {quote(s.path)}: {counted(len(found), 'problem')}")
            for problem in found:
                field, reason = problem["field"], problem["reason"]
                # A field's path, unless the reason starts with it.
                where = f"{printable(field)}: " if field and \
                    not reason.startswith(field) else ""
                click.echo(f"    {where}{printable(reason)}\n"
                           f"      fix:  {printable(problem['recovery'])}")
    if reg.shadowed:
        click.echo("\nShadowed tools (the first tools dir wins):")
        for hidden in reg.shadowed:
            why = " (an override of a package's tool: fine)" \
                if hidden.override else ""
            click.echo(f"  {hidden.name}: {quote(hidden.loser_path)} is "
                       f"hidden by {quote(hidden.winner_path)}{why}")


def _tools_table(tools: list[ToolSpec]) -> None:
    """The tools as a person at a terminal reads them: a table with
    headers, as wide as the terminal, each cell wrapped at words."""
    # rich costs ~30 ms: only a person at a terminal waits for it.
    from rich.table import Table
    from rich.text import Text

    from acor.cli.output.rich_view import person_console
    table = Table(box=None, pad_edge=False, header_style="bold", expand=True)
    for header, ratio in (("TOOL", None), ("VERSION", None), ("KIND", None),
                          ("DESCRIPTION", 1), ("FROM", None)):
        table.add_column(header, ratio=ratio, overflow="fold",
                         no_wrap=header != "DESCRIPTION")
    for s in tools:
        table.add_row(Text(printable(s.name), style="bold"),
                      printable(s.version or ""), s.kind,
                      Text(printable(s.description or "")),
                      Text(printable(s.origin or ""), style="dim"))
    person_console().print(table)


def skipped_problems(skipped: Skipped) -> list[dict[str, Any]]:
    """Every problem of a skipped manifest, each with its field and its
    fix: the one discovery stopped at and, for a manifest acor can read
    (:func:`acor.cli.discovery.manifest.manifest_problems`), every other
    one, so that a person fixes them in one go."""
    # The manifest checkers: a warm `acor list` or `show` never loads them.
    from acor.cli.discovery.manifest import ManifestError, manifest_problems
    readable = skipped.name is not None and (
        skipped.path.endswith(".json") or os.path.isdir(skipped.path))
    found = manifest_problems(skipped.path) if readable else []
    # Loading stops at the first problem (the args schema's, all in one):
    # it is among these, unless it is not the manifest's own (its owner,
    # acor.lock).
    if not any(p.reason in skipped.reason for p in found):
        found.insert(0, ManifestError(skipped.reason, skipped.recovery))
    return [{"field": p.field, "reason": p.reason, "recovery": p.recovery}
            for p in found]


def doctor_report(reg: Registry) -> dict[str, Any]:
    """Every fact and problem ``acor doctor`` shows."""
    config = reg.config
    warnings = list(config.warnings)
    for spec in reg.tools.values():
        warnings += [f"{spec.name}: {w}" for w in spec.warnings]
    cache_problem = cache_dir_problem()
    if cache_problem:
        warnings.append(cache_problem)
    return {"config": config.path, "root": config.root,
            "tools_dirs": config.tools_dirs, "timeout": config.timeout,
            "state_dir": config.state_dir, "tools": len(reg.tools),
            "task_store": _task_store(config.state_dir),
            "trusted": trusted_paths(),
            "sandbox": _kernel_sandbox(reg.config),
            "warnings": warnings,
            "skipped": [{**s.to_dict(), "problems": skipped_problems(s)}
                        for s in reg.skipped],
            "shadowed": [{"name": s.name, "winner": s.winner_path,
                          "loser": s.loser_path, "override": s.override}
                         for s in reg.shadowed]}


def _task_store(state_dir: str) -> dict[str, str]:
    """The task store ``acor mcp`` and ``acor tasks`` use here: the one
    ACOR_TASK_STORE names (its password hidden), else the embedded one."""
    kind, where = describe(os.environ.get(STORE_ENV), state_dir)
    return {"kind": kind, "path": where}


def _kernel_sandbox(config: Config) -> dict[str, object]:
    """The config's sandbox mode and what this kernel offers a sandbox."""
    mode = config.sandbox or "as each manifest declares"
    found = offers(cache_dir())
    return {"mode": mode, **found,
            "protections": [{"protection": name, "in_force": held,
                             "how": how}
                            for name, held, how in protections(found)]}


@click.command()
@click.option("--json", "as_json", is_flag=True, help="JSON for programs.")
@click.pass_context
def doctor(ctx: click.Context, as_json: bool) -> None:
    """Show the configuration, where tools are looked for, and every
    problem found (skipped or shadowed manifests, warnings), with why and
    how to fix it. Exits 1 when there is any problem or warning."""
    reg = command_registry(ctx)
    data = doctor_report(reg)
    every = [s["problems"] for s in data["skipped"]]
    problems = len(data["warnings"]) + sum(map(len, every)) + \
        len([s for s in reg.shadowed if not s.override])
    if wants_json(ctx, as_json):
        data["problems"] = problems
        echo_json(data)
    else:
        click.echo(f"config:     {quote(data['config'] or '(none: defaults)')}")
        click.echo(f"root:       {quote(data['root'])}")
        click.echo("tools dirs: " + ", ".join(map(quote, data["tools_dirs"])))
        click.echo(f"timeout:    {data['timeout']:g} s")
        click.echo(f"tasks:      {data['task_store']['kind']}: "
                   f"{quote(data['task_store']['path'])}")
        box = data["sandbox"]
        click.echo(f"sandbox:    {box['mode']}; kernel: Landlock "
                   + (f"ABI {box['landlock']}" if box["landlock"] else
                      "missing"))
        for item in box["protections"]:
            click.echo(f"  {'yes' if item['in_force'] else 'NO '} "
                       f"{item['protection']}: {item['how']}")
        if data["trusted"]:
            # Paths whose owner and permissions acor does not check.
            click.echo("trusted:    " + ", ".join(map(quote,
                                                       data["trusted"])))
        for warning in data["warnings"]:
            click.echo(f"warning:    {printable(warning)}")
        click.echo(f"tools:      {data['tools']} found")
        echo_problems(reg, every)
        click.echo(f"\n{counted(problems, 'problem')} found." if problems
                   else "\nNo problems found.")
    ctx.exit(exitcodes.FAILED if problems else exitcodes.OK)


def counted(count: int, noun: str) -> str:
    """``1 problem``, ``2 problems``."""
    return f"{count} {noun}{'' if count == 1 else 's'}"


def framing_note(spec: ToolSpec) -> str:
    """What holds for this tool's sections (docs/security.md)."""
    if spec.kind == "wrapped":
        return ("none: a wrapped program writes no sections; all it prints "
                "is relayed as Output")
    if spec.argv[-1].endswith(".py"):  # run by acor's own interpreter
        return ("framed: the library takes the run's token from an "
                "inherited pipe when imported; programs the tool starts "
                "cannot frame sections")
    return ("framed: the run's token waits in an inherited pipe "
            "(ACOR_FRAME_FD) for the first process that reads it; an entry "
            "that starts other programs before the one that speaks ACOR "
            "reads it lets them take it (exec the speaker first)")


@click.command()
@click.argument("tool")
@click.option("--json", "as_json", is_flag=True, help="JSON for programs.")
@click.pass_context
def show(ctx: click.Context, tool: str, as_json: bool) -> None:
    """Show a tool: its usage, where it is, how its output is trusted, and
    its manifest."""
    reg = command_registry(ctx)
    spec = reg.get(tool)
    if spec is None:
        raise unknown_tool(tool, reg, (), ("acor", "show"))
    try:
        with open(spec.manifest_path, encoding="utf-8",
                  errors="replace") as f:
            manifest = f.read(1 << 20)
    except OSError:
        manifest = None
    if wants_json(ctx, as_json):
        echo_json({**tool_record(spec), "framing": framing_note(spec),
                   "manifest_path": spec.manifest_path,
                   "timeout": spec.timeout, "idle_timeout": spec.idle_timeout,
                   "warnings": spec.warnings})
        return
    if at_terminal():
        # rich costs ~30 ms: only a person at a terminal waits for it.
        from acor.cli.commands.tool_page import show_page
        show_page(spec, sandbox_note(spec))
        return
    click.echo(f"{spec.name} {printable(spec.version or '')} ({spec.kind})")
    click.echo(f"  {printable(spec.description or '')}")
    click.echo(f"  path:    {quote(spec.path)}")
    usage = spec.usage
    if usage:
        click.echo(f"  usage:   {printable(usage)}")
    click.echo(f"  framing: {framing_note(spec)}")
    click.echo(f"  sandbox: {sandbox_note(spec)}")
    click.echo(f"\n{quote(spec.manifest_path)}:")
    # Split at line feeds only, then escape: str.splitlines() also breaks
    # at U+2028, U+2029, U+0085, VT, FF and \x1c-\x1e, which printable()
    # would have shown as escapes, so a line after one of them could start
    # with "## AI Directive" at the left margin.
    lines = (manifest or "(manifest unreadable)").rstrip().split("\n")
    click.echo("\n".join("  " + printable(line.removesuffix("\r"))
                          for line in lines))


@click.command()
@click.argument("name", type=click.Choice(sorted(SCHEMAS)))
def schema(name: str) -> None:
    """Print a JSON Schema that ships with acor: `events` (every JSON line
    of `--format json`) or `manifest` (manifest.json and wrapper
    manifests; point "$schema" at it for your editor)."""
    try:
        text = schema_text(name)
    except OSError as exc:
        again = install_line().replace(" install ", " install "
                                       "--force-reinstall ", 1)
        raise LauncherError(f"The {name} schema is missing from this "
                            f"installation: {exc}", "Reinstall acor as it "
                            f"was installed: `{again}`.",
                            code="E_INSTALL") from None
    click.echo(text.rstrip())

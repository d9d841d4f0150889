"""Built-in commands and help: the click application (the cold path).

``acor <tool>`` never comes here (see :mod:`acor.cli.main`); ``acor``,
``acor --help`` and every built-in command do. The commands live in modules
of their own (:mod:`acor.cli.commands.info`: list, show, doctor, schema;
:mod:`acor.cli.commands.call`, ``check``, ``new``, ``mcp``, ``export``,
``sessions``) and are registered here; ``parse`` and ``help`` are small
enough to live here. Usage errors are reported
in ACOR form with exit code 2, like every other error an agent can cause.
"""

from __future__ import annotations

import os
import re
import sys

import click

from acor import __version__, exitcodes
from acor.events import InputNeeded, Status
from acor.jsonlines import dumps

from acor.cli.commands import info
from acor.cli.commands.call import call_command
from acor.cli.commands.check import check_command
from acor.cli.commands.context import command_registry
from acor.cli.commands.export import export_group
from acor.cli.commands.install import install_command
from acor.cli.commands.lock import lock_command
from acor.cli.commands.plugin import export_plugin
from acor.cli.commands.mcp import mcp_command
from acor.cli.commands.new import new_command
from acor.cli.commands.sessions import sessions
from acor.cli.discovery.config import ConfigError
from acor.cli.errors import LauncherError, UsageError, config_error
from acor.cli.output.formats import FORMATS
from acor.cli.output.person import at_terminal, report_error
from acor.cli.output.typos import nearest, unknown_name
from acor.cli.commands.tasks import tasks

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import BinaryIO, Sequence

    from acor.cli.signals import EarlySignals


class AcorGroup(click.Group):
    """Help lists the tools next to the built-in commands."""

    def format_commands(self, ctx: click.Context,
                        formatter: click.HelpFormatter) -> None:
        super().format_commands(ctx, formatter)
        self.format_commands_tools(ctx, formatter)

    def format_commands_tools(self, ctx: click.Context,
                              formatter: click.HelpFormatter) -> None:
        """The Tools section: each tool and its description."""
        try:
            registry = command_registry(ctx)
        except ConfigError as exc:
            with formatter.section("Tools"):
                formatter.write_text(f"(configuration error: {exc.reason}; "
                                     "run `acor doctor`)")
            return
        rows = [(name, spec.description or "") for name, spec in
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
@click.option("--no-input", is_flag=True, help="On a terminal, do not ask "
              "for what a tool's Input Needed names; just end (exit 3).")
@click.option("--sandbox/--no-sandbox", "sandbox", default=None,
              help="--sandbox: a default box (write the project and temp, "
                   "no network) for tools that declare none; --no-sandbox: "
                   "run without any, even a declared one.")
@click.version_option(__version__, prog_name="acor")
@click.pass_context
def cli(ctx: click.Context, fmt: str | None, timeout: float | None,
        idle_timeout: float | None, config: str | None, no_input: bool,
        sandbox: bool | None) -> None:
    """acor: run command-line tools as a conversation an AI agent can read.

    Tools speak ACOR Markdown (## Status, ## Progress, ## Output Data, ...);
    acor finds them by their manifest.json, relays every section as it
    comes, and always ends a run with one final status and a meaningful
    exit code: 0 complete, 1 failed, 2 usage, 3 input needed, 124 timeout,
    130 cancelled.
    """
    obj = ctx.ensure_object(dict)
    obj.update(format=fmt, config=config, timeout=timeout,
               idle_timeout=idle_timeout,
               sandbox=None if sandbox is None else
               "default" if sandbox else "off")
    if ctx.invoked_subcommand == "sessions":
        # Sessions live where the launcher tells tools to keep them.
        try:
            obj["state_dir"] = command_registry(ctx).config.state_dir
        except ConfigError:
            pass  # `acor sessions` still works from ACOR_STATE_DIR
    if ctx.invoked_subcommand is None:
        click.echo(_overview(ctx) if at_terminal() else ctx.get_help())


def _overview(ctx: click.Context) -> str:
    """``acor`` at a terminal: every command and tool in a screen, each
    said in its first clause, whole (``acor --help`` has the rest)."""
    formatter = ctx.make_formatter()
    formatter.write_usage("acor", "[OPTIONS] TOOL [ARGS]...  |  acor COMMAND "
                          "[ARGS]...")
    rows = []
    for name in cli.list_commands(ctx):
        command = cli.get_command(ctx, name)
        if command is not None and not command.hidden:
            rows.append((name, _first_clause(command.help or "")))
    with formatter.section("Commands"):
        formatter.write_dl(rows)
    cli.format_commands_tools(ctx, formatter)
    formatter.write_paragraph()
    formatter.write_text("acor --help: every option.  acor help NAME: a "
                         "command's or a tool's help.")
    return formatter.getvalue().rstrip("\n")


def _first_clause(text: str) -> str:
    """The help's first sentence without its asides (in brackets), up to
    its first colon: what the command does, never cut mid-word."""
    sentence = " ".join(text.split("\n\n")[0].split()).split(". ")[0]
    sentence = re.sub(r" \([^()]*\)", "", sentence).split(": ")[0]
    return sentence.rstrip(".")


@cli.command()
@click.argument("source", default="-", required=False)
def parse(source: str) -> None:
    """Read ACOR Markdown (FILE, or - for stdin) and print its events as
    JSON lines. Exits 0 when the stream is whole (it ends complete or with
    Input Needed), 1 when it shows a failure (it ends failed or cancelled),
    2 when it is truncated (no ending) or malformed (sections after its
    ending); stderr says which."""
    from acor.grammar import Parser  # 3.4 ms of acor mcp's first answer
    parser = Parser()
    ending: str | None = None
    after = 0
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
                click.echo(dumps(event.to_dict()))
                if ending is not None:
                    after += event.type != "text"
                elif isinstance(event, InputNeeded):
                    ending = "input_needed"
                elif isinstance(event, Status) and event.is_final:
                    ending = event.state
            if not chunk:
                break
    sys.exit(_parse_verdict(ending, after))


def _parse_verdict(ending: str | None, after: int) -> int:
    """`acor parse`'s exit code for a stream that ended ``ending`` with
    ``after`` sections after it; says why on stderr when not 0."""
    if ending is None:
        click.echo("acor parse: the stream is truncated: it has no final "
                   "status (Complete, Failed, Cancelled) or Input Needed",
                   err=True)
        return exitcodes.USAGE
    if after:
        click.echo(f"acor parse: the stream is malformed: {after} "
                   f"section(s) after its ending ({ending})", err=True)
        return exitcodes.USAGE
    if ending in ("failed", "cancelled"):
        click.echo(f"acor parse: the stream shows a failure: it ended "
                   f"{ending}", err=True)
        return exitcodes.FAILED
    return exitcodes.OK


@cli.command("help")
@click.argument("topic", nargs=-1, metavar="[COMMAND [SUBCOMMAND]|TOOL]")
@click.pass_context
def help_command(ctx: click.Context, topic: tuple[str, ...]) -> None:
    """Show help: acor's with no TOPIC, a built-in command's (`acor help
    export openai` as `acor export openai --help`), or a tool's (as `acor
    show TOOL`, which runs nothing)."""
    root = ctx.find_root()
    if not topic:
        click.echo(root.get_help())
        return
    command = cli.get_command(root, topic[0])
    if command is None:
        if len(topic) > 1:
            raise UsageError(f"acor has no command {topic[0]!r} with "
                             "subcommands", "A tool's help is `acor help "
                             "TOOL`, as in the command below.",
                             next=["acor", "help", topic[0]])
        _not_a_tool(ctx, topic[0])
        ctx.invoke(info.show, tool=topic[0], as_json=False)
        return
    parent = root
    for i, word in enumerate(topic):
        if i:
            sub_command = command.get_command(parent, word) \
                if isinstance(command, click.Group) else None
            if sub_command is None:
                raise UsageError(
                    f"`acor {' '.join(topic[:i])}` has no subcommand "
                    f"{word!r}", "Its help, below, lists its subcommands.",
                    next=["acor", "help", *topic[:i]])
            command = sub_command
        parent = click.Context(command, info_name=word, parent=parent)
    click.echo(command.get_help(parent))


def _not_a_tool(ctx: click.Context, word: str) -> None:
    """At a terminal, ``acor help WORD`` for a WORD neither a tool nor a
    command: the error names the tools and commands near it (``acor help
    lsit``: list). Piped, ``acor show`` reports it as it always has."""
    if not at_terminal():
        return
    tools = command_registry(ctx).tools
    if word in tools:
        return
    # `acor help help` is `acor help`: not a name a person meant here.
    commands = [name for name in cli.list_commands(ctx) if name != "help"]
    meant = unknown_name(word, tools, commands, ["acor", "help"])
    if meant is not None:
        raise meant


export_group.add_command(export_plugin)
cli.add_command(sessions)
cli.add_command(tasks)
for _command in (info.list_tools, info.show, info.doctor, info.schema,
                 call_command, check_command, new_command, mcp_command,
                 export_group, lock_command, install_command):
    cli.add_command(_command)


def corrected_command(argv: Sequence[str], exc: click.UsageError,
                      person: bool = False) -> list[str] | None:
    """``acor ARGV`` with the one word click refused replaced by the one
    it means (an option or a choice close to a known one; for a ``person``
    at a terminal, a group's subcommand too), or None when that cannot be
    told: the user's own command, safe to run as is."""
    import difflib  # 1.1 ms of acor mcp's first answer: a typo only
    wrong: str | None
    if person and (fixed := _subcommand_fixed(argv, exc)) is not None:
        return fixed
    if isinstance(exc, click.NoSuchOption):
        wrong, known = exc.option_name, sorted(exc.possibilities or ())
    elif isinstance(exc, click.BadParameter) and exc.param is not None \
            and isinstance(exc.param.type, click.Choice):
        known = [str(c) for c in exc.param.type.choices]
        wrong = next((w for w in argv if w not in known and
                      difflib.get_close_matches(w, known, 1, 0.6)), None)
    else:
        return None
    if wrong is None:
        return None
    match = difflib.get_close_matches(wrong, known, 1, 0.6)
    if not match:
        return None
    fixed = list(argv)
    for i, word in enumerate(fixed):
        name, eq, value = word.partition("=")
        if word == wrong or (eq and name == wrong):
            fixed[i] = match[0] + eq + value
            return ["acor", *fixed]
    return None


def _subcommand_fixed(argv: Sequence[str], exc: click.UsageError
                      ) -> list[str] | None:
    """``acor ARGV`` with a group's unknown subcommand (``acor tasks
    lst``) replaced by the nearest of its subcommands, or None."""
    group = exc.ctx.command if exc.ctx is not None else None
    if not isinstance(group, click.Group) or exc.ctx is None:
        return None
    known = group.list_commands(exc.ctx)
    path = exc.ctx.command_path.split()[1:]  # the group's words after acor
    start = next((i + len(path) for i in range(len(argv))
                  if list(argv[i:i + len(path)]) == path), None)
    if start is None or start >= len(argv) or argv[start] in known:
        return None
    near = nearest(argv[start], known)
    if not near:
        return None
    return ["acor", *argv[:start], near[0], *argv[start + 1:]]


def run_command(argv: list[str], fmt: str | None = None,
                early: EarlySignals | None = None,
                out: BinaryIO | None = None) -> int:
    """Run the click application; every failure is reported in ACOR form,
    on ``out`` (a binary file; None: stdout). ``early`` holds the signals
    caught before it (see acor.cli.signals)."""
    try:
        result = cli.main(args=argv, prog_name="acor", standalone_mode=False,
                          obj={"early": early})
    except LauncherError as exc:
        return report_error(exc, fmt, out=out)
    except ConfigError as exc:
        return report_error(config_error(exc), fmt, out=out)
    except click.UsageError as exc:
        hint = "Run `acor --help` for the commands and tools."
        next_argv = ["acor", "--help"]
        if exc.ctx is not None and exc.ctx.command is not cli:
            path = exc.ctx.command_path  # "acor export openai"
            hint = f"Run `{path} --help` for its usage."
            next_argv = [*path.split(), "--help"]
            if exc.ctx.command.name == "mcp" and \
                    "extra argument" in exc.format_message():
                hint = ("Give --tools its names in one word, comma-"
                        "separated without spaces (--tools hello,"
                        "csvprofile), or repeat --tools. " + hint)
        fixed = corrected_command(argv, exc, person=at_terminal())
        if fixed is not None:
            hint = "The command below is yours, corrected."
            next_argv = fixed
        return report_error(UsageError(exc.format_message(), hint,
                                       next=next_argv), fmt, out=out)
    except click.Abort:
        return exitcodes.CANCELLED
    except click.exceptions.Exit as exc:
        return exc.exit_code
    return result if isinstance(result, int) else exitcodes.OK

"""``acor sessions``: list the saved sessions of every tool, or clear one.

    $ acor sessions | cat       # then STATE, and RESUME: the command
    TOOL  SESSION  LAST CHECKPOINT  TIME                  COUNT  STATE
    etl   run-42   batch-7          2024-06-01T12:00:00Z  3      failed
    $ acor sessions --json          # {"state_dir": ..., "sessions": [...]}
    $ acor sessions --clear run-42 --tool csv-profile
    $ acor sessions --clear-output  # the whole-output files of past runs

Sessions live where tools write them (see :mod:`acor.sessions`): the
config's ``state_dir``, passed in ``ctx.obj["state_dir"]`` by the launcher,
else ``$ACOR_STATE_DIR``, else ``.acor/state``. Mistakes (bad id, unknown or
ambiguous session) are reported in ACOR form with exit code 2. A session
file that is not one (a symbolic link, a FIFO, a device, over 16 MiB, not
JSON) is listed as an error row, never followed or read whole; every path
printed has its control characters made visible.

Each session's state and the command that resumes it come from the record
the launcher keeps of its last run (:mod:`acor.cli.run.session_record`):
``running`` only while the process that ran it lives, ``interrupted`` when
it died without recording an end; none (``-``, ``null``) for a session no
acor run recorded. At a terminal the table is as wide as the terminal,
and the resume commands follow it, wrapped between words.
"""

from __future__ import annotations

import json
import os
import shlex
from datetime import datetime, timezone

import click

from acor import exitcodes
from acor.sessions import (
    CorruptSessionError,
    SessionStore,
    list_sessions,
    state_dir_from_env,
    validate_session_id,
    validate_tool_name,
)

from acor._safefs import Unsafe

from acor.cli.errors import LauncherError
from acor.cli.output.person import at_terminal
from acor.cli.output.person import report_error as report
from acor.cli.output.spill import clear_outputs, output_dir
from acor.cli.run import session_record
from acor.cli.textsafe import printable

TYPE_CHECKING = False  # typing costs every command ~3 ms: only mypy
if TYPE_CHECKING:
    from typing import Any, NoReturn, Optional

    from acor.sessions import SessionSummary

_LIST_HINT = "Run `acor sessions` to see the saved sessions."


def _fail(ctx: click.Context, fmt: Optional[str], title: str, code: str,
          recovery: str, details: Optional[str] = None,
          exit_code: int = exitcodes.USAGE,
          next: Optional[list[str]] = None) -> NoReturn:
    report(LauncherError(title, recovery, code=code, details=details,
                         exit_code=exit_code, next=next), fmt)
    ctx.exit(exit_code)


def _tools_with(state_dir: str, session_id: str) -> list[str]:
    """The tools that have a file for ``session_id`` (valid or corrupt: a
    link, a FIFO or a device too, so that it can be cleared)."""
    names = sorted(os.listdir(state_dir)) if os.path.isdir(state_dir) else []
    found = []
    for name in names:
        try:
            if os.path.lexists(SessionStore(state_dir, name).path(session_id)):
                found.append(name)
        except ValueError:
            pass  # a folder whose name no tool could have: not ours
    return found


@click.command("sessions")
@click.option("--json", "as_json", is_flag=True, help="JSON for programs.")
@click.option("--clear", "clear_id", metavar="ID", is_flag=False,
              flag_value="",
              help="Delete the session ID and all its checkpoints.")
@click.option("--clear-output", is_flag=True,
              help="Delete the files that hold the whole output of runs "
                   "that went over their output budget (--max-output); "
                   "sessions are kept.")
@click.option("--tool", metavar="NAME",
              help="Only this tool's sessions or output files (needed by "
                   "--clear ID when several tools have a session with that "
                   "id).")
@click.pass_context
def sessions(ctx: click.Context, as_json: bool, clear_id: Optional[str],
             clear_output: bool, tool: Optional[str]) -> None:
    """List saved sessions (tool, session, last checkpoint, time, count),
    delete one with --clear ID, or the whole-output files of past runs
    with --clear-output."""
    obj = ctx.obj if isinstance(ctx.obj, dict) else {}
    state_dir = obj.get("state_dir") or state_dir_from_env()
    # `acor --format json sessions` is `acor sessions --json`, as for every
    # command that prints for programs.
    as_json = as_json or obj.get("format") == "json"
    fmt = "json" if as_json else obj.get("format")
    if clear_id == "":
        # Two things could be meant: a session (a tool's resumable work)
        # or the whole outputs acor keeps; neither is guessed.
        _fail(ctx, fmt, "--clear needs the id of the session to delete",
              "E_USAGE", "`acor sessions --clear ID` deletes one session "
              "(`acor sessions` lists them); `acor sessions --clear-output` "
              "deletes the files holding the whole output of past runs.",
              next=["acor", "sessions"])
    _check_names(ctx, fmt, tool, clear_id)
    if clear_output:
        _clear_output(ctx, fmt, state_dir, tool, as_json)
    if clear_id is not None:
        _clear_session(ctx, fmt, state_dir, clear_id, tool, as_json)
    elif not clear_output:
        registry = obj.get("registry")
        _list(state_dir, tool, as_json, getattr(
            getattr(registry, "config", None), "path", None))


def _check_names(ctx: click.Context, fmt: Optional[str],
                 tool: Optional[str], clear_id: Optional[str]) -> None:
    try:
        if tool is not None:
            validate_tool_name(tool)
        if clear_id is not None:
            validate_session_id(clear_id)
    except ValueError as exc:
        _fail(ctx, fmt, str(exc), "E_USAGE", _LIST_HINT)


def _clear_output(ctx: click.Context, fmt: Optional[str], state_dir: str,
                  tool: Optional[str], as_json: bool) -> None:
    """``--clear-output``: remove the whole-output files of past runs."""
    where = output_dir(state_dir)
    try:
        removed = clear_outputs(state_dir, tool)
    except Unsafe as exc:
        _fail(ctx, fmt, "The output folder is not one acor made",
              "E_UNSAFE_OUTPUT_DIR", "Nothing was deleted. Look at it "
              "and remove it yourself if nothing needs it; acor makes "
              "a new one.", printable(exc.reason), exitcodes.FAILED)
    except OSError as exc:
        _fail(ctx, fmt, "The output folder cannot be read",
              "E_UNSAFE_OUTPUT_DIR", "Nothing was deleted.",
              printable(f"{where}: {exc.strerror or exc}"),
              exitcodes.FAILED)
    if as_json:
        click.echo(json.dumps({"cleared_output": {
            "files": removed, "dir": where, "tool": tool}}))
    else:
        of = f" of {tool}" if tool else ""
        click.echo(f"Removed {removed} output file(s){of} from "
                   f"{printable(where)}.")


def _clear_session(ctx: click.Context, fmt: Optional[str], state_dir: str,
                   clear_id: str, tool: Optional[str], as_json: bool
                   ) -> None:
    """``--clear ID``: delete one session of one tool."""
    tools = [tool] if tool else _tools_with(state_dir, clear_id)
    if len(tools) > 1:
        _fail(ctx, fmt, f"Session '{clear_id}' exists for several tools: "
              f"{', '.join(tools)}", "E_AMBIGUOUS_SESSION",
              f"Name the tool: `acor sessions --clear {clear_id} "
              f"--tool {tools[0]}`.")
    store = SessionStore(state_dir, tools[0]) if tools else None
    if store is None or not _cleared(ctx, fmt, store, clear_id):
        where = f" for tool '{tool}'" if tool else ""
        _fail(ctx, fmt, f"No session '{clear_id}'{where}",
              "E_UNKNOWN_SESSION", _LIST_HINT,
              f"state dir: {printable(state_dir)}")
    session_record.clear(state_dir, store.tool, clear_id)
    path = store.path(clear_id)
    if as_json:
        click.echo(json.dumps({"cleared": {"tool": store.tool,
                                           "session": clear_id,
                                           "path": path}}))
    else:
        click.echo(f"Cleared session '{clear_id}' of {store.tool} "
                   f"({printable(path)}).")


def _cleared(ctx: click.Context, fmt: Optional[str], store: SessionStore,
             clear_id: str) -> bool:
    """Whether the session was there and is deleted now."""
    try:
        return bool(store.clear(clear_id))
    except TimeoutError as exc:
        _fail(ctx, fmt, f"Session '{clear_id}' is locked", "E_SESSION_LOCKED",
              "Wait for the tool that is saving it to finish, then retry.",
              printable(str(exc)), exitcodes.FAILED)
    except CorruptSessionError as exc:  # e.g. the tool folder is a link
        _fail(ctx, fmt, f"Session '{clear_id}' cannot be cleared",
              "E_CORRUPT_SESSION", f"Remove {printable(exc.path)} yourself "
              "if nothing needs it.", printable(str(exc)), exitcodes.FAILED)
    return False


class _Run:
    """What a session's record (:mod:`cli.run.session_record`) says of
    its last run, as this listing shows it: its state (None: nothing
    recorded) and the command that resumes it, which runs from ``cwd``."""

    def __init__(self, state: Optional[str], argv: Optional[list[str]],
                 cwd: Optional[str]) -> None:
        self.state, self.argv, self.cwd = state, argv, cwd

    @property
    def words(self) -> list[str]:
        """The resume command as shell words, with ``cd DIR &&`` first
        when it runs from another directory than this listing's."""
        if self.argv is None:
            return []
        words = [shlex.quote(word) for word in self.argv]
        if self.cwd is not None and self.cwd != os.getcwd():
            words = ["cd", shlex.quote(self.cwd), "&&", *words]
        return words

    @property
    def command(self) -> Optional[str]:
        return " ".join(self.words) if self.argv is not None else None

    def to_dict(self) -> dict[str, Any]:
        return {"state": self.state, "resume": None if self.argv is None
                else {"argv": self.argv, "cwd": self.cwd,
                      "command": self.command}}


def _run_of(state_dir: str, summary: SessionSummary,
            config_path: Optional[str]) -> _Run:
    """The recorded state of ``summary``'s session and its resume
    command: none while it runs (or may, on another host), nor after it
    completed, nor for a run that read another config than this
    listing's ``config_path``."""
    record = session_record.read(state_dir, summary.tool, summary.session) \
        if summary.session else None
    if record is None:
        return _Run(None, None, None)
    state = session_record.state_of(record)
    argv = record["resume"] if state not in ("running", "unknown") else None
    if record["config"] != config_path:
        # A run under another config resumes with that config, which the
        # record names: a path a repository may have committed, so no
        # command is offered; the state still shows.
        argv = None
    return _Run(state, argv, record["cwd"])


def _list(state_dir: str, tool: Optional[str], as_json: bool,
          config_path: Optional[str]) -> None:
    found = list_sessions(state_dir, tool)
    runs = [_run_of(state_dir, s, config_path) for s in found]
    if as_json:
        click.echo(json.dumps({"state_dir": state_dir, "sessions": [
            {**s._asdict(), **run.to_dict()}
            for s, run in zip(found, runs, strict=True)]}, indent=2))
        return
    if not found:
        click.echo(f"No sessions in {printable(state_dir)}.")
        return
    listed = [(s, run) for s, run in zip(found, runs, strict=True)
              if not s.error]
    if at_terminal():
        _table(listed)
    else:
        _plain_rows(listed)
    for s in found:
        if s.error:
            where = s.tool if s.session is None else f"{s.tool}/{s.session}"
            click.echo(f"\n{where}: {printable(s.error)}")


def _plain_rows(listed: list[tuple[SessionSummary, _Run]]) -> None:
    # A checkpoint id and time come from the file: a repository can commit
    # one holding escape sequences.
    rows = [("TOOL", "SESSION", "LAST CHECKPOINT", "TIME", "COUNT", "STATE",
             "RESUME")] + [
        (s.tool, s.session, printable(s.checkpoint or "-"),
         printable(s.time or "-"), str(s.checkpoints), run.state or "-",
         printable(run.command or "-"))
        for s, run in listed]
    widths = [max(len(row[i]) for row in rows) for i in range(6)]
    for row in rows:
        click.echo("  ".join(c.ljust(w) for c, w in zip(row, widths,
                                                        strict=False))
                   + "  " + row[6])


# How a person reads a state (the others read as they are written).
_SHOWN = {"input_needed": "needs input", "timeout": "timed out"}


def _shown(state: Optional[str]) -> str:
    return "-" if state is None else _SHOWN.get(state, state)


def _table(listed: list[tuple[SessionSummary, _Run]]) -> None:
    """The sessions as a person at a terminal reads them: a table as wide
    as the terminal, each checkpoint's time as how long ago it was and
    each run's state; then the command that resumes each session that
    has one, wrapped between words (a line that goes on ends with a
    backslash, so the lines pasted together are the one command)."""
    # rich costs ~30 ms: only a person at a terminal waits for it.
    from rich.table import Table

    from acor.cli.output.rich_view import person_console
    console = person_console()
    table = Table(box=None, pad_edge=False, header_style="bold", expand=True)
    # Short headers: at 60 columns the table fits without wrapping one
    # (CHECKPOINT: the last one saved, as SAVED says when).
    for header in ("TOOL", "SESSION", "STATE", "CHECKPOINT", "SAVED",
                   "COUNT"):
        table.add_column(header, overflow="fold",
                         justify="right" if header == "COUNT" else "left")
    for s, run in listed:
        table.add_row(printable(s.tool), printable(s.session),
                      _shown(run.state),
                      printable(s.checkpoint or "-"), _ago(s.time),
                      str(s.checkpoints))
    console.print(table, markup=False, highlight=False)
    resumable = [(s, run) for s, run in listed if run.argv is not None]
    if resumable:
        console.print("\nTo resume:", markup=False, highlight=False)
    for s, run in resumable:
        lines = [f"  {printable(s.tool)} {printable(s.session)} "
                 f"({_shown(run.state)}):"]
        lines += _wrapped([printable(word) for word in run.words],
                          console.width, indent=4)
        console.print("\n".join(lines), markup=False, highlight=False,
                      soft_wrap=True)


def _wrapped(words: list[str], width: int, indent: int) -> list[str]:
    """``words`` as lines of at most ``width`` columns, broken between
    words only, each line that goes on ending with `` \\`` (a word
    longer than a line stands alone on its line)."""
    lines, line = [], " " * indent + words[0]
    for word in words[1:]:
        if len(line) + 1 + len(word) + 2 <= width:
            line += " " + word
        else:
            lines.append(line + " \\")
            line = " " * (indent + 2) + word
    return lines + [line]


def _ago(stamp: Optional[str]) -> str:
    """An ISO 8601 time as how long ago it was (``5 min ago``); as it is
    written when it is not one."""
    try:
        then = datetime.fromisoformat(str(stamp).replace("Z", "+00:00"))
        seconds = (datetime.now(timezone.utc) - then).total_seconds()
    except (TypeError, ValueError):
        return printable(stamp or "-")
    for size, unit in ((86400, "d"), (3600, "h"), (60, "min")):
        if seconds >= size:
            return f"{int(seconds // size)} {unit} ago"
    return "just now" if seconds >= 0 else printable(stamp or "-")

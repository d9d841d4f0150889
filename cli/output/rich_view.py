"""The rich view: ACOR for people at a terminal.

A live progress bar, coloured statuses, highlighted Output Data, and Error
and Input Needed as panels. Imported only for ``--format rich`` (the default
on a terminal); honours NO_COLOR through rich itself.

Every string shown comes from the tool (or from a stream, or from argv) and
may hold what a terminal obeys: escape sequences (clear screen, window
title, hyperlinks, colours, the one-character CSI U+009B), BEL, backspace
and carriage-return overwrites, bidi overrides. Each one passes through
:mod:`cli.textsafe` on its way in: text keeps its line breaks and tabs and
loses its escape sequences, one-line fields (titles, names, ids, labels)
show every control as a visible escape. The only escape sequences on the
terminal are rich's own, and a tool's colours in its Output and raw text:
its SGR sequences (and only those) become rich styles.
"""

from __future__ import annotations

import json
import os
import re
import shlex

from rich.console import Console, Group, RenderableType
from rich.markup import escape
from rich.panel import Panel
from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn
from rich.syntax import Syntax
from rich.table import Column
from rich.text import Text

from acor.events import Status

from acor.cli.handlers import EventHandler
from acor.cli.output.live import duration
from acor.cli.textsafe import keep_colours, printable, strip_terminal

TYPE_CHECKING = False  # annotations only (rich imports typing anyway)
if TYPE_CHECKING:
    from typing import Any, Optional

    from acor.errors import AcorError

    from acor.events import (AIDirective, Checkpoint, Error, Event,
                             Heartbeat, InputNeeded, Output, OutputData,
                             OutputFiles, Result, Session, Stderr,
                             Suggestions, Unknown)
    from acor.events import Progress as ProgressEvent
    from acor.events import Text as TextEvent
    from rich.progress import TaskID

    Shown = Optional[RenderableType]  # what an event draws, if anything

STATUS_STYLES = {"ready": "cyan", "working": "blue", "complete": "bold green",
                 "failed": "bold red", "cancelled": "bold yellow",
                 "input needed": "bold yellow"}
# "label (current/total)", as tool.progress_bar() writes it: the count gets
# its own column so that a long label is cut, never the count.
COUNT = re.compile(r"\s*\((\d+)/(\d+)\)$")
# Before these the live bar is closed: its last frame stays above them, and
# is never drawn again below an error or the end of the run.
_CLOSES_PROGRESS = frozenset({"error", "input_needed"})


def _text(value: object) -> str:
    """A multi-line field, safe to show as text."""
    return strip_terminal("" if value is None else str(value))


def _coloured(value: object) -> Text:
    """The tool's own text, its colours kept as styles (SGR only: every
    other sequence and control is cleaned as :func:`_text` does)."""
    return Text.from_ansi(keep_colours("" if value is None else str(value)))


def _line(value: object) -> str:
    """A one-line field: every control (line breaks too) made visible."""
    return printable(strip_terminal("" if value is None else str(value)))


def _command(argv: object) -> str:
    """An argv list as the shell command a person would type, one line."""
    if isinstance(argv, (list, tuple)):
        return _line(shlex.join(str(arg) for arg in argv))
    return _line(argv)


def error_panel(event: Error) -> Panel:
    """An error as a person reads it: a short title in the border (the
    code), and the whole message wrapped in the body, the part that says
    what to do included, however long it is."""
    return Panel(_error_body(event, _text(event.title)),
                 title=Text("Error " + _line(event.code)[:40]),
                 title_align="left", border_style="red")


def _error_body(event: Error, head: str) -> Text:
    """An error's panel body: ``head`` in bold, then its details, its
    recovery and the command to run next."""
    body = Text()
    body.append(head + "\n", style="bold")
    if event.details:
        body.append(_text(event.details) + "\n")
    if event.recovery:
        body.append("→ " + _text(event.recovery) + "\n", style="green")
    if event.next:
        body.append("next: " + _command(event.next) + "\n", style="bold")
    body.rstrip()
    return body


def person_console(stderr: bool = False) -> Console:
    """A console for a person: rich's own, but on a terminal without
    cursor control (``TERM=dumb``) as wide as the terminal is, where rich
    would assume 80 columns."""
    console = Console(stderr=stderr)
    if console.is_dumb_terminal:
        try:
            size = os.get_terminal_size(2 if stderr else 1)
        except OSError:
            return console
        if size.columns > 0 and size.lines > 0:  # both, or rich takes 80
            return Console(stderr=stderr, width=size.columns,
                           height=size.lines)
    return console


def field_notes(spec: dict[str, Any]) -> str:
    """What an answer may be, in one line: the choices, the default, the
    range (``choices: pdf, html · default: pdf``), or ""."""
    notes = []
    if isinstance(spec.get("enum"), list):
        notes.append("choices: " + ", ".join(_line(v) for v in spec["enum"]))
    if spec.get("default") is not None:
        notes.append(f"default: {_line(spec['default'])}")
    low, high = spec.get("minimum"), spec.get("maximum")
    if low is not None and high is not None:
        notes.append(f"from {_line(low)} to {_line(high)}")
    elif low is not None:
        notes.append(f"at least {_line(low)}")
    elif high is not None:
        notes.append(f"at most {_line(high)}")
    if spec.get("type") == "boolean":
        notes.append("yes or no")
    return " · ".join(notes)


def status_line(state: str, tool: str, seconds: Optional[float] = None
                ) -> Text:
    """A run's status as one line: ``● Complete in 20.1 s  tool``."""
    # No blue for a person: it is hard to read on a dark theme.
    style = {**STATUS_STYLES, "working": "cyan"}.get(state, "magenta")
    said = _line(state).capitalize()
    if seconds is not None:
        said += (" in " if state == "complete" else " after ") + \
            duration(seconds)
    return Text.assemble(("● ", style), (said, style), (f"  {tool}", "dim"))


def show_error(error: AcorError, tool: str = "acor") -> int:
    """``error`` at a terminal: its panel and the failed status on stderr
    (stdout stays the command's); returns its exit code."""
    console = person_console(stderr=True)
    console.print(error_panel(error.to_event()))
    console.print(status_line("failed", _line(tool)))
    return error.exit_code


class RichSink(EventHandler):
    """Draws each event (one method per event type, see
    :mod:`cli.handlers`): a live bar for progress, panels for errors and
    questions, a line for the rest."""

    def __init__(self, tool: str, console: Optional[Console] = None
                 ) -> None:
        self.tool = _line(tool)
        self.console = console if console is not None else Console()
        self._progress: Optional[Progress] = None
        self._task: Optional[TaskID] = None

    def emit(self, event: Event) -> None:
        renderable = self.handle(event)
        if event.type in _CLOSES_PROGRESS or \
                isinstance(event, Status) and event.is_final:
            self._stop_progress()
        if renderable is not None:
            self.console.print(renderable)

    def close(self) -> None:
        self._stop_progress()

    def on_progress(self, event: ProgressEvent) -> Shown:
        self._show_progress(event)
        return None

    def on_heartbeat(self, event: Heartbeat) -> Shown:
        return None  # nothing to show: the live bar shows the run is alive

    def on_stderr(self, event: Stderr) -> Shown:
        return Text(_text(event.text), style="dim red")

    def on_result(self, event: Result) -> Shown:
        return None  # the final status above says it

    def _bar(self) -> tuple[Progress, TaskID]:
        """The live bar, started at the first progress."""
        if self._progress is None or self._task is None:
            def column(**sized: Any) -> Column:
                return Column(no_wrap=True, overflow="ellipsis", **sized)
            self._progress = Progress(
                TextColumn("[bold]{task.fields[tool]}",
                           table_column=column(max_width=24)),
                BarColumn(bar_width=30), TaskProgressColumn(),
                TextColumn("{task.fields[count]}", table_column=column()),
                TextColumn("{task.description}",
                           table_column=column(ratio=1)),
                console=self.console, expand=True)
            self._task = self._progress.add_task(
                "", total=100, tool=escape(self.tool), count="")
            self._progress.start()
        return self._progress, self._task

    def progress_label(self, event: ProgressEvent) -> tuple[str, str]:
        """A progress's label and its count ("3/10"), each one line."""
        # The first line only, as one line (a "\r" in it shown as "\\n").
        label = _line((event.message or "").split("\n")[0])
        found = COUNT.search(label)
        count = ""
        if found:
            label = label[:found.start()]
            count = f"{found.group(1)}/{found.group(2)}"
        return label, count

    def _show_progress(self, event: ProgressEvent) -> None:
        progress, task = self._bar()
        label, count = self.progress_label(event)
        progress.update(task, completed=event.percent,
                        description=escape(label), count=count)

    def _stop_progress(self) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None

    def on_status(self, event: Status) -> Shown:
        style = STATUS_STYLES.get(event.state, "magenta")
        line = Text.assemble(("● ", style),
                             (_line(event.state).capitalize(), style),
                             (f"  {self.tool}", "dim"))
        if event.message:
            return Group(line, Text(_text(event.message)))
        return line

    def on_output(self, event: Output) -> Shown:
        return _coloured(event.text)

    def on_text(self, event: TextEvent) -> Shown:
        text = _coloured(event.text)
        text.stylize("dim")
        return text

    def on_output_data(self, event: OutputData) -> Shown:
        data = event.data
        # json.dumps escapes every control character (ensure_ascii).
        code = data if isinstance(data, str) else json.dumps(data, indent=2)
        lexer = event.format if event.format in ("json", "yaml", "markdown") \
            else "text"
        return Panel(Syntax(_text(code), lexer, word_wrap=True),
                     title="Output Data", title_align="left")

    def on_output_files(self, event: OutputFiles) -> Shown:
        lines = Text()
        for f in event.files:
            lines.append(_line(f.get("path")), style="bold")
            if f.get("kind") == "file":
                lines.append(f"  {_line(f.get('bytes'))} bytes  sha256 "
                             f"{_line(f.get('sha256'))}", style="dim")
            else:
                lines.append(f"  ({_line(f.get('kind'))})", style="yellow")
            if f.get("description"):
                lines.append("  " + _line(f["description"]))
            lines.append("\n")
        return Panel(lines, title="Output Files", title_align="left")

    def on_error(self, event: Error) -> Shown:
        return Panel(_error_body(event, _line(event.code)),
                     title=Text("Error: " + _line(event.title)),
                     title_align="left", border_style="red")

    def on_input_needed(self, event: InputNeeded) -> Shown:
        body = Text(_text(event.message) + "\n")
        for name, spec in (event.fields or {}).items():
            spec = spec if isinstance(spec, dict) else {}
            body.append(f"  {_line(name)}", style="bold")
            if spec.get("type"):
                body.append(f" ({_line(spec['type'])})", style="dim")
            if spec.get("description"):
                body.append(f"  {_line(spec['description'])}")
            body.append("\n")
        if event.next:
            body.append("next: " + _command(event.next) + "\n", style="bold")
        body.rstrip()
        title = "Input Needed" + (" (a person must answer)"
                                  if event.audience == "human" else "")
        return Panel(body, title=title, title_align="left",
                     border_style="yellow")

    def _bullets(self, title: str, items: list[str], style: str) -> Panel:
        body = Text("\n".join("• " + _text(item).replace("\n", "\n  ")
                              for item in items))
        return Panel(body, title=Text(title), title_align="left",
                     border_style=style)

    def on_ai_directive(self, event: AIDirective) -> Shown:
        return self._bullets("AI Directive", event.items, "magenta")

    def on_suggestions(self, event: Suggestions) -> Shown:
        title = "Suggestions" + (f": {_line(event.title)}"
                                 if event.title else "")
        return self._bullets(title, event.items, "blue")

    def on_session(self, event: Session) -> Shown:
        return Text(f"Session {_line(event.id)}", style="cyan")

    def on_checkpoint(self, event: Checkpoint) -> Shown:
        return Text(f"Checkpoint {_line(event.id)}", style="dim cyan")

    def on_unknown(self, event: Unknown) -> Shown:
        return Text(f"## {_line(event.heading)}\n{_text(event.body)}",
                    style="dim")

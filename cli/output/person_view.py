"""The rich view for a person at a terminal.

:class:`cli.output.rich_view.RichSink` draws the rich view wherever it
goes (a pipe, a file, a recording); :class:`PersonSink` draws it for the
person watching a terminal: one live line for the run (:mod:`cli.output.live`:
a spinner, the bar, the latest checkpoint, the time elapsed and left), the
result below the 100% bar, the tool's stderr dimmed above the final
status, which says how long the run took and is the last line; no Ready
(the line says the run began); errors with a short title and the whole
message in the body; each question's choices, default and range, its
reason said once (a question only a person may answer, asked here, is
followed by the approval request, which says it: :mod:`cli.terminal.ask`);
the AI Directive dimmed, as what it is: text for the agent; a tool's help
and nothing else (no Complete). :func:`view_for` picks one of the two;
what the rich view writes anywhere but a terminal is unchanged.
"""

from __future__ import annotations

from rich.console import Group
from rich.panel import Panel
from rich.text import Text

from acor.events import Status

from acor.cli.output.live import LiveLine
from acor.cli.output.rich_view import (RichSink, _command, _line, _text,
                                       error_panel, field_notes,
                                       person_console, status_line)

TYPE_CHECKING = False  # annotations only (rich imports typing anyway)
if TYPE_CHECKING:
    from typing import Optional

    from rich.console import Console, RenderableType

    from acor.events import (AIDirective, Checkpoint, Error, Event,
                             InputNeeded, Suggestions)
    from acor.events import Progress as ProgressEvent

    Shown = Optional[RenderableType]

# Before these the live line is stopped: its last frame stays above them.
_STOPS_LINE = frozenset({"error", "input_needed"})


def at_terminal(console: Console) -> bool:
    """Whether ``console`` writes to a real terminal (FORCE_COLOR into a
    pipe is not one)."""
    try:
        return console.is_terminal and console.file.isatty()
    except (AttributeError, ValueError):
        return False


def view_for(tool: str, asks_person: bool = False, help_asked: bool = False
             ) -> RichSink:
    """The rich view of a run of ``tool`` on stdout: a person's at a
    terminal (see :class:`PersonSink` for the two flags), else the rich
    view as it is written anywhere."""
    console = person_console()
    if at_terminal(console):
        return PersonSink(tool, console, asks_person, help_asked)
    return RichSink(tool)


class PersonSink(RichSink):
    """The rich view as a person at a terminal watches it.
    ``asks_person``: the person will be asked here what the run needs
    (the approval request that follows a question says its reason);
    ``help_asked``: the arguments ask for the tool's help, which is all
    the person sees of a run that ends complete."""

    def __init__(self, tool: str, console: Optional[Console] = None,
                 asks_person: bool = False, help_asked: bool = False
                 ) -> None:
        super().__init__(tool, console if console is not None
                         else person_console())
        self.line = LiveLine(self.console, self.tool)
        self.asks_person = asks_person
        self.help_asked = help_asked
        self._final: Shown = None
        self._final_state = ""
        self._stderr_held = ""

    def emit(self, event: Event) -> None:
        renderable = self.handle(event)
        final = isinstance(event, Status) and event.is_final
        done = self.line.percent is not None and self.line.percent >= 100
        if event.type in _STOPS_LINE or final or \
                (renderable is not None and done):
            # The line's last frame stays above what ends the run (the
            # 100% bar before the result, not under it).
            self.line.stop()
        if final:
            self._final = renderable  # shown last, by close()
            return
        if renderable is not None:
            self.line.print(renderable)
        elif event.type not in ("progress", "checkpoint") and \
                not self.help_asked:  # the help comes at once: no line
            self.line.alive()

    def stderr(self, text: str) -> None:
        """The tool's stderr (already cleaned): dimmed, whole lines, above
        the live line."""
        held, _, rest = (self._stderr_held + text).rpartition("\n")
        self._stderr_held = rest
        if held:
            self.line.print(Text(held, style="dim"))

    def close(self) -> None:
        self.line.stop()
        if self.line.checkpoints:
            self.console.print(Text(
                f"Checkpoint {self.line.checkpoint} "
                f"({self.line.checkpoints} in this run)", style="dim cyan"))
        if self._stderr_held:
            self.console.print(Text(self._stderr_held, style="dim"))
            self._stderr_held = ""
        if self._final is not None and not (
                self.help_asked and self._final_state == "complete"):
            # A person who asked for the help reads the help, no status.
            self.console.print(self._final)
        self._final = None

    def on_progress(self, event: ProgressEvent) -> Shown:
        label, count = self.progress_label(event)
        self.line.progress(float(event.percent), label, count)
        return None

    def on_checkpoint(self, event: Checkpoint) -> Shown:
        # One updating mark on the live line, not a line each.
        self.line.checkpoint_at(_line(event.id))
        return None

    def on_status(self, event: Status) -> Shown:
        if event.state == "ready":
            return None  # the live line says the run has begun
        seconds = None
        if event.is_final:
            self._final_state = event.state
            seconds = self.line.elapsed()
        line = status_line(event.state, self.tool, seconds)
        if event.message:
            return Group(line, Text(_text(event.message)))
        return line

    def on_error(self, event: Error) -> Shown:
        return error_panel(event)

    def on_input_needed(self, event: InputNeeded) -> Shown:
        # The approval request asked next says the reason (its "reason:"
        # line): the panel leaves it out, the person reads it once.
        said_below = self.asks_person and event.audience == "human" and \
            bool(event.fields)
        body = Text() if said_below else Text(_text(event.message) + "\n")
        for name, spec in (event.fields or {}).items():
            spec = spec if isinstance(spec, dict) else {}
            if body:
                body.append("\n")
            body.append(f"  {_line(name)}", style="bold")
            if spec.get("type"):
                body.append(f" ({_line(spec['type'])})", style="dim")
            if spec.get("description"):
                body.append(f"  {_line(spec['description'])}")
            notes = field_notes(spec)
            if notes:
                body.append("\n    " + notes, style="dim")
        if event.next:
            body.append("\n\nnext: " + _command(event.next), style="bold")
        title = "Input Needed" + (" (a person must answer)"
                                  if event.audience == "human" else "")
        return Panel(body, title=title, title_align="left",
                     border_style="yellow")

    def on_ai_directive(self, event: AIDirective) -> Shown:
        # Written for the agent: a person sees it, dimmed, named so.
        panel = self._bullets("AI Directive (for the agent)", event.items,
                              "dim")
        panel.style = "dim"
        return panel

    def on_suggestions(self, event: Suggestions) -> Shown:
        title = "Suggestions" + (f": {_line(event.title)}"
                                 if event.title else "")
        # No blue: it is hard to read on a dark theme.
        return self._bullets(title, event.items, "cyan")

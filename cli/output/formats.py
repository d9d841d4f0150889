"""Output formats: how events reach the agent or the person.

Every format is one entry of :data:`FORMATS`; a new format touches this
file and, if it needs a module of its own, that module. A format is a sink
with ``emit(event)``, ``stderr(data)`` (the tool's stderr), ``late(tool,
event)`` (output after the final status), ``result(result)`` (the run's
:class:`cli.run.result.RunResult`) and ``close()``.

Every line is written whole: :func:`write_all` loops until the kernel took
every byte, so neither a signal nor an unbuffered stdout
(``PYTHONUNBUFFERED``) can cut a line or glue two together.
"""

from __future__ import annotations

import os
import sys
import time

from acor.events import Error, Result, Status, Text

from acor.cli.output.cost import RESULT_RESERVE, Cost, shown_stderr
from acor.cli.output.jsonline import event_line, json_encoders
from acor.cli.textsafe import StreamCleaner, clean_event, clean_value

TYPE_CHECKING = False  # typing costs every run ~3 ms: only mypy
if TYPE_CHECKING:
    from typing import Any, BinaryIO, Callable, Optional, Protocol

    from acor.errors import AcorError
    from acor.events import Event

    Out = Optional[BinaryIO]  # a binary file, or None: acor's stdout

    class RunRecord(Protocol):
        """What a format needs of a run's result: its record."""

        def to_dict(self) -> dict[str, Any]: ...

# Events whose JSON holds nothing but strings (and the launcher's keys):
# the bulk of a flood, and safe for a compiled encoder (see JsonSink).
_STRING_EVENTS = frozenset({"text", "output", "stderr"})

STDERR_EVENT_LIMIT = 1 << 20  # bytes of tool stderr carried as JSON events


def write_all(out: Out, data: bytes) -> None:
    """Write every byte of ``data`` to ``out``: a binary file object, or
    None for acor's stdout. A real stdout is written with os.write until the
    kernel took every byte, so that no layer can drop part of a line; a
    replaced one (click's CliRunner, a test) through its buffer."""
    if out is None:
        stdout = sys.stdout
        try:
            fd = stdout.fileno()
        except (AttributeError, ValueError, OSError):
            fd = None
        if fd is not None:
            stdout.flush()
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            return
        buffer: Out = getattr(stdout, "buffer", None)
        if buffer is None:
            stdout.write(data.decode("utf-8"))
            stdout.flush()
            return
        out = buffer
    out.write(data)
    out.flush()


def render(event: Event) -> str:
    """The event's ACOR Markdown section. The grammar is imported once the
    tool is starting up (:meth:`_Format.started`), not before."""
    from acor.grammar import render as render_section
    return render_section(event)


def write_stderr(text: str) -> None:
    """Best effort: acor's stderr may be closed or gone, and that must not
    change the run's exit code (the transcript decides it)."""
    try:
        data = text.encode("utf-8", "replace")
        view = memoryview(data)
        while view:
            view = view[os.write(2, view):]
    except OSError:
        pass


def _late_note(tool: str, event: Event, said: set[str]) -> None:
    event = clean_event(event)
    if isinstance(event, Text) and not event.text:
        return
    if tool not in said:
        said.add(tool)
        write_stderr(f"acor: {tool} wrote after its final status:\n")
    if isinstance(event, Error) and event.title.endswith(": stopped"):
        write_stderr(f"acor: {event.title} ({event.code})\n")
        return
    write_stderr(render(event) if event.type != "stderr" else "")


class _Format:
    """What every format shares: the tool's stderr and what it wrote
    after its final status go to acor's stderr; the result is the exit
    code's to tell."""

    def __init__(self) -> None:
        self._late: set[str] = set()
        # The tool's stderr is data too: no escape sequence or control
        # byte of it reaches the agent's (or a person's) terminal.
        self._stderr_text = StreamCleaner()

    def emit(self, event: Event) -> None:
        raise NotImplementedError  # each format writes its own way

    def stderr(self, data: bytes) -> None:
        write_stderr(self._stderr_text.feed(data.decode("utf-8", "replace")))

    def late(self, tool: str, event: Event) -> None:
        _late_note(tool, event, self._late)

    def started(self) -> None:
        """The tool is starting up: load what writing needs now, in that
        time, so that no section waits for an import (see
        :func:`cli.run.launch.run`)."""
        from acor import grammar  # noqa: F401  (render's, and late notes')

    def result(self, result: RunRecord) -> None:
        write_stderr(self._stderr_text.flush())

    def close(self) -> None:
        pass

    def close_failed(self, error: AcorError) -> None:
        self.close()


class MarkdownSink(_Format):
    """The canonical ACOR stream. Every section is re-rendered from its
    event, so the launcher's output is escaped whatever the tool sent."""

    def __init__(self, tool: str, out: Out = None) -> None:
        super().__init__()
        self.out = out
        self._after_text = False

    def emit(self, event: Event) -> None:
        text = render(clean_event(event))
        is_text = event.type in ("text", "unknown")
        if self._after_text and not is_text:
            # Raw text ends in a blank line before the next section: text
            # like `<div>` opens an HTML block that runs to the next blank
            # line and would swallow the heading that follows.
            text = "\n" + text
        self._after_text = is_text
        write_all(self.out, text.encode("utf-8", "replace"))


class MarkdownCost(Cost):
    """A section as Markdown writes it, its blank line included. The
    tool's stderr goes to acor's stderr, cleaned, and nothing follows the
    final status."""

    def __call__(self, event: Event) -> int:
        return len(render(event).encode("utf-8", "replace")) + 1

    def rendered(self, event: Event, markdown: bytes) -> int:
        return len(markdown) + 1

    def stderr_cost(self, data: bytes) -> int:
        return len(shown_stderr(data).encode("utf-8", "replace"))


markdown_cost = MarkdownCost()


class JsonSink(_Format):
    """One strict JSON object per line (schema 2, see
    :func:`acor.jsonlines.line_record`): the event's keys that are not
    null or at their default, and ``v``; the tool's stderr as ``stderr``
    events; the ``result`` line last."""

    def __init__(self, tool: str, out: Out = None) -> None:
        super().__init__()
        self.out = out
        self.tool = tool
        self._stderr_left = STDERR_EVENT_LIMIT
        self._stderr_cut = 0

    def started(self) -> None:
        super().started()
        json_encoders()

    def _write(self, record: dict[str, Any]) -> None:
        # Only strings and the launcher's own numbers: the bulk of a flood.
        finite = record["type"] in _STRING_EVENTS
        write_all(self.out, event_line(record, finite))

    def emit(self, event: Event) -> None:
        self._write(clean_event(event).to_dict())

    def stderr(self, data: bytes) -> None:
        if self._stderr_left <= 0:
            self._stderr_cut += len(data)
            return
        kept = data[:self._stderr_left]
        self._stderr_cut += len(data) - len(kept)
        self._stderr_left -= len(kept)
        text = self._stderr_text.feed(kept.decode("utf-8", "replace"))
        if text:
            self._write({"type": "stderr", "text": text})

    def result(self, result: RunRecord) -> None:
        held = self._stderr_text.flush()
        if held:
            self._write({"type": "stderr", "text": held})
        if self._stderr_cut:
            self._write({"type": "stderr", "text": (
                f"[acor: {self._stderr_cut} more bytes of stderr not "
                f"carried in JSON; over {STDERR_EVENT_LIMIT} bytes]")})
        self._write(clean_value(result.to_dict()))

    def close_failed(self, error: AcorError) -> None:
        """The result line of a run that never started."""
        self._write(clean_value(Result(
            error.exit_code, "failed", error.code, tool=self.tool,
            next=error.next).to_dict()))


class JsonCost(Cost):
    """An event's line, the tool's stderr as ``stderr`` events, and the
    result line last (reserved)."""

    reserve = RESULT_RESERVE

    def __call__(self, event: Event) -> int:
        return len(event_line(event.to_dict()))

    def stderr_cost(self, data: bytes) -> int:
        return len(event_line({"type": "stderr",
                               "text": shown_stderr(data)}))


json_cost = JsonCost()


class RichFormat(_Format):
    """The rich view (imported only when asked: rich costs ~30 ms).
    ``asks_person`` and ``help_asked`` say what the person at a terminal
    is doing (see :class:`cli.output.person_view.PersonSink`)."""

    def __init__(self, tool: str, out: Out = None, asks_person: bool = False,
                 help_asked: bool = False) -> None:
        # rich costs ~30 ms: loaded only for the rich view.
        from acor.cli.output.person_view import PersonSink, view_for
        # A terminal that cannot show a character gets "?", not a crash.
        if out is None and hasattr(sys.stdout, "reconfigure"):
            sys.stdout.reconfigure(errors="replace")
        super().__init__()
        self.view = view_for(tool, asks_person, help_asked)
        # The tool's stderr on a person's screen goes through the view:
        # dimmed, above the live line, before the final status.
        self._person = self.view if isinstance(self.view, PersonSink) \
            and sys.stderr.isatty() else None
        # A person's terminal that shows colour: the runner asks a wrapped
        # program for its colours (its manifest's color_env), which the
        # view keeps as its styles (SGR only; see cli.textsafe).
        console = self.view.console
        self.shows_colour = isinstance(self.view, PersonSink) and \
            console.color_system is not None and not console.no_color

    def emit(self, event: Event) -> None:
        self.view.emit(event)

    def stderr(self, data: bytes) -> None:
        if self._person is None:
            super().stderr(data)
            return
        self._person.stderr(self._stderr_text.feed(
            data.decode("utf-8", "replace")))

    def result(self, result: RunRecord) -> None:
        if self._person is None:
            super().result(result)
            return
        self._person.stderr(self._stderr_text.flush())

    def close(self) -> None:
        self.view.close()


# name -> (factory(tool, out), coalesce progress when piped)
FORMATS: dict[str, tuple[Callable[[str, Out], _Format], bool]] = {
    "markdown": (MarkdownSink, True),
    "json": (JsonSink, True),
    "rich": (RichFormat, False),  # its live bar shows every progress
}


class Coalescer:
    """Progress and checkpoints faster than the interval collapse to the
    latest of each.

    The interval is ``max(floor, age / 2)``, ``age`` the time since the
    run started: it grows with the run, so a run of any length writes
    about 2 ln(age / floor) sections of each kind (some 20 for ten
    minutes, 40 for a year), while the latest progress and the latest
    checkpoint before any other section, and at the end, are always
    relayed. Each kind is paced on its own: a checkpoint going out does
    not force held progress out, nor the other way round."""

    COALESCED = ("progress", "checkpoint")

    def __init__(self, sink: Any, floor: float) -> None:
        self.sink = sink  # a format, or the budget in front of one
        self.floor = floor
        self._held: dict[str, Event] = {}  # kind -> the latest event held
        self._last = {kind: float("-inf") for kind in self.COALESCED}
        self._start = time.monotonic()

    def _interval(self, now: float) -> float:
        return max(self.floor, (now - self._start) / 2)

    def emit(self, event: Event) -> None:
        kind = event.type
        if kind in self._last and self.floor > 0:
            now = time.monotonic()
            self._held.pop(kind, None)
            if now - self._last[kind] < self._interval(now):
                self._held[kind] = event
                return
            self._last[kind] = now
            self.sink.emit(event)
            return
        self.flush()
        self.sink.emit(event)

    def due(self) -> Optional[float]:
        """Seconds until a held event should go out, or None."""
        if not self._held:
            return None
        now = time.monotonic()
        interval = self._interval(now)
        return max(0.0, min(self._last[kind] + interval - now
                            for kind in self._held))

    @property
    def max_data(self) -> Optional[int]:
        return getattr(self.sink, "max_data", None)

    @property
    def shows_colour(self) -> bool:
        """Whether the sink shows a tool's colours (see RichFormat)."""
        return getattr(self.sink, "shows_colour", False) is True

    def tick(self) -> None:
        if not self._held:
            return
        now = time.monotonic()
        interval = self._interval(now)
        for kind in list(self._held):
            if self._last[kind] + interval <= now:
                event = self._held.pop(kind)
                self._last[kind] = now
                self.sink.emit(event)

    def flush(self) -> None:
        held, self._held = self._held, {}
        now = time.monotonic()
        for kind, event in held.items():
            self._last[kind] = now
            self.sink.emit(event)

    def started(self) -> None:
        self.sink.started()

    def stderr(self, data: bytes) -> None:
        self.sink.stderr(data)

    def late(self, tool: str, event: Event) -> None:
        self.sink.late(tool, event)

    def result(self, result: RunRecord) -> None:
        self.flush()
        self.sink.result(result)

    def close(self) -> None:
        self.flush()
        self.sink.close()


def make_sink(fmt: str, tool: str, progress_interval: float,
              out: Out = None, max_output: int = 0,
              state_dir: Optional[str] = None, asks_person: bool = False,
              help_asked: bool = False) -> Coalescer:
    """The sink for ``--format``, coalescing progress where it should, and
    keeping the run within ``max_output`` bytes (0: no limit; the rich
    view, for people, has none) with the whole output spilled under
    ``state_dir`` (see :mod:`cli.output.budget`). ``asks_person`` (a
    person at this terminal answers what the run asks) and ``help_asked``
    (the arguments ask for the tool's help) shape only the rich view."""
    factory, coalesce = FORMATS[fmt]
    sink: Any = RichFormat(tool, out, asks_person, help_asked) \
        if factory is RichFormat else factory(tool, out)
    if coalesce and max_output:
        # Only a run with a budget needs it: `acor list`, `acor --help`
        # and the rich view do not load the budget's modules.
        from acor.cli.output.budget import Budget
        from acor.cli.output.spill import output_dir
        cost = json_cost if fmt == "json" else markdown_cost
        if state_dir is None:
            raise ValueError("a budgeted sink needs the state dir to "
                             "spill to (the run request's)")
        sink = Budget(sink, max_output, output_dir(state_dir), tool, cost)
    return Coalescer(sink, progress_interval if coalesce else 0)


def failure_sink(fmt: Optional[str], tool: str, out: Out = None
                 ) -> _Format:
    """A sink for a run that never started: the format asked for, else
    Markdown (a failure before the config is read knows no default)."""
    factory, _ = FORMATS.get(fmt or "markdown", FORMATS["markdown"])
    return factory(tool, out)


def report(error: AcorError, fmt: Optional[str], out: Out = None,
           tool: str = "acor") -> int:
    """Write ``error`` as a failed run in ``fmt`` (markdown unless json);
    returns its exit code."""
    sink = failure_sink(fmt, tool, out)
    sink.emit(error.to_event())
    sink.emit(Status("failed"))
    sink.close_failed(error)
    return error.exit_code

"""The rich view's one live line: a run's signs of life and of time.

From a run's first event to its ending a person sees one line that keeps
being redrawn: a spinner, the tool, the bar (pulsing until the first
progress), the percentage, the count, the label, the latest checkpoint,
the time elapsed and, once the progress gives a rate, the time left. On a
terminal that cannot redraw (``TERM=dumb``) the same facts are printed as
plain lines, one every :data:`PLAIN_EVERY` seconds at most, and at 100%.
The line is the rich view's (:mod:`cli.output.rich_view`); it never
holds text a tool sent without its passing through :mod:`cli.textsafe`
first.

A window resized mid-run leaves no stale line: each frame is sized to the
terminal's width as it is then, one column short of it (a line as wide
as the terminal leaves the cursor past its last column, where terminals
differ), and a terminal that rewraps its lines when made narrower shows
the last frame on more rows than the one rich erases: the rows it now
takes are cleared before the next frame is drawn. This is worked out from
the width alone, not from rich's state, and only on a terminal known to
rewrap (:func:`rewraps_on_resize`): one that cuts its lines instead
(xterm, urxvt, st, GNU screen) still shows the frame on one row, and the
rows above it are the tool's output, which must stay.
"""

from __future__ import annotations

import os
import threading
import time

from rich.console import Console, ConsoleOptions, RenderableType
from rich.control import Control
from rich.markup import escape
from rich.progress import (BarColumn, Progress, ProgressColumn, SpinnerColumn,
                           Task, TaskProgressColumn, TextColumn)
from rich.segment import ControlType, Segment
from rich.table import Column
from rich.text import Text

TYPE_CHECKING = False  # annotations only (rich imports typing anyway)
if TYPE_CHECKING:
    from typing import Any, Iterator, Mapping, Optional

    from rich.console import RenderResult
    from rich.progress import TaskID

PLAIN_EVERY = 5.0  # seconds between plain progress lines, at most
NARROW = 100       # columns below which the bar is short


def duration(seconds: float) -> str:
    """A duration as a person reads it: ``20.1 s``, ``3 min 05 s``,
    ``1 h 02 min``."""
    if seconds < 60:
        return f"{seconds:.1f} s"
    whole = int(seconds)
    if whole < 3600:
        return f"{whole // 60} min {whole % 60:02d} s"
    return f"{whole // 3600} h {whole % 3600 // 60:02d} min"


def clock(seconds: float) -> str:
    """Elapsed or left, as a clock: ``0:07``, ``12:40``, ``1:02:03``."""
    whole = max(0, int(seconds))
    hours, rest = divmod(whole, 3600)
    if hours:
        return f"{hours}:{rest // 60:02d}:{rest % 60:02d}"
    return f"{rest // 60}:{rest % 60:02d}"


class _Times(ProgressColumn):
    """Elapsed, and left when the rate of progress tells it."""

    def __init__(self, line: LiveLine) -> None:
        super().__init__(table_column=Column(no_wrap=True))
        self.line = line

    def render(self, task: Task) -> Text:
        return Text(self.line.times(), style="dim")


# Terminals that rewrap their lines when the window is resized, as their
# programs say in the environment they give it. tmux and GNU screen come
# first: inside them, they are the terminal a line is drawn on.
_REWRAPPING_PROGRAMS = frozenset({
    "tmux", "iTerm.app", "Apple_Terminal", "vscode", "WezTerm", "ghostty"})
_REWRAPPING_MARKS = ("VTE_VERSION", "KONSOLE_VERSION", "KITTY_WINDOW_ID",
                     "ALACRITTY_WINDOW_ID", "WT_SESSION", "WEZTERM_PANE")


def rewraps_on_resize(environ: Mapping[str, str]) -> bool:
    """Whether the terminal rewraps its lines when made narrower (a long
    line then takes more rows), from what its program sets; False when
    unknown, where erasing rows that are not the live line's would lose
    what a tool printed."""
    if environ.get("TMUX"):
        return True
    if environ.get("STY"):  # GNU screen cuts its lines
        return False
    return environ.get("TERM_PROGRAM", "") in _REWRAPPING_PROGRAMS or \
        environ.get("TERM", "") in ("xterm-kitty", "alacritty", "foot") or \
        any(environ.get(mark) for mark in _REWRAPPING_MARKS)


class _Frame:
    """One frame of the live line, as drawn on the terminal: what
    ``line`` shows, one column short of the terminal's width, after the
    rows the previous frame takes at that width that rich does not erase
    (see :meth:`LiveLine.leftover`)."""

    def __init__(self, line: LiveLine, shown: RenderableType) -> None:
        self.line = line
        self.shown = shown

    def __rich_console__(self, console: Console, options: ConsoleOptions
                         ) -> RenderResult:
        lines = console.render_lines(
            self.shown, options.update_width(max(1, options.max_width - 1)),
            pad=False)
        yield from self.line.leftover(options.max_width)
        for number, line in enumerate(lines):
            if number:
                yield Segment.line()
            yield from line
        self.line.drawn = [Segment.get_line_length(line) for line in lines]


class _LineProgress(Progress):
    """Rich's progress display, each frame a :class:`_Frame` of ``line``,
    its bar and tool name sized to the terminal's width at that frame."""

    def __init__(self, line: LiveLine, *columns: ProgressColumn,
                 **options: Any) -> None:
        self.line = line  # before rich's Live asks for a first frame
        super().__init__(*columns, **options)

    def get_renderable(self) -> RenderableType:
        self.line.fit(self.line.console.width)
        return _Frame(self.line, super().get_renderable())


class LiveLine:
    """The line of one run, on ``console``: redrawn where the terminal
    can (rich's live display), printed as plain lines where it cannot."""

    def __init__(self, console: Console, tool: str) -> None:
        self.console = console
        self.tool = tool  # already made one printable line
        self.started = time.monotonic()
        self.redraws = console.is_interactive  # not TERM=dumb
        self.percent: Optional[float] = None
        self.label = ""
        self.count = ""
        self.checkpoint = ""
        self.checkpoints = 0
        self._first: Optional[tuple[float, float]] = None  # (time, percent)
        self._rate: Optional[float] = None  # percent a second
        self._plain_at = float("-inf")
        self.stopped = False  # what ends the run is below: no line again
        self._progress: Optional[Progress] = None
        self._task: Optional[TaskID] = None
        self.drawn: list[int] = []  # the cells of each line of the frame
        self.rewraps = rewraps_on_resize(os.environ)
        self._printing: Optional[int] = None  # the thread printing above
        self._bar = BarColumn()
        self._name = Column(no_wrap=True, overflow="ellipsis")

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def left(self) -> Optional[float]:
        """Seconds left at the rate of progress since the first, or None
        while there is no rate yet."""
        if self._rate is None or self.percent is None or \
                not 0 < self.percent < 100:
            return None
        return (100 - self.percent) / self._rate

    def times(self) -> str:
        left = self.left()
        said = clock(self.elapsed())
        return said if left is None else f"{said} · ETA {clock(left)}"

    def alive(self) -> None:
        """An event came: the live line shows it (started at the first);
        a plain terminal gets a line when one is due."""
        if self.stopped:
            return
        if self.redraws:
            self._show()
        elif time.monotonic() - self._plain_at >= PLAIN_EVERY:
            self._plain()

    def progress(self, percent: float, label: str, count: str) -> None:
        now = time.monotonic()
        if self._first is None:
            self._first = (now, percent)
        elif percent > self._first[1] and now > self._first[0]:
            self._rate = (percent - self._first[1]) / (now - self._first[0])
        done = percent >= 100 and (self.percent or 0) < 100
        self.percent, self.label, self.count = percent, label, count
        if percent < 100:
            self.stopped = False  # more work after a result: a new line
        if not self.redraws and done:
            self._plain()
        else:
            self.alive()

    def checkpoint_at(self, checkpoint: str) -> None:
        self.checkpoint = checkpoint
        self.checkpoints += 1
        self.alive()

    def stop(self) -> None:
        """The line as it last was stays; nothing is redrawn after."""
        self.stopped = True
        if self._progress is not None:
            self._update()
            # A spinner that never showed progress has nothing to keep.
            self._progress.live.transient = self.percent is None and \
                not self.checkpoints
            self._progress.stop()
            self._progress = None

    def print(self, renderable: RenderableType) -> None:
        """``renderable`` above the live line, which is first drawn again
        at the terminal's width (its rows at an old width cleared): what
        is printed starts where the line did."""
        if self._progress is None:
            self.console.print(renderable)
            return
        if self._stale_rows(self.console.width):
            self._progress.refresh()
        # Under this print rich draws the line again below what it
        # printed, not over the frame before: nothing to clear there.
        self._printing = threading.get_ident()
        try:
            self.console.print(renderable)
        finally:
            self._printing = None

    def leftover(self, width: int) -> Iterator[Control]:
        """The controls that erase the rows of the last frame that rich
        does not (it erases as many rows as the frame had lines), on a
        terminal ``width`` columns wide: none unless the terminal
        narrowed and rewrapped the frame. Each frame rich's live display
        draws over the one before asks for them (its refreshes, and its
        last frame at :meth:`stop`); one drawn under a :meth:`print`, below
        what was printed, does not."""
        if self._printing == threading.get_ident():
            return
        for _ in range(self._stale_rows(width)):
            yield Control((ControlType.CURSOR_UP, 1),
                          (ControlType.ERASE_IN_LINE, 2))

    def _stale_rows(self, width: int) -> int:
        if not self.rewraps:
            return 0
        rows = sum(max(1, -(-cells // width)) for cells in self.drawn)
        return rows - len(self.drawn)

    def fit(self, width: int) -> None:
        """The bar and the tool's name sized to a terminal ``width``
        columns wide."""
        narrow = width < NARROW
        self._bar.bar_width = 12 if narrow else 30
        self._name.max_width = 16 if narrow else 24

    def _plain(self) -> None:
        self._plain_at = time.monotonic()
        parts = [self.tool]
        if self.percent is None:
            parts.append("working")
        else:
            parts.append(f"{self.percent:.0f}%")
        parts += [part for part in (self.count, self.label) if part]
        if self.checkpoint:
            parts.append(f"checkpoint {self.checkpoint}")
        parts.append(self.times())
        self.console.print(Text("  ".join(parts)), soft_wrap=True)

    def _show(self) -> None:
        if self._progress is None:
            self._progress = self._start()
        self._update()

    def _start(self) -> Progress:
        def column(**sized: Any) -> Column:
            return Column(no_wrap=True, overflow="ellipsis", **sized)
        self.drawn = []  # a new line, below whatever was printed
        progress = _LineProgress(
            self, SpinnerColumn(finished_text="✓"),
            TextColumn("[bold]{task.fields[tool]}", table_column=self._name),
            self._bar, TaskProgressColumn(),
            TextColumn("{task.fields[count]}", table_column=column()),
            TextColumn("{task.description}", table_column=column(ratio=1)),
            TextColumn("[cyan]{task.fields[checkpoint]}",
                       table_column=column(max_width=20)),
            _Times(self), console=self.console, expand=True,
            refresh_per_second=8)
        self._task = progress.add_task("", total=None,
                                       tool=escape(self.tool), count="",
                                       checkpoint="")
        progress.start()
        return progress

    def _update(self) -> None:
        if self._progress is None or self._task is None:
            return
        mark = f"⟳ {escape(self.checkpoint)}" if self.checkpoint else ""
        self._progress.update(
            self._task, total=None if self.percent is None else 100,
            completed=self.percent or 0, description=escape(self.label),
            count=self.count, checkpoint=mark)

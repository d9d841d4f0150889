"""Progress that costs nothing per item, and is never lost.

Authors report progress per item: ``tool.progress_bar(i, n)`` in a loop of a
million rows. Writing a section per call would flood the reader and cost a
system call per item, so a call that is not written must be as cheap as a
Python call can be: it checks its arguments, stores them and returns.

The rule: at most one Progress section per interval (``AcorTool``'s
``progress_interval``), and the latest progress always reaches the reader:

- A call an interval or more after the last written one is written at once
  (it reads the clock: calls that far apart can afford it).
- A call within the interval starts a *hold*: until the interval ends,
  calls only store their arguments (``_latest``), without the clock or the
  lock. A timer thread ends the hold; the next call then writes the latest
  progress itself, from the thread that reports progress, as before.
- If no call comes within GRACE after the hold, the timer writes the held
  progress: the reader never waits on a tool that went quiet.
- Any other section, and the final status, first writes a held progress.

``_latest`` and ``_written`` are the arguments of the latest call and of
the last one written; "something is held" is ``_latest is not _written``.
Calls store without the lock; the lock guards every write and the hold.
"""

from __future__ import annotations

import _thread
import time

from .events import Progress
from .quick import render
from .toolstate import ToolState

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any, Protocol, Self

    # A held call's arguments: (value, message) from progress(), (current,
    # total, label) from progress_bar().
    _Args = tuple[float, str] | tuple[int, int, str]

    class _Host(Protocol):
        """What ProgressMixin needs of the class it is mixed into."""
        _lock: _thread.RLock
        _state: ToolState

        def _put(self, section: str) -> None: ...
        def _require_running(self, what: str) -> None: ...
        def _interval(self) -> float: ...  # the interval now, in seconds

    _Base = _Host
else:
    _Base = object

_RUNNING = ToolState.RUNNING

# Under the launcher, progress is written at most this often: the launcher
# coalesces what an agent needs far more coarsely, and one write per call
# would cost a system call and a wake-up of the launcher for each.
PROGRESS_INTERVAL = 0.02
# Run directly, the reader is a person or an agent reading a pipe: ten
# updates a second is smooth for the one and few for the other.
DIRECT_PROGRESS_INTERVAL = 0.1
# When a hold ends with progress held, how long the tool has to write it
# itself before the timer does.
GRACE = 0.002


def percent_of(value: float) -> float:
    """int 0-100 or float 0.0-1.0 (a float above 1.0 is a percent),
    clamped to 0-100 and rounded to two decimals."""
    if type(value) is int and 0 <= value <= 100:
        return value
    check_percent(value)
    if isinstance(value, float) and value <= 1.0:
        value *= 100
    return _clamp(value)


def check_percent(value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"progress must be an int (0-100) or a float "
                        f"(0.0-1.0), not {type(value).__name__}")
    if isinstance(value, float) and value - value != 0:  # NaN, +-inf
        raise ValueError(f"progress must be a finite number, not {value}")


def check_text(value: object, what: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a string, not {type(value).__name__}")
    return value


def check_count(value: Any, what: str) -> int:
    """An integer (int, bool, or any type with __index__, like numpy's
    integers) that is not negative, as an int."""
    if not isinstance(value, int):
        index = getattr(type(value), "__index__", None)
        if index is None:
            raise TypeError(f"progress_bar {what} must be an integer, not "
                            f"{type(value).__name__}")
        value = index(value)
    if value < 0:
        raise ValueError(f"progress_bar {what} must not be negative, "
                         f"not {value}")
    return int(value)


def _clamp(percent: float) -> float:
    percent = round(min(100, max(0, percent)), 2)
    return int(percent) if percent == int(percent) else percent


def progress_event(args: _Args) -> Progress:
    """The Progress event of a stored call: (value, message) from
    progress(), (current, total, label) from progress_bar()."""
    if len(args) == 2:
        return Progress(percent_of(args[0]), args[1])
    current, total, label = args
    done = min(current, total)  # past total is done; no float overflow
    percent = 100 if total == 0 else _clamp(done * 100 / total)
    # int(): a bool or numpy count reads as a number, as it counts
    return Progress(percent, f"{label} ({int(current)}/{int(total)})".lstrip())


class ProgressMixin(_Base):
    """progress() and progress_bar() for AcorTool, which provides what
    ``_Host`` lists: _lock, _state, _put(section), _require_running(what)
    and _interval()."""

    def _init_progress(self, interval: float | None) -> None:
        if interval is not None and not (
                isinstance(interval, (int, float)) and interval >= 0):
            raise ValueError(f"progress_interval must be a number of "
                             f"seconds >= 0, not {interval!r}")
        self._progress_interval = interval
        self._latest: _Args | None = None   # arguments of the latest call
        self._written: _Args | None = None  # ... of the last call written
        self._written_at = float("-inf")
        self._hold = False       # True: calls only store their arguments
        self._timer_alive = False

    # The hot path. A call that is held costs a few checks, a tuple and a
    # store: about three calls of an empty method. The checks are ordered
    # and written for speed (``try`` costs nothing in Python 3.11 unless it
    # catches); every call they do not take goes the slow way, which
    # checks everything and says what is wrong.

    def progress(self, value: float, message: str = "") -> Self:
        """``## Progress: 50%``: an int 0-100 or a float 0.0-1.0 (a float
        above 1.0 is a percent); out of range is clamped."""
        try:
            if type(value) is int:
                if value < 0 or value > 100:
                    raise ValueError  # to be clamped
            elif type(value) is not float or not 0.0 <= value <= 100.0:
                raise ValueError  # NaN too: the slow way says what is wrong
            self._latest = (value, message + "")  # + "": strings only
        except (TypeError, ValueError):
            return self._progress_checked(value, message)
        if self._hold:
            return self
        return self._publish()

    def progress_bar(self, current: int, total: int, label: str = ""
                     ) -> Self:
        """Progress from a count: ``label (current/total)`` at
        ``current/total`` percent, clamped to 100. A total of 0 reads as
        done (there is nothing left to do). The counts are integers (numpy's
        too); True and False count as 1 and 0, as in Python."""
        try:
            # `|` takes integers only, and is negative if either one is.
            if (current | total) < 0:
                raise ValueError
            self._latest = (current, total, label + "")
        except (TypeError, ValueError):
            return self._progress_bar_checked(current, total, label)
        if self._hold:
            return self
        return self._publish()

    def _progress_checked(self, value: float, message: str) -> Self:
        check_percent(value)
        self._latest = (value, check_text(message, "message"))
        if self._hold:
            return self
        return self._publish()

    def _progress_bar_checked(self, current: int, total: int,
                              label: str) -> Self:
        self._latest = (check_count(current, "current"),
                        check_count(total, "total"),
                        check_text(label, "label"))
        if self._hold:
            return self
        return self._publish()

    def _publish(self) -> Self:
        """No hold is on: write the latest progress if the interval since
        the last one has passed; otherwise calls are coming fast, and a
        hold starts (the timer ends it)."""
        with self._lock:
            if self._state is not _RUNNING:
                self._latest = self._written  # this call wrote nothing
                self._require_running("progress")
            interval = self._interval()
            if interval <= 0 or \
                    time.monotonic() - self._written_at >= interval:
                if self._latest is not self._written:
                    self._write_held()
            else:
                self._hold = True
                if not self._timer_alive:
                    self._timer_alive = True
                    _thread.start_new_thread(self._timer, (interval,))
        return self

    def _write_held(self) -> None:
        """Write the latest progress (the lock is held; one is held)."""
        latest = self._written = self._latest
        self._written_at = time.monotonic()
        if latest is not None:  # always: a call stored it
            self._put(render(progress_event(latest)))

    def _end_progress(self) -> None:
        """The run left RUNNING (the lock is held): calls must reach
        _publish again, to be refused; the timer sees the state and ends."""
        self._hold = False

    def _reset_progress_after_fork(self) -> None:
        # The timer thread was not forked; the parent writes what it held.
        self._written = self._latest
        self._hold = False
        self._timer_alive = False

    def _timer(self, interval: float) -> None:
        """Ends each hold; writes what a quiet tool left held."""
        try:
            while self._timer_round(interval):
                pass
        except Exception as exc:
            with self._lock:  # the next call writes, and hears of it
                self._hold = False
                self._timer_alive = False
            if not isinstance(exc, (OSError, ValueError)):
                raise  # stdout gone is expected; anything else is a bug

    def _timer_round(self, interval: float) -> bool:
        time.sleep(max(0.0, self._written_at + interval - time.monotonic()))
        with self._lock:
            if self._state is not _RUNNING:
                self._timer_alive = False
                return False
            if time.monotonic() < self._written_at + interval:
                return True  # written meanwhile: a new hold
            self._hold = False  # the next call writes
            # Checked after the hold is off: a call that stored while the
            # hold was on is seen here, or sees the hold off and writes.
            if self._latest is self._written:
                self._timer_alive = False
                return False
        # Something is held. A busy tool writes it with its next call, from
        # its own thread (so never between the text and the line end of one
        # of its prints); give it a moment, then write it from here.
        time.sleep(min(interval, GRACE))
        with self._lock:
            if self._state is not _RUNNING:
                self._timer_alive = False
                return False
            if self._hold:
                return True  # the tool wrote it: a new hold
            if self._latest is self._written:
                self._timer_alive = False  # written before another section
                return False
            self._write_held()
            self._hold = True
        return True

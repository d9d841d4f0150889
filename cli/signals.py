"""Stopping a run: from a signal, from another thread, or before it starts.

:mod:`acor.cli.entry` installs an :class:`EarlySignals` as the handler of
SIGINT, SIGTERM and SIGHUP (after a plain function that caught them while
this module was imported); the run hands them to its :class:`Cancel` once
it has one. A module of its own so that the console script can install
it, and a caller can make a Cancel, without importing the rest of the
launcher first.
"""

from __future__ import annotations

import os
import signal
import sys

TYPE_CHECKING = False  # typing costs every run ~3 ms: only mypy
if TYPE_CHECKING:
    from types import FrameType
    from typing import Optional


HANDLED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
# How soon a Ctrl-C the interpreter dropped is raised again.
_AGAIN_AFTER = 0.001


def interrupt_as_python_does() -> None:
    """A built-in command takes Ctrl-C as any Python program does, as a
    KeyboardInterrupt (SIGTERM and SIGHUP at their defaults); one ignored
    when acor started (``nohup``) stays ignored. One Python would drop is
    raised again (:func:`raise_dropped_interrupts`)."""
    for sig in HANDLED:
        if signal.getsignal(sig) != signal.SIG_IGN:
            signal.signal(sig, signal.default_int_handler
                          if sig == signal.SIGINT else signal.SIG_DFL)
    raise_dropped_interrupts()


def raise_dropped_interrupts() -> None:
    """A KeyboardInterrupt that lands in a finalizer or a weakref callback
    (importlib's module locks have one, which any import may run) is
    printed as "Exception ignored" and dropped by Python, and a command
    then waiting on its input (``acor parse -``, a prompt) waits for ever.
    From here on the unraisable hook takes it instead and has SIGALRM
    raise it a moment later, outside the callback: raised within the hook
    it would be dropped again."""
    signal.signal(signal.SIGALRM, signal.default_int_handler)
    sys.unraisablehook = _interrupt_again


def _interrupt_again(unraisable: sys.UnraisableHookArgs) -> None:
    if issubclass(unraisable.exc_type, KeyboardInterrupt):
        signal.setitimer(signal.ITIMER_REAL, _AGAIN_AFTER)
        return
    sys.__unraisablehook__(unraisable)


def end_python_interrupts() -> None:
    """Undo :func:`raise_dropped_interrupts` once the command or the
    question is over. A KeyboardInterrupt due already is raised by the
    last line (Python runs pending handlers before it changes one)."""
    if sys.unraisablehook is _interrupt_again:
        signal.setitimer(signal.ITIMER_REAL, 0)
        sys.unraisablehook = sys.__unraisablehook__
        signal.signal(signal.SIGALRM, signal.SIG_DFL)


class EarlySignals:
    """Signals that arrived before a run could take them (see
    :mod:`acor.cli.entry`), and the run's Cancel once there is one."""

    def __init__(self, received: Optional[list[int]] = None) -> None:
        # The list the first handler of acor.cli.entry filled, and goes on
        # filling until this one takes its place.
        self.received: list[int] = [] if received is None else received
        self.cancel: Optional[Cancel] = None

    def __call__(self, signum: int, frame: Optional[FrameType]) -> None:
        self.received.append(signum)
        if self.cancel is not None:
            self.cancel.set(signum)


class Cancel:
    """Stops a run from any thread, or from a signal handler: ``set()``
    forwards ``signum`` to the tool's group (TERM by default), then KILL
    after the grace period; a second ``set()`` kills at once. A pipe wakes
    the relay loop, so a cancel is acted on immediately."""

    def __init__(self) -> None:
        self._read, self._write = os.pipe()
        os.set_blocking(self._read, False)
        os.set_blocking(self._write, False)
        self.signum: Optional[int] = None
        self.count = 0

    def set(self, signum: int = signal.SIGTERM) -> None:
        if self.signum is None:
            self.signum = signum
        self.count += 1
        try:
            os.write(self._write, b"!")
        except OSError:
            pass  # full or closed: the loop is awake or gone already

    def wake_on_signals(self) -> int | None:
        """Have the interpreter's own signal handler write to this pipe
        as well: a signal that lands just before the relay's select would
        otherwise wait for its Python handler until something else wakes
        the loop. Main thread only; the previous wake-up descriptor, to
        give back (None where it cannot be set)."""
        try:
            return signal.set_wakeup_fd(self._write,
                                        warn_on_full_buffer=False)
        except ValueError:  # not the main thread: no signal lands here
            return None

    @staticmethod
    def stop_waking(previous: int | None) -> None:
        if previous is not None:
            signal.set_wakeup_fd(previous)

    def is_set(self) -> bool:
        return self.count > 0

    def fileno(self) -> int:
        return self._read

    def drain(self) -> None:
        try:
            while os.read(self._read, 512):
                pass
        except OSError:
            pass

    def close(self) -> None:
        for fd in (self._read, self._write):
            try:
                os.close(fd)
            except OSError:
                pass

"""The relay loop: a spawned tool's pipes in, events out, until it ends.

Single-threaded: one selector watches the tool's stdout, its stderr, a
pidfd that becomes readable when the tool exits, and the run's
:class:`Cancel` pipe. Each wake-up reads what is there, turns it into events
(the protocol) and hands them to the sink. Deadlines (timeout, idle timeout,
kill grace, drain grace, held progress) set how long the selector may sleep,
so nothing waits on a poll interval.
"""

from __future__ import annotations

import os
import selectors
import signal
import time

from acor import exitcodes
from acor.decode import LineReader
from acor.events import Error, Event, Heartbeat, InputNeeded, Status

from acor.cli.run import process
from acor.cli.signals import Cancel

TYPE_CHECKING = False  # typing costs every run ~3 ms: only mypy
if TYPE_CHECKING:
    from typing import Any, Callable, Optional, Protocol

    from acor.cli.run.process import RunningTool
    from acor.cli.run.protocols import AcorProtocol, WrappedProtocol

    class Sink(Protocol):
        """Where events go: a format (see :mod:`cli.output.formats`) or
        a collector."""

        def emit(self, event: Event) -> None: ...
        def due(self) -> Optional[float]: ...
        def tick(self) -> None: ...

DRAIN_GRACE = 0.5   # after the tool exits, how long an open pipe may linger
STDERR_TAIL = 4096  # bytes of stderr kept for the synthesized Error
TAIL_LINES = 20



class Ending:
    """How a run ended: acor's exit code and the result state."""

    __slots__ = ("exit_code", "state")

    def __init__(self, exit_code: int, state: str) -> None:
        self.exit_code = exit_code
        self.state = state


class Relay:
    """Relays one spawned tool to ``sink`` until it ends.

    ``stop_error(kind, seconds)`` builds acor's Error for its own endings
    ("timeout", "idle"); ``on_stderr(data)`` receives the tool's stderr."""

    def __init__(self, proc: RunningTool,
                 protocol: AcorProtocol | WrappedProtocol, sink: Sink, *,
                 name: str, args: list[str], timeout: float,
                 idle_timeout: Optional[float], cancel: Cancel,
                 stop_error: Callable[[str, float], Error],
                 on_stderr: Callable[[bytes], None],
                 on_late: Callable[[Event], None]) -> None:
        self.proc = proc
        self.protocol = protocol
        self.sink = sink
        self.name = name
        self.args = args
        self.timeout = timeout
        self.idle_timeout = idle_timeout
        self.cancel = cancel
        self.stop_error = stop_error
        self.on_stderr = on_stderr
        self.on_late = on_late
        self.final: Optional[str] = None   # the transcript's ending, once sent
        self.stopped: Optional[str] = None  # "timeout", "idle", "cancelled"
        self.usage_error = False           # the last Error was E_USAGE
        self.kill_at: Optional[float] = None
        self._exit_fd: Optional[int] = None  # -1: exited, no more watched
        self._exited_at: Optional[float] = None
        self._streams = 2  # the tool's pipes still open
        self._tail = bytearray()
        self._cancels_seen = 0
        # A protocol that holds lines for a while (a wrapped program's).
        self._protocol_due = getattr(protocol, "due", None)
        self._protocol_tick = getattr(protocol, "tick", None)

    # --- the loop -------------------------------------------------------

    def run(self) -> None:
        """Relay until the tool has exited and its pipes are drained (or a
        daemon holding them open has had its grace); then call
        :meth:`finish`, once the tool is reaped."""
        proc = self.proc.proc
        sel = self._selector(proc)
        reader = LineReader()
        self.started = time.monotonic()
        self.last_activity = self.started
        self._exited_at = None
        self._streams = 2
        self.dispatch(self.protocol.start())
        try:
            # Until the tool exits, not just until its pipes close: a tool
            # may close stdout and stderr early and go on working.
            while self._streams or self._exited_at is None:
                now = time.monotonic()
                if self.cancel.count > self._cancels_seen:
                    self._on_cancel()
                if self._exited_at is None and self._exit_fd is None and \
                        proc.poll() is not None:
                    self._exited_at = now
                deadline = self._next_deadline(self._exited_at)
                if deadline is not None and deadline <= now:
                    if self._exited_at is not None and \
                            now >= self._exited_at + DRAIN_GRACE:
                        break  # a daemon kept the pipe open: stop reading
                    self._on_deadline(now)
                    continue
                for key, _ in sel.select(self._wait(deadline, now)):
                    self._on_ready(key, sel, reader)
                self._tick()
            for block in reader.close():
                self.dispatch(self.protocol.feed(block))
            self.dispatch(self.protocol.close())
        finally:
            if self._exit_fd not in (None, -1):
                os.close(self._exit_fd)
            sel.close()

    def _selector(self, proc: Any) -> selectors.BaseSelector:
        """What the loop waits on: the tool's stdout and stderr, the
        cancel, and the tool's exit (its pidfd, where there is one)."""
        sel = selectors.DefaultSelector()
        for stream, role in ((proc.stdout, "out"), (proc.stderr, "err")):
            os.set_blocking(stream.fileno(), False)
            sel.register(stream.fileno(), selectors.EVENT_READ, role)
        sel.register(self.cancel.fileno(), selectors.EVENT_READ, "cancel")
        self._exit_fd = process.pidfd(self.proc.pid)
        if self._exit_fd is not None:
            sel.register(self._exit_fd, selectors.EVENT_READ, "exit")
        return sel

    def _wait(self, deadline: Optional[float], now: float
              ) -> Optional[float]:
        """How long to wait for the next wake-up: until the next deadline,
        and a short while when the tool's exit must be polled for."""
        wait = None if deadline is None else deadline - now
        if self._exit_fd is None and self._exited_at is None:
            wait = 0.05 if wait is None else min(wait, 0.05)
        return wait

    def _on_ready(self, key: selectors.SelectorKey,
                  sel: selectors.BaseSelector, reader: LineReader) -> None:
        """One wake-up's source: the cancel, the tool's exit, or a block
        of its stdout (decoded) or stderr."""
        if key.data == "cancel":
            self.cancel.drain()
            return
        if key.data == "exit":
            sel.unregister(key.fd)
            os.close(key.fd)
            self._exit_fd = -1  # registered no more, but exit is known
            self._exited_at = time.monotonic()
            return
        data = process.read(key.fd)
        if data is None:
            return  # woken without data: nothing to do
        if not data:
            sel.unregister(key.fd)
            self._streams -= 1
        elif key.data == "out":
            self.last_activity = time.monotonic()
            for block in reader.feed(data):
                self.dispatch(self.protocol.feed(block))
        else:
            self._stderr(data)

    def _tick(self) -> None:
        """After each wake-up: what the protocol and the sink hold that
        is now due."""
        if self._protocol_tick is not None:
            self.dispatch(self._protocol_tick())
        self.sink.tick()

    def _next_deadline(self, exited_at: Optional[float]) -> Optional[float]:
        deadlines = []
        if self.stopped is None:
            deadlines.append(self.started + self.timeout)
            if self.idle_timeout:
                deadlines.append(self.last_activity + self.idle_timeout)
        if self.kill_at is not None:
            deadlines.append(self.kill_at)
        if exited_at is not None:
            deadlines.append(exited_at + DRAIN_GRACE)
        due = self.sink.due()
        if due is not None:
            deadlines.append(time.monotonic() + due)
        if self._protocol_due is not None:
            due = self._protocol_due()
            if due is not None:
                deadlines.append(time.monotonic() + due)
        return min(deadlines) if deadlines else None

    def _on_deadline(self, now: float) -> None:
        if self._protocol_tick is not None:
            # Held lines first, and all of them before acor's own ending.
            self.dispatch(self._protocol_tick(self.stopped is None and (
                now >= self.started + self.timeout or bool(
                    self.idle_timeout and
                    now >= self.last_activity + self.idle_timeout))))
        if self.kill_at is not None and now >= self.kill_at:
            self.proc.kill_group(signal.SIGKILL)
            self.kill_at = None
        elif self.stopped is None and now >= self.started + self.timeout:
            self._stop("timeout", self.stop_error("timeout", self.timeout))
        elif (self.stopped is None and self.idle_timeout and
              now >= self.last_activity + self.idle_timeout):
            self._stop("idle", self.stop_error("idle", self.idle_timeout))
        self.sink.tick()

    def _on_cancel(self) -> None:
        self._cancels_seen = self.cancel.count
        if self.stopped == "cancelled" or self.cancel.count > 1:
            self.proc.kill_group(signal.SIGKILL)  # asked twice: no grace
            self.stopped = self.stopped or "cancelled"
            return
        if self.stopped is None:
            self.stopped = "cancelled"
        # Forwarded to the whole group: the tool may end itself Cancelled.
        self.proc.kill_group(self.cancel.signum or signal.SIGTERM)
        self.kill_at = time.monotonic() + process.KILL_GRACE

    def _stop(self, why: str, error: Error) -> None:
        """Our own ending: report it now, then stop the tool's group."""
        self.stopped = why
        if self.final is None:
            self.sink.emit(error)
            self.sink.emit(Status("failed"))
            self.final = "timeout"
        else:
            # The transcript has ended and keeps its ending (and exit
            # code); only the process that would not exit is stopped.
            self.on_late(Error(f"{self.name} did not exit after its final "
                               f"status: stopped", error.code))
        self.proc.kill_group(signal.SIGTERM)
        self.kill_at = time.monotonic() + process.KILL_GRACE

    # --- events ---------------------------------------------------------

    def dispatch(self, events: list[Event]) -> None:
        for event in events:
            if isinstance(event, Heartbeat):
                self.last_activity = time.monotonic()
                if self.final is None:
                    # Not part of the transcript, but a sink that keeps a
                    # client waiting (MCP's progress) hears it.
                    beat = getattr(self.sink, "heartbeat", None)
                    if beat is not None:
                        beat()
            elif self.final is not None:
                self.on_late(event)  # kept, but not part of the transcript
            else:
                if isinstance(event, Status) and event.is_final:
                    self.final = event.state
                elif isinstance(event, InputNeeded):
                    self.final = "input_needed"
                elif isinstance(event, Error):
                    self.usage_error = event.code == "E_USAGE"
                self.sink.emit(event)

    def _stderr(self, data: bytes) -> None:
        self.on_stderr(data)
        self._tail += data
        del self._tail[:-STDERR_TAIL]

    def stderr_tail(self) -> str:
        text = self._tail.decode("utf-8", "replace").rstrip("\n")
        return "\n".join(text.split("\n")[-TAIL_LINES:])

    # --- ending ---------------------------------------------------------

    def finish(self) -> Ending:
        """After the tool is reaped: the final events a run still needs,
        and the exit code."""
        if self.final == "timeout":
            return Ending(exitcodes.TIMEOUT, "timeout")
        if self.final is not None:
            if self.final == "failed" and self.usage_error:
                return Ending(exitcodes.USAGE, "failed")
            return Ending(exitcodes.OF_ENDING.get(self.final, exitcodes.FAILED),
                          self.final if self.final in exitcodes.OF_ENDING
                          else "failed")
        if self.stopped == "cancelled":
            self.sink.emit(Status("cancelled"))
            self.final = "cancelled"
            return Ending(exitcodes.CANCELLED, "cancelled")
        events, code = self.protocol.ending(
            self.proc.returncode, self.stderr_tail(), self.args)
        self.dispatch(events)
        return Ending(code, self.final or "failed")

"""A call's progress, from the run's worker thread to the client.

The runner calls ``on_event`` for every event, as it happens, from the
thread running the tool, with no coalescing: a tool may report progress
100,000 times a second. :class:`ProgressRelay` keeps only the latest value
(an O(1) update under a lock), wakes the event loop at most once per
notification, and sends at most one ``notifications/progress`` per
``interval``. MCP wants the progress value to increase with every
notification, so a value that would not (a heartbeat, a tool going back to
0 for a second run, a repeated percent) is nudged just above the last one.
The latest value is never lost: :meth:`ProgressRelay.flush` sends what is
left before the call's result. Every notification has a message: the
tool's latest, which a heartbeat repeats, or :data:`STILL_WORKING` when a
heartbeat comes before any progress message (a client shows the message,
and an empty one reads as nothing happening).
"""

import threading
from collections.abc import Awaitable, Callable
from typing import cast

import anyio
import anyio.from_thread

from acor.events import Event, Heartbeat, Progress

INTERVAL = 0.1   # seconds between notifications: at most ~10 a second
TOTAL = 100.0    # progress is a percentage
NUDGE = 0.01     # how far a non-increasing value is moved above the last
_BEAT = object()  # a heartbeat: no new percent, still alive
STILL_WORKING = "still working"  # a heartbeat's message before any other

Send = Callable[[float, float | None, str | None], Awaitable[None]]
# A percent, or _BEAT: no new percent, still alive.
Percent = float | object


class ProgressRelay:
    """Progress of one tool call. ``send(progress, total, message)`` is the
    request's progress reporter (a no-op when the client sent no progress
    token). Create and run it in the event loop; call :meth:`on_event`
    from the run's thread."""

    def __init__(self, send: Send, interval: float = INTERVAL) -> None:
        self._send = send
        self._interval = interval
        self._lock = threading.Lock()
        self._pending: tuple[Percent, str | None] | None = None
        self._signalled = False   # a wake-up is on its way to the loop
        self._wake = anyio.Event()
        self._last: float | None = None  # the last value sent
        # The last message, repeated by heartbeats.
        self._message: str | None = None

    # --- the run's thread ----------------------------------------------

    def on_event(self, event: Event) -> None:
        """The runner's ``on_event``: keeps progress and heartbeats."""
        if isinstance(event, Progress):
            self._offer(event.percent, event.message or None)
        elif isinstance(event, Heartbeat):
            self._offer(_BEAT, None)

    def _offer(self, percent: Percent, message: str | None) -> None:
        with self._lock:
            if percent is _BEAT and self._pending is not None:
                return  # a real value is already waiting: it proves life too
            self._pending = (percent, message)
            if self._signalled:
                return
            self._signalled = True
        # Read self._wake in the loop, when the call runs: the pump may have
        # replaced it since (see pump).
        try:
            anyio.from_thread.run_sync(lambda: self._wake.set())
        except anyio.RunFinishedError:
            pass  # the server is shutting down: nobody is listening

    # --- the event loop ------------------------------------------------

    async def pump(self) -> None:
        """Send pending progress, at most once per interval, until
        cancelled. Run it in the call's task group."""
        while True:
            await self._wake.wait()
            # A fresh event before taking the value: a wake-up requested
            # after this point sets the new one, so none is lost.
            self._wake = anyio.Event()
            if await self._send_pending():
                await anyio.sleep(self._interval)

    async def flush(self) -> None:
        """Send what is left; call it after the pump is stopped and before
        the call returns its result."""
        await self._send_pending()

    async def _send_pending(self) -> bool:
        with self._lock:
            pending, self._pending = self._pending, None
            self._signalled = False
        if pending is None:
            return False
        percent, message = pending
        value = self._next_value(percent)
        if message is not None:
            self._message = message
        # Taken out of _pending, so it must go out whole: the call's end
        # cancels the pump, and a cancel in the middle of this send lost
        # the run's last progress (2 calls in 240, under load).
        with anyio.CancelScope(shield=True):
            await self._send(value, TOTAL, self._message or (
                STILL_WORKING if percent is _BEAT else None))
        return True

    def _next_value(self, percent: Percent) -> float:
        if percent is _BEAT:
            value = 0.0 if self._last is None else self._last
        else:
            value = min(max(float(cast(float, percent)), 0.0), TOTAL)
        if self._last is not None and value <= self._last:
            value = round(self._last + NUDGE, 6)
        self._last = value
        return value

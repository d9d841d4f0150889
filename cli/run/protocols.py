"""How a tool's output becomes events: the two protocols a tool can speak.

- :class:`AcorProtocol`: a tool built on the library writes framed
  sections (:mod:`acor.framing`), decoded by
  :class:`acor.decode.StreamDecoder`.
- :class:`WrappedProtocol`: a plain program (a wrapper manifest with a
  ``command``); acor speaks ACOR for it: Ready, its stdout as Output, lines
  matching ``progress_pattern`` as Progress, and at exit Complete or the
  manifest's ``errors`` entry for the exit code. For a sink that shows a
  tool's colours (a person's terminal) it is asked for them through its
  manifest's ``color_env``.

Both answer the same questions of the relay loop: what to add to the
environment, which events start the run, what a block of complete lines
means, and how a run that ended without a final status ends.
"""

from __future__ import annotations

import os

from acor import exitcodes, framing
from acor.events import Error, Event, Output, Progress, Status

from acor.cli.run.process import signal_name
from acor.cli.textsafe import strip_terminal

GROUP = 0.05              # seconds of a wrapped program's lines in one Output
GROUP_BYTES = 64 * 1024   # or this many bytes

TYPE_CHECKING = False  # typing costs every run ~3 ms: only mypy
if TYPE_CHECKING:
    import re
    from typing import Optional, Sequence

    from acor.decode import StreamDecoder

    from acor.cli.discovery.spec import ToolSpec


class AcorProtocol:
    """A tool that speaks ACOR through the library: framed sections."""

    def __init__(self, max_data: Optional[int] = None) -> None:
        self.token = framing.new_token()
        self.max_data = max_data  # see acor.decode.StreamDecoder
        self.decoder: Optional[StreamDecoder] = None  # built once spawned
        self._fd: Optional[int] = None

    def env(self) -> dict[str, str]:
        # The token travels in a pipe, not the environment (see
        # acor.framing): only its first reader, the library, gets it.
        self._fd = framing.token_pipe(self.token)
        return {framing.FD_VAR: str(self._fd)}

    def pass_fds(self) -> tuple[int, ...]:
        return () if self._fd is None else (self._fd,)

    def spawned(self) -> None:
        """The tool holds its copy of the pipe now: close ours, and build
        the decoder (importing the grammar) while the tool starts up."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        from acor.decode import StreamDecoder
        self.decoder = StreamDecoder(self.token, max_data=self.max_data)

    def start(self) -> list[Event]:
        return []

    def feed(self, block: str) -> list[Event]:
        assert self.decoder is not None, "feed() before spawned()"
        events: list[Event] = self.decoder.feed(block)
        return events

    def close(self) -> list[Event]:
        return self.decoder.close() if self.decoder is not None else []

    def ending(self, returncode: Optional[int], stderr_tail: str,
               args: Sequence[str]) -> tuple[list[Event], int]:
        """Events for a tool that exited without a final status."""
        return crash_events(returncode, stderr_tail), exitcodes.FAILED


class WrappedProtocol:
    """A program that knows nothing of ACOR, described by its manifest.
    ``colour``: the run's sink shows a tool's colours (a person's
    terminal that shows colour), so the program is asked for them."""

    def __init__(self, spec: ToolSpec, colour: bool = False) -> None:
        self.spec = spec
        self.colour = colour
        pattern = spec.progress_pattern
        self.pattern: Optional[re.Pattern[str]] = None
        if pattern:
            import re  # compiled once per run; checked at discovery
            self.pattern = re.compile(pattern)
        self.errors = spec.errors or {}
        self._pending: list[str] = []  # lines not yet relayed
        self._size = 0
        self._since: Optional[float] = None  # when the first came

    def env(self) -> dict[str, str]:
        """The manifest's ``color_env`` when the run shows colour, but for
        a variable acor's environment sets already (``PY_COLORS=0``: the
        person said). Never otherwise: an agent's run, a pipe and MCP get
        the program's output as it writes it for a pipe."""
        if not self.colour or not self.spec.color_env:
            return {}
        return {name: value for name, value in self.spec.color_env.items()
                if name not in os.environ}

    def pass_fds(self) -> tuple[int, ...]:
        return ()

    def spawned(self) -> None:
        pass

    def start(self) -> list[Event]:
        return [Status("ready")]

    def feed(self, block: str) -> list[Event]:
        """Lines as they are read: plain lines are held and relayed as one
        Output per :data:`GROUP` seconds (or :data:`GROUP_BYTES`), not one
        per pipe read (a program writing a line at a time would be a
        section a line); a line that reports progress is a Progress, after
        the lines before it. Empty lines alone make no section: they go
        with the next output (or at the end), so no line break is lost."""
        import time
        events: list[Event] = []
        for line in block.split("\n"):
            # A program asked for colour colours its progress lines too:
            # the pattern is matched against the text a person reads.
            shown = strip_terminal(line) if self.colour else line
            match = self.pattern.search(shown) if self.pattern else None
            if match:
                events += self._flush()
                events.append(Progress(_percent(match.group("percent")),
                                       shown.strip()))
            else:
                self._pending.append(line)
                self._size += len(line) + 1
        if self._pending and self._since is None:
            self._since = time.monotonic()
        if self._size >= GROUP_BYTES:
            events += self._flush()
        return events

    def due(self) -> Optional[float]:
        """Seconds until held lines are due, or None."""
        if self._since is None:
            return None
        import time
        return max(0.0, self._since + GROUP - time.monotonic())

    def tick(self, now: bool = False) -> list[Event]:
        """The held lines when they are due (``now``: whatever is held)."""
        due = self.due()
        return self._flush() if due is not None and (now or due <= 0) \
            else []

    def _flush(self) -> list[Event]:
        pending = self._pending
        self._since = None
        if not any(pending):
            # Only empty lines: no section of nothing; they go with the
            # next output (or at the end), so no line break is lost.
            return []
        self._pending, self._size = [], 0
        return [Output("\n".join(pending))]

    def close(self) -> list[Event]:
        events = self._flush()
        blank, self._pending, self._size = self._pending, [], 0
        return events + ([Output("\n".join(blank))] if blank else [])

    def ending(self, returncode: Optional[int], stderr_tail: str,
               args: Sequence[str]) -> tuple[list[Event], int]:
        if returncode == 0:
            return [Status("complete")], exitcodes.OK
        known = self.errors.get(str(returncode), {})
        if returncode is not None and returncode < 0:
            what = f"was killed by {signal_name(-returncode)}"
        else:
            what = f"exited with code {returncode}"
        import shlex  # only a failed wrapped run pays for it
        quoted = shlex.join(args)
        message = known.get("message") or f"{self.spec.name} {what}"
        recovery = known.get("recovery") or (
            "Read the output and stderr above for the cause, then run it "
            "again with corrected arguments.")
        details = _details(f"exit code: {returncode}", stderr_tail)
        code = known.get("code") or f"E_EXIT_{abs(returncode or 0)}"
        if not known and DISK_FULL_TEXT in stderr_tail:
            from acor.crash import disk_full
            message = f"{self.spec.name} {what}: the disk is full"
            code = "E_DISK_FULL"
            recovery = disk_full() + " The stderr above names what it " \
                "was writing."
        next_argv = None
        if known.get("next"):
            next_argv = expand_argv(known["next"], args)
        return [Error(message.replace("{args}", quoted), code, details,
                      recovery.replace("{args}", quoted), next_argv),
                Status("failed")], exitcodes.FAILED


def expand_argv(template: str, args: Sequence[str]) -> list[str]:
    """A manifest's ``next`` template as an argv: split like a shell would,
    then each word ``{args}`` replaced by the run's arguments, as they are
    (never re-split)."""
    import shlex
    argv: list[str] = []
    for word in shlex.split(template):
        if word == "{args}":
            argv.extend(args)
        else:
            argv.append(word)
    return argv


# What the C library says for ENOSPC: a program that died of a full disk
# says it on its stderr.
DISK_FULL_TEXT = "No space left on device"


def crash_events(returncode: Optional[int], stderr_tail: str) -> list[Event]:
    if returncode is not None and returncode < 0:
        name = signal_name(-returncode)
        error = Error(f"The tool was killed by {name}", "E_TOOL_KILLED",
                      _details(f"signal: {name}", stderr_tail),
                      "The tool died without finishing (out of memory, a "
                      "crash in native code, or killed by another process). "
                      "Run it again; if it keeps dying, check the stderr "
                      "above and the machine's memory.")
    elif returncode and DISK_FULL_TEXT in stderr_tail:
        from acor.crash import disk_full
        error = Error(f"The tool exited with code {returncode}: the disk "
                      f"is full", "E_DISK_FULL",
                      _details(f"exit code: {returncode}", stderr_tail),
                      disk_full() + " The stderr above names what it was "
                      "writing.")
    elif returncode:
        error = Error(f"The tool exited with code {returncode} before "
                      f"finishing", "E_TOOL_CRASHED",
                      _details(f"exit code: {returncode}", stderr_tail),
                      "Read the stderr above for the cause, fix the input or "
                      "the tool, then run it again.")
    else:
        error = Error("The tool exited without a final status",
                      "E_NO_FINAL_STATUS",
                      _details("exit code: 0", stderr_tail),
                      "Its output may be incomplete: check it before relying "
                      "on it. Tool authors: use `with AcorTool() as tool:` "
                      "or call tool.stop().")
    return [error, Status("failed")]


def _details(first: str, stderr_tail: str) -> str:
    if not stderr_tail:
        return first
    return f"{first}\nstderr (last lines):\n{stderr_tail}"


def _percent(text: str) -> float:
    try:
        value = float(text)
    except (TypeError, ValueError):
        return 0
    value = min(100.0, max(0.0, value))
    return int(value) if value == int(value) else round(value, 2)

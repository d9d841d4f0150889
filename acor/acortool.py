"""AcorTool: the object a tool author talks to the agent through.

    from acor import AcorTool

    with AcorTool() as tool:
        tool.progress(25, "Loading data")
        tool.output({"rows": 1000})
        tool.suggestions(["Plot the distribution of column price"])

Each method renders one section and writes it whole, under one lock, with
one write and a flush. A state machine guards the order: CREATED -> RUNNING
-> COMPLETE | FAILED | CANCELLED (or INPUT_NEEDED).

Every tool imports this module at start-up, so it imports only what the
interpreter has loaded already (no enum, json, re, threading or typing):
grammar, json and the rest come on the first call that needs them.
"""

from __future__ import annotations

import _thread
import os
import sys

from . import checks, exitcodes, forks, framing
from .events import (FINAL_STATES, AIDirective, InputNeeded, Output,
                     OutputData, OutputFiles, Status, Suggestions)
from .progress import (DIRECT_PROGRESS_INTERVAL, PROGRESS_INTERVAL,
                       ProgressMixin)
from .quick import render
from .resumable import ResumableMixin
from .toolstate import ToolState

__all__ = ["DIRECT_PROGRESS_INTERVAL", "PROGRESS_INTERVAL", "AcorTool",
           "ToolState"]

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    import argparse
    from types import TracebackType
    from typing import Any, NoReturn, Self, TextIO

    from .events import Event
    from .sessions import SessionStore

_RUNNING = ToolState.RUNNING
_CREATED = ToolState.CREATED
_AUDIENCES = ("agent", "human")
_SENTINEL = object()


def _quiet(interrupt: BaseException) -> None:
    """A Ctrl-C the run has reported as Cancelled ends the process as
    Ctrl-C does (killed by SIGINT, so a shell sees it), without its
    traceback: the person asked for the stop, and the transcript says it.
    Any other uncaught exception is printed as before."""
    previous = sys.excepthook

    def hook(kind: type[BaseException], value: BaseException,
             tb: TracebackType | None) -> None:
        if value is not interrupt:
            previous(kind, value, tb)
    sys.excepthook = hook


def _manifest_folder() -> str:
    script = sys.argv[0] if sys.argv and sys.argv[0] else ""
    return os.path.dirname(os.path.abspath(script)) if script else os.getcwd()


def _read_manifest() -> tuple[dict[str, Any], str]:
    """manifest.json beside the running script (a dict, {} when there is no
    usable one) and the script's file stem."""
    script = sys.argv[0] if sys.argv and sys.argv[0] else ""
    manifest: object = {}
    path = os.path.join(_manifest_folder(), "manifest.json")
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError:
        raw = None
    if raw is not None:
        import json  # 2 ms: only tools named by their manifest pay for it
        try:
            manifest = json.loads(raw)
        except ValueError:
            manifest = {}
    if not isinstance(manifest, dict):
        manifest = {}
    stem = os.path.splitext(os.path.basename(script))[0] if script else ""
    return manifest, (stem if stem and not stem.startswith("-") else "tool")


class AcorTool(ProgressMixin, ResumableMixin):
    """One run of a tool, speaking ACOR on ``stream`` (default: whatever
    ``sys.stdout`` is at the time of each write).

    ``name`` and ``version`` default to the ``manifest.json`` beside the
    running script, then to the script's file stem and ``"1.0.0"``. Under the
    launcher, sections are framed with the run's token (see
    :mod:`acor.framing`); run directly, the tool writes plain ACOR Markdown.

    ``progress_interval``: at most one Progress section per this many
    seconds; the latest progress is never lost (see :mod:`acor.progress`).
    None means 0.02 s under the launcher and 0.1 s run directly; 0 writes
    every call.
    """

    def __init__(self, name: str | None = None,
                 version: str | None = None, *,
                 stream: TextIO | None = None,
                 frame_token: str | None | object = _SENTINEL,
                 progress_interval: float | None = None) -> None:
        self._manifest: dict[str, Any] | None = None
        if name is None or version is None:
            manifest, stem = _read_manifest()
            self._manifest = manifest
            name = name or manifest.get("name") or stem
            version = version or manifest.get("version") or "1.0.0"
        self.name = str(name)
        self.version = str(version)
        self._stream = stream
        self._token: str | None = (
            framing.inherited_token() if frame_token is _SENTINEL
            else frame_token)  # type: ignore[assignment]  # str or None
        self._lock = _thread.RLock()
        self._state = _CREATED
        self._directives: list[str] = []
        self._errored = False
        self._last_error_code: str | None = None
        self._session: str | None = None
        self._store: SessionStore | None = None
        self._init_progress(progress_interval)
        forks.track(self)
        if "ACOR_HUMAN_FD" in os.environ:
            # What a person gave, taken now: a program the tool starts
            # before parse_args() must not inherit the pipe.
            from . import human  # only a run a person answered for pays
            human.take()

    @property
    def state(self) -> ToolState:
        return self._state

    def _manifest_data(self) -> dict[str, Any]:
        if self._manifest is None:
            self._manifest, _ = _read_manifest()
        return self._manifest

    def __repr__(self) -> str:
        return f"<AcorTool {self.name!r} {self.version} {self._state.value}>"

    # --- writing --------------------------------------------------------

    def _write(self, section: str) -> None:
        """Write one rendered section (the lock is held): held progress
        goes first, so it is never lost behind another section."""
        if self._latest is not self._written:
            self._write_held()
        self._put(section)

    def _put(self, section: str) -> None:
        if self._token:
            section = framing.frame(section, self._token)
        self._write_raw(section)

    def _write_raw(self, text: str) -> None:
        stream = self._stream if self._stream is not None else sys.stdout
        stream.write(text)
        stream.flush()

    def _require_running(self, what: str) -> None:
        if self._state is _RUNNING:
            return
        if self._state is _CREATED:
            raise checks.state_error(
                f"Cannot emit {what}: tool '{self.name}' has not started. "
                f"Call start() or use `with AcorTool(...) as tool:`.")
        raise checks.state_error(
            f"Cannot emit {what}: tool '{self.name}' has already stopped "
            f"(state: {self._state.value}). Emit everything before stop(); "
            f"a new run needs a new AcorTool.")

    def _emit(self, what: str, event: Event) -> Self:
        text = render(event)  # render outside the lock: pure
        with self._lock:
            self._require_running(what)
            self._write(text)
        return self

    def _flush_directives(self) -> None:
        if self._directives:
            items, self._directives = self._directives, []
            self._write(render(AIDirective(items)))

    def _end(self, state: ToolState) -> None:
        """Leave RUNNING (the lock is held): progress calls now fail."""
        self._state = state
        self._end_progress()

    def _interval(self) -> float:
        if self._progress_interval is not None:
            return self._progress_interval
        # Read at each use: tests and benchmarks may change them.
        return PROGRESS_INTERVAL if self._token else DIRECT_PROGRESS_INTERVAL

    def _reset_after_fork(self) -> None:
        self._lock = _thread.RLock()
        self._reset_progress_after_fork()

    # --- lifecycle ------------------------------------------------------

    def start(self) -> Self:
        """Emit ``## Status: Ready``. A second call does nothing."""
        with self._lock:
            if self._state is _CREATED:
                self._state = _RUNNING
                self._write(render(Status("ready")))
        return self

    def stop(self, state: "ToolState | str" = ToolState.COMPLETE
             ) -> Self:
        """Flush pending directives and emit the final status. Idempotent:
        only the first call after start() writes anything."""
        if isinstance(state, str):
            state = ToolState(state.lower())
        if state.value not in FINAL_STATES:
            raise ValueError(f"stop() takes COMPLETE, FAILED or CANCELLED, "
                             f"not {state}")
        with self._lock:
            if self._state is _CREATED:
                raise checks.state_error(
                    f"Cannot stop tool '{self.name}': it has not started. "
                    f"Call start() first or use `with AcorTool(...)`.")
            if self._state is not _RUNNING:
                return self
            self._flush_directives()
            self._write(render(Status(state.value)))
            self._end(state)
        return self

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, exc_type: "type[BaseException] | None",
                 exc: "BaseException | None",
                 tb: "TracebackType | None") -> None:
        """End the run by how the block ended. A run that ends Failed ends
        the process too, with the exit code the launcher would give: 2 when
        the last error was E_USAGE, 1 otherwise (code after the block does
        not run; ``finally`` clauses do). The tool's own exit says why:
        ``sys.exit("message")``, its argparse or click refusing its
        arguments, a bare code, each an Error (:func:`acor.crash.
        exit_report`); a Ctrl-C ends Cancelled, without its traceback."""
        if self._state is _RUNNING:
            try:
                if exc is None:  # the with statement: iff exc_type is None
                    self.stop(ToolState.FAILED if self._errored
                              else ToolState.COMPLETE)
                elif isinstance(exc, KeyboardInterrupt):
                    self.stop(ToolState.CANCELLED)
                    _quiet(exc)
                elif isinstance(exc, SystemExit):
                    if exc.code in (None, 0):
                        self.stop(ToolState.COMPLETE)
                    else:
                        self._report_exit(exc, tb)
                        self.stop(ToolState.FAILED)
                else:
                    self._report_exception(exc, tb)
                    self.stop(ToolState.FAILED)
            except (OSError, ValueError):
                return None  # stdout is gone: the exception in flight
        if exc_type is None and self._state is ToolState.FAILED:
            raise SystemExit(self._failed_exit_code())
        return None  # an exception in flight goes on

    def _failed_exit_code(self) -> int:
        return exitcodes.USAGE if self._last_error_code == "E_USAGE" \
            else exitcodes.FAILED

    def _report_exit(self, exc: SystemExit,
                     tb: TracebackType | None) -> None:
        """Why the tool ended itself (sys.exit, its own argparse or
        click), as an Error (see :func:`acor.crash.exit_report`)."""
        try:
            from . import crash  # only a failed exit pays for it
            report = crash.exit_report(exc, tb, _manifest_folder(),
                                       self.command, self._errored)
        except Exception:  # the report must never hide the exit itself
            report = {"code": "E_EXIT_1", "message": str(exc.code)}
        if report is not None:
            self.error(**report)

    def _report_exception(self, exc: BaseException,
                          tb: TracebackType | None) -> None:
        try:
            from . import crash  # only a crash pays for it
            report = crash.report(exc, tb, _manifest_folder())
        except Exception:  # the report must never hide the crash itself
            report = {"code": "E_UNHANDLED_EXCEPTION",
                      "message": f"{type(exc).__name__}: {exc}"}
        self.error(**report)

    # --- sections -------------------------------------------------------

    def status(self, state: str, message: str = "") -> Self:
        """``## Status: Working`` and an optional message. Final states are
        refused: call stop() to end the run."""
        state = checks.text(state, "status state").strip()
        if state.lower() in FINAL_STATES:
            raise ValueError(f"status({state!r}) would end the transcript; "
                             f"call stop(ToolState.{state.upper()}) instead")
        from . import grammar  # re, 8 ms: only a custom status pays for it
        if not grammar.is_state_word(state):
            raise ValueError(f"status state must be a short label (letters, "
                             f"digits, spaces, '_', '-'; at most 64) starting "
                             f"with a letter, not {state!r}")
        return self._emit("status", Status(state.lower(),
                                           checks.text(message, "message")))

    # progress() and progress_bar() are in acor.progress (ProgressMixin).

    def output(self, data: "Any", format: str = "auto") -> Self:
        """A string is ``## Output``; anything else, or an explicit format,
        is ``## Output Data`` in a fenced block (json by default)."""
        if format == "auto" and isinstance(data, str):
            return self._emit("output", Output(data))
        format, text = checks.output_text(data, format)
        return self._emit("output", OutputData(format, text))

    def output_files(self, files: "Any") -> Self:
        """``## Output Files``: a dict ``{path: description}`` or a list of
        paths, ``(path, description)`` pairs or dicts. Existing files show
        their size and the first 12 hex digits of their sha256."""
        return self._emit("output files",
                          OutputFiles(checks.file_entries(files)))

    def error(self, code: str, message: str, recovery: "str | None" = None,
              details: "str | None" = None,
              next: "list[str] | None" = None) -> Self:
        """``## Error: {message}`` with the code, details, recovery and
        ``next`` (the exact argv to run next, e.g. ``tool.command("--help")``).
        Does not end the run; a context manager that exits normally after an
        error ends it as Failed (see :meth:`fail` to end it at once)."""
        event = checks.error_event(code, message, recovery, details, next)
        self._emit("error", event)
        self._errored = True
        self._last_error_code = event.code
        return self

    def fail(self, code: str, message: str, recovery: "str | None" = None,
             details: "str | None" = None,
             next: "list[str] | None" = None) -> "NoReturn":
        """Report the error and end the run Failed, in one call, then end the
        process: exit code 2 for ``E_USAGE``, 1 otherwise (it raises
        SystemExit; a context manager adds nothing after it). Called before
        start(), it starts the run first."""
        event = checks.error_event(code, message, recovery, details, next)
        with self._lock:
            self.start()
            self._require_running("an error")
            self._write(render(event))
            self._errored, self._last_error_code = True, event.code
            self.stop(ToolState.FAILED)
        raise SystemExit(self._failed_exit_code())

    def input_needed(self, message: str,
                     fields: "dict[str, Any] | None" = None,
                     audience: str = "agent",
                     next: "list[str] | None" = None) -> "NoReturn":
        """Emit ``## Input Needed`` and end the process with exit code 3.
        Nothing is written after it: the transcript ends here.

        ``fields`` says what is needed: ``{name: property}``, each a flat
        JSON Schema property (type, description, enum, default, minimum,
        maximum) named like the tool's argument that takes the answer.
        ``audience="human"`` marks a question only a person may answer (an
        approval, a credential). ``next`` is the command to run with the
        answer, e.g. ``tool.command(path, "--key", "<key>")``."""
        if audience not in _AUDIENCES:
            raise ValueError(f"audience must be 'agent' or 'human', not "
                             f"{audience!r}")
        event = InputNeeded(checks.text(message, "message"),
                            checks.input_fields(fields), audience,
                            checks.argv(next))
        with self._lock:
            self._require_running("input needed")
            self._flush_directives()
            self._write(render(event))
            self._end(ToolState.INPUT_NEEDED)
        raise SystemExit(exitcodes.INPUT_NEEDED)

    def ai_directive(self, message: str) -> Self:
        """Add an instruction for the agent. All of them go out as one
        ``## AI Directive`` section when the tool stops."""
        message = checks.text(message, "directive")
        with self._lock:
            self._require_running("ai directive")
            self._directives.append(message)
        return self

    def suggestions(self, items: "list[str]", title: "str | None" = None
                    ) -> Self:
        """``## Suggestions[: title]``: optional next steps, as actions."""
        if isinstance(items, str):
            raise TypeError("suggestions() takes a list of strings, not one "
                            "string: wrap it as [text]")
        items = [checks.text(item, "suggestion") for item in items]
        title = None if title is None else checks.text(title, "title")
        return self._emit("suggestions", Suggestions(items, title))

    # --- arguments ------------------------------------------------------

    def command(self, *args: object) -> "list[str]":
        """The argv that runs this tool again with ``args`` (``["acor",
        name, *args]``): what ``next`` holds."""
        return ["acor", self.name, *(str(a) for a in args)]

    def parse_args(self, argv: "list[str] | None" = None, *,
                   schema: "dict[str, Any] | None" = None
                   ) -> "argparse.Namespace":
        """Parse ``argv`` (default ``sys.argv[1:]``) with the ``"args"``
        schema of the manifest.json beside the script (or ``schema``; see
        :mod:`acor.args`): an ``argparse.Namespace`` with one attribute per
        property, absent ones at their defaults.

        ``--help`` writes the help as Output and ends the run Complete (exit
        0). A usage error is an Error ``E_USAGE`` with the usage in its
        details and ``next`` the tool's ``--help``, then Failed (exit 2).
        Works before start() and inside the context manager.

        A human-only argument (``"x-acor": {"human": true}``) is what a
        person answered, passed by the launcher on its own channel, never
        on ``argv`` (:mod:`acor.human`); None when no person gave it: ask
        with ``input_needed(..., fields={name: ...}, audience="human")``."""
        from . import args  # argparse: only tools that parse pay for it
        if schema is None:
            schema = self._manifest_data().get("args")
            if schema is None:
                raise ValueError(
                    f"parse_args() needs an \"args\" schema in "
                    f"{os.path.join(_manifest_folder(), 'manifest.json')} "
                    f"(see acor.args), or parse_args(schema=...)")
        argv = sys.argv[1:] if argv is None else list(argv)
        description = self._manifest_data().get("description")
        from . import argparsing, human  # with args, as above
        try:
            return argparsing.parse(schema, argv, " ".join(self.command()),
                                    description if isinstance(description,
                                                              str) else None,
                                    human=human.take())
        except args.HelpRequested as asked:
            self.start().output(asked.text.rstrip("\n")).stop()
            raise SystemExit(exitcodes.OK) from None
        except args.UsageError as wrong:
            import shlex  # re, 8 ms: only a refused command line pays
            help_argv = self.command("--help")
            if wrong.fixed is not None:  # the user's command, one word fixed
                self.fail("E_USAGE", wrong.message, details=wrong.usage,
                          recovery="The command below is yours, corrected; "
                          f"`{shlex.join(help_argv)}` shows the arguments.",
                          next=self.command(*wrong.fixed))
            self.fail("E_USAGE", wrong.message, details=wrong.usage,
                      recovery=f"Run `{shlex.join(help_argv)}` for the "
                      "arguments, then run the corrected command.",
                      next=help_argv)

    def heartbeat(self) -> Self:
        """A sign of life during long silent work, for the launcher's idle
        timeout (run directly: an HTML comment readers do not show)."""
        from .grammar import HEARTBEAT_LINE  # re: run directly only
        line = (framing.heartbeat_frame(self._token) if self._token
                else HEARTBEAT_LINE + "\n")
        with self._lock:
            self._require_running("heartbeat")
            self._write_raw(line)
        return self

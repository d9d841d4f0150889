"""AcorTool: the object a tool author talks to the agent through.

    from acor import AcorTool

    with AcorTool() as tool:
        tool.progress(25, "Loading data")
        tool.output({"rows": 1000})
        tool.suggestions(["Plot the distribution of column price"])

Each method renders one section with :mod:`acor.grammar` and writes it
whole, under one lock, with one write and a flush. A state machine guards the
order: CREATED -> RUNNING -> COMPLETE | FAILED | CANCELLED (or INPUT_NEEDED).
"""

import enum
import json
import math
import os
import sys
import threading
import time

from . import exitcodes, framing, grammar
from .errors import AcorStateError
from .events import (AIDirective, Checkpoint, Error, InputNeeded, Output,
                     OutputData, OutputFiles, Progress, Session, Status,
                     Suggestions)


class ToolState(enum.Enum):
    CREATED = "created"
    RUNNING = "running"
    COMPLETE = "complete"
    FAILED = "failed"
    CANCELLED = "cancelled"
    INPUT_NEEDED = "input_needed"


# Under the launcher, progress is written at most this often: the launcher
# coalesces what an agent needs far more coarsely, and one write per call
# would cost a system call and a wake-up of the launcher for each. The
# latest progress is never lost: it goes out before any other section,
# at stop, or from a timer within this interval.
PROGRESS_INTERVAL = 0.02

_FINAL = (ToolState.COMPLETE, ToolState.FAILED, ToolState.CANCELLED)
_FORMATS = ("auto", "json", "yaml", "text", "markdown")
_SENTINEL = object()


def _read_manifest():
    """name and version from manifest.json beside the running script."""
    script = sys.argv[0] if sys.argv and sys.argv[0] else ""
    folder = os.path.dirname(os.path.abspath(script)) if script else os.getcwd()
    try:
        with open(os.path.join(folder, "manifest.json"), encoding="utf-8") as f:
            manifest = json.load(f)
    except (OSError, ValueError):
        manifest = {}
    if not isinstance(manifest, dict):
        manifest = {}
    stem = os.path.splitext(os.path.basename(script))[0] if script else ""
    return manifest, (stem if stem and not stem.startswith("-") else "tool")


def _text(value, what):
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a string, not {type(value).__name__}")
    return value


def _percent(value):
    """int 0-100 or float 0.0-1.0 (a float above 1.0 is a percent),
    clamped to 0-100 and rounded to two decimals."""
    if type(value) is int and 0 <= value <= 100:
        return value  # the common case, checked first: progress is hot
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"progress must be an int (0-100) or a float "
                        f"(0.0-1.0), not {type(value).__name__}")
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"progress must be a finite number, not {value}")
        if value <= 1.0:
            value *= 100
    return _clamp(value)


def _clamp(percent):
    percent = round(min(100, max(0, percent)), 2)
    return int(percent) if percent == int(percent) else percent


def _file_entry(path, description):
    path = os.fspath(path)
    if not isinstance(path, str) or not path or "\n" in path or "\r" in path:
        raise ValueError(f"output file path must be a non-empty single-line "
                         f"string, not {path!r}")
    entry = {"path": path, "description": _text(description or "",
                                                "file description"),
             "kind": "missing", "bytes": None, "sha256": None}
    if os.path.isdir(path):
        entry["kind"] = "directory"
    elif os.path.isfile(path):
        import hashlib  # only tools that announce files pay for it
        digest = hashlib.sha256()
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
        entry.update(kind="file", bytes=os.path.getsize(path),
                     sha256=digest.hexdigest()[:12])
    return entry


def _file_entries(files):
    if isinstance(files, dict):
        return [_file_entry(p, d) for p, d in files.items()]
    if isinstance(files, (str, bytes)) or hasattr(files, "__fspath__"):
        files = [files]
    entries = []
    for item in files:
        if isinstance(item, dict):
            entries.append(_file_entry(item["path"], item.get("description")))
        elif isinstance(item, (tuple, list)):
            entries.append(_file_entry(*item))
        else:
            entries.append(_file_entry(item, ""))
    return entries


class AcorTool:
    """One run of a tool, speaking ACOR on ``stream`` (default: whatever
    ``sys.stdout`` is at the time of each write).

    ``name`` and ``version`` default to the ``manifest.json`` beside the
    running script, then to the script's file stem and ``"1.0.0"``. Under the
    launcher, sections are framed with the run's token (see
    :mod:`acor.framing`); run directly, the tool writes plain ACOR Markdown.
    """

    def __init__(self, name=None, version=None, *, stream=None,
                 frame_token=_SENTINEL):
        if name is None or version is None:
            manifest, stem = _read_manifest()
            name = name or manifest.get("name") or stem
            version = version or manifest.get("version") or "1.0.0"
        self.name = str(name)
        self.version = str(version)
        self._stream = stream
        self._token = (framing.inherited_token() if frame_token is _SENTINEL
                       else frame_token)
        self._lock = threading.RLock()
        self._state = ToolState.CREATED
        self._directives = []
        self._errored = False
        self._session = None
        self._store = None
        self._held = None            # the latest progress not yet written
        self._progress_at = float("-inf")
        self._timer = None

    @property
    def state(self):
        return self._state

    def __repr__(self):
        return f"<AcorTool {self.name!r} {self.version} {self._state.value}>"

    # --- writing --------------------------------------------------------

    def _write(self, section):
        if self._held is not None:
            self._write_held()  # the last progress before any other section
        if self._token:
            section = framing.frame(section, self._token)
        self._write_raw(section)

    def _write_held(self):
        held, self._held = self._held, None
        self._progress_at = time.monotonic()
        self._write(grammar.render(held))

    def _progress(self, event):
        """Write a progress event; under the launcher, throttled (see
        PROGRESS_INTERVAL). A held event is rendered only if it is written."""
        if not self._token:
            return self._emit("progress", event)
        with self._lock:
            self._require_running("progress")
            now = time.monotonic()
            if now - self._progress_at >= PROGRESS_INTERVAL:
                self._held = event
                self._write_held()
            else:
                self._held = event
                if self._timer is None:
                    self._timer = threading.Timer(
                        self._progress_at + PROGRESS_INTERVAL - now,
                        self._release_held)
                    self._timer.daemon = True
                    self._timer.start()
        return self

    def _release_held(self):
        with self._lock:
            self._timer = None
            if self._held is not None and self._state is ToolState.RUNNING:
                try:
                    self._write_held()
                except (OSError, ValueError):
                    pass  # stdout is gone; the main thread will hear of it

    def _write_raw(self, text):
        stream = self._stream if self._stream is not None else sys.stdout
        stream.write(text)
        stream.flush()

    def _require_running(self, what):
        if self._state is ToolState.RUNNING:
            return
        if self._state is ToolState.CREATED:
            raise AcorStateError(
                f"Cannot emit {what}: tool '{self.name}' has not started. "
                f"Call start() or use `with AcorTool(...) as tool:`.")
        raise AcorStateError(
            f"Cannot emit {what}: tool '{self.name}' has already stopped "
            f"(state: {self._state.value}). Emit everything before stop(); "
            f"a new run needs a new AcorTool.")

    def _emit(self, what, event):
        text = grammar.render(event)  # render outside the lock: pure
        with self._lock:
            self._require_running(what)
            self._write(text)
        return self

    def _flush_directives(self):
        if self._directives:
            items, self._directives = self._directives, []
            self._write(grammar.render(AIDirective(items)))

    # --- lifecycle ------------------------------------------------------

    def start(self):
        """Emit ``## Status: Ready``. A second call does nothing."""
        with self._lock:
            if self._state is ToolState.CREATED:
                self._state = ToolState.RUNNING
                self._write(grammar.render(Status("ready")))
        return self

    def stop(self, state=ToolState.COMPLETE):
        """Flush pending directives and emit the final status. Idempotent:
        only the first call after start() writes anything."""
        if isinstance(state, str):
            state = ToolState(state.lower())
        if state not in _FINAL:
            raise ValueError(f"stop() takes COMPLETE, FAILED or CANCELLED, "
                             f"not {state}")
        with self._lock:
            if self._state is ToolState.CREATED:
                raise AcorStateError(
                    f"Cannot stop tool '{self.name}': it has not started. "
                    f"Call start() first or use `with AcorTool(...)`.")
            if self._state is not ToolState.RUNNING:
                return self
            self._flush_directives()
            self._state = state
            self._write(grammar.render(Status(state.value)))
        return self

    def __enter__(self):
        return self.start()

    def __exit__(self, exc_type, exc, tb):
        if self._state is not ToolState.RUNNING:
            return False  # stopped already, or waiting for input
        try:
            if exc_type is None:
                self.stop(ToolState.FAILED if self._errored
                          else ToolState.COMPLETE)
            elif issubclass(exc_type, KeyboardInterrupt):
                self.stop(ToolState.CANCELLED)
            elif issubclass(exc_type, SystemExit):
                ok = exc.code in (None, 0)
                self.stop(ToolState.COMPLETE if ok else ToolState.FAILED)
            else:
                self._report_exception(exc, tb)
                self.stop(ToolState.FAILED)
        except (OSError, ValueError):
            pass  # stdout is gone: the exception in flight matters more
        return False

    def _report_exception(self, exc, tb):
        where = None
        while tb is not None:
            frame, tb = tb.tb_frame, tb.tb_next
            where = (f"{frame.f_code.co_filename}:{frame.f_lineno} "
                     f"in {frame.f_code.co_name}")
        self.error("E_UNHANDLED_EXCEPTION", f"{type(exc).__name__}: {exc}",
                   recovery=("The tool crashed. Check the input it was given; "
                             "if the input is right, report this to the tool's "
                             "author with the details above."),
                   details=f"raised at {where}" if where else None)

    # --- sections -------------------------------------------------------

    def status(self, state, message=""):
        """``## Status: Working`` and an optional message. Final states are
        refused: call stop() to end the run."""
        state = _text(state, "status state").strip()
        if state.lower() in ("complete", "failed", "cancelled"):
            raise ValueError(f"status({state!r}) would end the transcript; "
                             f"call stop(ToolState.{state.upper()}) instead")
        if not grammar.is_state_word(state):
            raise ValueError(f"status state must be a short label (letters, "
                             f"digits, spaces, '_', '-'; at most 64) starting "
                             f"with a letter, not {state!r}")
        return self._emit("status", Status(state.lower(),
                                           _text(message, "message")))

    def progress(self, value, message=""):
        """``## Progress: 50%``: an int 0-100 or a float 0.0-1.0."""
        return self._progress(Progress(_percent(value),
                                       _text(message, "message")))

    def progress_bar(self, current, total, label=""):
        """Progress from a count: ``label (current/total)`` at
        ``current/total`` percent, clamped to 100. A total of 0 reads as
        done (there is nothing left to do)."""
        for value, what in ((current, "current"), (total, "total")):
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"progress_bar {what} must be an int, not "
                                f"{type(value).__name__}")
            if value < 0:
                raise ValueError(f"progress_bar {what} must not be negative")
        done = min(current, total)  # past total is done; no float overflow
        percent = 100 if total == 0 else _clamp(done * 100 / total)
        message = f"{_text(label, 'label')} ({current}/{total})".lstrip()
        return self._progress(Progress(percent, message))

    def output(self, data, format="auto"):
        """A string is ``## Output``; anything else, or an explicit format,
        is ``## Output Data`` in a fenced block (json by default)."""
        if format not in _FORMATS:
            raise ValueError(f"format must be one of {', '.join(_FORMATS)}, "
                             f"not {format!r}")
        if format == "auto":
            if isinstance(data, str):
                return self._emit("output", Output(data))
            format = "json"
        if format == "json":
            text = json.dumps(data, indent=2, ensure_ascii=False, default=str)
        elif format == "yaml":
            try:
                import yaml  # imported only when yaml output is asked for
            except ImportError:
                raise ImportError("output(format='yaml') needs PyYAML: "
                                  "pip install pyyaml") from None
            text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
        else:
            text = data if isinstance(data, str) else str(data)
        return self._emit("output", OutputData(format, text))

    def output_files(self, files):
        """``## Output Files``: a dict ``{path: description}`` or a list of
        paths, ``(path, description)`` pairs or dicts. Existing files show
        their size and the first 12 hex digits of their sha256."""
        return self._emit("output files", OutputFiles(_file_entries(files)))

    def error(self, code, message, recovery=None, details=None):
        """``## Error: {message}`` with the code, details and recovery.
        Does not end the run; a context manager that exits normally after an
        error ends it as Failed."""
        code = _text(code, "error code")
        if not grammar.is_error_code(code):
            raise ValueError(f"error code must be letters, digits, '_', '.', "
                             f"':' or '-', like E_FILE_NOT_FOUND; not {code!r}")
        event = Error(_text(str(message) if isinstance(message, Exception)
                            else message, "error message"), code,
                      None if details is None else _text(details, "details"),
                      None if recovery is None else _text(recovery, "recovery"))
        self._emit("error", event)
        self._errored = True
        return self

    def input_needed(self, message):
        """Emit ``## Input Needed`` and end the process with exit code 3.
        Nothing is written after it: the transcript ends here."""
        event = InputNeeded(_text(message, "message"))
        with self._lock:
            self._require_running("input needed")
            self._flush_directives()
            self._write(grammar.render(event))
            self._state = ToolState.INPUT_NEEDED
        raise SystemExit(exitcodes.INPUT_NEEDED)

    def ai_directive(self, message):
        """Add an instruction for the agent. All of them go out as one
        ``## AI Directive`` section when the tool stops."""
        message = _text(message, "directive")
        with self._lock:
            self._require_running("ai directive")
            self._directives.append(message)
        return self

    def suggestions(self, items, title=None):
        """``## Suggestions[: title]``: optional next steps, as actions."""
        if isinstance(items, str):
            raise TypeError("suggestions() takes a list of strings, not one "
                            "string: wrap it as [text]")
        items = [_text(item, "suggestion") for item in items]
        title = None if title is None else _text(title, "title")
        return self._emit("suggestions", Suggestions(items, title))

    # --- sessions -------------------------------------------------------

    def session(self, session_id, keep=None):
        """Bind this run to a resumable session and emit ``## Session: id``.

        The id travels as an argument (the CLI stays stateless); state lives
        on disk under ``ACOR_STATE_DIR`` (default ``.acor/state``)::

            tool.session(args.session)
            last = tool.resume()            # (checkpoint_id, state) or None
            start = last[1]["offset"] if last else 0

        ``keep`` bounds how many checkpoints the session file holds (default
        1000); a tool whose state is large and cumulative needs only the
        newest one or two, and every save rewrites the whole file.
        """
        from . import sessions  # only tools that use sessions pay for it
        # The store checks the tool name; the session id is checked here,
        # before the Session section says it exists.
        sessions.validate_session_id(session_id)
        store = sessions.SessionStore(
            sessions.state_dir_from_env(), self.name,
            keep=sessions.KEEP if keep is None else keep)
        self._emit("session", Session(session_id))
        self._session, self._store = session_id, store
        return self

    def checkpoint(self, checkpoint_id, state):
        """Save JSON-serialisable ``state`` for the session (atomically, and
        safely against other processes), then emit
        ``## Session Checkpoint: id``."""
        self._require_session("checkpoint")
        with self._lock:
            self._require_running("checkpoint")
        self._store.save(self._session, checkpoint_id, state)
        return self._emit("checkpoint", Checkpoint(checkpoint_id))

    def resume(self):
        """The session's latest checkpoint as ``(checkpoint_id, state)``, or
        None when there is none yet (a first run)."""
        self._require_session("resume")
        saved = self._store.latest(self._session)
        return None if saved is None else (saved.id, saved.state)

    def _require_session(self, what):
        if self._session is None:
            raise AcorStateError(
                f"Cannot {what}: tool '{self.name}' has no session. Call "
                f"tool.session(session_id) first.")

    def heartbeat(self):
        """Tell the launcher the tool is alive during long silent work.
        Consumed by the launcher; run directly, it writes an HTML comment
        that Markdown readers do not show."""
        line = (framing.heartbeat_frame(self._token) if self._token
                else grammar.HEARTBEAT_LINE + "\n")
        with self._lock:
            self._require_running("heartbeat")
            self._write_raw(line)
        return self

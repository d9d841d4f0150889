"""What a run returns: :class:`RunResult`, built by :class:`Collector`.

The collector stands between the relay loop and the caller's sink: it
passes every event on, and keeps what the result needs (the last error
code, the session, the next command, the last Output Data) without holding
the whole stream unless asked to (a 100 MB flood must not be kept).
"""

from __future__ import annotations

from acor.events import (Error, Event, InputNeeded, OutputData, Progress,
                         Result, Session, Status)

TYPE_CHECKING = False  # typing costs every run ~3 ms: only mypy
if TYPE_CHECKING:
    from typing import Any, Callable, Optional, Union

    from acor.cli.discovery.spec import ToolSpec
    from acor.cli.run.policy import RunPolicy
    from acor.cli.run.relay import Sink

STDERR_KEPT = 64 * 1024  # bytes of the tool's stderr a result keeps (the tail)


class RunResult:
    """The outcome of one run, for programs (and the last JSON line).

    A plain class with slots, not a dataclass: :mod:`dataclasses` would
    cost every ``acor TOOL`` its import (a few ms) for one record."""

    __slots__ = ("exit_code", "state", "error_code", "events", "data",
                 "errors", "stderr", "duration", "tool", "version", "argv",
                 "session", "next", "fields", "audience", "tool_exit_code",
                 "truncated", "output_bytes", "output_sha256", "output_file",
                 "message", "asked_next", "args_schema")
    exit_code: int
    state: str
    error_code: Optional[str]
    events: Optional[list[Event]]   # None unless the run kept them
    data: Any                        # the last Output Data, if any
    errors: list[Error]
    stderr: str                      # the tail of the tool's stderr
    duration: float                  # seconds
    tool: str
    version: Optional[str]
    argv: list[str]
    session: Optional[str]
    next: Optional[list[str]]
    fields: Optional[dict[str, Any]]           # what Input Needed asked for
    audience: str                    # who Input Needed asked: agent, human
    # What the tool's own process exited with (None if it never ran or was
    # killed); `acor check` compares it with the ending.
    tool_exit_code: Optional[int]
    # The output budget's account (see acor.cli.output.budget): whether the
    # agent was shown less than the whole output, and the file holding it.
    truncated: bool
    output_bytes: Optional[int]
    output_sha256: Optional[str]
    output_file: Optional[str]
    # What Input Needed said and the next command it gave (``next`` above
    # is None for a question only a person may answer), and the tool's
    # argument schema: what the rich view and the MCP server ask with.
    message: Optional[str]
    asked_next: Optional[list[str]]
    args_schema: Optional[dict[str, Any]]

    def __init__(self, *, exit_code: int, state: str, tool: str,
                 argv: list[str], duration: float = 0.0,
                 error_code: Optional[str] = None,
                 events: Optional[list[Event]] = None, data: Any = None,
                 errors: Optional[list[Error]] = None, stderr: str = "",
                 version: Optional[str] = None,
                 session: Optional[str] = None,
                 next: Optional[list[str]] = None,
                 fields: Optional[dict[str, Any]] = None,
                 audience: str = "agent",
                 tool_exit_code: Optional[int] = None) -> None:
        self.exit_code = exit_code
        self.state = state
        self.error_code = error_code
        self.events = events
        self.data = data
        self.errors = [] if errors is None else errors
        self.stderr = stderr
        self.duration = duration
        self.tool = tool
        self.version = version
        self.argv = argv
        self.session = session
        self.next = next
        self.fields = fields
        self.audience = audience
        self.tool_exit_code = tool_exit_code
        self.truncated = False
        self.output_bytes = None
        self.output_sha256 = None
        self.output_file = None
        self.message = None
        self.asked_next = None
        self.args_schema = None

    def of(self, kind: Union[str, type[Event]]) -> list[Event]:
        """The events of one type, by class or by type name."""
        name = kind if isinstance(kind, str) else kind.type
        return [e for e in self.events or () if e.type == name]

    @property
    def ok(self) -> bool:
        return self.exit_code == 0

    def record(self) -> Result:
        """The result line (docs/protocol.md, "The result line")."""
        return Result(self.exit_code, self.state, self.error_code,
                      round(self.duration * 1000), self.tool, self.version,
                      self.argv, self.session, self.next,
                      truncated=self.truncated, bytes=self.output_bytes,
                      sha256=self.output_sha256,
                      output_file=self.output_file,
                      audience=self.audience if self.state ==
                      "input_needed" else None)

    def to_dict(self) -> dict[str, Any]:
        return self.record().to_dict()

    def __repr__(self) -> str:
        return (f"<RunResult {self.tool} exit={self.exit_code} "
                f"state={self.state} error={self.error_code}>")


class Collector:
    """Passes events to ``sink`` and remembers what the result needs."""

    def __init__(self, sink: Sink, tool: str, argv: list[str],
                 keep_events: bool) -> None:
        self.sink = sink
        self.tool = tool
        self.argv = argv
        self.version: Optional[str] = None
        self.events: Optional[list[Event]] = [] if keep_events else None
        self.errors: list[Error] = []
        self.data: Any = None
        self.session: Optional[str] = None
        self.next: Optional[list[str]] = None
        self.fields: Optional[dict[str, Any]] = None
        self.audience = "agent"
        self.message: Optional[str] = None
        self.asked_next: Optional[list[str]] = None
        # Set by the runner: the run's policy, and whether a person reads
        # the run (the rich view at a terminal, the MCP server's page).
        self.policy: Optional[RunPolicy] = None
        # Set when the run is sandboxed: what to say on an error that
        # looks like a denial (the box, and the manifest field to change).
        self.sandbox_note: Optional[Callable[[], str]] = None
        self.read_by_person = False  # asked or not: nothing for an agent
        self.progress: Optional[tuple[float, float]] = None  # (%, when)
        self._stderr = bytearray()

    # --- the sink protocol ----------------------------------------------

    def emit(self, event: Event) -> None:
        if isinstance(event, Error) and self.sandbox_note is not None and \
                _denied(event):
            note = self.sandbox_note()
            event = Error(event.title, event.code, event.details,
                          f"{event.recovery} {note}" if event.recovery
                          else note, event.next)
        if self.events is not None:
            self.events.append(event)
        if isinstance(event, Error):
            self.errors.append(event)
            self.next = event.next
        elif isinstance(event, InputNeeded):
            event = self._input_needed(event)
        elif isinstance(event, OutputData):
            self.data = event.data
        elif isinstance(event, Session):
            self.session = event.id
            self._record(event.id, None, None)
        elif isinstance(event, Progress):
            import time  # already loaded: the relay's
            self.progress = (event.percent, time.monotonic())
        elif isinstance(event, Status):
            event = self._resumable(event)
        self.sink.emit(event)

    def _resumable(self, status: Status) -> Status:
        """A session run that ends Failed or Cancelled with no ``next``
        of its own says how it resumes, in its final status, so every
        format shows what the result line's ``next`` holds."""
        if status.state not in ("failed", "cancelled") or \
                self.next is not None or self.audience == "human" or \
                self.policy is None:
            return status
        resume = _next_command(self.policy, status.state, self.session,
                               None)
        if resume is None:
            return status
        import shlex
        note = (f"Session {self.session} resumes with the same command: "
                f"{shlex.join(resume)}")
        return Status(status.state, f"{status.message}\n{note}"
                      if status.message else note)

    def _record(self, session: str, state: Optional[str],
                resume: Optional[list[str]]) -> None:
        """The session's record (:mod:`cli.run.session_record`): running
        when the run binds it (``state`` None), its ending at the end. Only
        for a tool that keeps sessions where acor tells it
        (``ACOR_STATE_DIR``: see :class:`RunPolicy`)."""
        policy = self.policy
        if policy is None or policy.config is None or \
                policy.spec.kind != "acor":
            return
        # json and the session module: only runs that bind a session pay.
        from acor.cli.run import session_record
        config = policy.config
        if state is None:
            session_record.started(config.state_dir, policy.spec.name,
                                   session, policy.cwd, config.path,
                                   policy.same_command())
        else:
            session_record.ended(config.state_dir, policy.spec.name,
                                 session, state, resume)

    def _input_needed(self, event: InputNeeded) -> InputNeeded:
        """Remember the question. One only a person may answer (the tool
        says so, or it names an argument only a person may give) has no
        ``next`` an agent could run to answer it; when an agent reads the
        run, it tells the agent to hand the command to a person."""
        self.fields, self.message = event.fields, event.message
        self.next = self.asked_next = event.next
        schema = getattr(getattr(self.policy, "spec", None), "args_schema",
                         None)
        from acor.args import human_names
        if event.audience == "human" or \
                set(human_names(schema)) & set(event.fields or ()):
            self.next = None
            event = InputNeeded(event.message, event.fields, "human", None)
            if not self.read_by_person and self.policy is not None:
                import shlex
                event.message += (
                    "\n\nacor: only a person may answer this. Do not answer "
                    "it yourself, and do not look for another way to do it: "
                    "ask the user to run this in their terminal, where acor "
                    "asks them: "
                    + shlex.join(self.policy.person_command()))
        self.audience = event.audience
        return event

    def due(self) -> Optional[float]:
        due: Optional[float] = self.sink.due()
        return due

    def heartbeat(self) -> None:
        """The tool is alive: passed to a sink that listens for it."""
        beat = getattr(self.sink, "heartbeat", None)
        if beat is not None:
            beat()

    def tick(self) -> None:
        self.sink.tick()

    def stderr(self, data: bytes) -> None:
        self._stderr += data
        del self._stderr[:-STDERR_KEPT]
        relay = getattr(self.sink, "stderr", None)
        if relay is not None:
            relay(data)

    def started(self) -> None:
        """The tool was spawned: the sink may load what it needs now."""
        started = getattr(self.sink, "started", None)
        if started is not None:
            started()

    def late(self, event: Event) -> None:
        """An event after the transcript ended: not part of it."""
        relay = getattr(self.sink, "late", None)
        if relay is not None:
            relay(self.tool, event)

    # --- the end ----------------------------------------------------------

    def finish(self, exit_code: int, state: str, duration: float,
               policy: Optional[RunPolicy]) -> RunResult:
        next_argv = self.next
        if next_argv is None and policy is not None and \
                self.audience != "human":
            next_argv = _next_command(policy, state, self.session,
                                      self.fields)
        result = RunResult(
            exit_code=exit_code, state=state,
            error_code=self.errors[-1].code if self.errors and
            state != "complete" else None,
            events=self.events, data=self.data, errors=self.errors,
            stderr=self._stderr.decode("utf-8", "replace"),
            duration=duration, tool=self.tool, version=self.version,
            argv=self.argv, session=self.session, next=next_argv,
            fields=self.fields, audience=self.audience)
        result.message, result.asked_next = self.message, self.asked_next
        if self.session is not None and policy is not None:
            self._record(self.session, state, _resume_command(
                policy, state, next_argv))
        result.args_schema = getattr(getattr(policy, "spec", None),
                                     "args_schema", None) or None
        finish = getattr(self.sink, "result", None)
        if finish is not None:
            finish(result)
        return result


def _next_command(policy: RunPolicy, state: str, session: Optional[str],
                  fields: Optional[dict[str, Any]]) -> Optional[list[str]]:
    """acor's own advice when the tool gave none: a session run that did
    not complete resumes with the same command; Input Needed asks for the
    same command with the missing arguments filled in."""
    if state == "input_needed" and fields:
        return policy.same_command() + _placeholders(policy.spec, fields)
    if session and state in ("failed", "cancelled", "timeout"):
        return policy.same_command()
    return None


def _resume_command(policy: RunPolicy, state: str,
                    next_argv: Optional[list[str]]) -> Optional[list[str]]:
    """What continues a session run that ended in ``state``: nothing
    after a complete run; the command a person runs at a terminal to be
    asked after Input Needed; after acor's own timeout, its ``next`` (the
    same command with more time); else the same command, which resumes
    from the last checkpoint."""
    if state == "complete":
        return None
    if state == "input_needed":
        return policy.person_command()
    if state == "timeout" and next_argv and next_argv[:1] == ["acor"]:
        return next_argv
    return policy.same_command()


def _placeholders(spec: ToolSpec, fields: dict[str, Any]) -> list[str]:
    """``--key <KEY>`` for each field the tool's argument schema maps to a
    flag; positional fields as ``<NAME>``; a field the schema does not know
    as ``--name <NAME>``."""
    schema = getattr(spec, "args_schema", None) or {}
    properties = schema.get("properties", {}) if isinstance(schema, dict) \
        else {}
    words: list[str] = []
    for name, field in fields.items():
        mapping = (properties.get(name) or {}).get("x-acor") or {}
        if mapping.get("human"):
            continue  # never on a command line
        is_flag = isinstance(field, dict) and field.get("type") == "boolean"
        if "position" in mapping:
            words.append(f"<{name.upper()}>")
        elif is_flag:
            words.append(mapping.get("flag") or "--" + name.replace("_", "-"))
        else:
            words += [mapping.get("flag") or "--" + name.replace("_", "-"),
                      f"<{name.upper()}>"]
    return words


# What a denial by the sandbox looks like in an error: the tool's own
# exception text, or a program's message quoted in the details.
_DENIALS = ("Permission denied", "PermissionError", "Operation not permitted",
            "Network is unreachable", "Read-only file system")


def _denied(error: Error) -> bool:
    text = f"{error.title}\n{error.details or ''}"
    return any(word in text for word in _DENIALS)

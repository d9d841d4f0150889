"""Typed events: what an ACOR stream means, independent of how it is written.

The grammar (:mod:`acor.grammar`) renders events to Markdown and parses
Markdown back into events; the launcher turns them into JSON lines. Each event
has a ``type`` and a :meth:`Event.to_dict` whose keys are documented in
``docs/protocol.md``::

    >>> from acor.events import Progress
    >>> Progress(50, "Halfway").to_dict()
    {'type': 'progress', 'percent': 50, 'message': 'Halfway'}

These are plain classes with ``__slots__`` rather than dataclasses: importing
:mod:`dataclasses` costs more than the rest of the library together.

Adding an event type: a class here (its ``type`` and fields), how it is
written in :mod:`acor.grammar` (``SECTIONS``, or ``NOT_SECTIONS`` if it is
not a section), and its JSON form in ``acor/schemas/events.schema.json``.
``docs/protocol.md`` ("Adding an event type") has the details.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing costs milliseconds to import
    from typing import Any

__version__ = "0.2.0"
"""The library's version (``acor.__version__``), stamped on every final
Status as ``acor``: it lives here, in a module that imports no other of
acor's, so stamping it needs no import of the package's ``__init__``."""

FINAL_STATES = frozenset({"complete", "failed", "cancelled"})

EVENT_TYPES: dict[str, type[Event]] = {}
"""Every event class by its ``type``, in the order they are declared."""


class Event:
    """Base class: equality, repr and ``to_dict`` from ``__slots__``. A
    subclass that sets ``type`` is registered in :data:`EVENT_TYPES`."""

    __slots__: tuple[str, ...] = ()
    type = "event"

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "type" in cls.__dict__:
            EVENT_TYPES[cls.type] = cls

    def to_dict(self) -> dict[str, Any]:
        data = {"type": self.type}
        for name in self.__slots__:
            data[name] = getattr(self, name)
        return data

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and all(
            getattr(self, n) == getattr(other, n) for n in self.__slots__
        )

    def __repr__(self) -> str:
        fields = ", ".join(f"{n}={getattr(self, n)!r}" for n in self.__slots__)
        return f"{type(self).__name__}({fields})"

    __hash__ = None  # type: ignore[assignment]  # mutable: unhashable


class Status(Event):
    """``## Status: Working``: ``state`` is lower case (``working``)."""

    __slots__ = ("state", "message")
    type = "status"

    def __init__(self, state: str, message: str = "") -> None:
        self.state = state
        self.message = message

    @property
    def is_final(self) -> bool:
        return self.state in FINAL_STATES


class Progress(Event):
    """``## Progress: 50%``: ``percent`` is a number from 0 to 100."""

    __slots__ = ("percent", "message")
    type = "progress"

    def __init__(self, percent: float, message: str = "") -> None:
        self.percent = percent
        self.message = message


class Output(Event):
    """``## Output``: free text for the agent to read."""

    __slots__ = ("text",)
    type = "output"

    def __init__(self, text: str) -> None:
        self.text = text


class OutputData(Event):
    """``## Output Data``: a fenced block. ``data`` is the decoded value for
    ``json`` and the block's text for every other format."""

    __slots__ = ("format", "data")
    type = "output_data"

    def __init__(self, format: str, data: Any) -> None:
        self.format = format
        self.data = data


class OutputFiles(Event):
    """``## Output Files``: ``files`` is a list of dicts with ``path``,
    ``description``, ``kind`` (file, directory, missing), ``bytes`` and
    ``sha256`` (the first 12 hex digits; None unless kind is file)."""

    __slots__ = ("files",)
    type = "output_files"

    def __init__(self, files: list[dict[str, Any]]) -> None:
        self.files = files


class Error(Event):
    """``## Error: {title}`` with its code, details and recovery."""

    __slots__ = ("title", "code", "details", "recovery", "next")
    type = "error"

    def __init__(self, title: str, code: str, details: str | None = None,
                 recovery: str | None = None,
                 next: list[str] | None = None) -> None:
        self.title = title
        self.code = code
        self.details = details
        self.recovery = recovery
        self.next = next  # the exact argv to run next, or None


class InputNeeded(Event):
    """``## Input Needed``: the tool stopped and waits for the agent."""

    __slots__ = ("message", "fields", "audience", "next")
    type = "input_needed"

    def __init__(self, message: str,
                 fields: dict[str, dict[str, Any]] | None = None,
                 audience: str = "agent",
                 next: list[str] | None = None) -> None:
        self.message = message
        self.fields = fields      # {name: flat JSON Schema property} or None
        self.audience = audience  # "agent", or "human": only a person answers
        self.next = next          # the exact argv to run next, or None


class AIDirective(Event):
    """``## AI Directive``: instructions for the agent, one per item."""

    __slots__ = ("items",)
    type = "ai_directive"

    def __init__(self, items: list[str]) -> None:
        self.items = items


class Suggestions(Event):
    """``## Suggestions[: title]``: optional next steps."""

    __slots__ = ("title", "items")
    type = "suggestions"

    def __init__(self, items: list[str], title: str | None = None) -> None:
        self.title = title
        self.items = items


class Session(Event):
    """``## Session: {id}``: the run is bound to a resumable session."""

    __slots__ = ("id",)
    type = "session"

    def __init__(self, id: str) -> None:
        self.id = id


class Checkpoint(Event):
    """``## Session Checkpoint: {id}``: state was saved under this id."""

    __slots__ = ("id",)
    type = "checkpoint"

    def __init__(self, id: str) -> None:
        self.id = id


class Text(Event):
    """Text that is not part of any section (raw prints, program output)."""

    __slots__ = ("text",)
    type = "text"

    def __init__(self, text: str) -> None:
        self.text = text


class Heartbeat(Event):
    """A sign of life during long silent work: resets the launcher's idle
    timer and is never relayed."""

    __slots__ = ()
    type = "heartbeat"


class Unknown(Event):
    """A section heading the grammar does not know, or a known one whose
    heading is malformed (``## Progress: abc%``). Never raised: reported."""

    __slots__ = ("heading", "body", "reason")
    type = "unknown"

    def __init__(self, heading: str, body: str, reason: str) -> None:
        self.heading = heading
        self.body = body
        self.reason = reason



class Stderr(Event):
    """What the tool wrote to its stderr (JSON output only: in Markdown it
    goes to acor's own stderr, never into the transcript)."""

    __slots__ = ("text",)
    type = "stderr"

    def __init__(self, text: str) -> None:
        self.text = text


class Result(Event):
    """The last JSON line of every run: how it ended, for programs (JSON
    output only: a Markdown transcript ends with its final status, and the
    exit code says the rest). ``state`` is complete, failed, cancelled,
    input_needed or timeout; ``next`` an argv to run next, or None;
    ``acor`` the version of acor that ran it; ``truncated`` whether the
    agent was shown less than the whole output (the output budget), whose
    size, sha256 and file are ``bytes``, ``sha256`` and ``output_file``;
    ``audience`` who must answer a run that ended input_needed ("agent",
    or "human": only a person; then ``next`` is null), else null.
    The one definition of the result record: the JSON line,
    ``_meta["acor/result"]`` of an MCP call and a run's
    ``RunResult.to_dict`` are all this."""

    __slots__ = ("exit_code", "state", "error_code", "duration_ms", "tool",
                 "version", "argv", "session", "next", "acor", "truncated",
                 "bytes", "sha256", "output_file", "audience")
    type = "result"

    def __init__(self, exit_code: int, state: str,
                 error_code: str | None = None, duration_ms: int = 0,
                 tool: str = "", version: str | None = None,
                 argv: list[str] | None = None, session: str | None = None,
                 next: list[str] | None = None,
                 acor: str | None = None, truncated: bool = False,
                 bytes: int | None = None, sha256: str | None = None,
                 output_file: str | None = None,
                 audience: str | None = None) -> None:
        self.exit_code = exit_code
        self.state = state
        self.error_code = error_code
        self.duration_ms = duration_ms
        self.tool = tool
        self.version = version
        self.argv = [] if argv is None else argv
        self.session = session
        self.next = next
        self.acor = __version__ if acor is None else acor
        self.truncated = truncated
        self.bytes = bytes
        self.sha256 = sha256
        self.output_file = output_file
        self.audience = audience

"""Events consumed by type: one method per event type, checked exhaustive.

A consumer that treats events differently by their type (what the rich view
draws, what becomes MCP content) subclasses :class:`EventHandler` and
defines ``on_<type>`` for every type in :data:`acor.events.EVENT_TYPES`;
:meth:`EventHandler.handle` calls the one for an event. A subclass that
leaves one out is refused when it is defined (``TypeError`` at import), and
the base class declares one typed method per event type, which
``tests/launcher/output/test_handlers.py`` holds equal to
``EVENT_TYPES``: a new event type therefore fails every such consumer
until each says what it does with it, instead of being dropped by an
``isinstance`` chain that did not know it (how MCP once lost heartbeats).

Consumers that pass every event on alike (the JSON lines writer, the
result collector, the coalescer, the budget) need no per-type methods:
they cannot drop a type they do not know.
"""

from __future__ import annotations

from acor.events import EVENT_TYPES, Event

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing costs a run milliseconds
    from typing import Any

    from acor.events import (AIDirective, Checkpoint, Error, Heartbeat,
                             InputNeeded, Output, OutputData, OutputFiles,
                             Progress, Result, Session, Status, Stderr,
                             Suggestions, Text, Unknown)

def method_of(kind: str) -> str:
    """The method that handles events of type ``kind``."""
    return "on_" + kind


class EventHandler:
    """The base of every consumer that handles events by type."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        missing = [method_of(kind) for kind in EVENT_TYPES
                   if getattr(cls, method_of(kind), None) in
                   (None, getattr(EventHandler, method_of(kind), None))]
        if missing:
            raise TypeError(f"{cls.__qualname__} does not handle every "
                            f"event type: define {', '.join(missing)}")

    def handle(self, event: Event) -> Any:
        """What this consumer does with ``event``: its ``on_<type>``."""
        return getattr(self, method_of(event.type))(event)

    # One per event type (a subclass defines each; these only type it).

    def on_status(self, event: Status) -> Any:
        raise NotImplementedError

    def on_progress(self, event: Progress) -> Any:
        raise NotImplementedError

    def on_output(self, event: Output) -> Any:
        raise NotImplementedError

    def on_output_data(self, event: OutputData) -> Any:
        raise NotImplementedError

    def on_output_files(self, event: OutputFiles) -> Any:
        raise NotImplementedError

    def on_error(self, event: Error) -> Any:
        raise NotImplementedError

    def on_input_needed(self, event: InputNeeded) -> Any:
        raise NotImplementedError

    def on_ai_directive(self, event: AIDirective) -> Any:
        raise NotImplementedError

    def on_suggestions(self, event: Suggestions) -> Any:
        raise NotImplementedError

    def on_session(self, event: Session) -> Any:
        raise NotImplementedError

    def on_checkpoint(self, event: Checkpoint) -> Any:
        raise NotImplementedError

    def on_text(self, event: Text) -> Any:
        raise NotImplementedError

    def on_heartbeat(self, event: Heartbeat) -> Any:
        raise NotImplementedError

    def on_unknown(self, event: Unknown) -> Any:
        raise NotImplementedError

    def on_stderr(self, event: Stderr) -> Any:
        raise NotImplementedError

    def on_result(self, event: Result) -> Any:
        raise NotImplementedError

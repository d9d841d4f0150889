"""Events consumed by type (cli.handlers): one method per event type, and
every consumer that handles events by type handles every one, so that a new
event type cannot be dropped unnoticed anywhere (how MCP lost heartbeats)."""

import importlib
import io
import pkgutil

import pytest

import acor.cli
from acor.cli.handlers import EventHandler, method_of
from acor.events import EVENT_TYPES, Event

from event_strategies import STRATEGIES


def all_consumers():
    """Every EventHandler subclass the launcher defines (each module
    imported: one whose consumer misses a type fails right here)."""
    for info in pkgutil.walk_packages(acor.cli.__path__, "acor.cli."):
        try:
            importlib.import_module(info.name)
        except ImportError as exc:  # the mcp extra, not installed
            if not (exc.name or "").startswith("mcp"):
                raise
    found, todo = [], list(EventHandler.__subclasses__())
    while todo:
        cls = todo.pop()
        found.append(cls)
        todo.extend(cls.__subclasses__())
    return sorted(found, key=lambda c: c.__qualname__)


def test_the_base_names_one_typed_method_per_event_type():
    declared = {name for name in vars(EventHandler) if name.startswith("on_")}
    assert declared == {method_of(kind) for kind in EVENT_TYPES}
    for kind, cls in EVENT_TYPES.items():
        method = getattr(EventHandler, method_of(kind))
        assert method.__annotations__["event"] == cls.__name__


def test_the_rich_view_and_mcp_content_consume_by_type():
    names = {cls.__qualname__ for cls in all_consumers()}
    assert {"RichSink", "_Content"} <= names


def test_a_consumer_that_leaves_a_type_out_is_refused_when_defined():
    methods = {method_of(kind): lambda self, event: None
               for kind in EVENT_TYPES if kind != "heartbeat"}
    with pytest.raises(TypeError, match="define on_heartbeat$"):
        type("Forgetful", (EventHandler,), methods)


def test_a_new_event_type_fails_every_consumer_until_it_is_handled():
    # Imported first: a consumer's module first imported while the novel
    # type is registered would fail its own import, not this test.
    consumers = list(all_consumers())

    class Novel(Event):
        __slots__ = ()
        type = "novel_for_test"
    try:
        assert "novel_for_test" in EVENT_TYPES
        for consumer in consumers:
            with pytest.raises(TypeError, match="on_novel_for_test"):
                type("Again", (consumer,), {})
    finally:
        del EVENT_TYPES["novel_for_test"]


def one_of_each():
    from hypothesis import find
    return [find(STRATEGIES[kind], lambda event: True)
            for kind in EVENT_TYPES]


def test_the_rich_view_draws_one_of_every_event_type():
    from rich.console import Console

    from acor.cli.output.rich_view import RichSink
    out = io.StringIO()
    sink = RichSink("tool", console=Console(file=out, width=80))
    for event in one_of_each():
        sink.emit(event)
    sink.close()
    assert out.getvalue()


def test_mcp_content_has_blocks_for_every_event_type():
    pytest.importorskip("mcp", reason="needs the mcp extra")
    from acor.cli.mcp.results import content_blocks

    class Ran:
        events = one_of_each()
    blocks = content_blocks(Ran, "/")
    assert all(isinstance(block, dict) for block in blocks)

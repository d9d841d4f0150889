"""render(): :func:`acor.grammar.render`, without importing the grammar for
the sections most runs write.

The grammar needs :mod:`re` and :mod:`json`, which together cost about as
much as the interpreter's own start-up. A run that only starts, reports
progress, writes a line of output and stops does not need them: for those
sections the grammar's escaping leaves the text as it is, and the section is
a heading, the text and a blank line. Anything else (several lines, a first
character that could mean something in Markdown, control characters, every
other kind of section) goes to the grammar.
``tests/library/test_tool.py`` checks that both give the same text.
"""

from __future__ import annotations

from .events import Output, Progress, Status

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from .events import Event

# Text is taken as it is only when it is one printable line (no line breaks,
# tabs or control characters: ``str.isprintable``) starting with a letter, a
# digit or "(": nothing that can begin a block, an escape or a frame mark.
_PLAIN_FIRST = frozenset("abcdefghijklmnopqrstuvwxyz"
                         "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789(")
_STATES = {state: "Status: " + state.capitalize()
           for state in ("ready", "working", "complete", "failed",
                         "cancelled")}


def _plain(text: str) -> bool:
    return not text or (text[0] in _PLAIN_FIRST and text.isprintable())


def format_percent(percent: float) -> str:
    """``50`` for whole numbers, up to two decimals otherwise (as the
    grammar writes it)."""
    if type(percent) is int:
        return str(percent)
    if percent == int(percent):
        return str(int(percent))
    return f"{percent:.2f}".rstrip("0").rstrip(".")


def _section(heading: str, text: str) -> str:
    return f"## {heading}\n{text}\n\n" if text else f"## {heading}\n\n"


def render(event: Event) -> str:
    """The ACOR Markdown text of one event, ending in a blank line."""
    if isinstance(event, Progress):
        if _plain(event.message):
            return _section(f"Progress: {format_percent(event.percent)}%",
                            event.message)
    elif isinstance(event, Status):
        heading = _STATES.get(event.state)
        if heading is not None and _plain(event.message):
            return _section(heading, event.message)
    elif isinstance(event, Output) and _plain(event.text):
        return _section("Output", event.text)
    from . import grammar  # re, 8 ms: what this module saves most runs
    return grammar.render(event)

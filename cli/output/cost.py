"""What a format writes for an event, in bytes: the output budget's unit.

Each format's cost sits beside the format (Markdown and JSON lines in
:mod:`cli.output.formats`, an MCP result in :mod:`cli.mcp.results`); this
module holds what they share. A cost of 0 means the format shows nothing
of the event, so the budget passes it untouched (progress in MCP).
"""

from __future__ import annotations

from acor.cli.textsafe import strip_terminal

TYPE_CHECKING = False  # typing costs every run ~3 ms: only mypy
if TYPE_CHECKING:
    from acor.events import Event

# The run's result record (JSON's last line, an MCP result's _meta): the
# launcher's fields, the whole output's path and digest; the argv the
# agent sent comes on top.
RESULT_RESERVE = 768


class Cost:
    """A format's cost: ``cost(event)`` bytes for an event,
    :meth:`stderr_cost` for a piece of the tool's stderr, and
    :attr:`reserve`, what the format writes after the budget's last event
    (JSON's result line, an MCP result's ``_meta``), kept out of every
    share."""

    reserve = 0

    def __call__(self, event: Event) -> int:
        raise NotImplementedError

    def rendered(self, event: Event, markdown: bytes) -> int:
        """The cost of ``event`` whose ACOR Markdown is ``markdown``
        (rendered already, for the whole output): a format that writes
        Markdown need not render it again."""
        return self(event)

    def stderr_cost(self, data: bytes) -> int:
        return len(data)


def shown_stderr(data: bytes) -> str:
    """A piece of the tool's stderr as a format shows it (cleaned of
    control bytes), for its cost: removing a sequence cut between two
    pieces costs nothing here, so the count is never below what is shown."""
    return strip_terminal(data.decode("utf-8", "replace"))

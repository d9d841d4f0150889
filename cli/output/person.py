"""An error reported to whoever reads it: at a terminal, a person, who
gets the rich view's panel on stderr (:func:`cli.output.rich_view.show_error`);
anywhere else, a reader of ACOR Markdown or JSON lines on stdout, who gets
exactly what :func:`cli.output.formats.report` writes."""

from __future__ import annotations

import sys

from acor.cli.output.formats import report

TYPE_CHECKING = False  # typing costs every run ~3 ms: only mypy
if TYPE_CHECKING:
    from typing import BinaryIO, Optional

    from acor.errors import AcorError


def at_terminal() -> bool:
    """Whether a person reads acor's stdout: it is a terminal."""
    try:
        return sys.stdout.isatty()
    except (AttributeError, ValueError):  # closed, or replaced by a test
        return False


def report_error(error: AcorError, fmt: Optional[str],
                 out: Optional[BinaryIO] = None, tool: str = "acor") -> int:
    """Write ``error`` for its reader; returns its exit code. A person at
    a terminal (no format asked but the rich view, stdout acor's own)
    reads a panel; piped, or with ``--format markdown|json``, the failed
    run is written in that format on ``out`` as before."""
    if out is None and fmt in (None, "rich") and at_terminal():
        # rich costs ~30 ms: loaded only for a person at a terminal.
        from acor.cli.output.rich_view import show_error
        return show_error(error, tool)
    return report(error, fmt, out=out, tool=tool)

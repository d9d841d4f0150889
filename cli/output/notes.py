"""What the output budget says about what it left out.

A run that was cut says so in words the agent can act on: a line where
text was left out (:func:`gap_note`), and at the end an ``## Output
Files`` entry naming the whole output (:func:`files_entry`) and the whole
stderr (:func:`stderr_entry`), or why they could not be saved. The words
are acor's own, not the tool's: a :class:`Note`.
"""

from __future__ import annotations

from acor.events import Event, OutputFiles, Text

from acor.cli.output.spill import Spill

TYPE_CHECKING = False  # typing costs every run ~3 ms: only mypy
if TYPE_CHECKING:
    from typing import Optional

    Saved = tuple[str, int, str]  # a kept file: path, bytes, sha256

# The counts of an entry at its longest: what the budget keeps room for
# while they can still grow.
MOST = 10 ** 15


class Note(Text):
    """Text acor adds to a run (what the budget left out), not the tool's:
    written as text everywhere, and marked as acor's where a reader can
    tell (an MCP block's ``_meta``). No ``__slots__`` of its own: an
    event's fields are its class's ``__slots__``, and an empty tuple here
    would hide ``text`` (a JSON line of a note had no text)."""


def count(n: int) -> str:
    return f"{n:,}"


def gap_note(what: str, spill: Spill) -> str:
    """The line that stands where ``what`` was left out."""
    if spill.path is None:  # never a file that holds nothing
        return f"[acor: {what} left out here; the whole output could " \
            f"not be saved: {spill.error}]"
    return f"[acor: {what} left out here; the whole output is in " \
        f"{spill.path}]"


def _left_out(left_out: dict[str, int], left_bytes: int) -> str:
    left = ", ".join(f"{n} {kind.replace('_', ' ')}"
                     for kind, n in left_out.items() if n)
    parts = [f"{count(left_bytes)} bytes of text"] if left_bytes else []
    if left:
        parts.append(f"sections not shown ({left})")
    return " and ".join(parts) + " left out" if parts else \
        "long sections cut"


def files_entry(spill: Spill, limit: int, outcome: Optional[Saved],
                left_out: dict[str, int], left_bytes: int) -> Event:
    """The entry naming the whole output (``outcome``, None: it could not
    be saved) of a run cut to ``limit`` bytes."""
    what = _left_out(left_out, left_bytes)
    if outcome is None:
        return Note(
            f"[acor: this run's output was truncated to fit the "
            f"budget of {count(limit)} bytes ({what}), "
            f"and the whole output could not be saved: "
            f"{spill.error or 'nothing was written'}]")
    path, size, digest = outcome
    if spill.complete or size == MOST:
        whole = "The whole output of this run (ACOR Markdown)."
    else:
        whole = (f"Only the first {count(size)} of this run's "
                 f"{count(spill.size)} bytes of output (ACOR "
                 f"Markdown): the rest could not be saved "
                 f"({spill.error}).")
    description = (
        f"{whole} The stream was cut to fit --max-output "
        f"{count(limit)} bytes: {what}. Search it (grep -n, sed "
        f"-n 'A,Bp', acor parse) rather than running the tool again.")
    return OutputFiles([{"path": path, "description": description,
                         "kind": "file", "bytes": size,
                         "sha256": digest, "truncated": True}])


def stderr_entry(saved: Saved, left_out: int, limit: int) -> Event:
    """The entry naming the tool's whole stderr, ``left_out`` bytes of
    which the stream did not show."""
    path, size, digest = saved
    return OutputFiles([{
        "path": path, "kind": "file", "bytes": size, "sha256": digest,
        "truncated": True, "description": (
            "The tool's whole stderr. The stream left out "
            f"{count(left_out)} bytes of it to fit the "
            f"budget of {count(limit)} bytes.")}])


def stderr_note(saved: Optional[Saved], left_out: int,
                error: Optional[str]) -> bytes:
    """The line where the stderr is read (Markdown's stderr, JSON's
    events) saying how much of it was left out and where it is."""
    where = f"the whole stderr is in {saved[0]}" if saved else \
        f"it could not be saved: {error}"
    return (f"[acor: {count(left_out)} bytes of the tool's "
            f"stderr left out to fit the output budget; {where}]\n"
            ).encode("utf-8", "replace")

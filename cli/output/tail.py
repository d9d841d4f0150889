"""The tail of a run's text: what the agent sees of the text the head of
the output budget had no room for.

Once the head is full, text and Output go into a rolling :class:`Tail`
(at most its share of characters in memory, whatever the tool writes);
when a section must be shown, or at the end, the last of it is shown
(:func:`last_pieces`) after a note saying how much was left out.
"""

from __future__ import annotations

from acor.cli.output.cutting import fit_end

TYPE_CHECKING = False  # typing costs every run ~3 ms: only mypy
if TYPE_CHECKING:
    from typing import Callable, Union

    from acor.events import Output, Text

    Piece = Union[Text, Output]  # text as the tool wrote it, or Output


class Tail:
    """The last ``size`` characters of text and Output left out since the
    last shown text, as events, and how many bytes were (``gap_bytes``)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.pieces: list[Piece] = []
        self.chars = 0
        self.gap_bytes = 0

    def add(self, event: Piece, size: int) -> None:
        """``event``, of ``size`` bytes in the whole output, left out."""
        self.gap_bytes += size
        text = event.text
        if len(text) >= self.size:
            self.pieces = [type(event)(text[-self.size:])]
            self.chars = self.size
            return
        self.pieces.append(event)
        self.chars += len(text)
        while self.chars > self.size and self.pieces:
            first = self.pieces[0]
            excess = self.chars - self.size
            if len(first.text) <= excess:
                self.pieces.pop(0)
                self.chars -= len(first.text)
            else:
                self.pieces[0] = type(first)(first.text[excess:])
                self.chars -= excess

    def take(self) -> list[Piece]:
        """The pieces held, and the gap closed."""
        pieces, self.pieces, self.chars = self.pieces, [], 0
        self.gap_bytes = 0
        return pieces


def last_pieces(pieces: list[Piece], room: int,
                cost: Callable[[Piece], int]) -> list[Piece]:
    """The last of ``pieces`` that cost at most ``room`` together, in
    order: whole pieces from the end, then the end of the one before
    (from a line start where one is near)."""
    shown: list[Piece] = []
    for piece in reversed(pieces):
        size = cost(piece)
        if size <= room:
            shown.append(piece)
            room -= size
            continue
        kind = type(piece)

        def cost_as(s: str, kind: type[Piece] = kind) -> int:
            return cost(kind(s))
        end = fit_end(piece.text, room, cost_as)
        cut = end.find("\n")
        if 0 <= cut < len(end) // 2:
            end = end[cut + 1:]
        if end.strip():
            shown.append(kind(end))
        break
    shown.reverse()
    return shown


def whole_lines(data: bytes, room: int, cost: Callable[[bytes], int]
                ) -> bytes:
    """The longest head of ``data`` in whole lines whose ``cost`` fits
    ``room`` (the tool's stderr as the budget shows it)."""
    shown = data[:max(0, room)]
    for _ in range(30):
        cut = shown.rfind(b"\n")
        shown = shown[:cut + 1] if cut >= 0 else b""
        over = cost(shown) - room if shown else 0
        if over <= 0:
            break
        shown = shown[:max(0, len(shown) - over - 1)]
    return shown

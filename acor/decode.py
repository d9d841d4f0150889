"""Decode a framed ACOR byte stream into events, in bounded memory.

Anyone holding the run's token can read what a tool wrote::

    decoder = Decoder(token)
    for chunk in chunks:                 # bytes, as they arrive
        for event in decoder.feed(chunk):
            ...
    events = decoder.close()

Two stages, both fed as data arrives:

- :class:`LineReader` cuts bytes into blocks of complete lines and decodes
  them (invalid UTF-8 is replaced, never fatal). A line longer than
  ``max_line`` bytes is cut: its head is kept, the rest counted and hashed,
  and a truncation note takes its place, so a 300 MiB line costs 1 MiB.
- :class:`StreamDecoder` splits those blocks into raw text and framed
  sections (see :mod:`acor.framing`). It works on whole blocks with
  ``str.find`` rather than line by line, because raw floods are the common
  heavy case and a Python loop per line would dominate the relay's cost.
"""

from __future__ import annotations

from . import grammar
from .events import Heartbeat, OutputData, Text
from .framing import FRAME_PREFIX, mark, truncation_note
from .layout import read_fenced

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    import hashlib

    from .events import Event

MAX_LINE = 1 << 20          # bytes of one line kept before truncating
MAX_SECTION = 16 << 20      # characters of one section kept
SLICE = 1 << 16             # bytes looked at for line ends at a time


class _Dropped:
    """What was dropped of a line or a section over its bound: its byte
    count and sha256, for the truncation note that takes its place."""

    def __init__(self) -> None:
        import hashlib  # 3.5 ms: only a runaway line or section pays
        self.count = 0
        self.digest: hashlib._Hash = hashlib.sha256()

    def add(self, data: bytes) -> None:
        self.count += len(data)
        self.digest.update(data)

    def note(self) -> str:
        return truncation_note(self.count, self.digest.hexdigest())


class LineReader:
    """Bytes in, decoded blocks of complete lines out (no final newline)."""

    def __init__(self, max_line: int = MAX_LINE) -> None:
        self._max = max_line
        self._buf = bytearray()
        self._dropping: _Dropped | None = None  # inside a long line
        self._hold = b""       # while dropping: a tail that may begin a mark

    def feed(self, data: bytes) -> list[str]:
        # Reads can be large (the pipe is widened); taking them a slice at
        # a time keeps the point where a long line is cut the same whatever
        # the read size. Slices are views: a flood's bytes are copied once,
        # by the decoding, not once more for each step.
        blocks: list[str] = []
        view = memoryview(data)
        for at in range(0, len(data), SLICE):
            self._feed(data, view, at, min(at + SLICE, len(data)), blocks)
        return blocks

    def _feed(self, data: bytes, view: memoryview, start: int, end: int,
              blocks: list[str]) -> None:
        if self._dropping is not None:
            data = self._skip(self._hold + data[start:end], blocks)
            view, start, end = memoryview(data), 0, len(data)
        last = data.rfind(b"\n", start, end)
        if last >= 0:
            if self._buf:  # the line that began earlier ends here
                first = data.find(b"\n", start, end)
                self._buf += view[start:first]
                blocks.append(self._buf.decode("utf-8", "replace"))
                self._buf.clear()
                start = first + 1
            if start <= last:
                blocks.append(str(view[start:last], "utf-8", "replace"))
            start = last + 1
        self._buf += view[start:end]
        if len(self._buf) > self._max:
            self._cut(blocks)

    def close(self) -> list[str]:
        if self._dropping is not None:
            self._drop(self._hold)
            self._hold = b""
            return [self._end_drop()]
        if self._buf:
            text = self._buf.decode("utf-8", "replace")
            self._buf.clear()
            return [text]
        return []

    def _cut(self, blocks: list[str]) -> None:
        """The buffer holds one unfinished line over the limit: keep its
        head, hash the rest. A frame mark inside it ends the raw part, as
        :class:`StreamDecoder` would end it: raw text printed without a
        newline must not swallow the section the library writes next."""
        buf = self._buf
        while len(buf) > self._max:
            at = buf.find(FRAME_PREFIX, 1)
            if 0 < at <= self._max:
                blocks.append(buf[:at].decode("utf-8", "replace"))
                del buf[:at]
                continue
            self._dropping = _Dropped()
            blocks.append(bytes(buf[:self._max]).decode("utf-8", "replace"))
            if at > 0:
                self._drop(bytes(buf[self._max:at]))
                blocks.append(self._end_drop())
                del buf[:at]
                continue
            rest = bytes(buf[self._max:])
            buf.clear()
            rest = self._skip(rest, blocks)
            buf += rest
            if self._dropping is not None:
                return

    def _skip(self, data: bytes, blocks: list[str]) -> bytes:
        """Drop ``data`` up to the end of the long line (a newline, or a
        frame mark); returns what follows it, ``b""`` if the line goes on."""
        eol = data.find(b"\n")
        at = data.find(FRAME_PREFIX, 0, len(data) if eol < 0 else eol)
        if at >= 0 or eol >= 0:
            end = at if at >= 0 else eol
            self._drop(data[:end])
            self._hold = b""
            blocks.append(self._end_drop())
            return data[end:] if at >= 0 else data[eol + 1:]
        keep = len(FRAME_PREFIX) - 1  # may be the start of a split mark
        self._drop(data[:-keep])
        self._hold = data[-keep:]
        return b""

    def _drop(self, data: bytes) -> None:
        if self._dropping is not None:  # always: inside a long line
            self._dropping.add(data)

    def _end_drop(self) -> str:
        dropping, self._dropping = self._dropping, None
        return dropping.note() if dropping is not None else ""


class StreamDecoder:
    """Blocks of complete lines in; :class:`~acor.events.Text`, section
    events and :class:`~acor.events.Heartbeat` out.

    Only sections marked with this run's token are sections; every other
    line is text. A section cut off by the end of the stream is returned as
    text by :meth:`close`, so nothing the tool wrote is lost.
    """

    def __init__(self, token: str, max_section: int = MAX_SECTION,
                 max_data: int | None = None) -> None:
        self._mark = mark(token)
        # An Output Data section over max_data characters keeps its JSON
        # as text (layout.RawJSON) instead of decoding it: a reader that
        # will only summarise it need not hold the objects.
        self._max_data = max_data
        self._end = self._mark + "end"
        self._max = max_section
        self._heading: str | None = None
        self._parts: list[str] = []
        self._size = 0
        self._dropped: _Dropped | None = None

    def feed(self, block: str) -> list[Event]:
        events: list[Event] = []
        pos, size = 0, len(block)
        while pos <= size:
            if self._heading is not None:
                pos = self._section_part(block, pos, events)
                continue
            at = self._find_mark(block, pos, anywhere=True)
            if at < 0:
                events.append(Text(block[pos:]))
                break
            if at > pos:  # raw text before the mark; a partial line too
                before = block[pos:at]
                events.append(Text(before[:-1] if before.endswith("\n")
                                   else before))
            eol = block.find("\n", at)
            eol = size if eol < 0 else eol
            rest = block[at + len(self._mark):eol]
            if rest == "heartbeat":
                events.append(Heartbeat())
            elif rest.startswith("## "):
                self._heading = rest[3:]
            pos = eol + 1
        return events

    def _section_part(self, block: str, pos: int,
                      events: list[Event]) -> int:
        """Collect section text up to the next mark; returns the new pos.
        The mark is the section's end mark (a line of its own), or, when the
        tool was cut off in the middle of writing it (a signal during a
        large write, even mid-line), the start of another frame: text
        cannot hold the mark without the run's token, so any other mark
        inside a section means the section ended early. The cut section is
        reported as cut, never merged."""
        at = self._find_mark(block, pos, anywhere=True)
        if at < 0:
            self._collect(block[pos:] if pos else block)
            self._collect("\n")
            return len(block) + 1
        self._collect(block[pos:at])
        eol = block.find("\n", at)
        eol = len(block) if eol < 0 else eol
        at_line_start = at == 0 or block[at - 1] == "\n"
        if at_line_start and block[at:eol] == self._end:
            events.append(self._finish())
            return eol + 1
        events.append(self._cut("the tool began another section before "
                                "ending it"))
        return at  # read that line again, as the frame it starts

    def _find_mark(self, block: str, pos: int, anywhere: bool) -> int:
        """Where this run's mark next starts in ``block`` from ``pos`` (at
        a line start unless ``anywhere``), or -1. It looks for the mark's
        first character, which text almost never holds, and checks the
        rest there: ``str.find`` of the whole mark can be ten times slower,
        depending on which hex digits the token happens to have."""
        mark = self._mark
        while True:
            at = block.find("\x1e", pos)
            if at < 0:
                return -1
            if block.startswith(mark, at) and (
                    anywhere or at == 0 or block[at - 1] == "\n"):
                return at
            pos = at + 1

    def close(self) -> list[Event]:
        if self._heading is None:
            return []
        return [self._cut("the stream ended before the section did")]

    def _cut(self, why: str) -> Text:
        """The section collected so far, as text with a note saying it was
        cut short, how many bytes it had and why."""
        body = "".join(self._parts).rstrip("\n")
        size = len(body.encode("utf-8", "replace"))
        if self._dropped is not None:
            size += self._dropped.count
        text = (f"## {self._heading}\n{body}\n"
                f"[acor: section cut short after {size} bytes: {why}]")
        self._reset()
        return Text(text)

    def _collect(self, text: str) -> None:
        if self._dropped is None and self._size + len(text) <= self._max:
            self._parts.append(text)
            self._size += len(text)
            return
        if self._dropped is None:
            self._dropped = _Dropped()
        self._dropped.add(text.encode("utf-8", "surrogatepass"))

    def _finish(self) -> Event:
        heading, parts, dropped = self._heading, self._parts, self._dropped
        size = self._size
        self._reset()
        heading = heading or ""  # always set: a section is open
        if dropped is not None:
            return Text("## " + heading + "\n" + "".join(parts) +
                        dropped.note())
        # The body ends with the section's blank line, then the newline
        # before the end mark: drop both to get the body proper (from the
        # parts: cutting the joined body would copy all of it again).
        _drop_newlines(parts, 2)
        if self._max_data is not None and heading == "Output Data" and \
                size > self._max_data:
            body = "".join(parts)
            parts.clear()
            fenced = read_fenced(body, decode=False)
            del body
            if fenced is not None:
                return OutputData(*fenced)
        return grammar.parse_section(heading, "".join(parts))

    def _reset(self) -> None:
        self._heading, self._parts, self._size, self._dropped = \
            None, [], 0, None


def _drop_newlines(parts: list[str], count: int) -> None:
    """Drop up to ``count`` newlines from the end of the text that
    ``parts`` join into."""
    while count and parts:
        last = parts[-1]
        ending = 0
        while ending < count and ending < len(last) and \
                last[-1 - ending] == "\n":
            ending += 1
        if ending < len(last):
            if ending:
                parts[-1] = last[:-ending]
            return
        parts.pop()  # all newlines (or empty): the one before may end so
        count -= ending


class Decoder:
    """Bytes of a framed stream in, events out: :class:`LineReader` then
    :class:`StreamDecoder`, for callers that do not need the two stages."""

    def __init__(self, token: str, max_line: int = MAX_LINE,
                 max_section: int = MAX_SECTION) -> None:
        self.lines = LineReader(max_line)
        self.sections = StreamDecoder(token, max_section)

    def feed(self, data: bytes) -> list[Event]:
        events: list[Event] = []
        for block in self.lines.feed(data):
            events += self.sections.feed(block)
        return events

    def close(self) -> list[Event]:
        events: list[Event] = []
        for block in self.lines.close():
            events += self.sections.feed(block)
        return events + self.sections.close()


def decode(data: bytes, token: str) -> list[Event]:
    """Every event in a complete framed stream (bytes)."""
    decoder = Decoder(token)
    return decoder.feed(data) + decoder.close()

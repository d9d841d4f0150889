"""Render: events to the agent, as ACOR Markdown or JSON lines.

A sink takes events in order and writes each one whole, then flushes, so an
agent reading the pipe sees a section the moment the launcher has it.
:class:`Coalescer` sits in front of a sink and collapses progress that
arrives faster than the agent needs it.
"""

import json
import sys
import time

from acor import grammar


class MarkdownSink:
    """The canonical ACOR stream. Every section is re-rendered from its
    event, so the launcher's output is escaped whatever the tool sent."""

    def __init__(self, out=None):
        self.out = out if out is not None else sys.stdout.buffer
        self._after_text = False

    def emit(self, event):
        text = grammar.render(event)
        is_text = event.type in ("text", "unknown")
        if self._after_text and not is_text:
            # Raw text ends in a blank line before the next section: text
            # like `<div>` opens an HTML block that runs to the next blank
            # line and would swallow the heading (the Error or the final
            # status a crash ends with included). Sections end in one.
            text = "\n" + text
        self._after_text = is_text
        self.out.write(text.encode("utf-8", "surrogatepass"))
        self.out.flush()

    def close(self):
        pass


class JsonSink:
    """One JSON object per line: the event's dict plus ``seq`` (from 1),
    ``time`` (Unix seconds) and ``tool``."""

    def __init__(self, tool, out=None):
        self.out = out if out is not None else sys.stdout.buffer
        self.tool = tool
        self.seq = 0

    def emit(self, event):
        self.seq += 1
        record = event.to_dict()
        record["seq"] = self.seq
        record["time"] = round(time.time(), 6)
        record["tool"] = self.tool
        line = json.dumps(record, ensure_ascii=False, default=str)
        if "\u2028" in line or "\u2029" in line or "\x85" in line:
            # Valid JSON raw, but line breaks to str.splitlines() and to
            # JavaScript: escaped, so one event is one line for any reader.
            line = line.replace("\u2028", "\\u2028").replace(
                "\u2029", "\\u2029").replace("\x85", "\\u0085")
        self.out.write(line.encode("utf-8", "surrogatepass") + b"\n")
        self.out.flush()

    def close(self):
        pass


class Coalescer:
    """Progress faster than ``interval`` seconds collapses to the latest.

    A held progress goes out when the interval has passed (the run loop
    calls :meth:`tick`), before any other event, and at the end: the last
    progress before any other section is always relayed.
    """

    def __init__(self, sink, interval):
        self.sink = sink
        self.interval = interval
        self._held = None
        self._last = float("-inf")

    def emit(self, event):
        if event.type == "progress" and self.interval > 0:
            now = time.monotonic()
            if now - self._last < self.interval:
                self._held = event
                return
            self._held = None
            self._last = now
            self.sink.emit(event)
            return
        self.flush()
        self.sink.emit(event)

    def due(self):
        """Seconds until a held progress should go out, or None."""
        if self._held is None:
            return None
        return max(0.0, self._last + self.interval - time.monotonic())

    def tick(self):
        if self._held is not None and self.due() == 0.0:
            self.flush()

    def flush(self):
        if self._held is not None:
            event, self._held = self._held, None
            self._last = time.monotonic()
            self.sink.emit(event)

    def close(self):
        self.flush()
        self.sink.close()


def make_sink(fmt, tool, out=None):
    """The sink for ``--format``: markdown, json or rich."""
    if fmt == "json":
        return JsonSink(tool, out)
    if fmt == "rich":
        from .rich_view import RichSink  # rich costs 30 ms: only when asked
        # A terminal that cannot show a character gets "?", not a crash
        # (PYTHONIOENCODING=ascii, LANG=C on an old Python).
        if hasattr(sys.stdout, "reconfigure"):
            sys.stdout.reconfigure(errors="replace")
        return RichSink(tool)
    return MarkdownSink(out)

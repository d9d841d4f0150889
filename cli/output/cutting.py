"""How the output budget makes a section small: cut, or summarised.

A section too large for its share is cut head and tail around a note
saying how much is left out and where the whole output is
(:meth:`Cutter.cut`): its largest text field first, long lists shortened,
an Input Needed's fields bounded as a JSON Schema (:func:`bound_fields`).
An ending that no cut fits is summarised in a few words naming its file
(:meth:`Cutter.summary`); a large Output Data value is described by its
shape (:func:`value_shape`) while the value itself goes to a file.
"""

from __future__ import annotations

import re

from acor.events import AIDirective, Error, Event, InputNeeded, OutputData

from acor.cli.output.cost import Cost
from acor.cli.output.notes import count, gap_note
from acor.cli.output.spill import Spill

TYPE_CHECKING = False  # typing costs every run ~3 ms: only mypy
if TYPE_CHECKING:
    from typing import Any, Callable, Optional

# Fields of an event no cut makes smaller: names, not text.
_WHOLE = ("id", "state", "code", "format", "audience", "type")
_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{},]')


class Cutter:
    """Cuts events to a number of bytes of ``cost``. ``keep`` marks the
    run as cut: its whole output then goes to a file, ``spill``, which the
    notes name."""

    def __init__(self, cost: Cost, spill: Spill,
                 keep: Callable[[], object]) -> None:
        self.cost = cost
        self.spill = spill
        self.keep = keep

    def note(self, what: str) -> str:
        """The note that stands where ``what`` was left out."""
        self.keep()
        return gap_note(what, self.spill)

    def cut(self, event: Event, room: int) -> Optional[Event]:
        """``event`` cut to cost at most ``room`` (its largest text field
        head and tail, a note in the middle; long lists shortened; an
        Input Needed's fields bounded as a schema), or None when it
        cannot be."""
        copy = object.__new__(type(event))
        for slot in event.__slots__:
            setattr(copy, slot, getattr(event, slot))
        stuck: set[str] = set()  # fields no cut can make smaller
        for _ in range(40):
            cost = self.cost(copy)
            if cost <= room:
                return copy
            name, size = _largest(copy, stuck)
            if name is None or size <= 8:
                return None
            target = max(0, int(size * min(0.5, room / cost)))
            if not self._shrink(copy, name, target):
                stuck.add(name)  # the message may still give way
        return None

    def _shrink(self, event: Event, name: str, target: int) -> bool:
        """Make field ``name`` of ``event`` about ``target`` characters;
        False when it cannot get smaller."""
        value = getattr(event, name)
        if isinstance(value, str):
            setattr(event, name, self.middle(value, target))
        elif name == "fields" and isinstance(value, dict):
            bounded = bound_fields(value, target)
            if bounded is None or bounded == value:
                return False
            setattr(event, name, bounded)
        elif isinstance(value, list):
            setattr(event, name, self._shorter(value, target))
        else:
            setattr(event, name, None)
        return True

    def _shorter(self, value: list[Any], target: int) -> list[Any]:
        """A list cut toward ``target``: its strings cut in the middle
        first, then its tail left out (a note saying how many items)."""
        by_count = not value or isinstance(value[0], dict)
        keep = max(0, min(len(value) - 1, target if by_count
                          else len(value) // 2))
        if not (value and isinstance(value[0], str)):
            return value[:keep]
        each = target // max(1, len(value))
        short = [self.middle(v, max(16, each)) if len(v) > each else v
                 for v in value]
        if short != value:
            return short
        return value[:keep] + [self.note(f"{len(value) - keep} more items")]

    def middle(self, text: str, target: int) -> str:
        """``text`` cut to about ``target`` characters: its head and its
        tail, with a note in the middle saying how much is left out."""
        half = max(0, (target - 200) // 2)
        left = text[half:len(text) - half] if half else text
        note = self.note(f"{count(len(left.encode('utf-8', 'replace')))}"
                         " bytes")
        if half == 0:
            return note
        return text[:half] + "\n" + note + "\n" + text[len(text) - half:]

    def summary(self, event: Event, share: int) -> Optional[Event]:
        """An ending section too large for any cut, in a few words and
        its file (None for a kind that may be left out: progress, an
        intermediate status, a checkpoint, suggestions)."""
        self.keep()
        spill = self.spill
        where = f"is in {spill.path}" if spill.path else \
            f"could not be saved: {spill.error}"
        # The least form does not repeat the path (the files entry that
        # ends the run names it): its size then does not grow with it.
        named = "is in the whole-output file named below" \
            if spill.path else f"could not be saved: {spill.error}"
        summary: Event
        least: Event
        if isinstance(event, InputNeeded):
            head = event.message[:max(0, share // 4)]
            summary = InputNeeded(
                f"{head}\n[acor: this request was too large to show "
                f"({count(self.cost(event))} bytes); the whole of it, "
                f"its fields included, {where}]", None,
                event.audience, event.next)
            # At the least, that there is a request and where it is.
            least = InputNeeded(
                f"[acor: a request too large to show; it {named}]", None,
                event.audience, None)
        elif isinstance(event, Error):
            summary = Error(
                event.title[:max(0, share // 4)], event.code[:64],
                f"[acor: this error was too large to show; the whole of "
                f"it {where}]")
            least = Error("[acor: an error too large to show]",
                          event.code[:64], f"[acor: the whole error {named}]")
        elif isinstance(event, AIDirective):
            summary = AIDirective([
                f"[acor: a directive was too large to show; the whole of "
                f"it {where}]"])
            least = AIDirective([f"[acor: a directive too large to show; "
                                 f"it {named}]"])
        else:
            return None
        return self.cut(summary, share) or least

    def data(self, event: OutputData, encoded: memoryview, share: int
             ) -> OutputData:
        """Output Data over its ``share``: the value whole in a file of
        its own (``encoded``, the fenced block's content as the stream
        has it), and a summary in its place."""
        path, digest, error = self.spill.data_file(encoded)
        self.keep()
        summary: dict[str, Any] = {
            "acor_truncated": True, "format": event.format,
            "bytes": encoded.nbytes, "sha256": digest, "file": path,
            "note": "The whole value is in the file; the stream shows "
                    "only this summary." if path else
                    f"The whole value could not be saved ({error}); the "
                    f"stream shows only this summary."}
        summary.update(value_shape(event.data, encoded))
        shown = self.cut(OutputData("json", summary), share)
        if not isinstance(shown, OutputData):
            # The bare summary: what, where, its digest.
            shown = OutputData("json", {
                k: summary[k] for k in ("acor_truncated", "bytes", "sha256",
                                        "file", "type") if k in summary})
        return shown

    def fit_data(self, event: OutputData, share: int) -> OutputData:
        """The last Output Data within ``share``: whole, or summarised
        with its file."""
        if self.cost(event) <= share or (
                isinstance(event.data, dict) and
                event.data.get("acor_truncated") is True):
            return event
        # The grammar is loaded once the tool is starting up, not before
        # the spawn: this runs at the end.
        from acor.grammar import render
        markdown = render(event).encode("utf-8", "replace")
        return self.data(event, data_block(markdown), share)


def data_block(markdown: bytes) -> memoryview:
    """The content of an Output Data section's fenced block."""
    start = markdown.find(b"\n", markdown.find(b"\n") + 1) + 1
    end = markdown.rfind(b"\n", 0, markdown.rstrip(b"\n").rfind(b"\n")) + 1
    view = memoryview(markdown)
    return view[start:end] if 0 < start <= end else view


def bound_fields(fields: dict[str, Any], target: int
                 ) -> Optional[dict[str, Any]]:
    """An Input Needed's fields with their text (title, description,
    a string default) cut to fit about ``target`` characters: still
    the same JSON Schema properties (types, enums, bounds kept whole,
    since an answer must match them). None when even that is too
    large (too many fields, a long enum)."""
    texts = [(name, key) for name, prop in fields.items()
             if isinstance(prop, dict)
             for key in ("title", "description", "default")
             if isinstance(prop.get(key), str)]
    fixed = len(json_dumps({n: {k: v for k, v in p.items()
                                if (n, k) not in texts}
                            if isinstance(p, dict) else p
                            for n, p in fields.items()}))
    each = (target - fixed) // max(1, len(texts))
    if each < 0:
        return None
    if each < 24:
        each = 0  # no room for words: the texts go, the schema stays
    return {name: _bound_property(prop, each) if isinstance(prop, dict)
            else prop for name, prop in fields.items()}


def _bound_property(prop: dict[str, Any], each: int) -> dict[str, Any]:
    """One property with its title and description cut to ``each``
    characters (or left out) and a longer string default left out."""
    prop = dict(prop)
    for key in ("title", "description"):
        value = prop.get(key)
        if isinstance(value, str) and len(value) > each:
            half = (each - 5) // 2
            if half > 0:
                prop[key] = value[:half] + " [...] " + value[-half:]
            else:
                del prop[key]
    if isinstance(prop.get("default"), str) and len(prop["default"]) > each:
        del prop["default"]  # a cut default is not the default
    return prop


def value_shape(data: Any, encoded: memoryview) -> dict[str, Any]:
    """What a summary says of an Output Data value (``encoded``, its
    text as the stream has it): its type, and its keys, length or head."""
    # acor.layout comes with the grammar, loaded once the tool is
    # starting up: not on the path to the spawn.
    from acor.layout import RawJSON
    if isinstance(data, RawJSON):
        return outline(data)
    if isinstance(data, dict):
        keys = list(data)
        return {"type": "object", "key_count": len(keys),
                "keys": [str(k)[:64] for k in keys[:50]]}
    if isinstance(data, list):
        return {"type": "array", "length": len(data)}
    return {"type": "string" if isinstance(data, str) else
            type(data).__name__,
            "head": bytes(encoded[:200]).decode("utf-8", "replace")}


def outline(text: str) -> dict[str, Any]:
    """The top-level shape of JSON ``text`` without decoding it: its type
    and its keys (the first 50) or its length. Memory: one token."""
    depth, top, count, want_key = 0, "", 0, False
    keys: list[str] = []
    for match in _TOKENS.finditer(text):
        token = match.group()
        first = token[0]
        if first in "[{":
            depth += 1
            if depth == 1:
                top = first
                want_key = first == "{"
        elif first in "]}":
            depth -= 1
        elif depth == 1:
            if first == ",":
                want_key = top == "{"
            elif want_key:
                count += 1
                if len(keys) < 50:
                    keys.append(token[1:-1][:64])
                want_key = False
            if top == "[" and first == ",":
                count += 1
    if top == "{":
        return {"type": "object", "key_count": count, "keys": keys}
    if top == "[":
        empty = re.match(r"\s*\[\s*\]", text) is not None
        return {"type": "array", "length": 0 if empty else count + 1}
    return {"type": "scalar"}


def _length(name: str, value: Any) -> Optional[int]:
    """How large a field is for cutting (None: not one a cut shortens)."""
    if name in _WHOLE:
        return None
    if isinstance(value, str):
        return len(value)
    if isinstance(value, list):
        return sum(len(v) if isinstance(v, str) else 64 for v in value)
    if isinstance(value, dict) and name == "fields":
        return len(json_dumps(value))
    return None


def _largest(event: Event, stuck: set[str]) -> tuple[Optional[str], int]:
    best, size = None, 0
    for name in event.__slots__:
        if name in stuck:
            continue
        length = _length(name, getattr(event, name))
        if length is not None and length > size:
            best, size = name, length
    return best, size


def fit_head(text: str, room: int, cost: Callable[[str], int]) -> str:
    """The longest head of ``text`` (about) whose cost fits ``room``."""
    n = min(len(text), max(0, room))
    for _ in range(30):
        if n <= 0:
            return ""
        c = cost(text[:n])
        if c <= room:
            return text[:n]
        n = int(n * room / c * 0.95) - 1
    return ""


def fit_end(text: str, room: int, cost: Callable[[str], int]) -> str:
    """The longest end of ``text`` (about) whose cost fits ``room``."""
    n = min(len(text), max(0, room))
    for _ in range(30):
        if n <= 0:
            return ""
        c = cost(text[-n:])
        if c <= room:
            return text[-n:]
        n = int(n * room / c * 0.95) - 1
    return ""


def json_dumps(value: Any) -> str:
    # json (about 2 ms) only once a section is cut: every run imports this
    # module before its tool is spawned.
    import json
    return json.dumps(value, ensure_ascii=False)

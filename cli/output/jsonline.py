"""JSON lines as acor writes them: strict JSON (no NaN, no Infinity, no
lone surrogate), one object a line, its newline included. The one JSON
writer of the launcher: the JSON format, the output budget's accounting and
``acor list --json`` all write through :func:`json_line`, which is
:func:`acor.jsonlines.dumps` (what a tool's own JSON goes through too), or
orjson's faster line when it says the same. A line of ``--format json``
is :func:`event_line`: the record as schema 2 carries it
(:func:`acor.jsonlines.line_record`), compact."""

from __future__ import annotations

_LINE_BREAKS = (b"\xe2\x80\xa8", b"\xe2\x80\xa9", b"\xc2\x85")

TYPE_CHECKING = False  # typing costs every run ~3 ms: only mypy
if TYPE_CHECKING:
    from typing import Any, Callable, Optional

    Record = dict[str, Any]


class Encoders:
    """orjson's line writer (None without orjson), and the library's
    :func:`acor.jsonlines.dumps` and :func:`acor.jsonlines.line_record`."""

    __slots__ = ("fast", "dumps", "line_record")

    def __init__(self, fast: Optional[Callable[[Record], bytes]],
                 dumps: Callable[[Record, bool], str],
                 line_record: Callable[[Record], Record]) -> None:
        self.fast = fast
        self.dumps = dumps
        self.line_record = line_record


_ENCODERS: list[Encoders] = []  # the one set, once loaded


def json_encoders() -> Encoders:
    """Loaded once the tool is starting up (:meth:`JsonSink.started`):
    the library's JSON and orjson are not on the path to the spawn."""
    if not _ENCODERS:
        from acor.jsonlines import dumps, line_record
        fast: Optional[Callable[[Record], bytes]]
        try:  # a compiled encoder, 5x faster on a flood; optional
            from functools import partial

            import orjson
            fast = partial(orjson.dumps, option=orjson.OPT_APPEND_NEWLINE)
        except ImportError:
            fast = None
        _ENCODERS.append(Encoders(fast, dumps, line_record))
    return _ENCODERS[0]


def json_line(record: Record, finite: bool = False,
              compact: bool = False) -> bytes:
    """``record`` as one line of strict JSON, its newline included:
    :func:`acor.jsonlines.dumps` (without spaces when ``compact``), or the
    same value without the spaces from orjson, 5x faster, when ``finite``
    (the caller knows every float in ``record`` is finite: orjson writes
    NaN as null) and orjson's line needs none of dumps' repairs: no lone
    surrogate (orjson refuses it), no integer past 64 bits, no key that is
    not a string, no raw U+2028, U+2029 or U+0085 (valid JSON, but a line
    break to JavaScript and ``str.splitlines``)."""
    encoders = json_encoders()
    if finite and encoders.fast is not None:
        try:
            data: Optional[bytes] = encoders.fast(record)
        except (TypeError, ValueError):
            data = None
        if data is not None and (data.isascii() or not any(
                b in data for b in _LINE_BREAKS)):
            return data
    return (encoders.dumps(record, compact) + "\n").encode("utf-8")


def event_line(record: Record, finite: bool = False) -> bytes:
    """One line of ``--format json``: ``record`` (an event's dict) without
    its null and default keys, with ``v``, compact."""
    return json_line(json_encoders().line_record(record), finite,
                     compact=True)

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

_ENCODERS: list = []  # [orjson.dumps or None, jsonlines.dumps, line_record]


def json_encoders() -> list:
    """Loaded once the tool is starting up (:meth:`JsonSink.started`)."""
    if not _ENCODERS:
        from acor.jsonlines import dumps, line_record
        try:  # a compiled encoder, 5x faster on a flood; optional
            from functools import partial

            import orjson
            fast = partial(orjson.dumps, option=orjson.OPT_APPEND_NEWLINE)
        except ImportError:
            fast = None
        _ENCODERS[:] = [fast, dumps, line_record]
    return _ENCODERS


def json_line(record: dict, finite: bool = False,
              compact: bool = False) -> bytes:
    """``record`` as one line of strict JSON, its newline included:
    :func:`acor.jsonlines.dumps` (without spaces when ``compact``), or the
    same value without the spaces from orjson, 5x faster, when ``finite``
    (the caller knows every float in ``record`` is finite: orjson writes
    NaN as null) and orjson's line needs none of dumps' repairs: no lone
    surrogate (orjson refuses it), no integer past 64 bits, no key that is
    not a string, no raw U+2028, U+2029 or U+0085 (valid JSON, but a line
    break to JavaScript and ``str.splitlines``)."""
    fast, dumps, _ = json_encoders()
    if finite and fast is not None:
        try:
            data = fast(record)
        except (TypeError, ValueError):
            data = None
        if data is not None and (data.isascii() or not any(
                b in data for b in _LINE_BREAKS)):
            return data
    return (dumps(record, compact) + "\n").encode("utf-8")


def event_line(record: dict, finite: bool = False) -> bytes:
    """One line of ``--format json``: ``record`` (an event's dict) without
    its null and default keys, with ``v``, compact."""
    return json_line(json_encoders()[2](record), finite, compact=True)

"""JSON in and out of acor, safely.

:func:`dumps` writes one record as one line of strict JSON, whatever the
record holds. :func:`loads` reads a JSON value a tool wrote (an ``Output
Data`` block) without ever raising anything but :class:`ValueError`: a value
nested deeper than :data:`MAX_DEPTH` levels is refused before decoding, so
neither the decoder nor anything that re-encodes the value later can run
out of stack.
"""

from __future__ import annotations

import json
import re

from .events import EVENT_TYPES

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any

MAX_DEPTH = 256
"""The deepest nesting :func:`loads` decodes; deeper values stay text."""

_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_INNERMOST = re.compile(r"\[\]|\{\}")


def _nesting_over(text: str, limit: int) -> bool:
    """Whether the JSON ``text`` nests containers more than ``limit`` deep.

    Fewer opening brackets than the limit settle it at C speed (the common
    case). Otherwise strings (which may hold brackets) and everything but
    brackets are dropped, then innermost pairs are removed one level per
    pass: the passes needed are the depth. A run of more than ``limit``
    opening brackets, the usual shape of a deep value, ends it at once.
    Unbalanced text is not judged here: the decoder refuses it."""
    if text.count("[") + text.count("{") <= limit:
        return False
    if '"' in text:
        text = _STRING.sub("", text)
    brackets = _NOT_BRACKET.sub("", text)
    run = re.compile(r"[\[{]{" + str(limit + 1) + "}")
    depth = 0
    while brackets:
        if run.search(brackets):
            return True
        reduced = _INNERMOST.sub("", brackets)
        if len(reduced) == len(brackets):
            return False
        depth += 1
        if depth > limit:
            return True
        brackets = reduced
    return False


def loads(text: str, max_depth: int = MAX_DEPTH) -> Any:
    """Decode one JSON value; :class:`ValueError` if ``text`` is not JSON
    or nests deeper than ``max_depth`` (never :class:`RecursionError`)."""
    if _nesting_over(text, max_depth):
        raise ValueError(f"JSON nested deeper than {max_depth} levels")
    try:
        return json.loads(text)
    except RecursionError:
        # Only when the caller's own stack is already deep.
        raise ValueError("JSON nested too deep to decode here") from None


# --- writing: strict JSON, one record per line -------------------------------

SCHEMA_VERSION = 2
"""The version of the event schema every JSON line carries as ``"v"``.
2: a key whose value is its default (below) is left out, and the
launcher no longer adds ``seq``, ``time`` and ``tool`` to every line."""

# The value a reader takes for each key a line leaves out (schema 2). Every
# other key of an event is always written. A key holding null is left out
# whatever its type: a reader takes a missing key as null unless it is here.
LINE_DEFAULTS: dict[str, dict[str, Any]] = {
    "status": {"message": ""},
    "progress": {"message": ""},
    "unknown": {"body": ""},
    "input_needed": {"audience": "agent"},
    "result": {"truncated": False, "argv": []},
}
# In each output_files entry: a missing key is null, description "".
FILE_DEFAULTS: dict[str, Any] = {"description": ""}


def line_record(record: dict[str, Any]) -> dict[str, Any]:
    """``record`` (an event's dict) as a JSON line carries it: without the
    keys that are null or at their default (:data:`LINE_DEFAULTS`), with
    ``v`` last. Each line reads alone: what it leaves out is fixed by
    ``v``, never by another line."""
    defaults = LINE_DEFAULTS.get(record["type"], {}) \
        if "type" in record else {}
    line: dict[str, Any] = {}
    for key, value in record.items():
        if value is None or (key in defaults and value == defaults[key]
                             and type(value) is type(defaults[key])):
            continue
        if key == "files" and record.get("type") == "output_files" and \
                isinstance(value, list):
            value = [{k: v for k, v in entry.items()
                      if v is not None and not (k in FILE_DEFAULTS and
                                                v == FILE_DEFAULTS[k])}
                     if isinstance(entry, dict) else entry
                     for entry in value]
        line[key] = value
    line["v"] = SCHEMA_VERSION
    return line


def full_record(line: dict[str, Any]) -> dict[str, Any]:
    """A JSON line read back as its event's whole dict, the inverse of
    :func:`line_record`: every key of the event type in its order, those
    the line left out at their default (null unless
    :data:`LINE_DEFAULTS` says otherwise), without ``v``. Keys the reader
    does not know are kept, after the rest; a type it does not know comes
    back as it is, minus ``v``."""
    kind = line.get("type")
    record = {key: value for key, value in line.items() if key != "v"}
    event_class = EVENT_TYPES.get(kind) if isinstance(kind, str) else None
    if event_class is None:
        return record
    defaults = LINE_DEFAULTS.get(str(kind), {})  # a type EVENT_TYPES knows
    names = [name for klass in reversed(event_class.__mro__)
             for name in getattr(klass, "__slots__", ())]
    full: dict[str, Any] = {"type": kind}
    for name in names:
        full[name] = record.pop(name, defaults.get(name))
    files = full.get("files")
    if kind == "output_files" and isinstance(files, list):
        full["files"] = [
            {"path": entry.get("path"), "description": entry.get(
                "description", FILE_DEFAULTS["description"]),
             "kind": entry.get("kind"), "bytes": entry.get("bytes"),
             "sha256": entry.get("sha256"),
             **{k: v for k, v in entry.items() if k not in (
                 "path", "description", "kind", "bytes", "sha256")}}
            if isinstance(entry, dict) else entry
            for entry in files]
    record.pop("type", None)
    full.update(record)
    return full


# The deepest a record is encoded as it is, well under the C encoder's own
# recursion limit and above anything :func:`loads` lets through (a decoded
# value inside an event inside a record). Deeper containers become their
# JSON text, a string.
_ENCODE_DEPTH = 2 * MAX_DEPTH
_NON_FINITE = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}


def _default(value: object) -> str:
    """Unknown objects are carried as their ``str()``, whatever it takes."""
    try:
        return str(value)
    except Exception:
        try:
            return repr(value)
        except Exception:
            return f"<{type(value).__name__}>"


_ENCODER = json.JSONEncoder(ensure_ascii=False, allow_nan=False,
                            default=_default)
_COMPACT = json.JSONEncoder(ensure_ascii=False, allow_nan=False,
                            default=_default, separators=(",", ":"))


def dumps(record: object, compact: bool = False) -> str:
    """``record`` as one line of strict JSON (RFC 8259), for any reader;
    ``compact``: without a space after ``,`` and ``:`` (JSON lines).

    - Non-finite floats are the strings ``"NaN"``, ``"Infinity"`` and
      ``"-Infinity"`` (JSON has no such numbers; ``JSON.parse`` refuses
      them).
    - U+2028, U+2029 and U+0085 are written as ``\\u`` escapes: valid raw in
      JSON, but line breaks to JavaScript and to ``str.splitlines()``.
    - Lone surrogates (from undecodable bytes) become U+FFFD, so the line
      is valid UTF-8; a surrogate pair becomes its character.
    - Never raises: unknown objects are their ``str()``, keys that are not
      strings are converted, integers too long for decimal are hex
      strings, circular references are the string
      ``"[acor: circular reference]"``, and containers nested more than
      512 deep are carried as their JSON text.

    The common record takes one pass of the C encoder and one
    ``str.isascii`` check; the rest is paid only when needed.
    """
    encoder = _COMPACT if compact else _ENCODER
    try:
        line = encoder.encode(record)
    except Exception:
        line = encoder.encode(_clean(record, _ENCODE_DEPTH))
    if line.isascii():
        return line
    if "\u2028" in line or "\u2029" in line or "\x85" in line:
        line = line.replace("\u2028", "\\u2028").replace(
            "\u2029", "\\u2029").replace("\x85", "\\u0085")
    try:
        line.encode("utf-8")  # fails on lone surrogates only; fast in C
    except UnicodeEncodeError:
        line = line.encode("utf-16-le", "surrogatepass").decode(
            "utf-16-le", "replace")
    return line


def jsonable(value: object, max_depth: int = _ENCODE_DEPTH) -> Any:
    """A copy of ``value`` that any strict JSON encoder takes, with the
    conversions :func:`dumps` makes; containers nested deeper than
    ``max_depth`` become their JSON text. Iterative: any depth is safe."""
    return _clean(value, max_depth)


def _number(value: float) -> float | str:
    """A float or int the C encoder takes, or the string standing for it."""
    if isinstance(value, float):
        text = float.__repr__(value)
        return _NON_FINITE.get(text, float(value))
    try:
        int.__repr__(value)
    except ValueError:  # more digits than int-to-str allows
        return hex(value)
    return int(value)


def _key(key: object) -> str:
    if isinstance(key, str):
        return key
    if key is None or isinstance(key, bool):
        return json.dumps(key)
    if isinstance(key, (int, float)):
        number = _number(key)
        return number if isinstance(number, str) else repr(number)
    return _default(key)


_EXIT = object()


def _clean(value: object, limit: int | None) -> Any:
    """A copy of ``value`` the C encoder takes as is (see :func:`dumps`),
    built with an explicit stack so that no depth can exhaust Python's."""
    root: list[Any] = [None]
    # (value, its parent copy, its key there, its depth); an _EXIT entry
    # holds the id of the container it closes in place of the parent.
    stack: list[tuple[Any, Any, Any, Any]] = [(value, root, 0, 0)]
    path: set[int] = set()  # ids of the containers being copied
    clean: Any
    while stack:
        value, parent, key, depth = stack.pop()
        if value is _EXIT:
            path.discard(parent)
            continue
        if value is None or isinstance(value, (str, bool)):
            clean = value
        elif isinstance(value, (int, float)):
            clean = _number(value)
        elif isinstance(value, (dict, list, tuple)):
            if id(value) in path:
                clean = "[acor: circular reference]"
            elif limit is not None and depth >= limit:
                clean = _encode_iteratively(_clean(value, None))
            else:
                path.add(id(value))
                stack.append((_EXIT, id(value), None, None))
                if isinstance(value, dict):
                    clean = {}
                    for k, v in list(value.items()):
                        k = _key(k)
                        clean[k] = None  # keeps the key order
                        stack.append((v, clean, k, depth + 1))
                else:
                    clean = [None] * len(value)
                    for i, v in enumerate(value):
                        stack.append((v, clean, i, depth + 1))
        else:
            clean = _default(value)
        parent[key] = clean
    return root[0]


def _encode_iteratively(value: Any) -> str:
    """Compact JSON text of a value :func:`_clean` made, at any depth."""
    out: list[str] = []
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        if type(item) is tuple:  # a piece of syntax; _clean makes no tuples
            out.append(item[0])
        elif isinstance(item, list):
            out.append("[")
            stack.append(("]",))
            for i in range(len(item) - 1, -1, -1):
                stack.append(item[i])
                if i:
                    stack.append((",",))
        elif isinstance(item, dict):
            out.append("{")
            stack.append(("}",))
            pairs = list(item.items())
            for i in range(len(pairs) - 1, -1, -1):
                stack.append(pairs[i][1])
                stack.append((_ENCODER.encode(pairs[i][0]) + ":",))
                if i:
                    stack.append((",",))
        else:
            out.append(_ENCODER.encode(item))
    return "".join(out)

"""Section body layouts the grammar's sections share, both ways: list items,
field lines, file lines and a fenced block.

Each writer returns the body's lines (escaped); each reader takes the body
text and gives back exactly what the writer got. ``docs/protocol.md``
("Items and fields", "Output Files", "Output Data") describes them.
"""

from __future__ import annotations

import re

from .escaping import (code_span, escape_inline, escape_nested, fence_for,
                       fold_newlines, uncode_span, unescape_inline,
                       unescape_text)

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing costs milliseconds to import
    from collections.abc import Callable
    from typing import Any


def _indent(lines: list[str]) -> list[str]:
    """Continuation lines of an item or a field, indented by two spaces; an
    empty line stays empty."""
    return ["  " + line if line else "" for line in lines]


def _dedent(line: str) -> str:
    return line[2:] if line.startswith("  ") else line


# --- list items ---------------------------------------------------------------

def item_lines(item: str) -> list[str]:
    """One ``- `` bullet whose later lines are indented under it.

    The text is escaped with :func:`escape_nested`, so no line of it can
    open a block: the first line can never make the bullet a thematic
    break (``- - -``), a line with leading blanks gets its backslash before
    them (so it can neither become code nor move the item's content off
    column 2), and no later line can start a list, a quote or an underline
    of its own. An empty or blank first line gets a backslash too: a bare
    ``-`` (or ``-`` and blanks) is an empty item, which cannot interrupt a
    paragraph and so would be read as a setext underline after one."""
    first, *rest = escape_nested(item).split("\n")
    if not first.strip(" \t"):
        first = "\\" + first
    return ["- " + first] + _indent(rest)


def items(texts: list[str]) -> list[str]:
    return [line for text in texts for line in item_lines(text)]


def read_items(body: str) -> list[str]:
    """Bullets back into items; stray lines continue the current item (or,
    before the first bullet, start one)."""
    found: list[list[str]] = []
    for line in body.split("\n") if body else []:
        if line == "-" or line.startswith("- "):
            found.append([line[2:]])
        elif found:
            found[-1].append(_dedent(line))
        else:
            found.append([line])
    return [unescape_text("\n".join(lines)) for lines in found]


# --- field lines --------------------------------------------------------------

class Field:
    """One ``**Label**: value`` line (and its continuation lines).

    ``write`` turns the value into escaped text (several lines at most for
    nested text), ``read`` the text back into the value. A field whose value
    equals ``default`` is not written, and reads as ``default`` when absent;
    an ``always`` field is written whatever its value."""

    __slots__ = ("label", "attr", "write", "read", "default", "always")

    def __init__(self, label: str, attr: str, write: Callable[[Any], str],
                 read: Callable[[str], Any], default: Any = None,
                 always: bool = False):
        self.label, self.attr = label, attr
        self.write, self.read = write, read
        self.default, self.always = default, always


class Fields:
    """The field lines of one section kind, in the order they are written."""

    def __init__(self, *fields: Field):
        self.fields = fields
        labels = "|".join(re.escape(f.label) for f in fields)
        self._line = re.compile(r"\*\*(" + labels + r")\*\*:(?: (.*))?$")
        self._by_label = {f.label: f for f in fields}

    def lines(self, event: Any) -> list[str]:
        """The field lines for ``event``'s values."""
        lines = []
        for field in self.fields:
            value = getattr(event, field.attr)
            if value == field.default and not field.always:
                continue
            first, *rest = field.write(value).split("\n")
            lines.append(f"**{field.label}**:" + (" " + first if first
                                                  else ""))
            lines += _indent(rest)
        return lines

    def read(self, body: str) -> tuple[list[str], dict[str, Any]]:
        """The lines before the first field line, and every field's value
        by attribute (its default when absent). Field lines start at column
        0; a label seen before continues the current field. The lead lines
        are all the lines when there is no field line."""
        lead: list[str] = []
        raw: dict[str, list[str]] = {}
        current = None
        for line in body.split("\n") if body else []:
            match = self._line.match(line)
            if match and match.group(1) not in raw:
                current = raw[match.group(1)] = [match.group(2) or ""]
            elif current is not None:
                current.append(_dedent(line))
            else:
                lead.append(line)
        values = {}
        for field in self.fields:
            lines = raw.get(field.label)
            values[field.attr] = field.default if lines is None else \
                field.read("\n".join(lines))
        return lead, values


def write_argv(argv: list[str]) -> str:
    """An argv as the shell command that runs it (``shlex.join``), nested-
    escaped: an argument with a line break spans continuation lines."""
    import shlex  # 0.4 ms past re: only a next command pays for it
    return escape_nested(shlex.join([str(arg) for arg in argv]))


def read_argv(text: str) -> list[str] | None:
    """The argv back; None when the text is not a complete shell command
    (an unclosed quote: a hand-written section)."""
    import shlex  # 0.4 ms past re: only a next command pays for it
    try:
        return shlex.split(unescape_text(text))
    except ValueError:
        return None


def write_json(value: Any) -> str:
    """A JSON value on one line, strict (see :mod:`acor.jsonlines`)."""
    from .jsonlines import dumps  # json, 2 ms: only JSON values pay
    return dumps(value)


def read_json(text: str) -> Any:
    """The value back; None when the text is not JSON (a hand-written
    section) or nests too deep."""
    from .jsonlines import loads  # json, 2 ms: only JSON values pay
    try:
        return loads(text)
    except ValueError:
        return None


# Values are written as nested text (any number of lines), inline-escaped
# when they must stay on one line, as a shell command or as one-line JSON.
NEXT = Field("Next", "next", write_argv, read_argv)
ERROR_FIELDS = Fields(
    Field("Code", "code", escape_inline, unescape_inline, "", always=True),
    Field("Details", "details", escape_nested, unescape_text),
    Field("Recovery", "recovery", escape_nested, unescape_text),
    NEXT,
)
INPUT_FIELDS = Fields(
    Field("Audience", "audience", escape_inline, unescape_inline, "agent"),
    Field("Fields", "fields", write_json, read_json),
    NEXT,
)


# --- Input Needed's fields ----------------------------------------------------
# What a form can hold. The library's check of what a tool writes
# (acor.checks.input_fields) and the grammar reading a stream share these
# rules, so that what one writes the other reads unchanged.

FIELD_KEYS = {"type", "description", "enum", "enumNames", "oneOf", "default",
              "minimum", "maximum", "items", "minItems", "maxItems"}
FIELD_TYPES = ("string", "integer", "number", "boolean", "array")
# What a stream's Input Needed may ask at most: a form, not a database.
MAX_FIELDS = 64
MAX_CHOICES = 256
MAX_TEXT = 4096
MAX_NUMBER = 1e300


def is_field_name(name: Any) -> bool:
    """Whether ``name`` can name a field: an argument's name (ASCII
    letters, digits, ``_``, ``-``)."""
    return isinstance(name, str) and 0 < len(name) <= 100 and \
        name.isascii() and name.replace("_", "a").replace("-", "a").isalnum()


def _fits(value: Any, kind: str) -> bool:
    """Whether ``value`` is a finite scalar of the field type ``kind``."""
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "string":
        return isinstance(value, str) and len(value) <= MAX_TEXT
    if isinstance(value, bool) or not isinstance(
            value, int if kind == "integer" else (int, float)):
        return False
    try:
        return abs(value) <= MAX_NUMBER
    except OverflowError:  # an int too large for a float
        return False


def read_input_fields(value: Any) -> dict[str, dict[str, Any]] | None:
    """Input Needed's fields as read from a stream: what
    :func:`acor.checks.input_fields` would accept, whatever a tool wrote.
    A tool that is not this library can write any JSON there, and every
    reader (a prompt, a form, a next call) must get a form it can show: a
    field whose name is not an argument's is left out, a property that is
    not one becomes a string, and each key that does not fit its field (an
    ``enum`` of 5, a default of the wrong type, a minimum on a string) is
    dropped, the field kept.
    None when nothing usable is left."""
    if not isinstance(value, dict):
        return None
    read = {name: read_field(prop)
            for name, prop in list(value.items())[:MAX_FIELDS]
            if is_field_name(name)}
    return read or None


def read_field(prop: Any) -> dict[str, Any]:
    """One field's property as :func:`read_input_fields` reads it.

    Beside the scalar fields, the forms of SEP-1330 (MCP's choices with
    titles, and several at once): a ``string`` field's ``oneOf`` of
    ``{"const": VALUE, "title": TEXT}`` (or, the older form, its
    ``enumNames``: one title per ``enum`` value), and an ``array`` field
    whose ``items`` are choices (``{"enum": [...]}``, or ``{"anyOf": [...]}``
    of the same titled choices), with ``default`` a list of them and
    ``minItems``/``maxItems``. An array without choices is read as a
    string: a form has no free-form list to show."""
    prop = prop if isinstance(prop, dict) else {}
    kind = prop.get("type")
    items = _read_items(prop.get("items")) if kind == "array" else None
    kind = kind if kind in FIELD_TYPES and (kind != "array" or items) \
        else "string"
    field: dict[str, Any] = {"type": kind}
    description = prop.get("description")
    if isinstance(description, str):
        field["description"] = description[:MAX_TEXT]
    field.update(_read_array(prop, items) if items else
                 _read_scalar(prop, kind))
    return field


def _read_scalar(prop: dict[str, Any], kind: str) -> dict[str, Any]:
    """A scalar field's keys beyond its type and description."""
    field = _read_enum(prop, kind)
    titled = _titled(prop.get("oneOf")) if kind == "string" else None
    if titled:
        field["oneOf"] = titled
    if "default" in prop and _fits(prop["default"], kind):
        field["default"] = prop["default"]
    if kind in ("integer", "number"):
        for key in ("minimum", "maximum"):
            if key in prop and _fits(prop[key], "number"):
                field[key] = prop[key]
    return field


def _read_enum(prop: dict[str, Any], kind: str) -> dict[str, Any]:
    """A scalar field's ``enum``, and its ``enumNames`` (the older titles:
    one per choice, kept only whole)."""
    field: dict[str, Any] = {}
    choices = prop.get("enum")
    if not isinstance(choices, list):
        return field
    kept = [c for c in choices[:MAX_CHOICES] if _fits(c, kind)]
    if kept:
        field["enum"] = kept
    names = prop.get("enumNames")
    if kind == "string" and kept and kept == choices and \
            isinstance(names, list) and len(names) == len(kept) and \
            all(_fits(n, "string") for n in names):
        field["enumNames"] = names
    return field


def _titled(value: Any) -> list[dict[str, str]] | None:
    """Titled choices, ``[{"const": VALUE, "title": TEXT}]`` (strings,
    nothing else in them), as far as they are; None for none."""
    if not isinstance(value, list):
        return None
    choices = [{"const": c["const"], "title": c["title"]}
               for c in value[:MAX_CHOICES]
               if isinstance(c, dict) and set(c) == {"const", "title"}
               and _fits(c["const"], "string")
               and _fits(c["title"], "string")]
    return choices or None


def _read_items(value: Any) -> dict[str, Any] | None:
    """A multi-select field's ``items``: its string choices, untitled
    (``enum``) or titled (``anyOf``), with ``"type": "string"`` when
    given; None when there are no choices."""
    if not isinstance(value, dict):
        return None
    items: dict[str, Any] = {}
    if value.get("type") == "string":
        items["type"] = "string"
    choices = value.get("enum")
    if isinstance(choices, list):
        choices = [c for c in choices[:MAX_CHOICES] if _fits(c, "string")]
        if choices:
            items["enum"] = choices
    titled = _titled(value.get("anyOf"))
    if titled:
        items["anyOf"] = titled
    return items if "enum" in items or "anyOf" in items else None


def choice_values(items: dict[str, Any]) -> list[str]:
    """The values a multi-select field's ``items`` offer."""
    return list(items.get("enum") or []) + \
        [c["const"] for c in items.get("anyOf") or []]


def _read_array(prop: dict[str, Any], items: dict[str, Any]
                ) -> dict[str, Any]:
    """A multi-select field's keys beyond its type and description."""
    field: dict[str, Any] = {"items": items}
    offered = set(choice_values(items))
    default = prop.get("default")
    if isinstance(default, list) and len(default) <= MAX_CHOICES and all(
            isinstance(v, str) and v in offered for v in default):
        field["default"] = default
    for key in ("minItems", "maxItems"):
        count = prop.get(key)
        if isinstance(count, int) and not isinstance(count, bool) and \
                0 <= count <= MAX_CHOICES:
            field[key] = count
    return field


# --- file lines ---------------------------------------------------------------

_FILE = re.compile(r"- (`+)(.*?)(?<!`)\1(?!`) \[(?:(\d+) bytes, sha256 "
                   r"([0-9a-f]+)(, truncated)?|(missing|directory))\]"
                   r"(?:: (.*))?$")
_HEX = re.compile(r"[0-9a-f]+\Z")
# The largest size a file can have (an off_t). Every number read from a
# stream is bounded: int() of a 4,300-digit size raises, and a size no file
# can have says the line is not what it claims.
MAX_FILE_BYTES = (1 << 63) - 1
_MAX_SIZE_DIGITS = len(str(MAX_FILE_BYTES))


def _meta(entry: dict[str, Any]) -> str:
    """The bracket of a file line; anything but a well-formed file or a
    directory is written as missing, so no value can leave the bracket."""
    kind = entry.get("kind", "missing")
    size, digest = entry.get("bytes"), entry.get("sha256")
    if kind == "file" and type(size) is int and \
            0 <= size <= MAX_FILE_BYTES and \
            isinstance(digest, str) and _HEX.match(digest):
        cut = ", truncated" if entry.get("truncated") is True else ""
        return f"{size} bytes, sha256 {digest}{cut}"
    return "directory" if kind == "directory" else "missing"


def files(entries: list[dict[str, Any]]) -> list[str]:
    """One ``- `path` [meta]: description`` line per file. A path is one
    line: a line break in one (the library refuses them) is written as
    U+FFFD."""
    lines = []
    for entry in entries:
        path = fold_newlines(entry["path"]).replace("\n", "\ufffd")
        head = f"- {code_span(path)} [{_meta(entry)}]"
        description = entry.get("description")
        if description:
            first, *rest = escape_nested(description).split("\n")
            lines.append(f"{head}: {first}")
            lines += _indent(rest)
        else:
            lines.append(head)
    return lines


def read_files(body: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for line in body.split("\n") if body else []:
        match = _FILE.match(line)
        if match:
            _, path, size, digest, cut, kind, description = match.groups()
            if size and (len(size) > _MAX_SIZE_DIGITS
                         or int(size) > MAX_FILE_BYTES):
                raise ValueError(f"a file size over {MAX_FILE_BYTES} bytes "
                                 "(more than any file can hold)")
            found.append({
                "path": uncode_span(path),
                "description": unescape_text(description or ""),
                "kind": kind or "file",
                "bytes": int(size) if size else None,
                "sha256": digest,
            })
            if cut:
                found[-1]["truncated"] = True
        elif found:
            extra = unescape_text(_dedent(line))
            found[-1]["description"] += "\n" + extra
    return found


# --- a fenced block -----------------------------------------------------------

_OPENING = re.compile(r"(`{3,})([^`]*)$")


def _json_block(data: object) -> str:
    """``data`` as indented strict JSON; a value json cannot write as it is
    (NaN, deep nesting, odd keys) goes through :func:`jsonlines.jsonable`
    first, which never fails."""
    import json  # 2 ms: only JSON blocks pay for it
    try:
        return json.dumps(data, indent=2, ensure_ascii=False,
                          allow_nan=False, default=str)
    except (ValueError, TypeError, RecursionError):
        from .jsonlines import MAX_DEPTH, jsonable  # json: loaded above
        return json.dumps(jsonable(data, MAX_DEPTH), indent=2,
                          ensure_ascii=False)


def fenced(format: str, data: Any) -> list[str]:
    """A backtick fence around ``data`` (text as it is, anything else as
    JSON), its info string the format: inline-escaped, without backticks
    (CommonMark allows none in a backtick fence's info string)."""
    text = data if isinstance(data, str) else _json_block(data)
    text = fold_newlines(text)
    fence = fence_for(text)
    return [fence + escape_inline(format).replace("`", ""), text, fence]


class RawJSON(str):
    """The text of a ``json`` block left undecoded on purpose (a reader
    with an output budget does not build megabytes of objects it will
    only summarise): it renders back as the same block."""

    __slots__ = ()


def read_fenced(body: str, decode: bool = True) -> tuple[str, Any] | None:
    """``(format, data)`` from a body that is one fenced block, else None.
    A ``json`` block holds the decoded value; one that is not JSON, or
    nests deeper than :data:`acor.jsonlines.MAX_DEPTH`, stays text; with
    ``decode`` false, it is its text as a :class:`RawJSON`."""
    # By the first and last line ends, not split into lines: a block of
    # megabytes would be a million strings for a moment.
    first, last = body.find("\n"), body.rfind("\n")
    opening = _OPENING.match(body[:first]) if first >= 0 else None
    if not opening or body[last + 1:] != opening.group(1):
        return None
    format = unescape_inline(opening.group(2).strip())
    data = body[first + 1:last] if last > first else ""
    if format == "json" and not decode:
        return format, RawJSON(data)
    if format == "json":
        from . import jsonlines  # json, 2 ms: only JSON blocks pay for it
        try:
            data = jsonlines.loads(data)
        except ValueError:
            pass  # kept as text: the format still says what it claimed
    return format, data

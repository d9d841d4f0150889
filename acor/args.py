"""Argument schemas: a tool's arguments, described once in its manifest.

A manifest's ``"args"`` is a JSON Schema object (a subset of draft 2020-12)
whose properties say, under ``"x-acor"``, how each value reaches the
command line::

    "args": {
      "type": "object",
      "properties": {
        "file":  {"type": "string", "description": "the CSV file",
                  "x-acor": {"position": 0}},
        "key":   {"type": "string", "x-acor": {"flag": "--key"}},
        "tag":   {"type": "array", "items": {"type": "string"},
                  "x-acor": {"flag": "--tag", "repeat": true}},
        "quiet": {"type": "boolean", "x-acor": {"flag": "--quiet"}}
      },
      "required": ["file"],
      "additionalProperties": false
    }

Types: string, integer, number, boolean, or an array of one of the first
three; with ``enum``, ``default``, ``minimum``/``maximum`` and
``description``. ``x-acor`` holds ``position`` (0, 1, ...; an array may be
the last) or ``flag`` (a boolean is a presence flag; an array's flag comes
once per item with ``"repeat": true``, once before all items otherwise),
and may hold ``"metavar"`` (how usage and help name the value, e.g.
"COLUMN") and ``"hidden": true`` (an option people and agents are not
shown: tests, demos); other ``x-acor`` keys are ignored.

``"x-acor": {"human": true}`` (no position, no flag) marks an argument
only a person may give: an approval, or with ``"secret": true`` a
credential; ``"level": "high"`` asks that it be given only out of band
(never through an MCP client's form). It is never on the command line and
never in a call's values (:func:`validate` refuses it); the launcher
passes what a person answered on its own channel (:mod:`acor.human`).

:func:`validate` checks the values of a call (a dict, as from JSON);
:func:`to_argv` turns valid values into an argv; :mod:`acor.argparsing`
builds from a schema the parser :meth:`acor.AcorTool.parse_args` uses;
:func:`usage` and :func:`public_schema` describe the tool to people and
agents.
"""

from __future__ import annotations

import json
import math

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing costs milliseconds to import
    from typing import Any

    Schema = dict[str, Any]  # a JSON object: an args schema or a property

SCALARS = ("string", "integer", "number", "boolean")
_TOP_KEYS = {"type", "properties", "required", "additionalProperties",
             "description", "title", "$schema"}
_KEYS = {"type", "description", "title", "enum", "default", "minimum",
         "maximum", "items", "x-acor"}


class SchemaError(ValueError):
    """The schema itself is wrong (the tool author's mistake)."""


class UsageError(Exception):
    """A command line the schema does not accept; ``usage`` is the usage
    line, as argparse prints it; ``fixed``, when one word can be told, the
    same arguments with that word corrected (they parse), else None."""

    def __init__(self, message: str, usage: str,
                 fixed: list[str] | None = None) -> None:
        super().__init__(message)
        self.message, self.usage, self.fixed = message, usage, fixed


class HelpRequested(Exception):
    """``--help`` was given; ``text`` is the help."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


# --- the schema -----------------------------------------------------------

def schema_problems(schema: object) -> list[str]:
    """Every way ``schema`` is not an args schema this module understands;
    [] when it is."""
    if not isinstance(schema, dict):
        return [f"args must be an object, not {describe(schema)}"]
    props = schema.get("properties", {})
    if not isinstance(props, dict):
        return [f"args.properties must be an object, not {describe(props)}"]
    problems = _top_problems(schema, props)
    flags: set[str] = set()
    for name, prop in props.items():
        if not (isinstance(name, str) and name.isascii() and name.replace(
                "_", "a").replace("-", "a").isalnum()):
            problems.append(f"args.properties: {name!r} is not a name of "
                            f"letters, digits, '_' and '-'")
        problems += _property_problems(f"args.properties.{name}", prop)
        problems += _flag_twice(name, prop, flags)
    return problems + _position_problems(props)


def _top_problems(schema: Schema, props: Schema) -> list[str]:
    """The schema's own keys: unknown ones, its type, additionalProperties
    and required."""
    problems = [f"args: unknown key {key!r}" for key in schema
                if key not in _TOP_KEYS]
    if schema.get("type", "object") != "object":
        problems.append('args.type must be "object"')
    if schema.get("additionalProperties", True) not in (True, False):
        problems.append("args.additionalProperties must be true or false")
    required = schema.get("required", [])
    if not isinstance(required, list) or not all(
            isinstance(r, str) and r in props for r in required):
        problems.append("args.required must list property names")
    else:
        problems += [f"args.required: {r!r} is human-only: the tool asks "
                     f"for it (input_needed) when no person gave it"
                     for r in required if is_human(props[r])]
    return problems


def _flag_twice(name: str, prop: object, flags: set[str]) -> list[str]:
    """A flag another property already took (``flags``, which this adds
    to). What _property_problems reports as wrong is not collected."""
    where = prop.get("x-acor") if isinstance(prop, dict) else None
    if not isinstance(where, dict) or "position" in where:
        return []
    flag = where.get("flag")
    if not isinstance(flag, str):
        return []
    if flag in flags:
        return [f"args.properties.{name}: flag {flag} is used twice"]
    flags.add(flag)
    return []


def _position_problems(props: Schema) -> list[str]:
    """Positions 0, 1, 2, ... without gaps, only the last an array."""
    positions = {}
    for name, prop in props.items():
        where = prop.get("x-acor") if isinstance(prop, dict) else None
        if isinstance(where, dict) and type(where.get("position")) is int:
            positions[where["position"]] = name
    problems = []
    if sorted(positions) != list(range(len(positions))):
        problems.append(f"positions must be 0, 1, 2, ... without gaps or "
                        f"repeats, not {sorted(positions)}")
    arrays = [n for p, n in positions.items()
              if props[n].get("type") == "array" and p != len(positions) - 1]
    if arrays:
        problems.append(f"args.properties.{arrays[0]}: only the last "
                        f"positional argument can be an array")
    return problems


def _property_problems(path: str, prop: object) -> list[str]:
    if not isinstance(prop, dict):
        return [f"{path} must be an object"]
    kind = prop.get("type")
    problems = _type_problems(path, prop, kind)
    problems += _keyword_problems(path, prop, kind)
    where = prop.get("x-acor")
    if isinstance(where, dict) and where.get("human") is not None:
        return problems + _human_problems(path, prop, where)
    if isinstance(where, dict) and ("secret" in where or "level" in where):
        problems.append(f'{path}: x-acor "secret" and "level" are for a '
                        f'human-only argument ("human": true)')
    if not isinstance(where, dict) or \
            ("position" in where) == ("flag" in where):
        return problems + [f'{path}: x-acor needs "position" or "flag"'
                           f' (or "human": true: only a person gives it)']
    # Other x-acor keys are ignored: later versions may add some.
    return problems + _bound_problems(path, prop) + \
        _placement_problems(path, prop, where, kind)


def _type_problems(path: str, prop: Schema, kind: object) -> list[str]:
    """Unknown keys, the type (an array's items), an empty enum."""
    problems = [f"{path}: unknown key {key!r}" for key in prop
                if key not in _KEYS]
    if kind == "array":
        items = prop.get("items")
        if not isinstance(items, dict) or items.get("type") not in \
                ("string", "integer", "number"):
            problems.append(f"{path}.items must be a string, integer or "
                            f"number schema")
    elif kind not in SCALARS:
        problems.append(f"{path}.type must be one of {', '.join(SCALARS)} "
                        f"or array, not {kind!r}")
    if "enum" in prop and not (isinstance(prop["enum"], list)
                               and prop["enum"]):
        problems.append(f"{path}.enum must be a non-empty list")
    return problems


def _bound_problems(path: str, prop: Schema) -> list[str]:
    return [f"{path}.{bound} must be a number"
            for bound in ("minimum", "maximum")
            if bound in prop and (isinstance(prop[bound], bool) or
                                  not isinstance(prop[bound], (int, float)))]


def _placement_problems(path: str, prop: Schema, where: Schema,
                        kind: object) -> list[str]:
    """Where a value goes on the command line: a position or a flag."""
    problems = []
    if "position" in where:
        if type(where["position"]) is not int or where["position"] < 0:
            problems.append(f"{path}: x-acor position must be 0 or more")
        if kind == "boolean":
            problems.append(f"{path}: a boolean must be a flag")
    elif not _looks_like_flag(where["flag"]):
        problems.append(f"{path}: x-acor flag must look like --name")
    if where.get("repeat") and kind != "array":
        problems.append(f"{path}: x-acor repeat is for arrays")
    if kind == "boolean" and prop.get("default", False) is not False:
        problems.append(f"{path}: a presence flag's default must be false")
    return problems


def _looks_like_flag(flag: object) -> bool:
    return (isinstance(flag, str) and flag.startswith("-") and len(flag) > 1
            and flag.isprintable() and " " not in flag and "=" not in flag)


LEVELS = ("standard", "high")


def _human_problems(path: str, prop: Schema, where: Schema) -> list[str]:
    """A human-only argument: no place on the command line, a scalar,
    no default (what no person gave is None)."""
    problems = []
    if where.get("human") is not True:
        problems.append(f'{path}: x-acor "human" must be true')
    if "position" in where or "flag" in where:
        problems.append(f'{path}: a human-only argument has no "position" '
                        f'or "flag": it never comes from the command line')
    if prop.get("type") not in SCALARS:
        problems.append(f"{path}.type must be one of {', '.join(SCALARS)} "
                        f"for a human-only argument")
    if "default" in prop:
        problems.append(f"{path}: a human-only argument has no default "
                        f"(what no person gave is None)")
    if where.get("secret") not in (None, True, False):
        problems.append(f'{path}: x-acor "secret" must be true or false')
    elif where.get("secret") and prop.get("type") != "string":
        problems.append(f'{path}: a secret must be a string')
    if where.get("level", "standard") not in LEVELS:
        problems.append(f'{path}: x-acor "level" must be "standard" or '
                        f'"high"')
    return problems + _bound_problems(path, prop)


def is_human(prop: object) -> bool:
    """Whether property ``prop`` is given only by a person."""
    where = prop.get("x-acor") if isinstance(prop, dict) else None
    return isinstance(where, dict) and where.get("human") is True


def human_names(schema: object) -> list[str]:
    """The human-only arguments of ``schema`` (any dict: [] when it has
    none or is not a schema)."""
    props = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(props, dict):
        return []
    return [n for n, p in props.items() if is_human(p)]


# The keywords each type gives a meaning to (beyond type, description,
# title and x-acor): one that does not apply would be ignored by one reader
# and fail in another (`minimum` on a string made every call a TypeError).
_APPLIES = {"string": {"enum", "default"},
            "integer": {"enum", "default", "minimum", "maximum"},
            "number": {"enum", "default", "minimum", "maximum"},
            "boolean": {"default"}, "array": {"items", "default"}}
_ITEM_KEYS = {"type", "description", "title", "enum", "minimum", "maximum",
              "x-acor"}


def _keyword_problems(path: str, prop: Schema, kind: object) -> list[str]:
    """Keywords that do not apply to ``kind``, and values of the ones that
    do that no call could satisfy or that the type cannot hold."""
    if not isinstance(kind, str) or kind not in _APPLIES:
        return []  # the type itself is reported (it may be any JSON value)
    problems = [f"{path}.{key} does not apply to type {kind}"
                for key in ("enum", "default", "minimum", "maximum", "items")
                if key in prop and key not in _APPLIES[kind]]
    if kind == "array" and isinstance(prop.get("items"), dict):
        problems += _items_problems(f"{path}.items", prop["items"])
    if problems or kind == "boolean":
        return problems  # a boolean's default: checked with its flag
    problems = _range_problems(path, prop)
    if isinstance(prop.get("enum"), list):  # not an array's: see above
        problems += [f"{path}.enum: {describe(choice)} is not {_A[kind]}"
                     for choice in prop["enum"] if not _is(kind, choice)]
    if prop.get("default") is not None and not problems:
        problems += _default_problems(path, prop, kind)
    return problems


def _items_problems(path: str, items: Schema) -> list[str]:
    """An array's ``items``: its keys, its keywords, no default."""
    problems = [f"{path}: unknown key {key!r}" for key in items
                if key not in _ITEM_KEYS]
    if items.get("type") in SCALARS:
        problems += _keyword_problems(path, items, items["type"])
        if "default" in items:
            problems.append(f"{path}.default: defaults belong to the array")
    return problems


def _range_problems(path: str, prop: Schema) -> list[str]:
    """Finite bounds, the minimum not above the maximum."""
    problems = []
    for bound in ("minimum", "maximum"):
        value = prop.get(bound)
        if isinstance(value, float) and not math.isfinite(value):
            problems.append(f"{path}.{bound} must be a finite number")
    if not problems and _is_number(prop.get("minimum")) and \
            _is_number(prop.get("maximum")) and \
            prop["minimum"] > prop["maximum"]:
        problems.append(f"{path}: minimum is above maximum, so no value "
                        "fits")
    return problems


def _default_problems(path: str, prop: Schema, kind: str) -> list[str]:
    """A default the property's own type and keywords refuse."""
    if kind == "array" and not isinstance(prop.get("items"), dict):
        return []
    try:
        bad = value_problems("default", {
            k: v for k, v in prop.items() if k != "x-acor"}, prop["default"])
    except (TypeError, KeyError):
        bad = ["default: cannot be checked"]
    return [f"{path}.{p}" for p in bad]


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def checked_properties(schema: Schema) -> Schema:
    """The schema's properties; SchemaError lists every problem."""
    problems = schema_problems(schema)
    if problems:
        raise SchemaError("invalid args schema: " + "; ".join(problems))
    props: Schema = schema.get("properties", {})
    return props


def positionals(props: Schema) -> list[str]:
    """Names of the positional properties, in position order."""
    return sorted((n for n, p in props.items() if "position" in p["x-acor"]),
                  key=lambda n: props[n]["x-acor"]["position"])


def flag_names(props: Schema) -> list[str]:
    """Names of the flag properties, in the schema's order."""
    return [n for n, p in props.items() if "flag" in p["x-acor"]]


def public_schema(schema: Schema) -> Schema:
    """The schema as people and agents see it: no ``x-acor`` keys, no
    hidden properties and no human-only ones (no caller may give them).
    ``schema`` is one :func:`schema_problems` accepts, so ``x-acor`` can
    only be a key of a property or of its ``items``; the result is new
    down to those dicts, and shares the values below them (``enum``,
    ``default``) with ``schema``."""
    props = schema.get("properties", {})
    hidden = {n for n, p in props.items()
              if isinstance(p, dict) and isinstance(p.get("x-acor"), dict)
              and (p["x-acor"].get("hidden") or is_human(p))}
    public = dict(schema)
    if "properties" in schema:
        public["properties"] = {n: _public_property(p)
                                for n, p in props.items() if n not in hidden}
    if hidden and isinstance(schema.get("required"), list):
        public["required"] = [n for n in schema["required"]
                              if n not in hidden]
    return public


def _public_property(prop: object) -> object:
    if not isinstance(prop, dict):
        return prop
    public = prop.copy()
    public.pop("x-acor", None)
    items = public.get("items")
    if isinstance(items, dict) and "x-acor" in items:
        public["items"] = items = items.copy()
        del items["x-acor"]
    return public


# --- values (a call, as JSON) ---------------------------------------------

def describe(value: object, *, yaml: bool = False) -> str:
    """How a parsed value reads in an error message, in the words of the
    file it came from: JSON's (a schema, a call's arguments) or, with
    ``yaml``, YAML's (the config). A long string is cut: it is echoed."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, (int, float)):
        return f"the number {value!r}"
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:37] + "..."
        quoted = repr(shown) if yaml else json.dumps(shown, ensure_ascii=False)
        return f"the string {quoted}"
    if isinstance(value, (list, tuple)):
        return "a list" if yaml else "an array"
    if isinstance(value, dict):
        return "a mapping" if yaml else "an object"
    return f"a {type(value).__name__}"


_A: dict[object, str] = {
    "string": "a string", "integer": "an integer", "number": "a number",
    "boolean": "a boolean", "array": "an array"}


def _is(kind: object, value: object) -> bool:
    if kind == "string":
        return isinstance(value, str)
    if kind == "boolean":
        return isinstance(value, bool)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    if isinstance(value, float) and not math.isfinite(value):
        return False
    return kind == "number" or value == int(value)  # 3.0 is an integer


def value_problems(path: str, prop: Schema, value: Any) -> list[str]:
    """What is wrong with one value of property ``prop`` ([] if nothing)."""
    kind = prop.get("type")
    if kind == "array":
        if not isinstance(value, list):
            return [f"{path}: must be an array, not {describe(value)}"]
        return [p for i, item in enumerate(value)
                for p in value_problems(f"{path}[{i}]", prop["items"], item)]
    if not _is(kind, value):
        return [f"{path}: must be {_A[kind]}, not {describe(value)}"]
    if "enum" in prop and value not in prop["enum"]:
        choices = ", ".join(json.dumps(c, ensure_ascii=False)
                            for c in prop["enum"])
        return [f"{path}: must be one of {choices}, not {describe(value)}"]
    if "minimum" in prop and value < prop["minimum"]:
        return [f"{path}: must be at least {prop['minimum']}, not {value}"]
    if "maximum" in prop and value > prop["maximum"]:
        return [f"{path}: must be at most {prop['maximum']}, not {value}"]
    return []


def validate(schema: Schema, values: object) -> list[str]:
    """Every way ``values`` (a dict, as from JSON) breaks ``schema``, each
    naming its field ("path: must be a string, not the number 3");
    [] when the values are valid."""
    props = checked_properties(schema)
    if not isinstance(values, dict):
        return [f"the arguments must be an object, not {describe(values)}"]
    problems = [f"{name}: is required" for name in schema.get("required", [])
                if name not in values]
    for name, value in values.items():
        if name in props and is_human(props[name]):
            problems.append(f"{name}: {HUMAN_ONLY}")
        elif name in props:
            problems += value_problems(name, props[name], value)
        elif schema.get("additionalProperties", True) is False:
            known = ", ".join(props) or "none"
            problems.append(f"{name}: is not an argument of this tool "
                            f"(arguments: {known})")
    return problems


HUMAN_ONLY = ("only a person may give this (an approval or a secret): it "
              "is never taken from the command line, acor call or MCP "
              "arguments. Leave it out; acor asks a person when the tool "
              "needs it")


def human_value(prop: Schema, text: str) -> tuple[Any, str | None]:
    """A value from the human channel (text) as its property's type:
    (value, None), or (None, what is wrong)."""
    kind = prop.get("type")
    if kind == "boolean":
        word = text.strip().lower()
        if word in ("true", "y", "yes", "1"):
            return True, None
        if word in ("false", "n", "no", "0"):
            return False, None
        return None, f"must be a boolean, not {text!r}"
    value: str | float = text
    if kind in ("integer", "number"):
        try:
            value = int(text) if kind == "integer" else float(text)
        except ValueError:
            return None, f"must be {_A[kind]}, not {text!r}"
    problems = value_problems("", prop, value)
    return (None, problems[0][2:]) if problems else (value, None)


def _text(prop: Schema, value: Any) -> str:
    if prop.get("type") == "integer":
        return str(int(value))
    return value if isinstance(value, str) else repr(value)


def _option(flag: str, text: str) -> list[str]:
    """A flag and its value as argv items. A value starting with "-" is
    attached, so that no parser can take it for an option."""
    if not text.startswith("-"):
        return [flag, text]
    return [f"{flag}={text}" if flag.startswith("--") else flag + text]


def to_argv(schema: Schema, values: Schema) -> list[str]:
    """The argv for ``values``: flags first (in the schema's order), then
    ``--`` and the positional values in order, so that a value starting
    with "-" cannot act as a flag. Values not given are not written (the
    tool applies its defaults). Raises ValueError for invalid values."""
    problems = validate(schema, values)
    if problems:
        raise ValueError("; ".join(problems))
    props = schema.get("properties", {})
    argv: list[str] = []
    for name in flag_names(props):
        if name in values:
            argv += _flag_argv(props[name], values[name])
    positional: list[str] = []
    for name in positionals(props):
        if name in values:
            prop, value = props[name], values[name]
            positional += [_text(prop["items"], v) for v in value] \
                if prop["type"] == "array" else [_text(prop, value)]
    return argv + (["--", *positional] if positional else [])


def _flag_argv(prop: Schema, value: Any) -> list[str]:
    """One flag property's valid ``value`` as argv items."""
    flag = prop["x-acor"]["flag"]
    if prop["type"] == "boolean":
        return [flag] if value else []
    if prop["type"] != "array":
        return _option(flag, _text(prop, value))
    texts = [_text(prop["items"], v) for v in value]
    if prop["x-acor"].get("repeat") or any(t.startswith("-") for t in texts):
        # Attached, one by one (without repeat, the parser extends the list).
        return [a for t in texts for a in _option(flag, t)]
    return [flag, *texts] if texts else []


# --- usage and argparse ---------------------------------------------------

def metavar(name: str, prop: Schema) -> str:
    """How the value is named in usage and help: x-acor's "metavar", else
    the property's name in capitals."""
    given = prop["x-acor"].get("metavar")
    if isinstance(given, str) and given and given.isprintable():
        return given
    return name.upper().replace("-", "_")


def usage(name: str, schema: Schema) -> str:
    """The usage line, starting with ``name`` (e.g. "acor hello"):
    positional arguments, then flags; optional ones in brackets."""
    props = checked_properties(schema)
    required = set(schema.get("required", []))
    parts = [name]
    for arg in positionals(props):
        meta = metavar(arg, props[arg])
        if props[arg]["type"] == "array":
            parts.append(f"{meta} [{meta} ...]" if arg in required
                         else f"[{meta} ...]")
        else:
            parts.append(meta if arg in required else f"[{meta}]")
    for arg in flag_names(props):
        prop = props[arg]
        if prop["x-acor"].get("hidden"):
            continue
        flag = prop["x-acor"]["flag"]
        text = flag if prop["type"] == "boolean" else \
            f"{flag} {metavar(arg, prop)}"
        if prop["type"] == "array" and not prop["x-acor"].get("repeat"):
            text += " ..."  # several values after one flag
        text = text if arg in required else f"[{text}]"
        parts.append(text + ("..." if prop["x-acor"].get("repeat") else ""))
    return " ".join(parts)

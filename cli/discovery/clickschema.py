"""A click command's parameters, as read by
:mod:`acor.cli.discovery.clickprobe`, made into acor's argument schema.

The reply of the boxed child is data from the project's code, so it is
checked here like a manifest: every string made printable, every shape
checked, and the schema it gives goes through the manifest's own checks
(:func:`acor.args.schema_problems`, the served-strings rule) afterwards.

Each click parameter becomes one property: an argument a position (in
order; ``nargs=-1`` an array, which must be the last), an option a flag
(``multiple`` an array whose flag repeats). Types: ``Choice`` is an
``enum``, ``IntRange``/``FloatRange`` give ``minimum``/``maximum`` (an
open bound of an ``IntRange`` moves by one; ``clamp`` gives none, as any
number is taken), ``INT`` an integer, ``FLOAT`` a number, a boolean flag
a presence flag. A boolean flag that is on by default is named after the
option that turns it off (``--shout/--no-shout`` with ``default=True`` is
``no_shout``, flag ``--no-shout``), as an acor presence flag is off by
default. A counting option (``-v``, ``count=True``) is a presence flag
given once. What acor cannot pass (an option of several values, a flag
with a value of its own) refuses the command with :class:`Unsupported`.
"""

from __future__ import annotations

import math
import re
from typing import Any

from acor.cli.textsafe import printable

_WHITESPACE = re.compile(r"\s+")
MAX_HELP = 1000
MAX_STRING = 4096  # as a manifest's strings (cli.discovery.manifest)


class Unsupported(ValueError):
    """A parameter acor cannot pass to the command: the message says
    which and why."""


def first_paragraph(text: object) -> str:
    """The first paragraph of click help text, on one line, printable."""
    if not isinstance(text, str):
        return ""
    paragraph = text.strip().split("\n\n", 1)[0].replace("\b", "")
    return printable(_WHITESPACE.sub(" ", paragraph).strip())[:MAX_HELP]


def args_schema(command: dict[str, Any]) -> dict[str, Any]:
    """The args schema of ``command`` (a described command); raises
    :class:`Unsupported`."""
    props: dict[str, Any] = {}
    required: list[str] = []
    position = 0
    params = command.get("params")
    if not isinstance(params, list):
        raise Unsupported("the reading gave no parameter list")
    for param in params:
        if not isinstance(param, dict):
            raise Unsupported("the reading gave a parameter that is not "
                              "an object")
        name, prop = _property(param)
        if "position" in prop["x-acor"]:
            prop["x-acor"]["position"] = position
            position += 1
        if name in props:
            raise Unsupported(f"two parameters are named {name!r}")
        props[name] = prop
        if param.get("required") is True and "default" not in prop:
            required.append(name)
    schema: dict[str, Any] = {"type": "object", "properties": props,
                              "additionalProperties": False}
    if required:
        schema["required"] = required
    return schema


def _property(param: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """(property name, property) of one described parameter."""
    name = _name(param.get("name"))
    if param.get("kind") == "argument":
        return name, _argument(name, param)
    opts = [o for o in param.get("opts") or () if isinstance(o, str)]
    if not opts:
        raise Unsupported(f"option {name!r} has no flag")
    if param.get("is_flag") or param.get("count"):
        return _flag(name, param, opts)
    if param.get("nargs") != 1:
        raise Unsupported(f"option {_shown(opts)} takes "
                          f"{param.get('nargs')!r} values at once")
    prop = _typed(name, param)
    prop["x-acor"] = {"flag": _longest(opts)}
    if param.get("multiple"):
        del prop["x-acor"]
        prop = _array(prop, param)
        prop["x-acor"] = {"flag": _longest(opts), "repeat": True}
    if param.get("hidden") is True:
        prop["x-acor"]["hidden"] = True
    return name, prop


def _argument(name: str, param: dict[str, Any]) -> dict[str, Any]:
    nargs = param.get("nargs")
    prop = _typed(name, param)
    if nargs == -1:
        prop = _array(prop, param)
    elif nargs != 1:
        raise Unsupported(f"argument {name.upper()} takes {nargs!r} values "
                          "at once")
    prop["x-acor"] = {"position": 0}
    return prop


def _flag(name: str, param: dict[str, Any],
          opts: list[str]) -> tuple[str, dict[str, Any]]:
    """A boolean flag, or a counting option given once: a presence flag,
    named after the option that turns it on when it is off by default,
    after the one that turns it off when it is on."""
    if param.get("type", {}).get("kind") != "bool" and not param.get("count"):
        raise Unsupported(f"option {_shown(opts)} gives the value "
                          f"{param.get('flag_value')!r} of its own: acor "
                          "passes true or false flags only")
    help_text = first_paragraph(param.get("help"))
    prop: dict[str, Any] = {"type": "boolean"}
    if param.get("default") is True and not param.get("count"):
        off = [o for o in param.get("secondary") or () if isinstance(o, str)]
        flag = _longest(off or opts)
        name = _name(flag.lstrip("-").replace("-", "_"))
        help_text = f"turns off {_longest(opts)}" + \
            (f": {help_text}" if help_text else "")
    else:
        flag = _longest(opts)
    if help_text:
        prop["description"] = help_text
    prop["x-acor"] = {"flag": flag}
    if param.get("hidden") is True:
        prop["x-acor"]["hidden"] = True
    return name, prop


def _typed(name: str, param: dict[str, Any]) -> dict[str, Any]:
    """The scalar property of one value of ``param``."""
    given = param.get("type")
    kind: dict[str, Any] = given if isinstance(given, dict) else {}
    prop: dict[str, Any] = {"type": "string"}
    if kind.get("kind") == "choice":
        choices = [printable(str(c)) for c in kind.get("choices") or ()]
        if not choices:
            raise Unsupported(f"parameter {name!r} offers no choice")
        if any(len(c) > MAX_STRING for c in choices):
            raise Unsupported(f"a choice of parameter {name!r} is over "
                              f"{MAX_STRING} characters")
        prop["enum"] = choices
    elif kind.get("kind") in ("int", "float"):
        prop = {"type": "integer" if kind["kind"] == "int" else "number"}
        prop.update(_bounds(kind))
    elif kind.get("kind") == "bool":
        prop["enum"] = ["true", "false"]
    elif kind.get("kind") == "tuple":
        raise Unsupported(f"parameter {name!r} takes a tuple of values")
    help_text = first_paragraph(param.get("help"))
    if help_text:
        prop["description"] = help_text
    default = param.get("default")
    if not param.get("multiple") and _fits(prop, default):
        prop["default"] = default
    return prop


def _bounds(kind: dict[str, Any]) -> dict[str, Any]:
    """``minimum``/``maximum`` of a range type: none with ``clamp`` (any
    number is taken, then clamped); an open integer bound moved inward."""
    if kind.get("clamp"):
        return {}
    bounds = {}
    for key, word, step in (("min", "minimum", 1), ("max", "maximum", -1)):
        value = kind.get(key)
        if isinstance(value, bool) or not isinstance(value, (int, float)) \
                or not math.isfinite(value):
            continue
        if kind.get(f"{key}_open") and kind["kind"] == "int":
            value += step
        bounds[word] = value
    return bounds


def _array(item: dict[str, Any], param: dict[str, Any]) -> dict[str, Any]:
    description = item.pop("description", None)
    item.pop("default", None)
    prop: dict[str, Any] = {"type": "array", "items": item}
    if description:
        prop["description"] = description
    default = param.get("default")
    if isinstance(default, list) and default and \
            all(_fits(item, v) for v in default):
        prop["default"] = default
    return prop


def _fits(prop: dict[str, Any], value: object) -> bool:
    """Whether ``value`` is a default ``prop`` can carry as it is."""
    kind = prop["type"]
    if value is None or isinstance(value, bool) != (kind == "boolean"):
        return False
    ok: dict[str, type | tuple[type, ...]] = {
        "string": str, "integer": int, "number": (int, float),
        "boolean": bool}
    if not isinstance(value, ok[kind]) or (isinstance(value, float) and
                                           not math.isfinite(value)):
        return False
    if isinstance(value, str) and (len(value) > MAX_STRING or
                                   not value.isprintable()):
        return False  # a default served as it is: short, one line
    if "enum" in prop and value not in prop["enum"]:
        return False
    if not isinstance(value, (int, float)):
        return True
    low, high = prop.get("minimum"), prop.get("maximum")
    return not ((low is not None and value < low) or
                (high is not None and value > high))


def _name(value: object) -> str:
    if not isinstance(value, str) or not value or not value.isascii() or \
            not value.replace("_", "a").replace("-", "a").isalnum():
        raise Unsupported(f"a parameter is named {printable(str(value))!r}, "
                          "not a name of letters, digits and '_'")
    return value


def _longest(opts: list[str]) -> str:
    """The option's long form where it has one (``--count`` over
    ``-c``)."""
    return max(opts, key=lambda o: (o.startswith("--"), len(o)))


def _shown(opts: list[str]) -> str:
    return "/".join(printable(o) for o in opts)

"""The shape of a manifest's ``args``: the documented subset of JSON Schema
(draft 2020-12) that acor turns into a command line.

    {"type": "object",
     "properties": {
       "path": {"type": "string", "description": "the file",
                "x-acor": {"position": 0}},
       "lines": {"type": "boolean", "x-acor": {"flag": "--lines"}},
       "tag": {"type": "array", "items": {"type": "string"},
               "x-acor": {"flag": "--tag", "repeat": true}}},
     "required": ["path"],
     "additionalProperties": false}

Checked at discovery, so that `acor call`, the MCP server and a tool's own
``parse_args`` never meet a schema they cannot turn into argv.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing costs every run ~3 ms: only mypy
if TYPE_CHECKING:
    from typing import Any, Optional


SCALARS = ("string", "integer", "number", "boolean")
_PROPERTY_KEYS = frozenset({"type", "description", "enum", "default",
                            "minimum", "maximum", "items", "x-acor", "title"})
_TOP_KEYS = frozenset({"type", "properties", "required",
                       "additionalProperties", "description", "title",
                       "$schema"})


def check_args_schema(schema: Any) -> Optional[str]:
    """None if ``schema`` is a usable argument schema, else what is wrong."""
    if not isinstance(schema, dict):
        return "it must be an object"
    unknown = sorted(set(schema) - _TOP_KEYS)
    if unknown:
        return f"unsupported key(s) {', '.join(map(repr, unknown))}"
    if schema.get("type", "object") != "object":
        return 'its "type" must be "object"'
    properties = schema.get("properties", {})
    if not isinstance(properties, dict):
        return '"properties" must be an object'
    positions = []
    flags = set()
    for name, prop in properties.items():
        problem = _check_property(name, prop)
        if problem is not None:
            return f"property {name!r}: {problem}"
        mapping = prop["x-acor"]
        if "position" in mapping:
            positions.append(mapping["position"])
        else:
            if mapping["flag"] in flags:
                return f"flag {mapping['flag']!r} is used twice"
            flags.add(mapping["flag"])
    if sorted(positions) != list(range(len(positions))):
        return ("positions must be 0, 1, 2, ... without gaps, not "
                f"{sorted(positions)}")
    required = schema.get("required", [])
    if not isinstance(required, list) or not all(
            isinstance(r, str) and r in properties for r in required):
        return '"required" must list property names'
    if schema.get("additionalProperties", False) not in (False, True):
        return '"additionalProperties" must be true or false'
    return None


def _check_property(name: str, prop: Any) -> Optional[str]:
    if not isinstance(name, str) or not name.replace("_", "a").replace(
            "-", "a").isalnum() or not name.isascii():
        return "names are letters, digits, '_' and '-'"
    if not isinstance(prop, dict):
        return "must be an object"
    unknown = sorted(set(prop) - _PROPERTY_KEYS)
    if unknown:
        return f"unsupported key(s) {', '.join(map(repr, unknown))}"
    kind = prop.get("type")
    if kind == "array":
        items = prop.get("items")
        if not isinstance(items, dict) or items.get("type") not in SCALARS \
                or items.get("type") == "boolean":
            return ('an array needs "items" of type string, integer or '
                    'number')
    elif kind not in SCALARS:
        return f'"type" must be one of {", ".join(SCALARS)} or array'
    mapping = prop.get("x-acor")
    if not isinstance(mapping, dict):
        return ('needs "x-acor": {"position": N} or {"flag": "--name"} to '
                'say how it reaches the command line')
    if ("position" in mapping) == ("flag" in mapping):
        return '"x-acor" needs exactly one of "position" or "flag"'
    if "position" in mapping:
        position = mapping["position"]
        if isinstance(position, bool) or not isinstance(position, int) or \
                position < 0:
            return '"position" must be a whole number from 0'
        if kind == "boolean":
            return "a boolean can only be a flag"
    else:
        flag = mapping["flag"]
        if not isinstance(flag, str) or not flag.startswith("-") or \
                len(flag) < 2 or not flag.isprintable() or " " in flag:
            return '"flag" must look like "--name"'
    if mapping.get("repeat") and kind != "array":
        return '"repeat" is for arrays'
    if "enum" in prop and not (isinstance(prop["enum"], list) and
                               prop["enum"]):
        return '"enum" must be a non-empty list'
    for bound in ("minimum", "maximum"):
        value = prop.get(bound)
        if value is not None and (isinstance(value, bool) or
                                  not isinstance(value, (int, float))):
            return f'"{bound}" must be a number'
    return None

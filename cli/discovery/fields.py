"""What each manifest field must be: a predicate and the words for the
message when it is not (:mod:`acor.cli.discovery.manifest` applies them)."""

from __future__ import annotations

from acor.cli.durations import MAX_SECONDS, check_seconds
from acor.cli.sandbox.policy import problems

TYPE_CHECKING = False  # typing costs every run ~3 ms: only mypy
if TYPE_CHECKING:
    from typing import Any, Callable

    # A field's rule: required, a predicate over its parsed JSON value,
    # and the words for what it must be.
    Rule = tuple[bool, Callable[[Any], bool], str]

_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_-")


def _text(v: object) -> bool:
    return isinstance(v, str) and v != ""


def _texts(v: object) -> bool:
    return isinstance(v, list) and all(isinstance(x, str) for x in v)


def _seconds(v: object) -> bool:
    if isinstance(v, str):  # "30" is a string in JSON, not a duration
        return False
    try:
        check_seconds(v, "timeout")
    except ValueError:
        return False
    return True


def _size(v: object) -> bool:
    """A byte budget: 0 (no limit), or 4096 up to 1 TiB."""
    return type(v) is int and (v == 0 or 4096 <= v <= 1 << 40)


def is_name(v: object) -> bool:
    return isinstance(v, str) and 0 < len(v) <= 64 and \
        set(v) <= _NAME_CHARS and v[0] not in "_-"


_ENV_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                       "0123456789_")


def _env_name(v: object) -> bool:
    """A variable's name (``PY_COLORS``), never one of acor's own
    (``ACOR_...``: the channels acor hands a tool are acor's alone)."""
    return isinstance(v, str) and 0 < len(v) <= 64 and set(v) <= _ENV_CHARS \
        and not v[0].isdigit() and not v.upper().startswith("ACOR_")


def _color_env(v: object) -> bool:
    """At most 8 variables, each a name and a short printable value."""
    return isinstance(v, dict) and 0 < len(v) <= 8 and all(
        _env_name(k) and isinstance(x, str) and len(x) <= 256 and
        x.isprintable() for k, x in v.items())


def _annotations(v: object) -> bool:
    return isinstance(v, dict) and all(
        isinstance(x, bool) or (k == "title" and isinstance(x, str))
        for k, x in v.items())


def _sandbox(value: object) -> bool:
    return not problems(value)


_NAME = "a lowercase name of 1-64 letters, digits, '-' or '_', starting " \
    "with a letter or digit (like \"my-tool\")"
_VERSION = 'a non-empty string like "1.0.0"'
_SECONDS = f"a number of seconds above 0 and at most {MAX_SECONDS} (7 days)"
_COMMON: dict[str, Rule] = {
    "$schema": (False, lambda v: isinstance(v, str), "a string (a URI)"),
    "name": (True, is_name, _NAME),
    "description": (True, _text, "a non-empty string"),
    "version": (False, _text, _VERSION),
    "timeout": (False, _seconds, _SECONDS),
    "idle_timeout": (False, _seconds, _SECONDS),
    "max_output": (False, _size, "a number of bytes: 0 (no limit) or from "
                   "4096 to 1099511627776"),
    "usage": (False, lambda v: isinstance(v, str), "a string"),
    "task": (False, lambda v: v in ("optional", "required"),
             '"optional" or "required" (run as an MCP task)'),
    "args": (False, lambda v: isinstance(v, dict),
             'a JSON Schema object, e.g. {"type": "object", "properties": '
             '{...}}'),
    "stdin": (False, lambda v: isinstance(v, bool), "true or false"),
    "examples": (False, lambda v: isinstance(v, list) and all(
        isinstance(x, dict) for x in v), "a list of objects"),
    "annotations": (False, _annotations, "an object of true/false hints "
                    "(readOnlyHint, destructiveHint, idempotentHint, "
                    "openWorldHint)"),
    "cwd": (False, lambda v: v in ("project", "invocation"),
            '"project" or "invocation"'),
    "sandbox": (False, _sandbox, 'an object like {"write": ["out"], '
                '"read": ["data"], "network": false, "unix_sockets": '
                'false}: lists of paths, relative to the project root, '
                'and true or false'),
}
# field -> (required, predicate, what it must be)
ACOR_FIELDS: dict[str, Rule] = {
    **_COMMON,
    "entry": (True, _text, "the path of the program, relative to the folder"),
    "warm": (False, lambda v: isinstance(v, bool), "true or false"),
}
WRAPPED_FIELDS: dict[str, Rule] = {
    **_COMMON,
    "command": (True, lambda v: _texts(v) and bool(v) and v[0] != "",
                "a non-empty list of strings (the argv)"),
    "progress_pattern": (False, _text, "a regular expression string"),
    "errors": (False, lambda v: isinstance(v, dict),
               'an object like {"1": {"message": "...", "recovery": "..."}}'),
    "color_env": (False, _color_env,
                  'an object of 1-8 environment variables that ask the '
                  'program for colour, like {"PY_COLORS": "1"}: names of '
                  'letters, digits and "_" not starting with ACOR_, '
                  'printable values of at most 256 characters'),
}




def _click_target(v: object) -> bool:
    """``package.module:attribute``: dotted Python names either side."""
    if not isinstance(v, str) or v.count(":") != 1:
        return False
    return all(part.isidentifier() for side in v.split(":")
               for part in side.split("."))


# A click program (cli.discovery.clicktools): its commands give the names,
# descriptions and arguments, so "name" (a group's prefix) and
# "description" are optional and "args" and "usage" are not taken.
CLICK_FIELDS: dict[str, Rule] = {
    **{k: v for k, v in _COMMON.items() if k not in ("args", "usage")},
    "name": (False, is_name, _NAME),
    "description": (False, _text, "a non-empty string"),
    "click": (True, _click_target, 'the command as "package.module:cli"'),
    "warm": (False, lambda v: isinstance(v, bool), "true or false"),
}

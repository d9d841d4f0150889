"""A call's arguments as a JSON object, checked against a tool's argument
schema and turned into its argv: one conversion for ``acor call``, the MCP
server, ``acor check``'s examples and the pytest plugin.

The object is checked first (every violation listed, nothing run), then
turned into an argv (never a shell string; ``--`` before positional values,
so a value that starts with ``-`` cannot act as a flag).
"""

from __future__ import annotations

from acor.cli.errors import UsageError


def call_argv(spec, values) -> list[str]:
    """The argv for ``values`` (a JSON object) under ``spec``'s schema;
    raises :class:`UsageError` listing every violation."""
    if not isinstance(values, dict):
        raise UsageError("The arguments must be a JSON object, not "
                         f"{type(values).__name__}", _hint(spec),
                         next=["acor", "show", spec.name])
    unpassable = _unpassable(values)
    if unpassable:
        raise UsageError(f"Invalid arguments for '{spec.name}': "
                         f"{unpassable[0]}", "Remove the character: no "
                         "command line can carry it.",
                         details="\n".join(unpassable),
                         next=["acor", "show", spec.name])
    if not spec.args_schema:
        argv = values.get("argv", [])
        extra = sorted(set(values) - {"argv"})
        if extra or not isinstance(argv, list) or not all(
                isinstance(a, str) for a in argv):
            raise UsageError(
                f"Tool '{spec.name}' declares no argument schema: call it "
                'with {"argv": [strings]}', _hint(spec),
                details="unexpected: " + ", ".join(extra) if extra else
                "argv must be a list of strings",
                next=["acor", "call", spec.name, '{"argv": []}'])
        return list(argv)
    from acor.args import to_argv, validate
    problems = validate(spec.args_schema, values)
    if problems:
        raise UsageError(f"Invalid arguments for '{spec.name}': "
                         f"{problems[0]}" + (f" (and {len(problems) - 1} "
                                             "more)" if len(problems) > 1
                                             else ""), _hint(spec),
                         details="\n".join(problems),
                         next=["acor", "show", spec.name])
    return to_argv(spec.args_schema, values)


def _unpassable(values: dict) -> list[str]:
    """Every string of ``values`` no argv can hold: a NUL ends a C string,
    and a lone surrogate (JSON allows "\\ud800") is not text, so neither
    can reach ``exec``. Each problem names where it is."""
    import re
    bad = re.compile("[\x00\ud800-\udfff]")
    problems: list[str] = []
    stack: list = [(str(key), value) for key, value in values.items()]
    while stack:
        where, value = stack.pop()
        if isinstance(value, str):
            found = bad.search(value)
            if found:
                char = found.group()
                what = "a NUL character" if char == "\0" else \
                    f"a lone surrogate (U+{ord(char):04X}, not text)"
                problems.append(f"{_printable(where)}: holds {what} at "
                                f"index {found.start()}")
        elif isinstance(value, list):
            stack.extend((f"{where}[{i}]", item)
                         for i, item in enumerate(value))
        elif isinstance(value, dict):
            stack.extend((f"{where}.{key}", item)
                         for key, item in value.items())
    return sorted(problems)


def _printable(text: str) -> str:
    from acor.cli.textsafe import printable
    return printable(text)


def _hint(spec) -> str:
    return (f"Fix the arguments: `acor show {spec.name}` shows the tool's "
            "arguments and their types.")

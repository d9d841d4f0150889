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


def _hint(spec) -> str:
    return (f"Fix the arguments: `acor show {spec.name}` shows the tool's "
            "arguments and their types.")

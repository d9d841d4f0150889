"""A call's arguments both ways between a JSON object and an argv.

:func:`call_argv`: a JSON object, checked against a tool's argument schema
and turned into its argv: one conversion for ``acor call``, the MCP
server, ``acor check``'s examples and the pytest plugin. The object is
checked first (every violation listed, nothing run), then turned into an
argv (never a shell string; ``--`` before positional values, so a value
that starts with ``-`` cannot act as a flag).

:func:`argv_json`: an argv, parsed with the schema, as the JSON object a
tool in any language reads from ``ACOR_ARGS`` instead of parsing its own
flags (docs/protocol.md, "Arguments as JSON").
"""

from __future__ import annotations

import re
import shlex

from acor.cli.errors import UsageError
from acor.cli.textsafe import printable

TYPE_CHECKING = False  # typing costs every run ~3 ms: only mypy
if TYPE_CHECKING:
    from typing import Any, Protocol, Sequence

    class ToolSpec(Protocol):
        """What a call's arguments need of a tool: the part of
        acor.cli.discovery.spec.ToolSpec (a layer above) read here."""

        @property
        def name(self) -> str: ...
        @property
        def description(self) -> str | None: ...
        @property
        def kind(self) -> str: ...
        @property
        def argv(self) -> Sequence[str]: ...
        @property
        def args_schema(self) -> dict[str, Any] | None: ...


def call_argv(spec: ToolSpec, values: object) -> list[str]:
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
    # acor.args costs `acor TOOL` 2.5 ms; only calls with a JSON object
    # (acor call, MCP, acor check) convert one.
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


#: The variable that holds a tool's validated arguments as one JSON object,
#: and the one that names a file holding them when they are too large for
#: the environment (see :func:`argv_json`).
ARGS_VAR = "ACOR_ARGS"
ARGS_FILE_VAR = "ACOR_ARGS_FILE"
#: Linux refuses a single environment string over 128 KiB (MAX_ARG_STRLEN)
#: and an environment larger than a quarter of the stack limit: arguments
#: over this size go to a file instead.
ARGS_ENV_LIMIT = 64 * 1024


def reads_args_json(spec: ToolSpec) -> bool:
    """Whether ``spec``'s runs get ``ACOR_ARGS``: a tool with an argument
    schema, unless it is a Python entry (the library parses its argv into
    ``tool.args``; parsing it in the launcher as well would only cost
    every run the import of argparse)."""
    if not spec.args_schema:
        return False
    argv = spec.argv
    return not (spec.kind == "acor" and len(argv) >= 3 and
                argv[1] == "-u" and argv[2].endswith(".py"))


def argv_values(spec: ToolSpec, argv: Sequence[str]) -> dict[str, object]:
    """``argv`` parsed with ``spec``'s schema: every property but the
    human-only ones (a person gives those on a channel of their own),
    None for one not given. Raises :class:`acor.args.UsageError` or
    :class:`acor.args.HelpRequested`, as the schema's parser does."""
    # Only a run whose tool reads ACOR_ARGS parses here: the parser costs
    # every other `acor TOOL` some 12 ms (acor.argparsing, acor.args).
    from acor.args import is_human
    from acor.argparsing import parse
    schema = spec.args_schema or {}  # a tool without one reads no ACOR_ARGS
    parsed = parse(schema, list(argv), f"acor {spec.name}", spec.description)
    return {name: getattr(parsed, name) for name, prop in
            schema.get("properties", {}).items() if not is_human(prop)}


def argv_json(spec: ToolSpec, argv: Sequence[str],
              command: Sequence[str] = ("acor",)) -> str:
    """``argv`` parsed with ``spec``'s schema, as a JSON object: every
    property but the human-only ones (a person's answer is never put in
    the environment, where the programs a tool runs would inherit it),
    null for one not given. One member per line, so that a shell reads
    it without a JSON parser (``acor_arg`` in acor.sh).

    Raises :class:`UsageError` (exit 2, nothing run) for an argv the
    schema refuses, and :class:`acor.args.HelpRequested` for ``--help``.
    """
    # json (2 ms) and acor.args: only a run whose tool reads ACOR_ARGS.
    import json

    from acor.args import UsageError as ArgvError
    help_argv = [*command, spec.name, "--help"]
    try:
        values = argv_values(spec, argv)
    except ArgvError as wrong:
        if wrong.fixed is not None:  # the user's command, one word fixed
            raise UsageError(wrong.message, "The command below is yours, "
                             "corrected; `" + shlex.join(help_argv) +
                             "` shows the arguments.", details=wrong.usage,
                             next=[*command, spec.name, *wrong.fixed]
                             ) from None
        raise UsageError(wrong.message, "Run `" + shlex.join(help_argv) +
                         "` for the arguments, then run the corrected "
                         "command.", details=wrong.usage,
                         next=help_argv) from None
    unpassable = _unpassable(values)
    if unpassable:  # bytes that are not UTF-8: no JSON string holds them
        raise UsageError(f"Invalid arguments for '{spec.name}': "
                         f"{unpassable[0]}", "Give the value as UTF-8 "
                         "text: this tool reads its arguments as JSON.",
                         details="\n".join(unpassable), next=help_argv)
    return json.dumps(values, indent=1, ensure_ascii=False)


def _unpassable(values: dict[str, object]) -> list[str]:
    """Every string of ``values`` no argv can hold: a NUL ends a C string,
    and a lone surrogate (JSON allows "\\ud800") is not text, so neither
    can reach ``exec``. Each problem names where it is."""
    bad = re.compile("[\x00\ud800-\udfff]")
    problems: list[str] = []
    stack: list[tuple[str, object]] = [(str(key), value)
                                       for key, value in values.items()]
    while stack:
        where, value = stack.pop()
        if isinstance(value, str):
            found = bad.search(value)
            if found:
                char = found.group()
                what = "a NUL character" if char == "\0" else \
                    f"a lone surrogate (U+{ord(char):04X}, not text)"
                problems.append(f"{printable(where)}: holds {what} at "
                                f"index {found.start()}")
        elif isinstance(value, list):
            stack.extend((f"{where}[{i}]", item)
                         for i, item in enumerate(value))
        elif isinstance(value, dict):
            stack.extend((f"{where}.{key}", item)
                         for key, item in value.items())
    return sorted(problems)


def _hint(spec: ToolSpec) -> str:
    return (f"Fix the arguments: `acor show {spec.name}` shows the tool's "
            "arguments and their types.")

"""A run's ``next`` (an acor command line) as the MCP tool call that does
the same: what an agent connected over MCP can make, where a shell command
would ask it to leave the protocol.

``acor wc-sh -- a.txt`` becomes ``{"name": "wc-sh", "arguments":
{"files": ["a.txt"]}}``; ``acor pytest --lf tests`` (a tool without an
argument schema) ``{"name": "pytest", "arguments": {"argv": ["--lf",
"tests"]}}``. A command no call can make (a built-in such as ``acor show``,
an option of acor's own such as ``--timeout``, a tool this server does not
serve, arguments its schema refuses) has no call: the text then gives the
command, saying it is one for a shell.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Sequence
from typing import Any

from acor.args import HelpRequested, UsageError

from acor.cli.arguments import argv_values
from acor.cli.discovery.spec import ToolSpec
from acor.cli.mcp.tools import ServedTools

#: acor's options that change nothing an MCP call could: how the output is
#: written and whether a person may be asked (the server decides both).
_PRESENTATION = {"--format": 1, "--no-input": 0}


def tool_call(argv: Sequence[str], served: ServedTools
              ) -> dict[str, Any] | None:
    """The tool call for ``argv`` (``["acor", ...]``), or None when it
    names no tool of ``served``."""
    words = list(argv)
    if not words or words[0] != "acor":
        return None
    i = 1
    while i < len(words) and words[i].startswith("-"):
        flag = words[i].split("=", 1)[0]
        if flag not in _PRESENTATION:
            return None  # e.g. --timeout: set by the server, not a call
        i += 1 if "=" in words[i] else 1 + _PRESENTATION[flag]
    if i >= len(words):
        return None
    spec = served.get(words[i])
    if spec is None:
        return None
    rest = words[i + 1:]
    if not spec.args_schema:
        return {"name": spec.name, "arguments": {"argv": rest}}
    arguments = _arguments(spec, rest)
    if arguments is None:
        return None
    return {"name": spec.name, "arguments": arguments}


def _arguments(spec: ToolSpec, argv: list[str]) -> dict[str, Any] | None:
    """``argv`` as the call's arguments: the values its schema parses from
    it, leaving out what was not given (the schema's defaults apply)."""
    try:
        values = argv_values(spec, argv)
    except (UsageError, HelpRequested):  # --help: the inputSchema says it
        return None
    return {name: value for name, value in values.items()
            if not (value is None or value is False or value == [])}


def next_text(label: str, argv: Sequence[str],
              served: ServedTools | None) -> str:
    """The line that says what to do next: the tool call, when there is
    one, else the command and that it is one for a shell."""
    call = tool_call(argv, served) if served is not None else None
    if call is not None:
        return f"{label} call: " + json.dumps(call, ensure_ascii=False)
    return f"{label} command (in a shell: no tool call does this): " + \
        shlex.join(argv)

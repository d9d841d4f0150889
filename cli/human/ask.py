"""Input Needed at a terminal: ask the person, then run again.

When a run ends with ``## Input Needed`` that names its ``fields`` and
acor's rich view is on a terminal, acor asks for each field (typed,
with its description, default and choices) and runs the ``next`` command
with the answers in place of its ``<NAME>`` placeholders. ``--no-input``
turns this off; so does a stdin that is not a terminal. A question for a
person (``audience: human``) is exactly what this is for.
"""

from __future__ import annotations

import sys

import click

MAX_ROUNDS = 5  # a tool that asks again and again is not looping acor


def ask_and_rerun(result, name, options, words) -> int:
    from acor.cli.main import run_named
    rounds = 0
    while (result.state == "input_needed" and result.fields and
           result.next and sys.stdin.isatty() and rounds < MAX_ROUNDS):
        rounds += 1
        try:
            answers = {field: _ask(field, spec)
                       for field, spec in result.fields.items()}
        except (click.Abort, EOFError):
            return result.exit_code
        argv = fill(result.next, answers)
        if argv[:1] != ["acor"] or name not in argv:
            return result.exit_code  # a next command that is not a rerun
        args = argv[argv.index(name) + 1:]
        code, result = run_named(name, args, options, words,
                                 with_result=True)
    return result.exit_code


def fill(argv: list[str], answers: dict) -> list[str]:
    """``argv`` with each ``<NAME>`` placeholder replaced by its answer; a
    boolean answered no drops the flag before it."""
    filled: list[str] = []
    for word in argv:
        key = word[1:-1].lower() if word.startswith("<") and \
            word.endswith(">") else None
        if key is not None and key in answers:
            filled.append(str(answers[key]))
        else:
            filled.append(word)
    return filled


def _ask(field: str, spec) -> object:
    spec = spec if isinstance(spec, dict) else {}
    kind = spec.get("type", "string")
    prompt = field + (f" ({spec['description']})" if spec.get("description")
                      else "")
    if "enum" in spec:
        choice = click.Choice([str(v) for v in spec["enum"]])
        return click.prompt(prompt, type=choice, default=spec.get("default"))
    types = {"integer": int, "number": float, "boolean": bool}
    return click.prompt(prompt, type=types.get(kind, str),
                        default=spec.get("default"))

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

from acor.cli.run.named import run_named

TYPE_CHECKING = False  # typing costs every run ~3 ms: only mypy
if TYPE_CHECKING:
    from acor.cli.run.result import RunResult
    from acor.cli.signals import EarlySignals

MAX_ROUNDS = 5  # a tool that asks again and again is not looping acor


def run_and_ask(name: str, args: list[str], options: dict,
                words: list[str], early: EarlySignals) -> int:
    """``acor NAME ARGS``: run the tool (:func:`run_named`); when it ends
    Input Needed in the rich view at a terminal, ask and run it again.
    Returns the exit code."""
    result, fmt = run_named(name, args, options, words, early)
    if fmt == "rich" and result.state == "input_needed" and \
            not options.get("no_input"):
        return ask_and_rerun(
            result, name,
            lambda again: run_named(name, again, options, words, early)[0])
    return result.exit_code


def ask_and_rerun(result: RunResult, name: str, rerun) -> int:
    """Ask for the fields ``result`` names and ``rerun(args)`` with the
    answers, until the tool asks no more; the last exit code."""
    import click  # only a person at a terminal waits for it
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
        result = rerun(argv[argv.index(name) + 1:])
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
    import click
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

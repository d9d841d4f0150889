"""Input Needed at a terminal: ask the person, then run again.

When a run ends with ``## Input Needed`` that names its ``fields`` and
acor's rich view is on a terminal, acor shows the request (the tool, the
exact command, the tool's reason: :mod:`acor.cli.approval`) and asks
for each field once (typed; a secret with hidden input), then runs the
same command again with the answers: an argument the command line carries
is put in its place (a boolean answered no is left out), an argument only
a person may give goes on its own channel (:mod:`acor.human`), never on
the command line. What the person answers is what the tool gets: ``n``,
``no`` and ``false`` are false. Ctrl-C or Ctrl-D at a question refuses:
the run ends there and the tool is not run again. ``--no-input`` turns
asking off; so does a stdin that is not a terminal.
"""

from __future__ import annotations

import signal
import time
from contextlib import contextmanager

from acor.layout import choice_values

from acor.cli.approval import (APPROVAL_TTL, Field, command_text,
                               field_prompt, fields_of, request_lines,
                               safe_line)
from acor.cli.signals import (HANDLED, end_python_interrupts,
                              raise_dropped_interrupts)

TYPE_CHECKING = False  # typing costs every run ~3 ms: only mypy
if TYPE_CHECKING:
    from typing import Any, Callable, Iterator, NoReturn, Sequence

    from acor.cli.run.result import RunResult


def not_asked(name: str, args: list[str], words: list[str]) -> None:
    """``--no-input`` at a terminal: what the person does to be asked,
    then the run's final status."""
    from acor.cli.output.rich_view import person_console, status_line
    command = ["acor", *[w for w in words if w != "--no-input"], name, *args]
    console = person_console()
    console.print(f"Needs your input: run {command_text(command)} without "
                  "--no-input to be asked, or give the values above as "
                  "arguments.", markup=False, highlight=False)
    console.print(status_line("input needed", safe_line(name)))


def ask_and_rerun(result: RunResult, name: str, args: list[str],
                  rerun: Callable[[list[str], dict[str, Any]], RunResult],
                  words: Sequence[str] = ()) -> int:
    """Ask for the fields ``result`` names and ``rerun(argv, human)`` with
    the answers, each field asked once; the last exit code. ``words``:
    the global options, for the command shown before each rerun."""
    import click  # only a person at a terminal waits for it
    asked: set[str] = set()
    while result.state == "input_needed" and result.fields:
        fields = fields_of(result.fields, result.args_schema)
        again = [f.name for f in fields if f.name in asked]
        if again:
            say(f"{name} asked again for {', '.join(again)}, already "
                "answered in this run: not asking twice. The run ends "
                "here.")
            return result.exit_code
        try:
            with _interruptible():
                for line in _request(result, name, args, fields):
                    click.echo(line)
                shown = time.monotonic()
                answers = {f.name: _ask(f) for f in fields}
        except (click.Abort, EOFError, KeyboardInterrupt):
            click.echo("")  # off the line the question is on (stdout)
            say(f"Not answered: {name} was not run again, and nothing "
                "was approved.")
            return result.exit_code
        if time.monotonic() - shown > APPROVAL_TTL:
            say(f"The request expired ({APPROVAL_TTL // 60} minutes): "
                f"{name} was not run again. Run the command again to be "
                "asked anew.")
            return result.exit_code
        asked.update(answers)
        human = {f.name: answers[f.name] for f in fields if f.human}
        args = with_answers(fill(_rerun_args(result, name, args, fields),
                                 answers), fields, answers)
        click.echo("→ running " + command_text(
            ["acor", *words, name, *_masked(args, fields, answers)]))
        result = rerun(args, human)
    return result.exit_code


def _request(result: RunResult, name: str, args: list[str],
             fields: list[Field]) -> list[str]:
    """What a person reads before the questions, beyond the rich view's
    Input Needed panel (which said the reason and each field): for an
    answer only a person may give, the request that says what is
    approved (:func:`cli.approval.request_lines`, its reason included);
    for an ordinary one, nothing more."""
    lines = request_lines(name, result.version, ["acor", name, *args],
                          result.message or "", fields, result.audience)
    return [] if lines[0].endswith(" needs input:") else lines


def _masked(args: list[str], fields: list[Field], answers: dict[str, Any]
            ) -> list[str]:
    """``args`` as shown to the person: a secret answer the command line
    carries is shown as ****."""
    secrets = {str(answers[f.name]) for f in fields
               if f.secret and f.name in answers}
    return ["****" if word in secrets else
            word.split("=", 1)[0] + "=****"
            if "=" in word and word.split("=", 1)[1] in secrets else word
            for word in args]


@contextmanager
def _interruptible() -> Iterator[None]:
    """While a person is asked, Ctrl-C (or a SIGTERM, SIGHUP) ends the
    question at once: acor's own handlers (:mod:`cli.entry`) only note a
    signal for the run to come, which would leave the prompt waiting and
    cancel the run the answer starts."""
    def refuse(signum: int, frame: object) -> NoReturn:
        raise KeyboardInterrupt
    previous = {signum: signal.signal(signum, refuse) for signum in HANDLED}
    raise_dropped_interrupts()
    try:
        yield
    finally:
        end_python_interrupts()
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _rerun_args(result: RunResult, name: str, args: list[str],
                fields: list[Field]) -> list[str]:
    """The arguments to run again with: the tool's own ``next`` when it
    runs this tool again (``acor ... NAME ...``), else the same ones. A
    word of the tool's ``next`` that would give a human-only argument
    (``--yes``) is dropped: what the person answered is what counts."""
    argv = result.asked_next or []
    if argv[:1] != ["acor"] or name not in argv:
        return list(args)
    given = {"--" + spelling for f in fields if f.human
             for spelling in (f.name, f.name.replace("_", "-"))}
    return [word for word in argv[argv.index(name) + 1:]
            if word.split("=", 1)[0] not in given]


def fill(argv: list[str], answers: dict[str, Any]) -> list[str]:
    """``argv`` with each ``<NAME>`` placeholder replaced by its answer
    (booleans and flags are placed by :func:`with_answers`)."""
    filled: list[str] = []
    for word in argv:
        key = word[1:-1].lower() if word.startswith("<") and \
            word.endswith(">") else None
        if key is not None and key in answers and \
                not isinstance(answers[key], bool):
            filled.append(str(answers[key]))
        else:
            filled.append(word)
    return filled


def with_answers(args: list[str], fields: list[Field], answers: dict[str, Any]
                 ) -> list[str]:
    """``args`` with each answer a command-line argument carries: a flag
    and its value (a boolean: the flag, or nothing for false), in front of
    the ``--`` that starts positional values; a field the command line
    cannot carry (human-only, or not an argument of the tool) is not
    added. The same flag given before is replaced."""
    head, tail = (args[:args.index("--")], args[args.index("--"):]) \
        if "--" in args else (list(args), [])
    for field in fields:
        if field.human or not field.flag or field.name not in answers:
            continue
        head = _without(head, field.flag, field.kind == "boolean")
        value = answers[field.name]
        if field.kind == "boolean":
            head += [field.flag] if value else []
        elif isinstance(value, list):  # the flag before each item
            for item in map(str, value):
                head += [f"{field.flag}={item}"] if item.startswith("-") \
                    else [field.flag, item]
        else:
            text = str(value)
            head += [f"{field.flag}={text}"] if text.startswith("-") else \
                [field.flag, text]
    return head + tail


def _without(words: list[str], flag: str, presence: bool) -> list[str]:
    kept, i = [], 0
    while i < len(words):
        word = words[i]
        if word == flag:
            i += 1 if presence else 2
            continue
        if word.startswith(flag + "="):
            i += 1
            continue
        kept.append(word)
        i += 1
    return kept


def say(text: str) -> None:
    import click
    click.echo(text, err=True)


YES = ("y", "yes", "true", "1")
NO = ("n", "no", "false", "0")


def _ask(field: Field) -> object:
    """One question, asked until its answer is one the field takes; each
    wrong answer says why in one style (``  ✗ ...``)."""
    import click
    prop = field.prop
    # The whole question on its line: the field, its type and description,
    # its choices or range, its default (click adds "[default]").
    label = field_prompt(field)
    if isinstance(prop.get("enum"), list):
        label += " (" + ", ".join(safe_line(v) for v in prop["enum"]) + ")"
    elif _range(prop):
        label += f" ({_range(prop)})"
    if field.kind == "boolean":
        label += " [y/n]"
    if field.kind == "array":
        return _ask_list(field, label)
    default = None if field.human else prop.get("default")
    while True:
        if field.secret:
            raw = _secret(label)
        else:
            shown = None if default is None else str(default)
            raw = click.prompt(label, default=shown, show_default=True,
                               type=str)
        value, problem = answer_of(prop, field.kind, raw)
        if problem is None:
            return value
        click.echo(f"  ✗ {problem}", err=True)


def answer_of(prop: dict[str, Any], kind: str, raw: str
              ) -> tuple[object, str | None]:
    """What the person typed as the field's value, or why it is not one:
    a boolean from yes/no (and true/false, 1/0), a choice whatever its
    case when only one matches, a number in its range."""
    text = raw.strip()
    if kind == "boolean":
        if text.lower() in YES or text.lower() in NO:
            return text.lower() in YES, None
        return None, "Answer yes or no (y, n, true, false, 1, 0 work too)."
    choices = prop.get("enum")
    if isinstance(choices, list):
        same = [v for v in choices if str(v) == text] or \
            [v for v in choices if str(v).lower() == text.lower()]
        if len(same) == 1:
            return same[0], None
        return None, ("Choose one of: " +
                      ", ".join(safe_line(v) for v in choices) + ".")
    value: object = raw
    if kind in ("integer", "number"):
        try:
            value = int(text) if kind == "integer" else float(text)
        except ValueError:
            what = "a whole number" if kind == "integer" else "a number"
            return None, f"{safe_line(text)!r} is not {what}."
    problem = _problem(prop, value)
    return (value, None) if problem is None else \
        (None, problem[0].upper() + problem[1:].rstrip(".") + ".")


def _range(prop: dict[str, Any]) -> str:
    low, high = prop.get("minimum"), prop.get("maximum")
    if low is not None and high is not None:
        return f"from {safe_line(low)} to {safe_line(high)}"
    if low is not None:
        return f"at least {safe_line(low)}"
    return "" if high is None else f"at most {safe_line(high)}"


def _ask_list(field: Field, prompt: str) -> list[str]:
    """A multi-select field (SEP-1330), answered as a comma-separated list
    of its choices."""
    import click
    items = field.prop.get("items")
    choices = choice_values(items if isinstance(items, dict) else {})
    shown = ", ".join(safe_line(c) for c in choices)
    while True:
        text = click.prompt(f"{prompt}\n  answer with a list, comma-"
                            f"separated, of: {shown}")
        values = [v.strip() for v in str(text).split(",") if v.strip()]
        if values and all(v in choices for v in values):
            return values
        click.echo(f"  ✗ That is not a list of its choices: answer with "
                   f"some of {shown}, separated by commas.", err=True)


def _secret(prompt: str) -> str:
    """A secret, typed unseen. getpass turns the terminal's echo off
    before it writes the prompt, so nothing typed after the prompt shows
    (some click versions write the prompt first); an empty answer is
    asked again."""
    import getpass
    while True:
        value = getpass.getpass(prompt + ": ")
        if value:
            return value


def _problem(prop: dict[str, Any], value: object) -> str | None:
    from acor.args import value_problems
    clean = {k: v for k, v in prop.items()
             if k in ("type", "enum", "minimum", "maximum")}
    if clean.get("type") not in ("string", "integer", "number", "boolean"):
        return None
    problems = value_problems("", clean, value)
    return problems[0][2:] if problems else None

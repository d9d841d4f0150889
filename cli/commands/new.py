"""``acor new NAME [--dir DIR] [--wrap "PROGRAM ARGS..."] [--approval]
[--function]``: start a tool.

Without ``--wrap``: a tool folder that works as it is, to change into your
own: ``manifest.json`` (with an ``args`` schema and ``examples``),
``cli.py`` (``tool.parse_args()``, progress per chunk, ``tool.fail``), a
``sample.txt`` for the examples and ``test_NAME.py`` (the ``acor_run``
fixture). It passes ``acor check NAME`` and its own tests unedited.

With ``--approval``: a tool folder whose dangerous step waits for a
person (an argument only a person may give), with its tests.

With ``--wrap``: a wrapper manifest ``NAME.json`` for a plain program.

With ``--function``: ``NAME.py``, one typed ``@tool`` function (its schema
read from the signature, :mod:`acor.cli.discovery.functions`), and
``test_NAME.py`` beside it; both pass as they are.

Nothing is overwritten; the next commands are printed.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil

import click

from acor import exitcodes

from acor.cli.command_names import BUILTIN_COMMANDS
from acor.cli.commands.function_template import function_files
from acor.cli.discovery.config import Config, ConfigError, load_config

_NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}\Z")

SAMPLE = ("The quick brown fox\n"
          "jumps over\n"
          "the lazy dog.\n")


def name_problem(name: str) -> str | None:
    """Why ``name`` cannot be a tool's name, or None."""
    if not _NAME.match(name):
        return (f"{name!r} is not a tool name: use 1-64 lowercase letters, "
                "digits, '-' or '_', starting with a letter or digit (like "
                '"my-tool")')
    if name in BUILTIN_COMMANDS:
        return f"{name!r} is an acor command, so `acor {name}` could never " \
               "run the tool"
    return None


def default_dir(config: Config) -> str:
    """Where new tools go: the project's ``tools`` dir when it is one of
    its tools dirs, else the first tools dir."""
    tools = os.path.join(config.root, "tools")
    dirs = list(config.tools_dirs)
    return tools if tools in dirs or not dirs else dirs[0]


def _manifest(name: str) -> dict[str, object]:
    return {
        "name": name,
        "version": "0.1.0",
        "description": "Count the lines, words and bytes of a text file",
        "entry": "cli.py",
        "args": {
            "type": "object",
            "properties": {
                "path": {"type": "string",
                         "description": "The file to count",
                         "x-acor": {"position": 0}},
                "lines_only": {"type": "boolean",
                               "description": "Count only the lines",
                               "x-acor": {"flag": "--lines-only"}},
            },
            "required": ["path"],
            "additionalProperties": False,
        },
        "examples": [
            {"description": "Count the sample",
             "args": {"path": "sample.txt"}, "exit_code": 0,
             "events": ["status", "progress", "output_data", "status"]},
            {"description": "A missing file fails with E_FILE_NOT_FOUND",
             "args": {"path": "no-such-file.txt"}, "exit_code": 1,
             "events": ["error"]},
            {"description": "An unknown option is a usage error",
             "args": ["--no-such-option"], "exit_code": 2},
        ],
        "annotations": {"readOnlyHint": True, "destructiveHint": False,
                        "idempotentHint": True, "openWorldHint": False},
        # The least it needs, enforced by the kernel: it reads the file it
        # is given and writes nothing (but its temp dir); no network.
        "sandbox": {"write": [], "network": False},
    }


_CLI = '''\
"""{name}: count the lines, words and bytes of a text file.

Made by `acor new {name}`: a working ACOR tool to turn into your own.

Its arguments are declared once, in manifest.json ("args"): from them acor
checks a call before running it and shows the usage, and tool.parse_args()
parses the command line. The manifest's "examples" are what `acor check`
runs and checks:

    acor {name} sample.txt
    acor call {name} '{{"path": "sample.txt"}}'
    acor show {name}
    acor check {name}
"""

import os

from acor import AcorTool

CHUNK = 1 << 20  # report progress per chunk read, not per line


def count(tool, path, size):
    lines = words = done = 0
    in_word = False
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(CHUNK), b""):
            lines += chunk.count(b"\\n")
            words += len(chunk.split())
            if in_word and not chunk[:1].isspace():
                words -= 1  # one word cut in two by the chunk boundary
            in_word = not chunk[-1:].isspace()
            done += len(chunk)
            tool.progress_bar(done, size, "Reading")
    return {{"lines": lines, "words": words, "bytes": done}}


def main():
    with AcorTool() as tool:
        # A wrong call ends here: an E_USAGE error with the usage, exit 2.
        args = tool.parse_args()
        if not os.path.isfile(args.path):
            # fail() reports the error and ends the run: Failed, exit 1.
            tool.fail("E_FILE_NOT_FOUND", f"No such file: {{args.path}}",
                      recovery="Check the path (a relative path starts "
                      "from the current directory), then run it again.")
        try:
            counts = count(tool, args.path, os.path.getsize(args.path))
        except OSError as exc:
            tool.fail("E_FILE_READ", f"Cannot read {{args.path}}: "
                      f"{{exc.strerror}}", recovery="Check the file's "
                      "permissions, then run it again.")
        if args.lines_only:
            counts = {{"lines": counts["lines"]}}
        tool.output({{"path": args.path, **counts}})


if __name__ == "__main__":
    main()
'''

_TEST = '''\
"""Tests for {name}, run as an agent runs it: through acor.

acor_run comes with acor (a pytest plugin): it runs the tool through the
launcher and returns the result: .exit_code, .state, .events, .data (the
last Output Data), .errors, .stderr, .duration and .of(event_type).
"""

from pathlib import Path

TOOL = Path(__file__).resolve().parent  # the tool, wherever pytest runs


def test_counts_the_sample(acor_run):
    result = acor_run(TOOL, args={{"path": "sample.txt"}}, cwd=TOOL)
    assert result.exit_code == 0, result.errors
    assert result.state == "complete"
    assert result.data == {{"path": "sample.txt", "lines": {lines},
                           "words": {words}, "bytes": {bytes}}}
    assert result.of("progress")[-1].percent == 100


def test_lines_only(acor_run):
    result = acor_run(TOOL, "--lines-only", "sample.txt", cwd=TOOL)
    assert result.data == {{"path": "sample.txt", "lines": {lines}}}


def test_a_missing_file_fails_with_its_code(acor_run):
    result = acor_run(TOOL, "no-such-file.txt", cwd=TOOL)
    assert result.exit_code == 1
    assert [error.code for error in result.errors] == ["E_FILE_NOT_FOUND"]


def test_a_wrong_call_is_a_usage_error(acor_run):
    result = acor_run(TOOL, "--no-such-option", cwd=TOOL)
    assert result.exit_code == 2
    assert result.errors[0].code == "E_USAGE"
'''


def _approval_manifest(name: str) -> dict[str, object]:
    return {
        "name": name,
        "version": "0.1.0",
        "description": "Delete a file, once a person approves",
        "entry": "cli.py",
        "args": {
            "type": "object",
            "properties": {
                "path": {"type": "string",
                         "description": "The file to delete",
                         "x-acor": {"position": 0}},
                # Only a person gives it: never the command line, acor
                # call or MCP arguments. "level": "high" would keep it
                # out of MCP clients' forms too.
                "yes": {"type": "boolean",
                        "description": "Delete it for good",
                        "x-acor": {"human": True}},
            },
            "required": ["path"],
            "additionalProperties": False,
        },
        "examples": [
            {"description": "Without a person to approve, it asks and "
                            "deletes nothing",
             "args": {"path": "sample.txt"}, "exit_code": 3,
             "events": ["input_needed"]},
        ],
        "annotations": {"readOnlyHint": False, "destructiveHint": True,
                        "idempotentHint": False, "openWorldHint": False},
        # It deletes files in the project, nowhere else; no network.
        "sandbox": {"write": ["."], "network": False},
    }


_APPROVAL_CLI = '''\
"""{name}: delete a file, once a person approves.

Made by `acor new {name} --approval`: a tool whose one dangerous step
waits for a person. Its argument "yes" is marked in manifest.json as one
only a person may give ("x-acor": {{"human": true}}): acor never takes it
from the command line, from `acor call` or from MCP arguments. When it is
missing, the tool asks (input_needed, audience "human"); acor asks the
person at a terminal, or an MCP client's user, and runs the tool again
with their answer. An agent that cannot ask a person is told to hand the
command to one.

    acor {name} sample.txt       # asks you, at a terminal
"""

import os

from acor import AcorTool


def main():
    with AcorTool() as tool:
        args = tool.parse_args()
        if not os.path.isfile(args.path):
            tool.fail("E_FILE_NOT_FOUND", f"No such file: {{args.path}}",
                      recovery="Check the path, then run it again.")
        if args.yes is None:  # no person has answered yet
            tool.input_needed(
                f"Delete {{args.path}} ({{os.path.getsize(args.path)}} "
                "bytes)? It cannot be undone.",
                fields={{"yes": {{"type": "boolean",
                                 "description": "Delete it for good"}}}},
                audience="human")
        if not args.yes:
            tool.output(f"Kept {{args.path}}: the person said no.")
            return
        os.remove(args.path)
        tool.output(f"Deleted {{args.path}}.")


if __name__ == "__main__":
    main()
'''

_APPROVAL_TEST = '''\
"""Tests for {name}: the test plays the person (acor_run's human=)."""

import shutil
from pathlib import Path

TOOL = Path(__file__).resolve().parent


# In the project, where the tool's box lets it write: not in its own
# folder (a box never writes the tools dirs).
SCRATCH = TOOL.parent.parent / "scratch"


def copy(tmp_path):
    SCRATCH.mkdir(exist_ok=True)
    doomed = SCRATCH / f"doomed-{{tmp_path.name}}.txt"
    shutil.copy(TOOL / "sample.txt", doomed)
    return doomed


def teardown_function():
    for left in SCRATCH.glob("doomed-*.txt"):
        left.unlink()


def test_without_a_person_it_asks_and_deletes_nothing(acor_run, tmp_path):
    doomed = copy(tmp_path)
    result = acor_run(TOOL, str(doomed))
    assert result.state == "input_needed" and result.exit_code == 3
    assert result.audience == "human" and result.next is None
    assert doomed.exists()


def test_a_persons_no_keeps_the_file(acor_run, tmp_path):
    doomed = copy(tmp_path)
    result = acor_run(TOOL, str(doomed), human={{"yes": False}})
    assert result.exit_code == 0 and doomed.exists()


def test_a_persons_yes_deletes_it(acor_run, tmp_path):
    doomed = copy(tmp_path)
    result = acor_run(TOOL, str(doomed), human={{"yes": True}})
    assert result.exit_code == 0 and not doomed.exists()


def test_an_agent_cannot_approve(acor_run, tmp_path):
    doomed = copy(tmp_path)
    result = acor_run(TOOL, str(doomed), "--yes")
    assert result.exit_code == 2 and doomed.exists()
'''


def approval_files(name: str) -> dict[str, str]:
    """The files of a new tool that asks a person before it acts."""
    return {
        "manifest.json": json.dumps(_approval_manifest(name), indent=2)
        + "\n",
        "cli.py": _APPROVAL_CLI.format(name=name),
        "sample.txt": SAMPLE,
        f"test_{name.replace('-', '_')}.py": _APPROVAL_TEST.format(
            name=name),
    }


def tool_files(name: str) -> dict[str, str]:
    """The files of a new tool folder: relative path -> text."""
    data = SAMPLE.encode()
    counts = {"lines": data.count(b"\n"), "words": len(data.split()),
              "bytes": len(data)}
    return {
        "manifest.json": json.dumps(_manifest(name), indent=2) + "\n",
        "cli.py": _CLI.format(name=name),
        "sample.txt": SAMPLE,
        f"test_{name.replace('-', '_')}.py": _TEST.format(name=name,
                                                          **counts),
    }


def wrapper_manifest(name: str, argv: list[str]) -> dict[str, object]:
    return {
        "name": name,
        "description": f"Run {shlex.join(argv)}",
        "command": argv,
        "usage": f"acor {name} [ARGS...]   runs: {shlex.join(argv)} "
                 "[ARGS...]",
        "examples": [{"description": "Run it with no more arguments",
                      "args": [], "exit_code": 0}],
        # Write the project only, no network: widen it if the program
        # needs more ("network": true, more "write" paths).
        "sandbox": {"write": ["."], "network": False},
    }


def _shown(path: str) -> str:
    """``path`` relative to the current directory when under it."""
    rel = os.path.relpath(path)
    return path if rel.startswith(os.pardir) else rel


def _refuse(title: str, recovery: str) -> int:
    from acor.cli.errors import UsageError
    from acor.cli.output.person import report_error as report
    return report(UsageError(title, recovery), None)


@click.command("new")
@click.argument("name")
@click.option("--dir", "directory", type=click.Path(file_okay=False),
              help="The tools dir to create it in (default: the project's "
                   "tools/).")
@click.option("--wrap", metavar='"PROGRAM ARGS..."',
              help="Write a wrapper manifest for this plain program "
                   "instead of a tool folder.")
@click.option("--approval", is_flag=True,
              help="A tool whose dangerous step waits for a person's "
                   "approval (an argument only a person may give).")
@click.option("--function", is_flag=True,
              help="A function tool: one typed Python function in NAME.py "
                   "(its schema read from the signature), and its test.")
def new_command(name: str, directory: str | None, wrap: str | None,
                approval: bool = False, function: bool = False) -> int:
    """Create tool NAME: a working tool folder (manifest with args and
    examples, cli.py, a test) or, with --wrap, a wrapper manifest. Nothing
    is overwritten."""
    problem = name_problem(name)
    conflict = _conflict(name, wrap, approval, function)
    if conflict is not None:
        return conflict
    if problem is not None:
        return _refuse(f"Cannot create tool: {problem}",
                       "Choose another name, e.g. `acor new my-tool`.")
    try:
        config = load_config()
    except ConfigError as exc:
        from acor.cli.errors import config_error
        from acor.cli.output.person import report_error as report
        return report(config_error(exc), None)
    tools_dir = os.path.abspath(directory or default_dir(config))
    argv = None
    if wrap is not None:
        try:
            argv = shlex.split(wrap)
        except ValueError as exc:
            return _refuse(f"Cannot read --wrap {wrap!r}: {exc}",
                           'Quote it as a shell would: --wrap "ruff check".')
        if not argv:
            return _refuse("--wrap needs a program", 'For example: '
                           f'acor new {name} --wrap "ruff check".')
    if function:
        return _new_function(name, tools_dir, config)
    target = os.path.join(tools_dir, name + (".json" if argv else ""))
    for existing in (os.path.join(tools_dir, name),
                     os.path.join(tools_dir, name + ".json")):
        if os.path.lexists(existing):
            return _refuse(f"{_shown(existing)} already exists",
                           "Nothing was written. Choose another name, or "
                           "remove it first if you mean to start over.")
    os.makedirs(tools_dir, exist_ok=True)
    if argv:
        _create_wrapper(target, name, argv)
    else:
        _create_folder(target, name, approval)
    _say_next(tools_dir in config.tools_dirs, tools_dir, target, name,
              None if argv else target)  # a wrapped program has no test
    return exitcodes.OK


def _create_wrapper(target: str, name: str, argv: list[str]) -> None:
    _write(target, json.dumps(wrapper_manifest(name, argv), indent=2)
           + "\n")
    click.echo(f"Created {_shown(target)}: a wrapper for "
               f"{shlex.join(argv)}.")
    if shutil.which(argv[0]) is None and argv[0] != "{python}":
        click.echo(f"warning: {argv[0]} is not on PATH here; the "
                   "example will fail until it is.")


def _create_folder(target: str, name: str, approval: bool) -> None:
    os.mkdir(target)
    files = approval_files(name) if approval else tool_files(name)
    for rel, text in files.items():
        _write(os.path.join(target, rel), text)
    click.echo(f"Created {_shown(target)}/: manifest.json (name, args, "
               "examples), cli.py, sample.txt and "
               f"test_{name.replace('-', '_')}.py.")


def _say_next(found: bool, tools_dir: str, target: str, name: str,
              test: str | None) -> None:
    """What to run next: check the tool (``target``), run its ``test``; a
    warning when ``tools_dir`` is not one this project searches (not
    ``found``)."""
    if not found:
        click.echo(f"warning: {_shown(tools_dir)} is not one of this "
                   "project's tools dirs, so `acor " + name + "` will not "
                   "find it: add it to tools_dirs in .acor/config.yaml.")
    click.echo("Next:")
    click.echo("  acor check " + (name if found else
                                  shlex.quote(_shown(target))))
    if test is not None:
        click.echo("  " + _test_command(test))


def _conflict(name: str, wrap: str | None, approval: bool,
              function: bool) -> int | None:
    """The refusal of options that do not go together, or None."""
    if approval and wrap is not None:
        return _refuse("--approval and --wrap do not go together: a wrapped "
                       "program cannot read a person's answer",
                       f"Run `acor new {name} --approval` for a tool folder.")
    if function and (approval or wrap is not None):
        return _refuse("--function does not go with --approval or --wrap",
                       f"Run `acor new {name} --function` alone.")
    return None


def _new_function(name: str, tools_dir: str, config: Config) -> int:
    """Write a function tool and its test into ``tools_dir``."""
    files = function_files(name)
    for rel in (*files, name, name + ".json"):
        existing = os.path.join(tools_dir, rel)
        if os.path.lexists(existing):
            return _refuse(f"{_shown(existing)} already exists",
                           "Nothing was written. Choose another name, or "
                           "remove it first if you mean to start over.")
    os.makedirs(tools_dir, exist_ok=True)
    for rel, text in files.items():
        _write(os.path.join(tools_dir, rel), text)
    source, test = (os.path.join(tools_dir, rel) for rel in files)
    click.echo(f"Created {_shown(source)} (the tool: one typed function) "
               f"and {_shown(test)}.")
    _say_next(tools_dir in config.tools_dirs, tools_dir, source, name, test)
    return exitcodes.OK


def _test_command(target: str) -> str:
    """How to run the new tool's test: with the pytest of acor's own
    interpreter, the one its fixture acor_run is registered in (a pytest
    elsewhere on PATH would not find it). acor does not install pytest:
    when it is missing there, say so and how to add it."""
    import sys
    from importlib.util import find_spec
    python = sys.executable
    run = shlex.join([python, "-m", "pytest", _shown(target)])
    if find_spec("pytest") is not None:
        return run
    return (f"(its test needs pytest, which acor does not install: "
            f"{shlex.join([python, '-m', 'pip', 'install', 'pytest'])}, "
            f"then {run})")


def _write(path: str, text: str) -> None:
    # "x": never replace a file that appeared since the check above.
    with open(path, "x", encoding="utf-8") as f:
        f.write(text)

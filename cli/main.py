"""The ``acor`` command: parse the global options, then run a tool
(:func:`acor.cli.terminal.named.run_and_ask`) or hand a built-in command to the
click application (:mod:`acor.cli.commands.app`).

``acor <tool> args`` is the hot path an agent pays for on every call, so its
options are parsed here by hand, and none of click, rich, yaml or filelock
is imported unless it must be (a changed config needs yaml, ``--format
rich`` needs rich).
"""

from __future__ import annotations

import os
import sys

from acor import exitcodes

from acor.cli.command_names import BUILTIN_COMMANDS
from acor.cli.durations import check_seconds
from acor.cli.errors import LauncherError, UsageError
from acor.cli.exiting import leave
from acor.cli.output.formats import FORMATS
from acor.cli.output.person import report_error
from acor.cli.signals import EarlySignals, interrupt_as_python_does
from acor.cli.sizes import parse_size

TYPE_CHECKING = False  # typing costs every run ~3 ms: only mypy
if TYPE_CHECKING:
    from typing import Any, BinaryIO, Optional, Sequence

    Options = dict[str, Any]           # option key -> its value
    Where = dict[str, tuple[int, str]]  # option key -> (argv index, prefix)

_VALUED = {"--format": "format", "--timeout": "timeout",
           "--idle-timeout": "idle_timeout", "--config": "config",
           "--max-output": "max_output"}


def split_options(argv: list[str]
                  ) -> tuple[Options, list[str], list[str]]:
    """Global options before the tool name, and the rest verbatim.

    Everything after the tool name belongs to the tool, ``--help``
    included. An option we do not know ends the scan: click reports it.
    Returns (options, the option words as given, the rest). A missing or
    bad value is a UsageError whose ``next`` is ``argv`` itself with just
    that value given or corrected, safe to run as is.
    """
    options: Options = {}
    words: list[str] = []
    where: Where = {}
    i = 0
    while i < len(argv):
        arg = argv[i]
        name, eq, value = arg.partition("=")
        if arg == "--no-input":
            options["no_input"] = True
            words.append(arg)
            i += 1
            continue
        if arg in ("--sandbox", "--no-sandbox"):
            options["sandbox"] = "default" if arg == "--sandbox" else "off"
            words.append(arg)
            i += 1
            continue
        if name not in _VALUED:
            break
        if not eq:
            if not _takes_next(argv, i):
                # `acor --timeout`, `acor --timeout --format json x`,
                # `acor --timeout mcp`: the value is missing.
                raise UsageError(f"Option {name} needs a value",
                                 "Give it one, as in the command below.",
                                 next=["acor", *argv[:i + 1],
                                       _EXAMPLES[name], *argv[i + 1:]])
            value = argv[i + 1]
            where[_VALUED[name]] = (i + 1, "")
            i += 1
        else:
            where[_VALUED[name]] = (i, name + "=")
        options[_VALUED[name]] = value
        words += [name, value]
        i += 1
    return _check_options(options, argv, where), words, argv[i:]


_EXAMPLES = {"--format": "json", "--timeout": "60", "--idle-timeout": "30",
             "--config": ".acor/config.yaml", "--max-output": "64k"}
_FLAGS = ("--no-input", "--sandbox", "--no-sandbox", "--help", "-h",
          "--version")


def _takes_next(argv: Sequence[str], i: int) -> bool:
    """Whether the option ``argv[i]`` (valued, no ``=``) takes the next
    word as its value: not when there is none, nor when it is another
    option or, but for --config's file, a built-in command's name."""
    if i + 1 >= len(argv):
        return False
    word = argv[i + 1]
    if word.partition("=")[0] in _VALUED or word in _FLAGS:
        return False
    return argv[i] == "--config" or word not in BUILTIN_COMMANDS


def _corrected(argv: list[str], where: Where, key: str, value: str
               ) -> list[str]:
    """``acor ARGV`` with the value of option ``key`` replaced by
    ``value``: the user's own command, with only that corrected."""
    index, prefix = where[key]
    fixed = list(argv)
    fixed[index] = prefix + value
    return ["acor", *fixed]


def _good_seconds(given: object, flag: str) -> str:
    """A duration to suggest for the bad ``given``: the bound when it is
    above it, else the example."""
    from acor.cli.durations import MAX_SECONDS
    seconds: Optional[float]
    try:
        seconds = float(str(given))
    except ValueError:
        seconds = None
    if seconds is not None and seconds > MAX_SECONDS and \
            seconds != float("inf"):
        return str(MAX_SECONDS)
    return _EXAMPLES[flag]


def _check_options(options: Options, argv: list[str], where: Where
                   ) -> Options:
    fmt = options.get("format")
    if fmt is not None and fmt not in FORMATS:
        import difflib  # only for a wrong format
        close = difflib.get_close_matches(fmt.lower(), FORMATS, 1, 0.5)
        raise UsageError(f"Unknown format {fmt!r}",
                         "Use one of: " + ", ".join(FORMATS) + ".",
                         next=_corrected(argv, where, "format",
                                         close[0] if close else "json"))
    for key in ("timeout", "idle_timeout"):
        if key in options:
            flag = "--" + key.replace("_", "-")
            try:
                options[key] = check_seconds(options[key], flag)
            except ValueError as exc:
                good = _good_seconds(options[key], flag)
                raise UsageError(str(exc), "Give a duration in seconds, as "
                                 "in the command below.",
                                 next=_corrected(argv, where, key,
                                                 good)) from None
    if "max_output" in options:
        try:
            options["max_output"] = parse_size(options["max_output"])
        except ValueError as exc:
            raise UsageError(str(exc), "Give a size in bytes (0 for no "
                             "limit), as in the command below.",
                             next=_corrected(argv, where, "max_output",
                                             "64k")) from None
    return options


def _asked_format(argv: list[str]) -> Optional[str]:
    """The valid ``--format`` among the global options of ``argv``, or
    None: the format of an error in another of them."""
    i = 0
    while i < len(argv) and argv[i].startswith("-"):
        name, eq, value = argv[i].partition("=")
        if name == "--format":
            value = value if eq else (argv[i + 1] if i + 1 < len(argv)
                                      else "")
            return value if value in FORMATS else None
        i += 2 if argv[i] in _VALUED and _takes_next(argv, i) else 1
    return None


def serves_mcp(argv: Sequence[str]) -> bool:
    """Whether ``argv`` asks for ``acor mcp``: its first word that is not a
    global option (known or not, valid or not) or a known option's value
    is ``mcp``. Under it stdout belongs to JSON-RPC from its first byte, so
    every error acor reports before serving goes to stderr (the client's
    log of the server) instead."""
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg in _VALUED and _takes_next(argv, i):
            i += 2
        elif arg.startswith("-"):
            i += 1
        else:
            return arg == "mcp"
    return False


def _ensure_std_fds() -> None:
    """A closed stdin, stdout or stderr (``2>&-``) would be reused by the
    next pipe acor opens; /dev/null takes its place instead."""
    for fd, name in ((0, "stdin"), (1, "stdout"), (2, "stderr")):
        try:
            os.fstat(fd)
        except OSError:
            null = os.open(os.devnull, os.O_RDWR)
            if null != fd:
                os.dup2(null, fd)
                os.close(null)
            if getattr(sys, name) is None:  # Python saw it closed at start
                setattr(sys, name, open(fd, "r" if fd == 0 else "w",
                                        encoding="utf-8", closefd=False))


def main(argv: Optional[Sequence[str]] = None,
         early: Optional[EarlySignals] = None) -> int:
    """The ``acor`` command. ``early`` holds the signals caught before
    this call (the console script installs it first thing). When this
    process is the command (``argv`` None: the console script, ``python -m
    acor``), a tool's run ends it through :func:`cli.exiting.leave`, and
    this call does not return."""
    early = early if early is not None else EarlySignals()
    _ensure_std_fds()
    argv_given, argv = argv, list(sys.argv[1:] if argv is None else argv)
    fmt = _asked_format(argv)  # for an error before the options are read
    # Where errors go: stdout, unless stdout is the JSON-RPC of acor mcp.
    out = sys.stderr.buffer if serves_mcp(argv) else None
    try:
        return _run(argv, early, fmt, out, whole_process=argv_given is None)
    except BrokenPipeError:
        # The reader went away (`acor tool | head -1`), maybe while an
        # error was reported: the tool's group is already ended by the
        # run's cleanup; leave quietly, as `cat` does.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return exitcodes.BROKEN_PIPE


def _run(argv: list[str], early: EarlySignals, fmt: Optional[str],
         out: Optional[BinaryIO], whole_process: bool = False) -> int:
    try:
        options, words, rest = split_options(argv)
        fmt = options.get("format")
        if not rest or rest[0] in BUILTIN_COMMANDS or \
                rest[0].startswith("-"):
            interrupt_as_python_does()
            if early.received:
                return exitcodes.CANCELLED
            # click: the cold path only
            from acor.cli.commands.app import run_command
            code: int = run_command(argv, fmt, early, out=out)
            return code
        # the runner's modules: only a tool run needs them, not a command
        from acor.cli.terminal.named import run_and_ask
        code = run_and_ask(rest[0], rest[1:], options, words, early)
        if whole_process:  # the command is this process: end it now
            leave(code, broken_pipe=exitcodes.BROKEN_PIPE)
        return code
    except LauncherError as exc:
        return report_error(exc, fmt, out=out)
    except KeyboardInterrupt:
        return exitcodes.CANCELLED
    except Exception as exc:
        if _interrupted(exc):
            return exitcodes.CANCELLED
        raise


def _interrupted(exc: BaseException) -> bool:
    """Whether ``exc`` came of a Ctrl-C that Python wrapped on its way:
    3.11 turns a KeyboardInterrupt raised in ``__set_name__`` (a class
    being made, mid-import) into a RuntimeError caused by it."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, KeyboardInterrupt):
            return True
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    return False

"""``acor NAME ARGS``: a tool run by name as the command line runs it: its
request built from the global options (``--config``, else discovery's
``ACOR_CONFIG``, else the project's), its format (:func:`default_format`)
and its signals, and the exact ``acor`` command it was run with (for the
``next`` commands of its result). The rich view is told what the person
is doing: answering the run's questions here, or asking for the tool's
help (:func:`asks_for_help`)."""

from __future__ import annotations

import sys

from acor.cli.command_names import BUILTIN_COMMANDS
from acor.cli.output.formats import make_sink
from acor.cli.run.launch import run
from acor.cli.run.request import build_request, open_registry
from acor.cli.signals import Cancel

TYPE_CHECKING = False  # typing costs every run ~3 ms: only mypy
if TYPE_CHECKING:
    from typing import Any, Mapping, Optional, Sequence

    from acor.cli.discovery.config import Config
    from acor.cli.run.result import RunResult
    from acor.cli.signals import EarlySignals


def run_and_ask(name: str, args: list[str], options: dict[str, Any],
                words: list[str], early: EarlySignals) -> int:
    """``acor NAME ARGS``: run the tool (:func:`run_named`); when it ends
    Input Needed in the rich view at a terminal, ask and run it again
    (:mod:`cli.terminal.ask`). Returns the exit code."""
    at_terminal = sys.stdin.isatty()
    person = not options.get("no_input") and at_terminal
    result, fmt = run_named(name, args, options, words, early, person=person)
    if fmt != "rich" or not at_terminal or result.state != "input_needed":
        return result.exit_code
    # Loaded only to ask: the request's wording and the questions cost a
    # run about 3 ms before its tool starts, which no agent's run needs.
    from acor.cli.terminal import ask
    if not person:  # --no-input
        ask.not_asked(name, args, words)
        return result.exit_code
    if early.received:  # a Ctrl-C as the run ended: no question
        ask.say(f"Not asked: {name} was stopped, and nothing was approved.")
        return result.exit_code
    return ask.ask_and_rerun(
        result, name, args,
        lambda again, human: run_named(name, again, options, words, early,
                                       person=True, human=human)[0],
        words)


def run_named(name: str, args: list[str], options: Mapping[str, Any],
              words: list[str], early: EarlySignals, person: bool = False,
              human: Optional[Mapping[str, object]] = None
              ) -> tuple[RunResult, str]:
    """Find ``name``, run it with ``args`` and return its result and the
    format it was relayed in; ``options`` are the global options (format,
    timeouts, output budget, config, sandbox), ``words`` how they were
    given, and ``early`` the signals caught before the run began (a Ctrl-C
    while acor was still starting cancels the run). ``person``: a person
    at this terminal will be asked what the tool needs (the rich view);
    ``human``: what a person answered, for the tool's human-only
    arguments."""
    registry = open_registry(options.get("config"))
    fmt = default_format(options, registry.config)
    if fmt == "rich" and registry.get(name) is None and \
            registry.skipped_named(name) is None:
        # A person mistyped a tool or a command (`acor lst`): name both.
        # Imported here: an agent's run never pays for it.
        from acor.cli.output.typos import unknown_name
        meant = unknown_name(name, registry.tools, BUILTIN_COMMANDS,
                             ["acor", *words], args)
        if meant is not None:
            raise meant
    request = build_request(
        name, args, registry=registry, timeout=options.get("timeout"),
        idle_timeout=options.get("idle_timeout"),
        max_output=options.get("max_output"), command=["acor", *words],
        sandbox=options.get("sandbox"), human=human,
        person=person and fmt == "rich",
        read_by_person=fmt == "rich" and sys.stdin.isatty(),
        inherit_stdin=True,
        whole_process=True, keep_events=False)
    sink = make_sink(fmt, name, registry.config.progress_interval,
                     max_output=request.max_output,
                     state_dir=request.state_dir,
                     asks_person=request.person,
                     help_asked=asks_for_help(args))
    cancel = early.cancel = Cancel()
    waking = cancel.wake_on_signals()
    for signum in early.received:
        cancel.set(signum)
    try:
        result = run(request, sink=sink, cancel=cancel)
    finally:
        early.cancel = None
        cancel.stop_waking(waking)
        cancel.close()
    sink.close()
    return result, fmt


def asks_for_help(args: Sequence[str]) -> bool:
    """Whether ``args`` ask the tool for its help: ``-h`` or ``--help``
    before any ``--`` (after it, they are values)."""
    words = args[:args.index("--")] if "--" in args else args
    return "-h" in words or "--help" in words


def default_format(options: Mapping[str, Any], config: Optional[Config]
                   ) -> str:
    """``--format``, else the config's, else the rich view at a terminal
    and Markdown elsewhere."""
    if options.get("format"):
        return str(options["format"])
    if config is not None and config.format:
        return str(config.format)
    return "rich" if sys.stdout.isatty() else "markdown"

"""``acor NAME ARGS``: a tool run by name as the command line runs it: its
registry (``--config``, then ``ACOR_CONFIG``, then the project's), its
format, its signals, and the exact ``acor`` command it was run with (for
the ``next`` commands of its result)."""

from __future__ import annotations

import os
import sys

from acor.cli.errors import config_error

TYPE_CHECKING = False  # typing costs every run ~3 ms: only mypy
if TYPE_CHECKING:
    from acor.cli.run.result import RunResult
    from acor.cli.signals import EarlySignals


def run_named(name: str, args: list[str], options: dict, words: list[str],
              early: EarlySignals, person: bool = False,
              human: dict | None = None) -> tuple[RunResult, str]:
    """Find ``name``, run it with ``args`` and return its result and the
    format it was relayed in; ``options`` are the global options (format,
    timeouts, config), ``words`` how they were given, and ``early`` the
    signals caught before the run began (a Ctrl-C while acor was still
    starting cancels the run). ``person``: a person at this terminal will
    be asked what the tool needs (the rich view); ``human``: what a person
    answered, for the tool's human-only arguments."""
    from acor.cli.discovery.config import ConfigError
    from acor.cli.discovery.registry import load_registry
    try:
        registry = load_registry(
            config_path=options.get("config") or os.environ.get("ACOR_CONFIG"))
    except ConfigError as exc:
        raise config_error(exc) from None
    config = registry.config
    fmt = default_format(options, config)
    from acor.cli.output.formats import make_sink
    from acor.cli.run.launch import Cancel, run
    sink = make_sink(fmt, name, config.progress_interval,
                     max_output=max_output(options, registry.get(name),
                                           config),
                     state_dir=config.state_dir)
    cancel = early.cancel = Cancel()
    waking = cancel.wake_on_signals()
    for signum in early.received:
        cancel.set(signum)
    try:
        result = run(name, args, registry=registry,
                     timeout=options.get("timeout"),
                     idle_timeout=options.get("idle_timeout"), sink=sink,
                     cancel=cancel, inherit_stdin=True, handle_signals=True,
                     reap_orphans=True, keep_events=False,
                     command=["acor", *words], human=human,
                     sandbox=options.get("sandbox"),
                     person=person and fmt == "rich")
    finally:
        early.cancel = None
        cancel.stop_waking(waking)
        cancel.close()
    sink.close()
    return result, fmt


def default_format(options, config):
    if options.get("format"):
        return options["format"]
    if config is not None and config.format:
        return config.format
    return "rich" if sys.stdout.isatty() else "markdown"


def max_output(options: dict, spec, config) -> int:
    """The run's output budget in bytes: --max-output, else the
    manifest's, else the config's, else the default (0: no limit)."""
    for value in (options.get("max_output"),
                  getattr(spec, "max_output", None),
                  getattr(config, "max_output", None)):
        if value is not None:
            return value
    from acor.cli.output.budget import DEFAULT_MAX_OUTPUT
    return DEFAULT_MAX_OUTPUT

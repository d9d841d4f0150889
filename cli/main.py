"""The ``acor`` command: config -> discover -> spawn -> read -> parse -> render.

``acor <tool> args`` is the hot path an agent pays for on every call, so it
is parsed here by hand and imports none of click, rich, yaml or filelock
unless it must (a changed config needs yaml, ``--format rich`` needs rich).
Built-in commands (``list``, ``show``, ``parse``, ``doctor``, ``sessions``)
and help go to the click application in :mod:`cli.commands`.
"""

import os
import sys

from acor import exitcodes
from acor.events import Error, Status

BUILTINS = frozenset({"list", "show", "parse", "doctor", "sessions", "help",
                      "mcp"})
FORMATS = ("markdown", "json", "rich")
_VALUED = {"--format": "format", "--timeout": "timeout",
           "--idle-timeout": "idle_timeout", "--config": "config"}


class UsageError(Exception):
    """A wrong invocation: says what is wrong and what to type instead."""

    def __init__(self, title, recovery, details=None):
        super().__init__(title)
        self.title = title
        self.recovery = recovery
        self.details = details


def split_options(argv):
    """Global options before the tool name, and the rest verbatim.

    Everything after the tool name belongs to the tool, ``--help``
    included. An option we do not know ends the scan: click reports it.
    """
    options = {}
    i = 0
    while i < len(argv):
        arg = argv[i]
        name, eq, value = arg.partition("=")
        if name not in _VALUED:
            break
        if not eq:
            if i + 1 >= len(argv):
                raise UsageError(f"Option {name} needs a value",
                                 f"Give it one: `acor {name} VALUE <tool>`.")
            value = argv[i + 1]
            i += 1
        options[_VALUED[name]] = value
        i += 1
    return _check_options(options), argv[i:]


def _check_options(options):
    fmt = options.get("format")
    if fmt is not None and fmt not in FORMATS:
        raise UsageError(f"Unknown format {fmt!r}",
                         "Use --format markdown, --format json or "
                         "--format rich.")
    for key in ("timeout", "idle_timeout"):
        if key in options:
            flag = "--" + key.replace("_", "-")
            try:
                seconds = float(options[key])
            except ValueError:
                seconds = float("nan")
            if not seconds > 0 or seconds == float("inf"):
                raise UsageError(f"{flag} must be a number of seconds above "
                                 f"0, not {options[key]!r}",
                                 f"For example: `acor {flag} 30 <tool>`.")
            options[key] = seconds
    return options


def emit_failure(error, fmt, code=exitcodes.USAGE, tool="acor", out=None):
    """Report a launcher-level failure in ACOR form: an Error, then the one
    final status an agent expects."""
    from .render import make_sink
    sink = make_sink("json" if fmt == "json" else "markdown", tool, out)
    sink.emit(error)
    sink.emit(Status("failed"))
    return code


def default_format(options, config):
    if options.get("format"):
        return options["format"]
    if config is not None and config.format:
        return config.format
    return "rich" if sys.stdout.isatty() else "markdown"


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        options, rest = split_options(argv)
    except UsageError as exc:
        return emit_failure(Error(exc.title, "E_USAGE", exc.details,
                                  exc.recovery), None)
    try:
        if not rest or rest[0] in BUILTINS or rest[0].startswith("-"):
            from .commands import run_command  # click: the cold path only
            return run_command(argv)
        return run_named(rest[0], rest[1:], options)
    except BrokenPipeError:
        # The reader went away (`acor tool | head -1`): the tool's group is
        # already ended by the run's cleanup; leave quietly, as `cat` does.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return exitcodes.BROKEN_PIPE


def run_named(name, args, options):
    """``acor <name> args``: find the tool and run it."""
    from .config import ConfigError
    from .discover import load_registry
    fmt = options.get("format")
    try:
        registry = load_registry(
            config_path=options.get("config") or os.environ.get("ACOR_CONFIG"))
    except ConfigError as exc:
        return emit_failure(config_error(exc), fmt)
    config = registry.config
    fmt = default_format(options, config)
    spec = registry.get(name)
    if spec is None:
        return emit_failure(unknown_tool(name, registry), fmt)
    from .run import run_tool
    timeout = options.get("timeout") or spec.timeout or config.timeout
    idle = options.get("idle_timeout") or spec.idle_timeout or \
        config.idle_timeout
    cwd = config.root if getattr(spec, "cwd_mode", None) == "project" else None
    env = {"ACOR_STATE_DIR": config.state_dir, "ACOR_TOOL": spec.name}
    return run_tool(spec, args, fmt=fmt, timeout=timeout, idle_timeout=idle,
                    progress_interval=config.progress_interval, cwd=cwd,
                    env=env, reap_orphans=True)


def config_error(exc):
    where = exc.path or "configuration"
    if exc.line:
        where += f", line {exc.line}"
    return Error(f"Invalid configuration: {exc.reason}", "E_CONFIG",
                 f"file: {where}", exc.recovery)


def unknown_tool(name, registry):
    matches = registry.close_matches(name)
    details = ("Did you mean: " + ", ".join(matches) + "?") if matches else \
        f"Known tools: {', '.join(sorted(registry.tools)) or 'none'}"
    return Error(f"Unknown tool '{name}'", "E_UNKNOWN_TOOL", details,
                 "Run `acor list` to see the available tools"
                 + (f", or `acor {matches[0]}`" if matches else "")
                 + "; `acor doctor` shows manifests that were skipped and why.")

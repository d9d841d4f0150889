"""The program of a click tool (:mod:`acor.cli.discovery.clicktools`):
the click command run inside an ``AcorTool``, so that its output, exit
and errors follow the protocol.

Started as ``python -u clickrun.py NAME VERSION FOLDER TARGET N PATH...
ARGS...`` (cold, or forked from the warm start): ``TARGET`` is
``package.module:attribute``, looked up in ``FOLDER`` first, then the
environment; ``PATH`` the ``N`` command names that lead from a group to
the command; ``ARGS`` the user's. Then:

* what the command writes to standard output (``click.echo``, ``print``)
  is Output, one section per flush (``click.echo`` flushes each message);
  standard error goes to the launcher as it does for any tool;
* ``click.UsageError`` (a bad option, a missing argument,
  ``BadParameter``) is an Error ``E_USAGE`` with the usage, exit 2;
* ``click.Abort`` (and Ctrl-C, or a prompt that reads no answer) ends the
  run Cancelled, exit 130;
* another ``click.ClickException`` is an Error ``E_CLICK_ERROR``;
  ``ctx.exit(n)`` and ``sys.exit`` end it as their code says; any other
  exception is Failed with an Error, as in every Python tool.

This file is run as a program: the folder it lives in is taken off the
module path before the command's module is imported.
"""

from __future__ import annotations

import importlib
import io
import os
import shlex
import sys
from typing import Any

import click

from acor import exitcodes
from acor.acortool import AcorTool, ToolState


class _Echo(io.TextIOBase):
    """``sys.stdout`` while the command runs: what was written since the
    last flush is one Output section."""

    encoding = "utf-8"
    errors = "replace"

    def __init__(self, tool: AcorTool) -> None:
        super().__init__()
        self._tool = tool
        self._parts: list[str] = []

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return False

    def write(self, text: Any) -> int:
        if isinstance(text, (bytes, bytearray)):
            text = bytes(text).decode("utf-8", "replace")
        self._parts.append(str(text))
        return len(text)

    def flush(self) -> None:
        text = "".join(self._parts)
        self._parts.clear()
        if text.endswith("\n"):
            text = text[:-1]
        if text:
            self._tool.output(text)


def main(argv: list[str]) -> None:
    name, version, folder, target, count = argv[1:6]
    path = argv[6:6 + int(count)]
    args = argv[6 + int(count):]
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [folder, *(p for p in sys.path if p != here)]
    real_stdout = sys.stdout
    with AcorTool(name, version, stream=real_stdout) as tool:
        echo = _Echo(tool)
        sys.stdout = echo
        try:
            command = _load(tool, target)
            _invoke(tool, command, path, args)
        finally:
            sys.stdout = real_stdout
            if tool.state is ToolState.RUNNING:
                echo.flush()


def _load(tool: AcorTool, target: str) -> click.Command:
    module_name, _, attribute = target.partition(":")
    try:
        value: Any = importlib.import_module(module_name)
        for part in attribute.split("."):
            value = getattr(value, part)
    except (ImportError, AttributeError) as exc:
        tool.fail("E_TOOL_NOT_RUNNABLE", f"cannot load {target}: "
                  f"{type(exc).__name__}: {exc}", "Make the module "
                  "importable again (it was when acor read it), then run "
                  "`acor list` and the tool again.")
    if not isinstance(value, click.Command):
        tool.fail("E_TOOL_NOT_RUNNABLE", f"{target} is no longer a click "
                  "command", "Point the manifest's \"click\" at a command.")
    return value


def _invoke(tool: AcorTool, command: click.Command, path: list[str],
            args: list[str]) -> None:
    """Run ``command`` (a group: down ``path``) on ``args`` as click's
    own ``main`` would, each of its endings told as the protocol says."""
    leaf = command
    for part in path:
        found = leaf.get_command(click.Context(leaf), part) \
            if isinstance(leaf, click.Group) else None
        if found is None:
            tool.fail("E_TOOL_NOT_RUNNABLE", f"the command {part!r} is "
                      "gone from the group", "Run `acor list` again.")
        leaf = found
    shown = " ".join(tool.command())
    leaf.context_class = _named(leaf.context_class, shown)
    try:
        with command.make_context("acor" if path else shown,
                                  [*path, *args]) as ctx:
            command.invoke(ctx)
    except click.exceptions.Exit as done:
        if done.exit_code:
            raise SystemExit(done.exit_code) from None
    except click.UsageError as wrong:
        help_argv = tool.command("--help")
        tool.fail("E_USAGE", wrong.format_message(),
                  f"Run `{shlex.join(help_argv)}` for the arguments, then "
                  "run the corrected command.",
                  details=wrong.ctx.get_usage() if wrong.ctx else None,
                  next=help_argv)
    except (click.Abort, EOFError):
        sys.stdout.flush()
        tool.stop(ToolState.CANCELLED)
        raise SystemExit(exitcodes.CANCELLED) from None
    except click.ClickException as failed:
        tool.fail("E_CLICK_ERROR", failed.format_message(),
                  "Fix what the message says, then run the command again.")


def _named(base: type[click.Context], shown: str) -> type[click.Context]:
    """``base`` whose command path is ``shown`` ("acor NAME"): usage and
    help name the tool as it is run, not the group's command."""

    class Named(base):  # type: ignore[valid-type,misc]
        @property
        def command_path(self) -> str:
            return shown

    return Named


if __name__ == "__main__":
    main(sys.argv)

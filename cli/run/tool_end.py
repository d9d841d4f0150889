"""How a tool forked by the warm start's server ends (see
:mod:`acor.cli.run.forkserver`): as the interpreter ends a script, less
the teardown of every module."""

from __future__ import annotations

# Imported by the fork server before it freezes its heap: every fork
# shares them. Not threading (see the server's imports).
import signal
import sys

from acor.cli.exiting import leave

TYPE_CHECKING = False  # the server imports nothing it need not: only mypy
if TYPE_CHECKING:
    from typing import NoReturn


def exit(exc: BaseException | None) -> NoReturn:
    """End the tool's process as the interpreter ends a script, less the
    teardown of every module, which no one can observe and which costs a
    process holding the library several milliseconds: report an uncaught
    exception through ``sys.excepthook`` (without the server's frame),
    then leave with the script's exit status (:func:`cli.exiting.leave`:
    threads waited for, ``atexit`` run, the standard streams flushed)."""
    code = 0
    if isinstance(exc, SystemExit):
        code = _exit_code(exc.code)
    elif exc is not None:
        tb = exc.__traceback__
        sys.excepthook(type(exc), exc, tb.tb_next if tb is not None else tb)
        code = 1
    # An uncaught Ctrl-C ends a script by SIGINT, for its parent to see.
    leave(code, by_signal=signal.SIGINT
          if isinstance(exc, KeyboardInterrupt) else 0)


def _exit_code(value: object) -> int:
    """sys.exit(value)'s status: None 0, an int itself, anything else
    printed to stderr and 1."""
    if value is None:
        return 0
    if isinstance(value, int):
        return value & 0xFF
    try:
        sys.stderr.write(f"{value}\n")
    except Exception:
        pass
    return 1

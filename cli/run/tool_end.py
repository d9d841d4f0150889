"""How a tool forked by the warm start's server ends (see
:mod:`acor.cli.run.forkserver`): as the interpreter ends a script, less
the teardown of every module."""

from __future__ import annotations

# Imported by the fork server before it freezes its heap: every fork
# shares them. Not threading (see the server's imports).
import atexit
import os
import signal
import sys

TYPE_CHECKING = False  # the server imports nothing it need not: only mypy
if TYPE_CHECKING:
    from typing import NoReturn


def exit(exc: BaseException | None) -> NoReturn:
    """End the tool's process as the interpreter ends a script, less the
    teardown of every module, which no one can observe and which costs a
    process holding the library several milliseconds: report an uncaught
    exception through ``sys.excepthook`` (without the server's frame),
    wait for non-daemon threads, run ``atexit`` functions, flush the
    standard streams, then leave with the script's exit status."""
    code = 0
    if isinstance(exc, SystemExit):
        code = _exit_code(exc.code)
    elif exc is not None:
        tb = exc.__traceback__
        sys.excepthook(type(exc), exc, tb.tb_next if tb is not None else tb)
        code = 1
    threading = sys.modules.get("threading")  # as the interpreter looks
    if threading is not None:  # only a tool that imported it has threads
        threading._shutdown()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except Exception:
            code = code or 120  # as the interpreter does
    if isinstance(exc, KeyboardInterrupt):
        # An uncaught Ctrl-C ends a script by SIGINT, for its parent to see.
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    os._exit(code)


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

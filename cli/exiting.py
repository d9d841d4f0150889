"""Ending a process as the interpreter ends a script, less the teardown.

When a script ends, Python waits for its non-daemon threads, runs the
``atexit`` functions, flushes the standard streams, and then tears down
every module and collects what is left. No one can observe that teardown:
acor writes its files through raw descriptors or closes them in ``with``
blocks. It costs a process holding the library and the launcher about
6 ms here (about 2.5 of them the last collection), a tenth of ``acor
hello``. The ``acor`` command after a tool's run and the tool a warm start
forked both leave through :func:`leave` instead.
"""

from __future__ import annotations

import atexit
import errno
import os
import signal
import sys

TYPE_CHECKING = False  # typing costs every run ~3 ms: only mypy
if TYPE_CHECKING:
    from typing import NoReturn

FLUSH_FAILED = 120  # the interpreter's own status when it cannot flush


def leave(code: int, broken_pipe: int = FLUSH_FAILED,
          by_signal: int = 0) -> NoReturn:
    """Wait for non-daemon threads, run the ``atexit`` functions, flush
    stdout and stderr, then end with ``code``, or by ``by_signal`` (an
    uncaught Ctrl-C ends a script by SIGINT, for its parent to see). A
    flush that fails ends with ``broken_pipe`` when the reader has gone,
    else 120, as the interpreter does (``code`` when it is not 0)."""
    threading = sys.modules.get("threading")
    if threading is not None:  # no module, no Python thread to wait for
        threading._shutdown()  # private, as the interpreter calls it
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except OSError as exc:
            code = code or (broken_pipe if exc.errno == errno.EPIPE
                            else FLUSH_FAILED)
        except Exception:
            code = code or FLUSH_FAILED
    if by_signal:
        signal.signal(by_signal, signal.SIG_DFL)
        os.kill(os.getpid(), by_signal)
    os._exit(code)

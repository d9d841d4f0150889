"""The ``acor`` console script (and ``python -m acor``).

Ctrl-C is caught from this module's first statement: a signal that arrives
while acor is still importing is remembered, and the run then ends
Cancelled (exit 130) instead of with a KeyboardInterrupt traceback from the
middle of an import. The first handler is a plain function installed
through ``_signal`` (built into the interpreter: importing it runs no
Python code, where ``signal`` would import ``enum``, ``collections`` and
``functools``: 27 ms measured here on a cold start); it is swapped for the
run's :class:`cli.signals.EarlySignals` once that module is loaded, the
same list of signals kept. A signal ignored when acor starts (``nohup``,
a shell's background job) stays ignored; one the parent blocked is
unblocked here, so that a parent may close the window acor cannot (below).

What is left (docs/security.md, "Signals at start-up"): the interpreter's
own start-up (its streams, ``site``, the console script's ``import sys``)
and the import of the packages ``acor`` and ``acor.cli`` run before this
module's first line, under Python's default handler: a Ctrl-C there still
prints the interpreter's KeyboardInterrupt traceback. A program that
starts acor can rule that out by starting it with SIGINT, SIGTERM and
SIGHUP blocked: they wait, and reach acor's handler here.

Only the command installs these handlers: importing acor's modules (the
runner, the pytest plugin) changes no signal handling.
"""

import _signal  # type: ignore[import-not-found]  # no stubs: C module

_caught: list[int] = []


def _remember(signum: int, frame: object) -> None:
    _caught.append(signum)


_HANDLED = (_signal.SIGINT, _signal.SIGTERM, _signal.SIGHUP)
for _sig in _HANDLED:
    if _signal.getsignal(_sig) != _signal.SIG_IGN:
        _signal.signal(_sig, _remember)
_signal.pthread_sigmask(_signal.SIG_UNBLOCK, _HANDLED)

from acor.cli.signals import EarlySignals, end_python_interrupts  # noqa: E402

_early = EarlySignals(_caught)
for _sig in _HANDLED:
    if _signal.getsignal(_sig) is _remember:
        _signal.signal(_sig, _early)


def main(argv: list[str] | None = None) -> int:
    try:
        from acor.cli.main import main as run_main
        return run_main(argv, early=_early)
    finally:
        _quiet_after_the_command()


def _quiet_after_the_command() -> None:
    """Built-in commands hand Ctrl-C back to Python's default handler;
    one that comes once the command is over must not become a traceback
    in the console script's last line. Changing a handler first runs any
    that is pending: a Ctrl-C just as the command ended is raised here,
    and dropped (the command has ended as it would have)."""
    while True:
        try:
            end_python_interrupts()
            for sig in _HANDLED:
                if _signal.getsignal(sig) != _signal.SIG_IGN:
                    _signal.signal(sig, _remember)
            return
        except KeyboardInterrupt:
            continue

"""The ``acor`` console script (and ``python -m acor``).

Ctrl-C is caught from this module's first line: a signal that arrives
while acor is still importing is remembered, and the run then ends
Cancelled (exit 130) instead of with a KeyboardInterrupt traceback from the
middle of an import. Only the command installs these handlers: importing
acor's modules (the runner, the pytest plugin) changes no signal handling.
"""

import signal

from acor.cli.signals import EarlySignals

_early = EarlySignals()
for _sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
    signal.signal(_sig, _early)


def main(argv=None) -> int:
    from acor.cli.main import main as run_main
    return run_main(argv, early=_early)

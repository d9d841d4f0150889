"""Signals that arrive before a run can take them.

:mod:`cli.entry` installs an :class:`EarlySignals` as the handler of SIGINT,
SIGTERM and SIGHUP before it imports anything else; the run hands them to
its Cancel once it has one. A module of its own so that the console script
can install it without importing the rest of the launcher first.
"""


class EarlySignals:
    """Signals that arrived before a run could take them (see
    :mod:`cli.entry`), and the run's Cancel once there is one."""

    def __init__(self) -> None:
        self.received: list = []
        self.cancel = None

    def __call__(self, signum, frame) -> None:
        self.received.append(signum)
        if self.cancel is not None:
            self.cancel.set(signum)

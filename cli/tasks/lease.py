"""A live server's hold on its tasks: leases renewed, orphans taken over.

Every ``RENEW_S`` seconds the keeper extends the lease of each task its
server runs, deletes the tasks past their TTL, tells the server which of
its tasks were cancelled from elsewhere (another server of the same store,
or ``acor tasks cancel``) or expired, and hands it every task whose lease
ran out: a task whose server died is never left ``working`` forever.
"""

from __future__ import annotations

import os
import secrets
import socket
import sys
import threading
from collections.abc import Callable
from typing import Protocol

from acor.cli.tasks.row import Task


class Leases(Protocol):
    """What the keeper asks of the embedded store
    (:class:`acor.cli.tasks.store.TaskStore`, which starts it)."""

    def renew(self, server: str, lease_s: float) -> None: ...
    def purge_expired(self) -> list[str]: ...
    def get(self, task_id: str, owner: str | None = None
            ) -> Task | None: ...
    def claim_orphans(self, server: str, lease_s: float) -> list[Task]: ...

LEASE_S = 15.0   # a task is another server's to take this long after the
RENEW_S = 2.0    # last renewal; renewed this often


def server_id() -> str:
    """This server among those sharing the store: host, pid, and a nonce
    (a pid is reused)."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"


class LeaseKeeper(threading.Thread):
    """Renews ``server``'s leases; ``on_orphan(task)`` for each task taken
    over; ``on_stop(task_id)`` for each running task cancelled elsewhere
    or expired. Both are called on this thread."""

    def __init__(self, store: Leases, server: str,
                 on_orphan: Callable[[Task], None],
                 on_stop: Callable[[str], None],
                 running: Callable[[], set[str]]) -> None:
        super().__init__(name="acor-task-leases", daemon=True)
        self.store = store
        self.server = server
        self._on_orphan = on_orphan
        self._on_stop = on_stop
        self._running = running
        self._stopped = threading.Event()

    def run(self) -> None:
        while not self._stopped.is_set():
            try:
                self.once()
            except Exception as exc:  # a locked or full disk: next round
                print(f"acor mcp: the task store could not be updated: "
                      f"{exc}", flush=True, file=sys.stderr)
            self._stopped.wait(RENEW_S)

    def once(self) -> None:
        """One round: renew, expire, stop, take over."""
        self.store.renew(self.server, LEASE_S)
        gone = set(self.store.purge_expired())
        running = self._running()
        for task_id in running:
            task = None if task_id in gone else self.store.get(task_id)
            if task is None or task.cancel or task.server != self.server:
                self._on_stop(task_id)
        for task in self.store.claim_orphans(self.server, LEASE_S):
            self._on_orphan(task)

    def stop(self) -> None:
        self._stopped.set()


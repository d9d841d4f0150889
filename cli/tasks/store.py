"""The embedded task store: one SQLite database (WAL) under the state dir.

A task is a row: who created it (``owner``), the call it runs, its status
and the payload of that status, and the lease of the server running it.
Several servers may share one state dir (one per editor window, or the
workers of ``acor mcp --http``), so every change is one transaction and a
task changes hands only when its lease has expired
(:meth:`TaskStore.claim_orphans`). The file is private to the user, like
sessions: the folder 0700, the database 0600. No MCP here: the wire is
:mod:`acor.cli.mcp.tasks`'s.
"""

import json
import os
import sqlite3
import threading
import time
from collections.abc import Callable
from typing import Any

from acor.cli.tasks.lease import LeaseKeeper
from acor.cli.tasks.place import STORE_KIND
from acor.cli.tasks.place import store_path as store_path  # re-exported
from acor.cli.tasks.row import ACTIVE, COLUMNS, column_value, owned, \
    starting, task_of_row
from acor.cli.tasks.row import Task as Task  # re-exported: the wire's type

BUSY_MS = 10_000  # how long a writer waits for another's transaction

_SCHEMA = """
CREATE TABLE IF NOT EXISTS tasks (
    id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    tool TEXT NOT NULL,
    request TEXT NOT NULL,
    status TEXT NOT NULL,
    message TEXT,
    created REAL NOT NULL,
    updated REAL NOT NULL,
    ttl_ms INTEGER,
    poll_ms INTEGER NOT NULL,
    result TEXT,
    error TEXT,
    input_requests TEXT,
    input_responses TEXT,
    cancel INTEGER NOT NULL DEFAULT 0,
    resumable INTEGER NOT NULL DEFAULT 0,
    checkpoint TEXT,
    server TEXT,
    lease_until REAL NOT NULL DEFAULT 0,
    process TEXT
);
CREATE INDEX IF NOT EXISTS tasks_lease ON tasks (status, lease_until);
"""
class TaskStore:
    """The tasks of one state dir. Thread-safe: one connection, one lock;
    SQLite's own locking orders this process against the others."""

    def __init__(self, path: str) -> None:
        self.path = path
        folder = os.path.dirname(path) or "."
        os.makedirs(folder, mode=0o700, exist_ok=True)
        # Created private before SQLite opens it: a task's arguments and
        # result are the user's, like a session's checkpoints.
        os.close(os.open(path, os.O_RDWR | os.O_CREAT, 0o600))
        self._lock = threading.Lock()
        self._db = sqlite3.connect(path, timeout=BUSY_MS / 1000,
                                   isolation_level=None,
                                   check_same_thread=False)
        self._db.execute(f"PRAGMA busy_timeout = {BUSY_MS}")
        self._db.execute("PRAGMA journal_mode = WAL")
        self._db.execute("PRAGMA synchronous = NORMAL")
        self._db.executescript(_SCHEMA)
        known = {row[1] for row in self._db.execute(
            "PRAGMA table_info(tasks)")}
        if "process" not in known:  # a store from before the column
            try:
                self._db.execute("ALTER TABLE tasks ADD COLUMN process TEXT")
            except sqlite3.OperationalError:
                pass  # another server sharing the store added it first

    def describe(self) -> tuple[str, str]:
        """(kind, where): what ``acor doctor`` and ``acor tasks`` show."""
        return STORE_KIND, self.path

    def keep(self, server: str, on_orphan: Callable[[Task], None],
             on_stop: Callable[[str], None],
             running: Callable[[], set[str]]) -> LeaseKeeper:
        """``server``'s lease keeper, started."""
        keeper = LeaseKeeper(self, server, on_orphan, on_stop, running)
        keeper.start()
        return keeper

    def close(self) -> None:
        with self._lock:
            self._db.close()

    # -- reading ---------------------------------------------------------

    def _rows(self, where: str, args: tuple[Any, ...] = ()) -> list[Task]:
        with self._lock:
            rows = self._db.execute(
                f"SELECT {', '.join(COLUMNS)} FROM tasks WHERE {where}",
                args).fetchall()
        return [task_of_row(row) for row in rows]

    def get(self, task_id: str, owner: str | None = None) -> Task | None:
        """As :func:`acor.cli.tasks.row.owned`."""
        return owned(self._rows("id = ?", (task_id,)), owner)

    def all(self) -> list[Task]:
        return self._rows("1 ORDER BY created")

    def held_by(self, server: str) -> list[Task]:
        """The unfinished tasks ``server`` holds the lease of."""
        return self._rows(f"server = ? AND {ACTIVE}", (server,))

    # -- writing ---------------------------------------------------------

    def create(self, *, owner: str, tool: str, request: dict[str, Any],
               ttl_ms: int | None, poll_ms: int, resumable: bool,
               server: str, lease_s: float,
               task_id: str | None = None) -> Task:
        """A new working task, committed (a ``get`` finds it) before this
        returns, leased to ``server``."""
        task = starting(owner=owner, tool=tool, request=request,
                        ttl_ms=ttl_ms, poll_ms=poll_ms, resumable=resumable,
                        server=server, lease_until=time.time() + lease_s,
                        task_id=task_id)
        values = [column_value(name, getattr(task, name)) for name in COLUMNS]
        with self._lock:
            self._db.execute(
                f"INSERT INTO tasks ({', '.join(COLUMNS)}) VALUES "
                f"({', '.join('?' * len(COLUMNS))})", values)
        return task

    def _update(self, task_id: str, where: str, **fields: Any) -> bool:
        fields["updated"] = time.time()
        names = sorted(fields)
        sets = ", ".join(f"{name} = ?" for name in names)
        with self._lock:
            cursor = self._db.execute(
                f"UPDATE tasks SET {sets} WHERE id = ? AND {where}",
                [column_value(n, fields[n]) for n in names] + [task_id])
        return cursor.rowcount == 1

    def set_status(self, task_id: str, status: str, message: str | None,
                   **payload: Any) -> bool:
        """Move an unfinished task to ``status`` with its payload (result,
        error, input_requests); a finished task never changes again."""
        return self._update(task_id, ACTIVE, status=status,
                            message=message, **payload)

    def note(self, task_id: str, message: str,
             checkpoint: str | None = None) -> None:
        """Progress or a heartbeat, as the task's statusMessage."""
        fields: dict[str, Any] = {"message": message}
        if checkpoint is not None:
            fields["checkpoint"] = checkpoint
        self._update(task_id, ACTIVE, **fields)

    def set_process(self, task_id: str, process: str | None) -> None:
        """The group the task's tool runs in now (None: no run)."""
        with self._lock:
            self._db.execute("UPDATE tasks SET process = ? WHERE id = ?",
                             (process, task_id))

    def request_cancel(self, task_id: str) -> bool:
        """Mark the task cancelled-on-request; whether a live server holds
        it (and so stops its run: else the caller ends it)."""
        self._update(task_id, ACTIVE, cancel=1)
        task = self.get(task_id)
        return task is not None and task.lease_until >= time.time()

    def answer(self, task_id: str, responses: dict[str, Any]) -> None:
        """Keep the responses to the task's outstanding input requests;
        any other key (never asked, already answered) is ignored."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                row = self._db.execute(
                    "SELECT input_requests, input_responses FROM tasks "
                    "WHERE id = ? AND status = 'input_required'",
                    (task_id,)).fetchone()
                if row is not None:
                    asked = json.loads(row[0] or "{}")
                    got = json.loads(row[1] or "{}")
                    got.update({key: value for key, value in
                                responses.items() if key in asked})
                    self._db.execute(
                        "UPDATE tasks SET input_responses = ?, updated = ? "
                        "WHERE id = ?", (json.dumps(got), time.time(),
                                         task_id))
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise

    def delete(self, task_id: str) -> None:
        with self._lock:
            self._db.execute("DELETE FROM tasks WHERE id = ?", (task_id,))

    # -- leases ------------------------------------------------------------

    def renew(self, server: str, lease_s: float) -> None:
        """Extend the lease of every unfinished task ``server`` holds."""
        with self._lock:
            self._db.execute(
                f"UPDATE tasks SET lease_until = ? WHERE server = ? AND "
                f"{ACTIVE}", (time.time() + lease_s, server))

    def release(self, server: str) -> None:
        """``server`` stops: its tasks' leases end now, so another server
        takes them over at once instead of after the lease."""
        with self._lock:
            self._db.execute(
                f"UPDATE tasks SET lease_until = 0 WHERE server = ? AND "
                f"{ACTIVE}", (server,))

    def claim_orphans(self, server: str, lease_s: float) -> list[Task]:
        """Take every unfinished task whose lease has expired (its server
        died or stopped): never one a live server still renews. One
        transaction, so two servers never claim the same task."""
        now = time.time()
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                rows = self._db.execute(
                    f"SELECT {', '.join(COLUMNS)} FROM tasks WHERE "
                    f"{ACTIVE} AND lease_until < ?", (now,)).fetchall()
                self._db.executemany(
                    "UPDATE tasks SET server = ?, lease_until = ? WHERE "
                    "id = ?", [(server, now + lease_s, row[0])
                               for row in rows])
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        return [task_of_row(row) for row in rows]

    def purge_expired(self) -> list[str]:
        """Delete every task past its TTL; their ids (a running one is
        then stopped by the server holding it)."""
        now = time.time()
        expired = [task.id for task in self._rows("ttl_ms IS NOT NULL")
                   if task.expired(now)]
        with self._lock:
            self._db.executemany("DELETE FROM tasks WHERE id = ?",
                                 [(task_id,) for task_id in expired])
        return expired

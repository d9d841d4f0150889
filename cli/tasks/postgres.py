"""The shared task store: acor's task rows in PostgreSQL, each unfinished
task held by a Procrastinate job, for replicas of ``acor mcp --http`` on
several machines (docs/mcp.md, "Scaling out: the engine").

The rows (table ``acor_tasks``) are the embedded store's, column for
column (:mod:`acor.cli.tasks.store`): owner, status and payload, TTL,
cancel flag. Who runs a task is the engine's business, not a lease of
acor's own:

- creating a task commits its row and a job (task ``acor-task``, its
  argument the task id) on this replica's queue in one transaction;
- each replica runs a Procrastinate worker (:class:`EngineKeeper`, a
  thread with its own event loop) on its own queue and the shared
  takeover queue, writing a heartbeat every ``HEARTBEAT_S``; the job's
  coroutine holds the task for as long as its run lasts here;
- every ``TICK_S`` each replica asks the engine for the running jobs of
  workers silent for ``STALLED_S`` and retries them onto the takeover
  queue; the replica whose worker fetches one again (``attempts`` above
  0) takes the task over as the embedded store does an orphan; a job
  its replica died before fetching (still waiting on its queue after
  ``STRANDED_S``) is deferred again onto the takeover queue, the same way;
- a cancel, from any replica or ``acor tasks cancel``, sets the row's
  flag and asks the engine to abort the job: the replica running it is
  told at once (LISTEN/NOTIFY) and stops the run's process group;
- a clean stop hands each running job back onto the takeover queue at
  once (the job's retry strategy), instead of after the heartbeat bound.
"""

import asyncio
import hashlib
import json
import shlex
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import psycopg
from psycopg.errors import RaiseException
from procrastinate import App, BaseRetryStrategy, JobContext, \
    PsycopgConnector, RetryDecision, SyncPsycopgConnector
from procrastinate import exceptions as engine_errors
from procrastinate.jobs import Job
from procrastinate.manager import JobManager
from procrastinate.schema import SchemaManager
from psycopg_pool import ConnectionPool

from acor.cli.tasks.place import SHARED_KIND, StoreProblem, hidden, \
    without_password
from acor.cli.textsafe import printable
from acor.cli.tasks.row import ACTIVE, COLUMNS, Task, column_value, \
    owned, starting, task_of_row

TASK_NAME = "acor-task"
TAKEOVER_QUEUE = "acor-takeover"
HEARTBEAT_S = 1.0    # a worker's heartbeat
STALLED_S = 5.0      # a worker this long silent is dead: its jobs move
TICK_S = 1.0         # the takeover, cancel and TTL round
CONNECT_S = 5.0      # a server not answering within this is unreachable
ADOPT_S = 30.0       # how long a job waits for the run its replica starts
# A job still waiting on its replica's queue this long after its task last
# moved: the replica died before fetching it (a live worker fetches within
# a second), so it is deferred again onto the takeover queue.
STRANDED_S = 3 * STALLED_S
HOLD_POLL_S = 0.2    # how often a job looks whether its run ended
CONCURRENCY = 4096   # tasks one replica's worker holds at once
# pg_advisory_xact_lock's key: two replicas starting at once create the
# schema once ("acortask" in ASCII).
SCHEMA_LOCK = 0x6163_6F72_7461_736B

_SCHEMA = """
CREATE TABLE IF NOT EXISTS acor_tasks (
    id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    tool TEXT NOT NULL,
    request TEXT NOT NULL,
    status TEXT NOT NULL,
    message TEXT,
    created DOUBLE PRECISION NOT NULL,
    updated DOUBLE PRECISION NOT NULL,
    ttl_ms BIGINT,
    poll_ms INTEGER NOT NULL,
    result TEXT,
    error TEXT,
    input_requests TEXT,
    input_responses TEXT,
    cancel INTEGER NOT NULL DEFAULT 0,
    resumable INTEGER NOT NULL DEFAULT 0,
    checkpoint TEXT,
    server TEXT,
    lease_until DOUBLE PRECISION NOT NULL DEFAULT 0,
    process TEXT,
    job_id BIGINT
);
CREATE INDEX IF NOT EXISTS acor_tasks_status ON acor_tasks (status);
"""
_SELECT = f"SELECT {', '.join(COLUMNS)} FROM acor_tasks"
_LIVE_JOB = ("EXISTS (SELECT 1 FROM procrastinate_jobs j WHERE "
             "j.id = acor_tasks.job_id AND j.status IN ('todo', 'doing'))")
_NO_RUN = ("The server running this task stopped before the tool finished, "
           "and no other server took the task over, so it was not run "
           "again: call the tool again.")


def replica_queue(server: str) -> str:
    """The queue of the replica ``server``: its own tasks' jobs. A digest:
    a queue names a LISTEN channel, and PostgreSQL cuts those at 63 bytes
    (a long host name would make two replicas' channels one)."""
    return "acor-replica-" + hashlib.sha256(server.encode()).hexdigest()[:16]


def _problem(url: str, exc: Exception) -> StoreProblem:
    """What went wrong reaching or preparing the store, as the error a
    person reads (libpq's words: they never hold the password)."""
    reason = printable(" ".join(line.strip() for line in str(
        exc).splitlines() if line.strip()) or "no answer")
    return StoreProblem(
        f"the task store {hidden(url)} cannot be used: {reason[:300]}",
        f"Check that PostgreSQL runs there and lets this user connect and "
        f"create tables: `psql {shlex.quote(without_password(url))} -c "
        f"'SELECT 1'` "
        f"(it asks for the password), then start again.")


class SharedStore:
    """The tasks of every replica using ``url``; thread-safe (a pool)."""

    def __init__(self, url: str) -> None:
        self.url = url
        try:
            self._prepare()
            self._pool: ConnectionPool[psycopg.Connection[Any]] = \
                ConnectionPool(url, min_size=1, max_size=8, open=False,
                               kwargs={"connect_timeout": int(CONNECT_S)})
            self._pool.open(wait=True, timeout=CONNECT_S)
        except psycopg.Error as exc:  # PoolTimeout is one too
            raise _problem(url, exc) from None
        # Deferring and aborting on a connection of ours, inside our own
        # transaction: this connector's pool is never opened.
        self._jobs = JobManager(SyncPsycopgConnector())
        self._keeper: EngineKeeper | None = None

    def _prepare(self) -> None:
        """Procrastinate's schema and ``acor_tasks``, made if missing, once
        however many replicas start at once (an advisory lock held to the
        commit)."""
        with psycopg.connect(self.url, connect_timeout=int(CONNECT_S)) \
                as conn:  # one transaction, committed on exit
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
            row = conn.execute(
                "SELECT to_regclass('procrastinate_jobs')").fetchone()
            if row is None or row[0] is None:
                conn.execute(SchemaManager.get_schema())
            conn.execute(_SCHEMA)

    def describe(self) -> tuple[str, str]:
        return SHARED_KIND, hidden(self.url)

    def close(self) -> None:
        self._pool.close()

    # -- reading ---------------------------------------------------------

    def _rows(self, where: str, args: tuple[Any, ...] = ()) -> list[Task]:
        with self._pool.connection() as conn:
            rows = conn.execute(f"{_SELECT} WHERE {where}", args).fetchall()
        return [task_of_row(tuple(row)) for row in rows]

    def get(self, task_id: str, owner: str | None = None) -> Task | None:
        """As :func:`acor.cli.tasks.row.owned`."""
        return owned(self._rows("id = %s", (task_id,)), owner)

    def all(self) -> list[Task]:
        return self._rows("TRUE ORDER BY created")

    def held_by(self, server: str) -> list[Task]:
        return self._rows(f"server = %s AND {ACTIVE}", (server,))

    # -- writing ---------------------------------------------------------

    def create(self, *, owner: str, tool: str, request: dict[str, Any],
               ttl_ms: int | None, poll_ms: int, resumable: bool,
               server: str, lease_s: float,
               task_id: str | None = None) -> Task:
        """A new working task: its row and its job on ``server``'s queue,
        committed together before this returns."""
        task = starting(owner=owner, tool=tool, request=request,
                        ttl_ms=ttl_ms, poll_ms=poll_ms, resumable=resumable,
                        server=server, lease_until=0.0, task_id=task_id)
        values = [column_value(name, getattr(task, name))
                  for name in COLUMNS]
        with self._pool.connection() as conn:
            conn.execute(
                f"INSERT INTO acor_tasks ({', '.join(COLUMNS)}) VALUES "
                f"({', '.join(['%s'] * len(COLUMNS))})", values)
            self._hold_by_job(conn, task.id, replica_queue(server))
        return task

    def _hold_by_job(self, conn: psycopg.Connection[Any], task_id: str,
                     queue: str, moved: bool = False) -> None:
        """A job on ``queue`` that holds the task, deferred and named in
        its row inside ``conn``'s transaction (``moved``: a stranded job
        deferred again, taken over as a retried one is)."""
        kwargs: dict[str, Any] = {"task_id": task_id}
        if moved:
            kwargs["moved"] = True
        job = self._jobs.defer_job(Job(
            id=None, queue=queue, lock=None, queueing_lock=None,
            task_name=TASK_NAME, task_kwargs=kwargs), connection=conn)
        conn.execute("UPDATE acor_tasks SET job_id = %s WHERE id = %s",
                     (job.id, task_id))

    def _update(self, task_id: str, where: str, **fields: Any) -> bool:
        fields["updated"] = time.time()
        names = sorted(fields)
        sets = ", ".join(f"{name} = %s" for name in names)
        with self._pool.connection() as conn:
            cursor = conn.execute(
                f"UPDATE acor_tasks SET {sets} WHERE id = %s AND {where}",
                [column_value(n, fields[n]) for n in names] + [task_id])
            return cursor.rowcount == 1

    def set_status(self, task_id: str, status: str, message: str | None,
                   **payload: Any) -> bool:
        return self._update(task_id, ACTIVE, status=status,
                            message=message, **payload)

    def note(self, task_id: str, message: str,
             checkpoint: str | None = None) -> None:
        fields: dict[str, Any] = {"message": message}
        if checkpoint is not None:
            fields["checkpoint"] = checkpoint
        self._update(task_id, ACTIVE, **fields)

    def set_process(self, task_id: str, process: str | None) -> None:
        with self._pool.connection() as conn:
            conn.execute("UPDATE acor_tasks SET process = %s WHERE id = %s",
                         (process, task_id))

    def request_cancel(self, task_id: str) -> bool:
        """The row's cancel flag and the engine's abort of its job, in one
        transaction: the replica running it stops the run at once. A job
        no worker runs yet is cancelled by the engine, and the task here.
        Whether a replica was running it."""
        with self._pool.connection() as conn:
            row = conn.execute(
                f"UPDATE acor_tasks SET cancel = 1, updated = %s WHERE "
                f"id = %s AND {ACTIVE} RETURNING job_id",
                (time.time(), task_id)).fetchone()
            if row is None:
                return False
            job = conn.execute(
                "SELECT status FROM procrastinate_jobs WHERE id = %s "
                "FOR UPDATE", (row[0],)).fetchone()
            running = job is not None and job[0] == "doing"
            if job is not None:
                self._jobs.cancel_job_by_id(row[0], abort=True,
                                            connection=conn)
            if not running:
                conn.execute(
                    f"UPDATE acor_tasks SET status = 'cancelled', message = "
                    f"'cancelled' WHERE id = %s AND {ACTIVE}", (task_id,))
        return running

    def answer(self, task_id: str, responses: dict[str, Any]) -> None:
        """As :meth:`acor.cli.tasks.store.TaskStore.answer`."""
        with self._pool.connection() as conn:
            row = conn.execute(
                "SELECT input_requests, input_responses FROM acor_tasks "
                "WHERE id = %s AND status = 'input_required' FOR UPDATE",
                (task_id,)).fetchone()
            if row is None:
                return
            asked = json.loads(row[0] or "{}")
            got = json.loads(row[1] or "{}")
            got.update({key: value for key, value in responses.items()
                        if key in asked})
            conn.execute(
                "UPDATE acor_tasks SET input_responses = %s, updated = %s "
                "WHERE id = %s", (column_value("input_responses", got),
                                  time.time(), task_id))

    def delete(self, task_id: str) -> None:
        with self._pool.connection() as conn:
            conn.execute("DELETE FROM acor_tasks WHERE id = %s", (task_id,))

    def purge_expired(self) -> list[str]:
        with self._pool.connection() as conn:
            rows = conn.execute(
                "DELETE FROM acor_tasks WHERE ttl_ms IS NOT NULL AND "
                "created + ttl_ms / 1000.0 < %s RETURNING id",
                (time.time(),)).fetchall()
        return [row[0] for row in rows]

    # -- ownership, through the engine -----------------------------------

    def claim(self, task_id: str, server: str) -> Task | None:
        """The unfinished task, now ``server``'s (the engine handed it its
        job), or None: finished or gone."""
        with self._pool.connection() as conn:
            row = conn.execute(
                f"UPDATE acor_tasks SET server = %s WHERE id = %s AND "
                f"{ACTIVE} RETURNING {', '.join(COLUMNS)}",
                (server, task_id)).fetchone()
        return None if row is None else task_of_row(tuple(row))

    def settle_jobless(self) -> None:
        """An unfinished task whose job no worker will run again (aborted
        while its replica was dead, or failed in acor): cancelled when it
        was cancelled, else failed saying why; never left working."""
        now = time.time()
        with self._pool.connection() as conn:
            conn.execute(
                f"UPDATE acor_tasks SET status = 'cancelled', message = "
                f"'cancelled', updated = %s WHERE {ACTIVE} AND cancel = 1 "
                f"AND NOT {_LIVE_JOB}", (now,))
            conn.execute(
                f"UPDATE acor_tasks SET status = 'failed', message = %s, "
                f"error = %s, updated = %s WHERE {ACTIVE} AND NOT "
                f"{_LIVE_JOB}", (_NO_RUN, column_value("error", {
                    "code": -32603, "message": _NO_RUN}), now))

    def move_stranded(self) -> int:
        """Jobs no worker fetched (still ``todo`` on a replica's own queue
        ``STRANDED_S`` after their task last moved: the replica died right
        after the create), each cancelled and deferred again, as a
        takeover, onto the takeover queue. The engine finds only running
        jobs stalled. How many moved."""
        cutoff = time.time() - STRANDED_S
        moved = 0
        with self._pool.connection() as conn:
            rows = conn.execute(
                f"SELECT id, job_id FROM acor_tasks WHERE {ACTIVE} AND "
                f"created < %s AND updated < %s AND job_id IN (SELECT id "
                f"FROM procrastinate_jobs WHERE status = 'todo' AND "
                f"queue_name <> %s) FOR UPDATE SKIP LOCKED",
                (cutoff, cutoff, TAKEOVER_QUEUE)).fetchall()
            for task_id, job_id in rows:
                # False: its worker fetched it meanwhile (it is alive).
                if not self._jobs.cancel_job_by_id(job_id, connection=conn):
                    continue
                self._hold_by_job(conn, task_id, TAKEOVER_QUEUE, moved=True)
                moved += 1
        return moved

    def keep(self, server: str, on_orphan: Callable[[Task], None],
             on_stop: Callable[[str], None],
             running: Callable[[], set[str]]) -> "EngineKeeper":
        """``server``'s worker and takeover loop, started."""
        keeper = EngineKeeper(self, server, on_orphan, on_stop, running)
        keeper.start()
        keeper.ready.wait(CONNECT_S * 2)
        self._keeper = keeper
        return keeper

    def release(self, server: str) -> None:
        """``server`` stops (its runs ended): its worker hands every job it
        holds back onto the takeover queue, and ends."""
        if self._keeper is not None:
            self._keeper.finish()


class _HandBack(Exception):
    """This replica stops: its task goes to another, at once."""


class _HandBackRetry(BaseRetryStrategy):
    """A job handed back is retried on the takeover queue; nothing else
    is retried (a tool's failure is its task's result, not the job's)."""

    def get_retry_decision(self, *, exception: BaseException,
                           job: Job) -> RetryDecision | None:
        if isinstance(exception, _HandBack):
            return RetryDecision(queue=TAKEOVER_QUEUE)
        return None


class EngineKeeper(threading.Thread):
    """One replica's Procrastinate worker, in a thread with its own event
    loop, and its round: stalled jobs retried onto the takeover queue,
    tasks cancelled, moved or past their TTL stopped here."""

    def __init__(self, store: SharedStore, server: str,
                 on_orphan: Callable[[Task], None],
                 on_stop: Callable[[str], None],
                 running: Callable[[], set[str]]) -> None:
        super().__init__(name="acor-task-engine", daemon=True)
        self.store = store
        self.server = server
        self._on_orphan = on_orphan
        self._on_stop = on_stop
        self._running = running
        self.ready = threading.Event()
        self._closing = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._finish: asyncio.Event | None = None
        self.app = App(connector=PsycopgConnector(conninfo=store.url))
        self.app.task(name=TASK_NAME, pass_context=True,
                      retry=_HandBackRetry())(self._hold)

    def run(self) -> None:
        try:
            asyncio.run(self._main())
        except Exception as exc:  # the server lives on; its tasks move
            print(f"acor mcp: the task engine stopped: {exc}", flush=True,
                  file=sys.stderr)
        finally:
            self.ready.set()

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._finish = asyncio.Event()
        async with self.app.open_async():
            worker = asyncio.create_task(self.app.run_worker_async(
                queues=[replica_queue(self.server), TAKEOVER_QUEUE],
                name=f"acor {self.server}", concurrency=CONCURRENCY,
                install_signal_handlers=False, delete_jobs="always",
                update_heartbeat_interval=HEARTBEAT_S,
                stalled_worker_timeout=STALLED_S,
                fetch_job_polling_interval=TICK_S,
                abort_job_polling_interval=TICK_S))
            rounds = asyncio.create_task(self._rounds())
            self.ready.set()
            await self._finish.wait()
            rounds.cancel()
            worker.cancel()  # the worker waits for its jobs, handed back
            await asyncio.gather(worker, rounds, return_exceptions=True)

    async def _hold(self, context: JobContext, task_id: str,
                    moved: bool = False) -> None:
        """The job's coroutine: holds the task while its run lasts here
        (``moved``: a stranded job deferred again, a takeover as a retried
        one is)."""
        try:
            await asyncio.to_thread(self._adopt, task_id,
                                    context.job.attempts + int(moved))
            while task_id in self._running():
                await asyncio.sleep(HOLD_POLL_S)
        except asyncio.CancelledError:  # aborted: cancelled from anywhere
            self._on_stop(task_id)
            raise
        if self._closing.is_set():
            raise _HandBack(task_id)

    def _adopt(self, task_id: str, attempts: int) -> None:
        """The run of the task: the one this replica started on create,
        or, for a job handed over (a dead or stopped replica's), the
        takeover (resumed from its checkpoint, or failed saying why)."""
        task = self.store.get(task_id)
        if task is None or task.terminal or task_id in self._running():
            return  # over, or already run here: held as it is
        if attempts == 0 and task.server == self.server:
            deadline = time.monotonic() + ADOPT_S
            while task_id not in self._running() and \
                    time.monotonic() < deadline:
                time.sleep(0.05)
                task = self.store.get(task_id)
                if task is None or task.terminal:
                    return
            if task_id in self._running():
                return
        claimed = self.store.claim(task_id, self.server)
        if claimed is not None:
            self._on_orphan(claimed)

    async def _rounds(self) -> None:
        while True:
            try:
                await asyncio.to_thread(self._watch)
                await self._take_over_stalled()
            except Exception as exc:  # the database away: next round
                print(f"acor mcp: the task store could not be updated: "
                      f"{exc}", flush=True, file=sys.stderr)
            await asyncio.sleep(TICK_S)

    def _watch(self) -> None:
        """Stop our runs of tasks cancelled, moved or expired; settle the
        tasks no job will run again."""
        gone = set(self.store.purge_expired())
        for task_id in self._running():
            task = None if task_id in gone else self.store.get(task_id)
            if task is None or task.cancel or task.server != self.server:
                self._on_stop(task_id)
        self.store.settle_jobless()
        self.store.move_stranded()

    async def _take_over_stalled(self) -> None:
        """The running jobs of workers silent for ``STALLED_S``, retried
        onto the takeover queue (attempts + 1) for any live replica."""
        manager = self.app.job_manager
        for job in await manager.get_stalled_jobs(
                task_name=TASK_NAME, seconds_since_heartbeat=STALLED_S):
            try:
                await manager.retry_job(job, queue=TAKEOVER_QUEUE)
            except engine_errors.ConnectorException as exc:
                # The job is no longer doing: another replica retried it
                # first (the engine raises); anything else is a problem.
                if not isinstance(exc.__cause__, RaiseException):
                    raise

    def stop(self) -> None:
        """The server stops: each job hands its task back as its run ends
        (the runs are being stopped), for another replica to take."""
        self._closing.set()

    def finish(self) -> None:
        """End the worker (its jobs handed back) and wait for it."""
        self._closing.set()
        loop, finish = self._loop, self._finish
        if loop is not None and finish is not None and self.is_alive():
            loop.call_soon_threadsafe(finish.set)
            self.join(timeout=30)

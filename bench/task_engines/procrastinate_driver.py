"""Procrastinate 3 on Postgres, as acor's task path would use it.

  schema              apply procrastinate's schema
  latency N           N x (defer a job, read it back by id)
  worker reap|noreap  a worker (heartbeat every 1 s; a worker silent 5 s is
                      stalled); "reap" adds what acor would have to run
                      itself: every 1 s, retry the jobs of stalled workers
  defer KEY SECONDS   a job sleeping SECONDS, logging its starts to KEY.log
  cancel KEY          a long job, cancelled (abort) from this process while
                      another process's worker runs it: how long until it
                      is seen aborted

SO_URL is the libpq conninfo; SO_OUT the folder of the job logs.
"""

import asyncio
import logging
import os
import sys
import time

from procrastinate import App, PsycopgConnector

from common import cancel_line, report, tick

# The app is built here, in the script run as __main__: procrastinate warns
# that a worker importing the script would see another app; ours import none.
logging.getLogger("procrastinate").setLevel(logging.ERROR)
app = App(connector=PsycopgConnector(conninfo=os.environ["SO_URL"]))
OUT = os.environ.get("SO_OUT", ".")


@app.task(name="acor.task", queue="tasks")
async def acor_task(key: str, seconds: float) -> None:
    with open(os.path.join(OUT, f"{key}.log"), "a") as f:
        f.write(f"{time.time()} start {os.getpid()}\n")
    for _ in range(int(seconds * 2)):
        tick(os.path.join(OUT, f"{key}.ticks"))
        await asyncio.sleep(0.5)


def _status(job: object) -> str:
    status = getattr(job, "status")
    return str(getattr(status, "value", status))


def latency(rounds: int) -> None:
    create, get = [], []
    with app.open():
        for i in range(rounds):
            t = time.perf_counter()
            job_id = acor_task.defer(key=f"lat{i}", seconds=0)
            create.append(time.perf_counter() - t)
            t = time.perf_counter()
            found = list(app.job_manager.list_jobs(id=job_id))
            get.append(time.perf_counter() - t)
            assert found and _status(found[0]) == "todo", found
    report("procrastinate", create, get)


async def worker(reap: bool) -> None:
    async with app.open_async():
        async def reaper() -> None:
            while True:
                await asyncio.sleep(1)
                for job in await app.job_manager.get_stalled_jobs(
                        seconds_since_heartbeat=5):
                    await app.job_manager.retry_job(job)
        runs = [app.run_worker_async(
            queues=["tasks"], update_heartbeat_interval=1,
            stalled_worker_timeout=5, install_signal_handlers=False)]
        if reap:
            runs.append(reaper())
        await asyncio.gather(*runs)


def cancel(key: str) -> None:
    with app.open():
        job_id = acor_task.defer(key=key, seconds=120)
        path = os.path.join(OUT, f"{key}.log")
        while not os.path.exists(path):
            time.sleep(0.02)
        start = time.time()
        app.job_manager.cancel_job_by_id(job_id, abort=True)
        while True:
            status = _status(list(app.job_manager.list_jobs(id=job_id))[0])
            if status not in ("doing", "todo"):
                break
            time.sleep(0.02)
        cancel_line("procrastinate", status, time.time() - start,
                    os.path.join(OUT, f"{key}.ticks"))


if __name__ == "__main__":
    what = sys.argv[1]
    if what == "schema":
        with app.open():
            app.schema_manager.apply_schema()
    elif what == "latency":
        latency(int(sys.argv[2]))
    elif what == "worker":
        asyncio.run(worker(sys.argv[2] == "reap"))
    elif what == "defer":
        with app.open():
            acor_task.defer(key=sys.argv[2], seconds=float(sys.argv[3]))
    elif what == "cancel":
        cancel(sys.argv[2])

"""DBOS Transact 3 on Postgres, as acor's task path would use it.

  latency N             N x (enqueue a workflow, read its status)
  run EXECUTOR KEY SECS  an executor that enqueues a workflow whose one step
                        sleeps SECS (logging its starts to KEY.log), and
                        keeps running it
  serve EXECUTOR SECS   an executor that only serves, SECS long
  recover EXECUTOR DEAD an executor that recovers DEAD's pending workflows
                        (what acor would have to call itself), then serves
  cancel KEY            cancel the workflow KEY another executor runs, from
                        a client (no executor): how long until its status
                        says so, and whether its running step goes on

SO_DBOS_URL is the SQLAlchemy URL of the system database; SO_OUT the folder
of the step logs.
"""

import os
import sys
import time

from dbos import DBOS, DBOSClient, SetWorkflowID

from common import cancel_line, report, tick

OUT = os.environ.get("SO_OUT", ".")
what = sys.argv[1]
if what == "cancel":
    client = DBOSClient(system_database_url=os.environ["SO_DBOS_URL"])
    start = time.time()
    client.cancel_workflow(sys.argv[2])
    while True:
        status = client.retrieve_workflow(sys.argv[2]).get_status().status
        if status not in ("PENDING", "ENQUEUED"):
            break
        time.sleep(0.02)
    cancel_line("dbos", status, time.time() - start,
                os.path.join(OUT, f"{sys.argv[2]}.ticks"))
    sys.exit(0)
executor = sys.argv[2] if what != "latency" else "bench"
DBOS(config={"name": "acor-bench", "executor_id": executor,
             "system_database_url": os.environ["SO_DBOS_URL"],
             "application_version": "1"})


@DBOS.step()
def work(key: str, seconds: float) -> None:
    with open(os.path.join(OUT, f"{key}.log"), "a") as f:
        f.write(f"{time.time()} start {os.getpid()} {DBOS.executor_id}\n")
    for _ in range(int(seconds * 2)):
        tick(os.path.join(OUT, f"{key}.ticks"))
        time.sleep(0.5)


@DBOS.workflow()
def acor_task(key: str, seconds: float) -> str:
    work(key, seconds)
    return "done"


if __name__ == "__main__":
    DBOS.launch()
    queue = DBOS.register_queue("tasks")
    if what == "latency":
        create, get = [], []
        for i in range(int(sys.argv[2])):
            t = time.perf_counter()
            handle = queue.enqueue(acor_task, f"lat{i}", 0)
            create.append(time.perf_counter() - t)
            t = time.perf_counter()
            assert DBOS.get_workflow_status(handle.workflow_id) is not None
            get.append(time.perf_counter() - t)
        report("dbos", create, get)
    elif what == "run":
        with SetWorkflowID(sys.argv[3]):
            queue.enqueue(acor_task, sys.argv[3], float(sys.argv[4]))
        time.sleep(3600)
    elif what == "serve":
        time.sleep(float(sys.argv[3]))
    elif what == "recover":
        DBOS._recover_pending_workflows([sys.argv[3]])
        time.sleep(30)
    DBOS.destroy()

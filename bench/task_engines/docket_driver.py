"""Docket (pydocket) on Redis, as acor's task path would use it.

  latency N           N x (add an execution by key, read it back by key)
  worker              a worker whose running executions are redelivered to
                      another worker 10 s after their lease was last renewed
  add KEY SECONDS     an execution sleeping SECONDS, logging starts to KEY.log
  cancel KEY          a long execution, cancelled from this process while
                      another process's worker runs it

SO_REDIS is the Redis URL; SO_OUT the folder of the execution logs.
"""

import asyncio
import os
import sys
import time
from datetime import timedelta

from docket import Docket, Worker

from common import cancel_line, report, tick

OUT = os.environ.get("SO_OUT", ".")


async def acor_task(key: str, seconds: float) -> None:
    with open(os.path.join(OUT, f"{key}.log"), "a") as f:
        f.write(f"{time.time()} start {os.getpid()}\n")
    for _ in range(int(seconds * 2)):
        tick(os.path.join(OUT, f"{key}.ticks"))
        await asyncio.sleep(0.5)


async def main(what: str, args: list[str]) -> None:
    async with Docket(name="acor", url=os.environ["SO_REDIS"]) as docket:
        docket.register(acor_task)
        if what == "latency":
            create, get = [], []
            for i in range(int(args[0])):
                key = f"lat-{time.time_ns()}"
                t = time.perf_counter()
                await docket.add(acor_task, key=key)(key, 0)
                create.append(time.perf_counter() - t)
                t = time.perf_counter()
                found = await docket.get_execution(key)
                get.append(time.perf_counter() - t)
                assert found is not None
            report("docket", create, get)
        elif what == "add":
            await docket.add(acor_task, key=args[0])(args[0], float(args[1]))
        elif what == "worker":
            async with Worker(docket,
                              redelivery_timeout=timedelta(seconds=10)) as w:
                await w.run_forever()
        elif what == "cancel":
            await docket.add(acor_task, key=args[0])(args[0], 120)
            path = os.path.join(OUT, f"{args[0]}.log")
            while not os.path.exists(path):
                await asyncio.sleep(0.02)
            start = time.time()
            await docket.cancel(args[0])
            while True:
                execution = await docket.get_execution(args[0])
                await execution.sync() if execution else None
                state = execution.state.value if execution else "gone"
                if state not in ("running", "scheduled", "queued"):
                    break
                await asyncio.sleep(0.02)
            seconds = time.time() - start
            await asyncio.to_thread(cancel_line, "docket", state, seconds,
                                    os.path.join(OUT, f"{args[0]}.ticks"))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2:]))

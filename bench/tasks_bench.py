"""MCP tasks for `make bench` (bench/mcp_rows.py shows them): raw JSON-RPC
lines to a real `acor mcp` at 2026-07-28, with the embedded store (SQLite
under the project's state dir) and with the shared one (Procrastinate on a
PostgreSQL server started for the rows: bench/postgres.py).

* task_create: `tools/call` of a task tool -> the `resultType: "task"`
  answer read (the task committed to the store first).
* task_get: one `tasks/get` of a finished task -> its answer read.
* shared_task_create, shared_task_get: the same on the shared store.
* task_overhead: a trivial tool's result had through a task (create, then
  `tasks/get` at once and again until it is completed) against the same
  tool called plainly, in alternating rounds.
"""

import os
import subprocess
import tempfile
import time

import postgres
from harness import Result, Unavailable, alternate, ratio_result
from mcp_bench import ACOR, QUICK, _env, _ping_project, _Session

ROUNDS = 10 if QUICK else 40
EXT = "io.modelcontextprotocol/tasks"


def _meta(tasks: bool) -> dict:
    return {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities":
                {"extensions": {EXT: {}}} if tasks else {},
            "io.modelcontextprotocol/clientInfo": {"name": "acor-bench",
                                                   "version": "1"}}


class _Modern(_Session):
    def ask(self, method, params, tasks=True) -> dict:
        return self.request(method, {**params, "_meta": _meta(tasks)})


def _open(work, store=None) -> _Modern:
    root = _ping_project(work)
    manifest = os.path.join(root, "tools", "ping", "manifest.json")
    with open(manifest) as f:
        text = f.read()
    with open(manifest, "w") as f:
        f.write(text.replace('"entry"', '"task": "optional", "entry"'))
    env = _env(work)
    if store is not None:
        env["ACOR_TASK_STORE"] = store
    process = subprocess.Popen([ACOR, "mcp"], cwd=root, env=env,
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)
    session = _Modern(process)
    session.ask("server/discover", {})
    return session


def _until_done(session, task_id) -> dict:
    while True:
        task = session.ask("tasks/get", {"taskId": task_id})
        if task["status"] not in ("working", "input_required"):
            return task


def _measure(store=None):
    create, get = [], []
    with tempfile.TemporaryDirectory(prefix="acor-tasks-bench-") as work:
        session = _open(work, store)
        try:
            for _ in range(ROUNDS):
                started = time.perf_counter()
                task = session.ask("tools/call", {"name": "ping",
                                                  "arguments": {}})
                create.append(time.perf_counter() - started)
                _until_done(session, task["taskId"])
                started = time.perf_counter()
                session.ask("tasks/get", {"taskId": task["taskId"]})
                get.append(time.perf_counter() - started)
        finally:
            session.close()
    return create, get


_MEASURED: dict = {}


def task_create() -> list[float]:
    if not _MEASURED:
        _MEASURED["create"], _MEASURED["get"] = _measure()
    return _MEASURED["create"]


def task_get() -> list[float]:
    if not _MEASURED:
        _MEASURED["create"], _MEASURED["get"] = _measure()
    return _MEASURED["get"]


def _shared(which):
    why = postgres.missing()
    if why is not None:
        raise Unavailable(why)
    if not _MEASURED_SHARED:
        with postgres.server() as url:
            _MEASURED_SHARED["create"], _MEASURED_SHARED["get"] = \
                _measure(url)
    return _MEASURED_SHARED[which]


_MEASURED_SHARED: dict = {}


def shared_task_create() -> list[float]:
    return _shared("create")


def shared_task_get() -> list[float]:
    return _shared("get")


def task_overhead() -> Result:
    with tempfile.TemporaryDirectory(prefix="acor-tasks-bench-") as work:
        session = _open(work)

        def through_a_task() -> float:
            started = time.perf_counter()
            task = session.ask("tools/call", {"name": "ping",
                                              "arguments": {}})
            _until_done(session, task["taskId"])
            return time.perf_counter() - started

        def plain() -> float:
            started = time.perf_counter()
            session.ask("tools/call", {"name": "ping", "arguments": {}},
                        tasks=False)
            return time.perf_counter() - started
        try:
            tasked, plainly = alternate(through_a_task, plain, ROUNDS,
                                        warmup=3)
        finally:
            session.close()
    result = ratio_result(
        "MCP task vs plain call", "a trivial tool's result through a task "
        "(create, poll) / called plainly, median of per-round ratios",
        tasked, plainly, 3.0)
    # Why 3x and not 1.1x: a task's result takes at least two requests
    # (the create, then a get) where a plain call takes one, and the task
    # is committed to the store before its handle is answered.
    result.detail += ("; a task is at least 2 requests (create, get) and "
                      "a store commit, a plain call 1 request")
    return result

"""acor's embedded store (SQLite, WAL) at the same level as the engines:
N x (create a task, get it by id and owner), in a fresh folder."""

import os
import sys
import tempfile
import time

from acor.cli.tasks.store import TaskStore

from common import report

store = TaskStore(os.path.join(tempfile.mkdtemp(), "tasks.sqlite3"))
create, get = [], []
for _ in range(int(sys.argv[1])):
    t = time.perf_counter()
    task = store.create(owner="o", tool="t", request={"arguments": {}},
                        ttl_ms=60_000, poll_ms=1000, resumable=False,
                        server="s", lease_s=15)
    create.append(time.perf_counter() - t)
    t = time.perf_counter()
    assert store.get(task.id, "o") is not None
    get.append(time.perf_counter() - t)
report("embedded SQLite (acor.cli.tasks.store)", create, get)

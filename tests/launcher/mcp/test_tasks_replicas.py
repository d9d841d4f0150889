"""Two real ``acor mcp --http`` replicas sharing their tasks through the
shared store (Procrastinate on a real PostgreSQL): a client alternating
between them, a replica killed or stopped mid-task, ``acor tasks`` and
``acor doctor`` on the same store.

Not in ``make test`` (marked ``replicas``): ``make test-replicas``, which
``.ci/run`` runs with a PostgreSQL it starts. The server: the libpq URL
``ACOR_TEST_POSTGRES`` when set, else one this session starts (initdb,
pg_ctl, a unix socket in a temp dir) when they are on the PATH; else the
tests skip, unless ``ACOR_REQUIRE_POSTGRES=1``, which fails them.
"""

import glob
import hashlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest

from conftest import pid_alive
from test_mcp_http import Served
from test_tasks import (Raw, SLOW, SLOW_ARGS, STEPS, STEPS_ARGS, ASKER,
                        ASKER_ARGS, wait_for)
from test_tasks_http import TOKEN_A, TOKEN_B, Http

pytestmark = pytest.mark.replicas

KEY = "k" * 48  # the sealing key every replica shares

ENV_SEEN = '''
import os
from acor import AcorTool
with AcorTool() as tool:
    tool.output({"holding_the_url": sorted(
        name for name, value in os.environ.items() if "postgres" in value)})
'''


def _pg_bin(name):
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return candidates[-1] if candidates else None


def _unavailable(why):
    if os.environ.get("ACOR_REQUIRE_POSTGRES") == "1":
        pytest.fail(f"ACOR_REQUIRE_POSTGRES=1, but {why}")
    pytest.skip(why)


def _run(*argv):
    done = subprocess.run(argv, capture_output=True, text=True)
    assert done.returncode == 0, f"{argv}: {done.stdout}{done.stderr}"


@pytest.fixture(scope="session")
def postgres():
    """A libpq URL of a server this test session may create databases on
    (its path: the database to connect to for that)."""
    given = os.environ.get("ACOR_TEST_POSTGRES")
    if given:
        yield given
        return
    initdb, pg_ctl = _pg_bin("initdb"), _pg_bin("pg_ctl")
    if not (initdb and pg_ctl):
        _unavailable("no ACOR_TEST_POSTGRES and no initdb/pg_ctl")
    # Under /tmp itself: pytest's own temp dirs are root's alone, and the
    # server runs as postgres when this runs as root.
    folder = Path(tempfile.mkdtemp(prefix="acor-pg-"))
    as_db_user = []
    if os.getuid() == 0:  # PostgreSQL refuses to run as root
        as_db_user = ["runuser", "-u", "postgres", "--"]
        shutil.chown(folder, "postgres")
    data = folder / "data"
    _run(*as_db_user, initdb, "-D", str(data), "-A", "trust", "-U", "acor")
    port = 50000 + os.getpid() % 10000
    _run(*as_db_user, pg_ctl, "-D", str(data), "-l", str(folder / "log"),
         "-w", "start", "-o", f"-p {port} -k {folder} -c listen_addresses=''")
    try:
        yield f"postgresql://acor@/postgres?host={folder}&port={port}"
    finally:
        subprocess.run([*as_db_user, pg_ctl, "-D", str(data), "-m", "fast",
                        "stop"], capture_output=True)
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def store_url(postgres):
    """A database of this test's own: no test sees another's rows."""
    psycopg = pytest.importorskip("psycopg")
    name = f"acor_{secrets.token_hex(6)}"
    with psycopg.connect(postgres, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    parts = urlsplit(postgres)
    return urlunsplit(parts._replace(path=f"/{name}"))


@pytest.fixture
def replicas_project(project, tmp_path):
    project.add_tool("slow", SLOW, args=SLOW_ARGS, task="optional")
    project.add_tool("once", SLOW, args=SLOW_ARGS, task="optional")
    project.add_tool("steps", STEPS, args=STEPS_ARGS, task="optional")
    project.add_tool("asker", ASKER, args=ASKER_ARGS, task="optional")
    project.add_tool("env_seen", ENV_SEEN, task="optional")
    tokens = tmp_path / "tokens"
    tokens.write_text(f"alice: {TOKEN_A}\nbob: {TOKEN_B}\n")
    tokens.chmod(0o600)
    return project


class Replicas:
    """Replicas of one project (one state dir) on one store and key."""

    def __init__(self, project, url, tokens):
        self.project, self.url, self.tokens = project, url, tokens
        self.started = []

    def start(self):
        served = Served(self.project, "--token-file", str(self.tokens),
                        env={"ACOR_TASK_STORE": self.url,
                             "ACOR_MCP_KEY": KEY})
        self.started.append(served)
        return served

    def stop_all(self):
        for served in self.started:
            if served.process.poll() is None:
                served.stop()


@pytest.fixture
def replicas(replicas_project, store_url, tmp_path):
    group = Replicas(replicas_project, store_url, tmp_path / "tokens")
    yield group
    group.stop_all()


def _checkpointed(client, task_id):
    return "checkpoint" in (client.get(task_id)["result"].get(
        "statusMessage") or "")


def test_a_task_created_on_one_replica_is_served_by_the_other(
        replicas, tmp_path):
    a, b = replicas.start(), replicas.start()
    on_a, on_b = Http(a, TOKEN_A), Http(b, TOKEN_A)
    go = tmp_path / "go"
    created = on_a.call("slow", {"go": str(go)})["result"]
    assert created["resultType"] == "task"
    assert on_b.get(created["taskId"])["result"]["status"] == "working"
    go.touch()
    done = on_b.until(created["taskId"], "completed", "failed")
    assert done["status"] == "completed", done
    assert done["result"]["structuredContent"]["steps"] >= 0

    # A question asked by the run on A, shown and answered on B.
    asked = on_a.call("asker", {})["result"]
    waiting = on_b.until(asked["taskId"], "input_required")
    (key,) = waiting["inputRequests"]
    on_b.request("tasks/update", {"taskId": asked["taskId"],
                                  "inputResponses": {key: {
                                      "action": "accept",
                                      "content": {"count": 3}}}},
                 name=asked["taskId"])
    answered = on_b.until(asked["taskId"], "completed", "failed")
    assert answered["status"] == "completed", answered
    assert "approve" in json.dumps(answered["result"]).lower()

    # The store's URL (its password) is no tool's.
    seen = on_a.call("env_seen", {})["result"]
    seen_done = on_b.until(seen["taskId"], "completed")["result"]
    assert seen_done.get("structuredContent") == {"holding_the_url": []}, \
        seen_done

    # Another token asks B for A's task: not found, nothing of it shown.
    other = Http(b, TOKEN_B).get(created["taskId"])
    assert other["error"]["code"] == -32602
    assert "not found" in other["error"]["message"]
    assert "completed" not in str(other)


def test_a_cancel_through_one_replica_stops_the_run_on_the_other(
        replicas, tmp_path):
    a, b = replicas.start(), replicas.start()
    pidfile = tmp_path / "grandchild"
    running = Http(a, TOKEN_A).call("slow", {
        "go": str(tmp_path / "never"), "grandchild": str(pidfile)})["result"]
    wait_for(pidfile.exists, "the grandchild started")
    grandchild = int(pidfile.read_text())
    on_b = Http(b, TOKEN_A)
    ack = on_b.request("tasks/cancel", {"taskId": running["taskId"]},
                       name=running["taskId"])["result"]
    assert ack["resultType"] == "complete"
    assert on_b.until(running["taskId"], "cancelled", "completed",
                      "failed")["status"] == "cancelled"
    wait_for(lambda: not pid_alive(grandchild), "the tool's group gone")


def test_a_killed_replicas_tasks_are_taken_over_by_the_other(
        replicas, tmp_path):
    a, b = replicas.start(), replicas.start()
    on_a, on_b = Http(a, TOKEN_A), Http(b, TOKEN_A)
    go, log = tmp_path / "go", tmp_path / "log"
    steps = on_a.call("steps", {"go": str(go), "log": str(log)})["result"]
    once = on_a.call("once", {"go": str(tmp_path / "never")})["result"]
    wait_for(lambda: _checkpointed(on_a, steps["taskId"]), "a checkpoint")
    on_a.until(once["taskId"], "working")
    a.stop(signal.SIGKILL)
    killed = time.monotonic()
    go.touch()
    wait_for(lambda: log.read_text().count("start") == 2,
             "the run resumed on B")
    resumed = time.monotonic() - killed
    done = on_b.until(steps["taskId"], "completed", "failed")
    assert done["status"] == "completed", done
    assert done["result"]["structuredContent"]["resumed_from"] > 0
    failed = on_b.until(once["taskId"], "completed", "failed")
    assert failed["status"] == "failed"
    assert "stopped before the tool finished" in failed["error"]["message"]
    print(f"\nkill to resumed on the other replica: {resumed:.1f} s")


def test_a_stopped_replica_hands_its_task_to_the_other(replicas, tmp_path):
    a, b = replicas.start(), replicas.start()
    on_a, on_b = Http(a, TOKEN_A), Http(b, TOKEN_A)
    go, log = tmp_path / "go", tmp_path / "log"
    steps = on_a.call("steps", {"go": str(go), "log": str(log)})["result"]
    wait_for(lambda: _checkpointed(on_a, steps["taskId"]), "a checkpoint")
    a.stop()  # SIGTERM: a clean stop, its job handed back at once
    stopped = time.monotonic()
    go.touch()
    wait_for(lambda: log.read_text().count("start") == 2,
             "the run resumed on B")
    print(f"\nclean stop to resumed on the other replica: "
          f"{time.monotonic() - stopped:.1f} s")
    done = on_b.until(steps["taskId"], "completed", "failed")
    assert done["status"] == "completed", done
    assert done["result"]["structuredContent"]["resumed_from"] > 0


def _left_by_a_dead_replica(url, tool, arguments, resumable):
    """A task as a replica killed right after answering its create leaves
    it: the row and its job committed, the job never fetched, the create
    a minute ago."""
    # Here: collecting this module (make test, which leaves it out) needs
    # no PostgreSQL driver.
    import psycopg
    from acor.cli.tasks.postgres import SharedStore
    owner = "token:" + hashlib.sha256(
        f"Bearer {TOKEN_A}".encode()).hexdigest()[:32]
    store = SharedStore(url)
    try:
        task_id = secrets.token_hex(16)
        if resumable:
            arguments = {**arguments, "session": f"task-{task_id[:24]}"}
        store.create(owner=owner, tool=tool, request={
            "arguments": arguments, "version": "2026-07-28", "pair": False},
            ttl_ms=None, poll_ms=1000, resumable=resumable,
            server="gone.example:4242:0bad", lease_s=0, task_id=task_id)
    finally:
        store.close()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("UPDATE acor_tasks SET created = created - 60, "
                     "updated = updated - 60 WHERE id = %s", (task_id,))
    return task_id


def test_a_task_whose_replica_died_before_fetching_its_job_is_taken_over(
        replicas, tmp_path):
    go, log = tmp_path / "go", tmp_path / "log"
    go.touch()
    steps = _left_by_a_dead_replica(
        replicas.url, "steps", {"go": str(go), "log": str(log)}, True)
    once = _left_by_a_dead_replica(
        replicas.url, "once", {"go": str(tmp_path / "never")}, False)
    on_b = Http(replicas.start(), TOKEN_A)
    done = on_b.until(steps, "completed", "failed")
    assert done["status"] == "completed", done
    assert log.read_text().startswith("start 0")
    failed = on_b.until(once, "completed", "failed")
    assert failed["status"] == "failed", failed
    assert "stopped before the tool finished" in failed["error"]["message"]


def test_over_stdio_a_shared_stores_tasks_are_the_user_on_this_machines(
        replicas, tmp_path):
    import psycopg
    raw = Raw(replicas.project, env={"ACOR_TASK_STORE": replicas.url})
    try:
        mine = raw.call("slow", {"go": str(tmp_path / "never")})["result"]
        with psycopg.connect(replicas.url, autocommit=True) as conn:
            (owner,) = conn.execute("SELECT owner FROM acor_tasks WHERE "
                                    "id = %s", (mine["taskId"],)).fetchone()
            assert owner == f"user:{os.getuid()}@{socket.gethostname()}"
            # The same user on another machine made this one.
            elsewhere = secrets.token_hex(16)
            conn.execute(
                "INSERT INTO acor_tasks (id, owner, tool, request, status, "
                "created, updated, poll_ms) SELECT %s, %s, tool, request, "
                "status, created, updated, poll_ms FROM acor_tasks WHERE "
                "id = %s", (elsewhere, f"user:{os.getuid()}@elsewhere",
                            mine["taskId"]))
        assert raw.get(mine["taskId"])["result"]["status"] == "working"
        foreign = raw.get(elsewhere)
        assert "not found" in foreign["error"]["message"]
        assert "working" not in str(foreign)
    finally:
        raw.close()


def test_acor_tasks_and_doctor_see_the_shared_store(replicas, tmp_path):
    a, b = replicas.start(), replicas.start()
    project, url = replicas.project, replicas.url
    first = Http(a, TOKEN_A).call("slow", {
        "go": str(tmp_path / "never")})["result"]
    second = Http(b, TOKEN_A).call("slow", {
        "go": str(tmp_path / "never")})["result"]
    listed = project.acor("tasks", "--task-store", url, "--format", "json")
    assert listed.returncode == 0, listed.stderr
    rows = {t["id"]: t for t in json.loads(listed.stdout)["tasks"]}
    assert rows[first["taskId"]]["server"] != rows[second["taskId"]][
        "server"]
    text = project.acor("tasks", env={"ACOR_TASK_STORE": url})
    assert first["taskId"] in text.stdout and "SERVER" in text.stdout

    cancelled = project.acor("tasks", "--task-store", url, "cancel",
                             first["taskId"][:12])
    assert cancelled.returncode == 0, cancelled.stderr
    assert Http(b, TOKEN_A).until(first["taskId"], "cancelled", "completed",
                                  "failed")["status"] == "cancelled"

    # doctor names the store, its password hidden.
    with_password = url.replace("postgresql://acor@",
                                "postgresql://acor:s3cret-pw@")
    doctor = project.acor("doctor", "--json",
                          env={"ACOR_TASK_STORE": with_password})
    store = json.loads(doctor.stdout)["task_store"]
    assert store["kind"] == "Procrastinate on PostgreSQL"
    assert "acor:***@" in store["path"] and "s3cret-pw" not in doctor.stdout
    plain = project.acor("doctor", env={"ACOR_TASK_STORE": with_password})
    assert "tasks:      Procrastinate on PostgreSQL" in plain.stdout
    assert "s3cret-pw" not in plain.stdout


def _start_mcp(project, *args, prelude=""):
    code = (f"import sys\n{prelude}from acor.cli.entry import main\n"
            f"sys.exit(main(['mcp', '--http', '--port', '0', *{args!r}]))")
    return subprocess.run([sys.executable, "-c", code], cwd=project.root,
                          env={**project.env, "ACOR_MCP_TOKEN": TOKEN_A},
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("url, says", [
    ("postgresql://acor:s3cret-pw@127.0.0.1:1/acor", "cannot be used"),
    ("redis://localhost/0", "not a PostgreSQL URL")])
def test_a_store_that_cannot_be_used_is_a_clear_start_error(
        replicas_project, url, says):
    done = _start_mcp(replicas_project, "--task-store", url)
    assert done.returncode == 2
    assert says in done.stderr
    assert "Traceback" not in done.stderr + done.stdout
    assert "s3cret-pw" not in done.stderr + done.stdout


@pytest.mark.parametrize("prelude, says", [
    # find_spec answers None for a module set to None in sys.modules: as
    # an install without the tasks-postgres extra.
    ("sys.modules['procrastinate'] = None\n",
     ["pip install 'acor-cli[tasks-postgres]'"]),
    # The extra installed, but psycopg finds no libpq (a slim image): its
    # import fails, as with its pq module refused here.
    ("sys.modules['psycopg.pq'] = None\n",
     ["PostgreSQL driver cannot load", "apt-get install libpq5"])],
    ids=["missing extra", "driver cannot load"])
def test_an_install_that_cannot_open_the_store_is_a_clear_start_error(
        replicas_project, store_url, prelude, says):
    done = _start_mcp(replicas_project, "--task-store", store_url,
                      prelude=prelude)
    assert done.returncode == 2
    for words in says:
        assert words in done.stderr
    assert "Traceback" not in done.stderr

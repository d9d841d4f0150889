"""MCP tasks (the ``io.modelcontextprotocol/tasks`` extension) on the wire
as the spec writes it: raw JSON-RPC lines to a real ``acor mcp`` over
stdio, real tools, a real store under the project's state dir."""

import json
import os
import queue
import signal
import subprocess
import threading
import time

import pytest

from conftest import ACOR_SCRIPT, pid_alive

EXT = "io.modelcontextprotocol/tasks"
VERSION = "2026-07-28"
LIMIT = 120  # seconds any condition may take on a loaded machine

SLOW = '''
import os, subprocess, time
from acor import AcorTool
with AcorTool() as tool:
    args = tool.parse_args()
    if args.grandchild:
        child = subprocess.Popen(["sleep", "300"])
        with open(args.grandchild + ".tmp", "w") as f:
            f.write(str(child.pid))
        os.rename(args.grandchild + ".tmp", args.grandchild)
    n = 0
    while not os.path.exists(args.go):
        tool.progress(min(n, 99), f"step {n}")
        n += 1
        time.sleep(0.1)
    if args.fail:
        tool.fail("E_ASKED", "asked to fail", "run it without --fail")
    tool.output({"steps": n})
'''
SLOW_ARGS = {"type": "object", "required": ["go"], "properties": {
    "go": {"type": "string", "x-acor": {"flag": "--go"}},
    "grandchild": {"type": "string", "x-acor": {"flag": "--grandchild"}},
    "fail": {"type": "boolean", "x-acor": {"flag": "--fail"}}}}

ASKER = '''
from acor import AcorTool
with AcorTool() as tool:
    args = tool.parse_args()
    if args.count is None:
        tool.input_needed("How many greetings?", fields={"count": {
            "type": "integer", "minimum": 1, "description": "How many"}})
    if not args.approve:
        tool.input_needed("Approve?", audience="human", fields={"approve": {
            "type": "boolean", "description": "approve"}})
    tool.output({"greetings": args.count})
'''
ASKER_ARGS = {"type": "object", "properties": {
    "count": {"type": "integer", "x-acor": {"flag": "--count"}},
    "approve": {"type": "boolean", "x-acor": {"flag": "--approve"}}}}

STEPS = '''
import os, time
from acor import AcorTool
with AcorTool() as tool:
    args = tool.parse_args()
    tool.session(args.session)
    last = tool.resume()
    start = last[1]["n"] + 1 if last else 0
    with open(args.log, "a") as f:
        f.write(f"start {start}\\n")
    for n in range(start, 1000):
        if os.path.exists(args.go) and n >= 3:
            break
        tool.checkpoint(f"step-{n}", {"n": n})
        time.sleep(0.1)
    tool.output({"resumed_from": start, "ended_at": n})
'''
STEPS_ARGS = {"type": "object", "required": ["go", "log"], "properties": {
    "go": {"type": "string", "x-acor": {"flag": "--go"}},
    "log": {"type": "string", "x-acor": {"flag": "--log"}},
    "session": {"type": "string", "x-acor": {"flag": "--session"}}}}


SILENT = '''
import os, time
from acor import AcorTool


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in "ZX"
    except OSError:
        return False


with AcorTool() as tool:
    args = tool.parse_args()
    tool.session(args.session)
    last = tool.resume()
    before = open(args.log).read().split() if os.path.exists(args.log) \\
        else []
    # Is the run the killed server started still running beside this one?
    overlap = [pid for pid in before if alive(int(pid))]
    with open(args.log, "a") as f:
        f.write(f"{os.getpid()}\\n")
    if last is None:
        tool.checkpoint("started", {"n": 0})
        time.sleep(600)  # silent: never writes again
    tool.output({"overlapping": overlap})
'''
SILENT_ARGS = {"type": "object", "required": ["log"], "properties": {
    "log": {"type": "string", "x-acor": {"flag": "--log"}},
    "session": {"type": "string", "x-acor": {"flag": "--session"}}}}


def meta(tasks=True):
    caps = {"extensions": {EXT: {}}} if tasks else {}
    return {"io.modelcontextprotocol/protocolVersion": VERSION,
            "io.modelcontextprotocol/clientCapabilities": caps,
            "io.modelcontextprotocol/clientInfo": {"name": "t",
                                                   "version": "1"}}


class Polls:
    """Polling a task until it reaches a status, over any transport whose
    client has ``get(task_id)``."""

    def until(self, task_id, *statuses):
        deadline = time.monotonic() + LIMIT
        while time.monotonic() < deadline:
            task = self.get(task_id)["result"]
            if task["status"] in statuses:
                return task
            time.sleep(0.1)
        raise AssertionError(f"task {task_id} never {statuses}: {task}")


class Raw(Polls):
    """A real ``acor mcp`` over stdio, spoken to line by line."""

    def __init__(self, project, env=None, own_group=False):
        self.proc = subprocess.Popen(
            [ACOR_SCRIPT, "mcp"], cwd=project.root,
            env=env or project.env, stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            start_new_session=own_group)
        self.lines: queue.Queue = queue.Queue()
        self.ids = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.put(json.loads(line))

    def request(self, method, params=None, tasks=True):
        self.ids += 1
        params = dict(params or {})
        params["_meta"] = {**meta(tasks), **params.get("_meta", {})}
        message = {"jsonrpc": "2.0", "id": self.ids, "method": method,
                   "params": params}
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()
        deadline = time.monotonic() + LIMIT
        while time.monotonic() < deadline:
            answer = self.lines.get(timeout=LIMIT)
            if answer.get("id") == self.ids:
                return answer
        raise AssertionError(f"no answer to {method}")

    def call(self, name, arguments, tasks=True):
        return self.request("tools/call", {"name": name,
                                           "arguments": arguments}, tasks)

    def get(self, task_id, tasks=True):
        return self.request("tasks/get", {"taskId": task_id}, tasks)

    def close(self):
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=LIMIT)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@pytest.fixture
def tasks_project(project):
    project.add_tool("slow", SLOW, args=SLOW_ARGS, task="optional")
    project.add_tool("must", SLOW, args=SLOW_ARGS, task="required")
    project.add_tool("plain", SLOW, args=SLOW_ARGS)
    project.add_tool("asker", ASKER, args=ASKER_ARGS, task="optional")
    project.add_tool("steps", STEPS, args=STEPS_ARGS, task="optional")
    project.add_tool("once", SLOW, args=SLOW_ARGS, task="optional")
    project.add_tool("silent", SILENT, args=SILENT_ARGS, task="optional")
    return project


@pytest.fixture
def server(tasks_project):
    raw = Raw(tasks_project)
    yield raw
    raw.close()


def wait_for(condition, what):
    deadline = time.monotonic() + LIMIT
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    raise AssertionError(f"never: {what}")


def test_discover_names_the_extension(server):
    answer = server.request("server/discover")
    assert answer["result"]["capabilities"]["extensions"] == {EXT: {}}


def test_a_task_tool_answers_with_a_task_then_completes(server, tmp_path):
    go = tmp_path / "go"
    created = server.call("slow", {"go": str(go)})["result"]
    assert created["resultType"] == "task"
    assert created["status"] == "working"
    assert len(created["taskId"]) >= 32
    assert {"createdAt", "lastUpdatedAt", "ttlMs",
            "pollIntervalMs"} <= set(created)
    # Durable before the answer: a get finds it at once.
    working = server.get(created["taskId"])["result"]
    assert working["resultType"] == "complete"
    assert working["status"] == "working"
    # Progress reaches the statusMessage.
    wait_for(lambda: "step" in (server.get(created["taskId"])["result"]
                                .get("statusMessage") or ""), "progress")
    go.touch()
    done = server.until(created["taskId"], "completed")
    assert done["result"]["isError"] is False
    assert "steps" in done["result"]["structuredContent"]


def test_a_failed_tool_is_a_completed_task_with_is_error(server, tmp_path):
    go = tmp_path / "go"
    go.touch()
    created = server.call("slow", {"go": str(go), "fail": True})["result"]
    done = server.until(created["taskId"], "completed", "failed")
    assert done["status"] == "completed"
    assert done["result"]["isError"] is True


def test_without_the_extension_a_call_answers_as_before(server, tmp_path):
    go = tmp_path / "go"
    go.touch()
    plain = server.call("slow", {"go": str(go)}, tasks=False)["result"]
    assert plain.get("resultType") != "task" and "content" in plain
    # A tool without "task" answers at once even to a declaring client.
    plain = server.call("plain", {"go": str(go)})["result"]
    assert plain.get("resultType") != "task" and "content" in plain


def test_a_required_task_tool_refuses_a_client_without_it(server, tmp_path):
    answer = server.call("must", {"go": str(tmp_path / "go")}, tasks=False)
    assert answer["error"]["code"] == -32021
    assert answer["error"]["data"] == {
        "requiredCapabilities": {"extensions": {EXT: {}}}}
    # tasks/get without the extension: refused the same way.
    assert server.get("x" * 32, tasks=False)["error"]["code"] == -32021


def test_cancel_stops_the_run_and_its_whole_group(server, tmp_path):
    pidfile = tmp_path / "grandchild"
    created = server.call("slow", {"go": str(tmp_path / "never"),
                                   "grandchild": str(pidfile)})["result"]
    wait_for(pidfile.exists, "the grandchild started")
    grandchild = int(pidfile.read_text())
    assert pid_alive(grandchild)
    ack = server.request("tasks/cancel", {"taskId": created["taskId"]})
    assert ack["result"]["resultType"] == "complete"
    done = server.until(created["taskId"], "cancelled", "completed",
                        "failed")
    assert done["status"] == "cancelled"
    wait_for(lambda: not pid_alive(grandchild), "the grandchild gone")


def test_input_required_then_the_answer_runs_it_again(server):
    created = server.call("asker", {})["result"]
    asking = server.until(created["taskId"], "input_required")
    ((key, ask),) = asking["inputRequests"].items()
    assert ask["method"] == "elicitation/create"
    assert "count" in ask["params"]["requestedSchema"]["properties"]
    ack = server.request("tasks/update", {
        "taskId": created["taskId"],
        "inputResponses": {key: {"action": "accept",
                                 "content": {"count": 2}}}})
    assert ack["result"] == {"resultType": "complete"} or \
        ack["result"]["resultType"] == "complete"
    # The second question is for a person only: never asked of the client;
    # the task completes saying who must answer.
    done = server.until(created["taskId"], "completed")
    text = json.dumps(done["result"])
    assert "Approve" in text and "approve" not in json.dumps(
        done.get("inputRequests", {}))


def test_an_unknown_or_foreign_task_is_not_found(tasks_project, tmp_path):
    first = Raw(tasks_project)
    try:
        created = first.call("slow", {"go": str(tmp_path / "go")})["result"]
    finally:
        (tmp_path / "go").touch()
    try:
        first.until(created["taskId"], "completed")
        missing = first.get("0" * 32)["error"]
        assert missing["code"] == -32602 and "not found" in \
            missing["message"]
    finally:
        first.close()
    # The same user's next server (one per editor window) sees it.
    again = Raw(tasks_project)
    try:
        assert again.get(created["taskId"])["result"]["status"] == \
            "completed"
    finally:
        again.close()


def test_a_task_expires_with_its_ttl(tasks_project, tmp_path):
    env = {**tasks_project.env, "ACOR_TASK_TTL_MS": "1500"}
    raw = Raw(tasks_project, env=env)
    try:
        go = tmp_path / "go"
        go.touch()
        created = raw.call("slow", {"go": str(go)})["result"]
        assert created["ttlMs"] == 1500

        def gone():
            return "error" in raw.get(created["taskId"])
        wait_for(gone, "the task expired")
        assert raw.get(created["taskId"])["error"]["code"] == -32602
    finally:
        raw.close()


def _kill(raw):
    raw.proc.send_signal(signal.SIGKILL)
    raw.proc.wait()


def test_a_killed_servers_resumable_task_is_finished_by_the_next(
        tasks_project, tmp_path):
    go, log = tmp_path / "go", tmp_path / "log"
    first = Raw(tasks_project)
    created = first.call("steps", {"go": str(go), "log": str(log)})["result"]
    wait_for(lambda: "checkpoint" in (first.get(created["taskId"])
                                      ["result"].get("statusMessage")
                                      or ""), "a checkpoint")
    _kill(first)
    go.touch()
    second = Raw(tasks_project)
    try:
        done = second.until(created["taskId"], "completed", "failed")
        assert done["status"] == "completed", done
        assert done["result"]["structuredContent"]["resumed_from"] > 0
        assert log.read_text().count("start") == 2
    finally:
        second.close()


def test_the_next_server_kills_a_killed_servers_silent_tool_first(
        tasks_project, tmp_path):
    log = tmp_path / "log"
    first = Raw(tasks_project, own_group=True)
    created = first.call("silent", {"log": str(log)})["result"]
    wait_for(lambda: "checkpoint" in (first.get(created["taskId"])
                                      ["result"].get("statusMessage")
                                      or ""), "a checkpoint")
    (old,) = [int(pid) for pid in log.read_text().split()]
    # The server's whole group killed (as an editor or a terminal does):
    # its warm start's fork server, which would end the tool, dies too.
    os.killpg(first.proc.pid, signal.SIGKILL)
    first.proc.wait()
    # The tool never writes again: nothing but the next server ends it.
    assert pid_alive(old)
    second = Raw(tasks_project)
    try:
        done = second.until(created["taskId"], "completed", "failed")
        assert done["status"] == "completed", done
        # The resumed run found the first one gone when it started.
        assert done["result"]["structuredContent"] == {"overlapping": []}
        assert len(log.read_text().split()) == 2
        assert not pid_alive(old)
    finally:
        second.close()


def test_a_killed_servers_other_task_fails_cleanly(tasks_project, tmp_path):
    first = Raw(tasks_project)
    created = first.call("once", {"go": str(tmp_path / "never")})["result"]
    first.until(created["taskId"], "working")
    _kill(first)
    second = Raw(tasks_project)
    try:
        done = second.until(created["taskId"], "completed", "failed")
        assert done["status"] == "failed"
        assert done["error"]["code"] == -32603
        assert "stopped before the tool finished" in done["error"]["message"]
    finally:
        second.close()


def test_the_store_is_private_to_the_user(server, tasks_project, tmp_path):
    go = tmp_path / "go"
    go.touch()
    created = server.call("slow", {"go": str(go)})["result"]
    server.until(created["taskId"], "completed")
    state = tasks_project.root / ".acor" / "state"
    assert os.stat(state / "tasks.sqlite3").st_mode & 0o077 == 0


def test_acor_tasks_lists_shows_and_cancels_a_running_task(
        server, tasks_project, tmp_path):
    pidfile = tmp_path / "grandchild"
    created = server.call("slow", {"go": str(tmp_path / "never"),
                                   "grandchild": str(pidfile)})["result"]
    task_id = created["taskId"]
    wait_for(pidfile.exists, "the grandchild started")
    listed = tasks_project.run("tasks", "--format", "json")
    assert listed.returncode == 0, listed.stderr
    (row,) = json.loads(listed.stdout)["tasks"]
    assert row["id"] == task_id and row["tool"] == "slow"
    assert row["status"] == "working" and row["server"]
    text = tasks_project.run("tasks")
    assert task_id in text.stdout and "working" in text.stdout
    shown = tasks_project.run("tasks", "show", task_id[:12], "--format",
                              "json")
    assert json.loads(shown.stdout)["arguments"]["grandchild"] == \
        str(pidfile)
    # Cancelled from the command line: the server holding the task stops
    # the run's whole group.
    cancelled = tasks_project.run("tasks", "cancel", task_id[:12])
    assert cancelled.returncode == 0, cancelled.stderr
    assert server.until(task_id, "cancelled", "completed",
                        "failed")["status"] == "cancelled"
    wait_for(lambda: not pid_alive(int(pidfile.read_text())),
             "the grandchild gone")
    unknown = tasks_project.run("tasks", "show", "zz")
    assert unknown.returncode == 2 and "E_UNKNOWN_TASK" in unknown.stdout


def test_doctor_names_the_task_store(tasks_project):
    done = tasks_project.run("doctor", "--json")
    store = json.loads(done.stdout)["task_store"]
    assert store["path"].endswith(os.path.join(".acor", "state",
                                               "tasks.sqlite3"))
    assert "SQLite" in store["kind"]


def test_a_server_that_stops_cleanly_hands_its_task_to_the_next(
        tasks_project, tmp_path):
    go, log = tmp_path / "go", tmp_path / "log"
    first = Raw(tasks_project)
    created = first.call("steps", {"go": str(go), "log": str(log)})["result"]
    wait_for(lambda: "checkpoint" in (first.get(created["taskId"])
                                      ["result"].get("statusMessage")
                                      or ""), "a checkpoint")
    first.close()  # stdin closed: the server stops its run, ends its lease
    assert first.proc.returncode == 0
    listed = json.loads(tasks_project.run("tasks", "--format",
                                          "json").stdout)["tasks"]
    # Left working, for the next server: not cancelled, not failed.
    assert [t["status"] for t in listed] == ["working"], listed
    go.touch()
    second = Raw(tasks_project)
    try:
        done = second.until(created["taskId"], "completed", "failed")
        assert done["status"] == "completed", done
        assert done["result"]["structuredContent"]["resumed_from"] > 0
    finally:
        second.close()


FUNCTION_TASKS = '''
import os, time
from acor import tool


@tool(task="optional")
def waits(go: str) -> dict:
    """Wait until the file go exists, then say how long it waited."""
    n = 0
    while not os.path.exists(go):
        n += 1
        time.sleep(0.1)
    return {"polls": n}


@tool(task="required")
def insists(go: str) -> dict:
    """Only ever run as a task."""
    return {"ran": True}
'''


def test_a_function_tool_marked_task_runs_as_a_task(project, tmp_path):
    (project.root / "tools" / "waiting.py").write_text(FUNCTION_TASKS)
    raw = Raw(project)
    try:
        go = tmp_path / "go"
        created = raw.call("waits", {"go": str(go)})["result"]
        assert created["resultType"] == "task", created
        assert raw.get(created["taskId"])["result"]["status"] == "working"
        go.touch()
        done = raw.until(created["taskId"], "completed", "failed")
        assert done["status"] == "completed", done
        assert done["result"]["isError"] is False
        assert "polls" in done["result"]["structuredContent"]
        # Without the extension: the optional one answers as a plain
        # call, the required one is refused naming the extension.
        plain = raw.call("waits", {"go": str(go)}, tasks=False)["result"]
        assert plain.get("resultType") != "task" and "content" in plain
        refused = raw.call("insists", {"go": str(go)}, tasks=False)
        assert refused["error"]["code"] == -32021
        assert EXT in refused["error"]["message"]
    finally:
        raw.close()


def _pair_until_ended(server, task_id):
    deadline = time.monotonic() + LIMIT
    while time.monotonic() < deadline:
        answer = server.call("acor_task_status", {"taskId": task_id},
                             tasks=False)["result"]
        if (answer.get("structuredContent") or {}).get("status") not in (
                "working", "input_required"):
            return answer
        time.sleep(0.2)
    raise AssertionError(f"task {task_id} never ended: {answer}")


def test_a_client_without_the_extension_gets_a_start_status_pair(
        server, tmp_path):
    listed = {tool["name"]: tool for tool in server.request(
        "tools/list", tasks=False)["result"]["tools"]}
    start = listed["acor_task_start"]["inputSchema"]["properties"]["tool"]
    assert set(start["enum"]) == {"slow", "must", "asker", "steps", "once",
                                  "silent"}
    assert "acor_task_status" in listed
    # A client with the extension has tasks itself: no pair.
    assert "acor_task_start" not in {tool["name"] for tool in server.request(
        "tools/list")["result"]["tools"]}
    go = tmp_path / "go"
    started = server.call("acor_task_start", {
        "tool": "slow", "arguments": {"go": str(go)}}, tasks=False)["result"]
    assert started["isError"] is False, started
    task_id = started["structuredContent"]["taskId"]
    working = server.call("acor_task_status", {"taskId": task_id},
                          tasks=False)["result"]
    assert working["structuredContent"]["status"] == "working"
    # The same task on the extension's wire.
    assert server.get(task_id)["result"]["status"] == "working"
    go.touch()
    done = _pair_until_ended(server, task_id)
    assert done["isError"] is False and "steps" in done["structuredContent"]
    # Not a task tool, or no such task: said so, nothing started.
    plain = server.call("acor_task_start", {
        "tool": "plain", "arguments": {"go": str(go)}}, tasks=False)["result"]
    assert plain["isError"] is True and "slow" in plain["content"][0]["text"]
    missing = server.call("acor_task_status", {"taskId": "0" * 32},
                          tasks=False)["result"]
    assert missing["isError"] is True
    # A question is not put to a client without tasks/update: the task
    # completes saying what the tool needs.
    asked = server.call("acor_task_start", {"tool": "asker"},
                        tasks=False)["result"]
    ended = _pair_until_ended(server, asked["structuredContent"]["taskId"])
    assert "How many greetings" in json.dumps(ended)

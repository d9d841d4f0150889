"""``notifications/tasks`` on a ``subscriptions/listen`` stream, raw
JSON-RPC as the Tasks extension writes it, against a real ``acor mcp``:
over stdio the stream's notifications interleave with the answers, over
HTTP the stream is the listen request's SSE response."""

import json
import queue
import threading
import time

import httpx2
import pytest

from test_mcp_http import Served
from test_tasks import EXT, LIMIT, SLOW, SLOW_ARGS, VERSION, Raw, meta
from test_tasks_http import TOKEN_A, TOKEN_B, Http

SUBSCRIPTION = "io.modelcontextprotocol/subscriptionId"
UNKNOWN = "0" * 32


class Listening(Raw):
    """A stdio server whose notifications are kept apart from the
    answers (``Raw.request`` reads past them)."""

    def __init__(self, project):
        self.notes: queue.Queue = queue.Queue()
        super().__init__(project)

    def _read(self):
        for line in self.proc.stdout:
            message = json.loads(line)
            if "id" in message and "method" not in message:
                self.lines.put(message)
            else:
                self.notes.put(message)

    def listen(self, notifications, tasks=True):
        """Open a listen stream; its request id (the subscription id)."""
        self.ids += 1
        message = {"jsonrpc": "2.0", "id": self.ids,
                   "method": "subscriptions/listen",
                   "params": {"notifications": notifications,
                              "_meta": meta(tasks)}}
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()
        return self.ids


def next_note(notes, method=None, task_id=None, status=None):
    """The next notification (of ``method``, for ``task_id``, with
    ``status``) on the queue; others of the same stream are passed by."""
    deadline = time.monotonic() + LIMIT
    while time.monotonic() < deadline:
        note = notes.get(timeout=LIMIT)
        params = note.get("params") or {}
        if (method is None or note.get("method") == method) and \
                (task_id is None or params.get("taskId") == task_id) and \
                (status is None or params.get("status") == status):
            return note
    raise AssertionError(f"no {method} {task_id} {status}")


def as_get(answer):
    """A ``tasks/get`` answer as a notification carries it (its own
    ``_meta`` aside)."""
    return {key: value for key, value in answer["result"].items()
            if key not in ("resultType", "_meta")}


@pytest.fixture
def notify_project(project):
    project.add_tool("slow", SLOW, args=SLOW_ARGS, task="optional")
    project.add_tool("plain", SLOW, args=SLOW_ARGS)
    return project


@pytest.fixture
def server(notify_project):
    raw = Listening(notify_project)
    yield raw
    raw.close()


def test_a_listen_stream_tells_a_task_to_its_end(server, tmp_path):
    go = tmp_path / "go"
    created = server.call("slow", {"go": str(go)})["result"]
    task_id = created["taskId"]
    stream = server.listen({"taskIds": [task_id, UNKNOWN]})
    ack = next_note(server.notes)
    assert ack["method"] == "notifications/subscriptions/acknowledged"
    assert ack["params"]["notifications"] == {"taskIds": [task_id]}
    assert ack["params"]["_meta"] == {SUBSCRIPTION: stream}
    working = next_note(server.notes, "notifications/tasks", task_id)
    assert working["params"]["status"] == "working"
    assert working["params"]["_meta"] == {SUBSCRIPTION: stream}
    assert "resultType" not in working["params"]
    go.touch()
    done = next_note(server.notes, "notifications/tasks", task_id,
                     "completed")["params"]
    # The task as tasks/get answers it, now and ever after.
    assert {k: v for k, v in done.items() if k != "_meta"} == \
        as_get(server.get(task_id))
    assert done["result"]["isError"] is False
    assert "steps" in done["result"]["structuredContent"]
    # Nothing about the unknown id, ever.
    while not server.notes.empty():
        assert UNKNOWN not in json.dumps(server.notes.get())


def test_tasks_on_the_stream_keep_the_tools_list_changes(
        server, notify_project, tmp_path):
    go = tmp_path / "go"
    go.touch()
    # Serving the stream declares nothing acor does not send.
    declared = server.request("server/discover")["result"]["capabilities"]
    assert declared["tools"] == {"listChanged": True}
    assert declared["resources"] == {"subscribe": False,
                                     "listChanged": False}
    assert "prompts" not in declared
    server.request("tools/list")
    created = server.call("slow", {"go": str(go)})["result"]
    stream = server.listen({"toolsListChanged": True,
                            "taskIds": [created["taskId"]]})
    ack = next_note(server.notes)
    assert ack["params"]["notifications"] == {
        "toolsListChanged": True, "taskIds": [created["taskId"]]}
    next_note(server.notes, "notifications/tasks", created["taskId"],
              "completed")
    manifest = notify_project.root / "tools" / "plain" / "manifest.json"
    data = json.loads(manifest.read_text())
    data["description"] = "a changed description"
    manifest.write_text(json.dumps(data))
    server.call("plain", {"go": str(go)})
    changed = next_note(server.notes, "notifications/tools/list_changed")
    assert changed["params"]["_meta"] == {SUBSCRIPTION: stream}


def test_taskids_without_the_extension_is_refused(server, tmp_path):
    stream = server.listen({"taskIds": [UNKNOWN]}, tasks=False)
    deadline = time.monotonic() + LIMIT
    while time.monotonic() < deadline:
        answer = server.lines.get(timeout=LIMIT)
        if answer.get("id") == stream:
            break
    assert answer["error"]["code"] == -32021
    assert answer["error"]["data"] == {
        "requiredCapabilities": {"extensions": {EXT: {}}}}
    assert server.notes.empty()  # no acknowledgement


@pytest.mark.parametrize("how", ["tasks/cancel", "acor tasks cancel"])
def test_a_cancelled_task_is_told(server, notify_project, tmp_path, how):
    created = server.call("slow", {"go": str(tmp_path / "never")})["result"]
    task_id = created["taskId"]
    server.listen({"taskIds": [task_id]})
    next_note(server.notes, "notifications/tasks", task_id, "working")
    if how == "tasks/cancel":
        assert server.request("tasks/cancel", {"taskId": task_id})[
            "result"]["resultType"] == "complete"
    else:
        done = notify_project.run("tasks", "cancel", task_id)
        assert done.returncode == 0, done.stderr
    cancelled = next_note(server.notes, "notifications/tasks", task_id,
                          "cancelled")
    assert cancelled["params"]["taskId"] == task_id


class SseStream:
    """A ``subscriptions/listen`` posted to ``acor mcp --http``: its SSE
    response read in a thread, each event's JSON-RPC message queued."""

    def __init__(self, served, token, notifications):
        self.notes: queue.Queue = queue.Queue()
        self._stop = threading.Event()
        self._request = dict(
            headers={"Content-Type": "application/json",
                     "Accept": "application/json, text/event-stream",
                     "Authorization": f"Bearer {token}",
                     "MCP-Protocol-Version": VERSION,
                     "Mcp-Method": "subscriptions/listen"},
            json={"jsonrpc": "2.0", "id": 77,
                  "method": "subscriptions/listen",
                  "params": {"notifications": notifications,
                             "_meta": meta(True)}})
        self._url = served.url
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        try:
            with httpx2.stream("POST", self._url, timeout=LIMIT,
                               **self._request) as reply:
                for line in reply.iter_lines():
                    if line.startswith("data:"):
                        self.notes.put(json.loads(line[5:]))
                    if self._stop.is_set():
                        return
        except httpx2.HTTPError:
            if not self._stop.is_set():
                raise  # the stream broke while the test still read it

    def close(self):
        self._stop.set()


def test_over_http_another_tokens_task_is_left_out(notify_project,
                                                   tmp_path):
    token_file = tmp_path / "tokens"
    token_file.write_text(f"alice: {TOKEN_A}\nbob: {TOKEN_B}\n")
    token_file.chmod(0o600)
    alice_go, bob_go = tmp_path / "alice", tmp_path / "bob"
    served = Served(notify_project, "--token-file", str(token_file))
    stream = None
    try:
        alice, bob = Http(served, TOKEN_A), Http(served, TOKEN_B)
        mine = alice.call("slow", {"go": str(alice_go)})["result"]["taskId"]
        theirs = bob.call("slow", {"go": str(bob_go)})["result"]["taskId"]
        stream = SseStream(served, TOKEN_A, {"taskIds": [mine, theirs]})
        ack = next_note(stream.notes)
        assert ack["method"] == "notifications/subscriptions/acknowledged"
        assert ack["params"]["notifications"] == {"taskIds": [mine]}
        assert ack["params"]["_meta"] == {SUBSCRIPTION: 77}
        next_note(stream.notes, "notifications/tasks", mine, "working")
        bob_go.touch()
        assert bob.until(theirs, "completed")["status"] == "completed"
        alice_go.touch()
        done = next_note(stream.notes, "notifications/tasks", mine,
                         "completed")["params"]
        assert {k: v for k, v in done.items() if k != "_meta"} == \
            as_get(alice.get(mine))
        seen = []
        while not stream.notes.empty():
            seen.append(stream.notes.get())
        assert not any(theirs in json.dumps(note) for note in seen)
    finally:
        if stream is not None:
            stream.close()
        served.stop()


def test_over_http_the_stream_tells_a_cancel(notify_project, tmp_path):
    served = Served(notify_project, env={"ACOR_MCP_TOKEN": TOKEN_A})
    stream = None
    try:
        client = Http(served, TOKEN_A)
        task_id = client.call("slow", {"go": str(tmp_path / "never")})[
            "result"]["taskId"]
        stream = SseStream(served, TOKEN_A, {"taskIds": [task_id]})
        assert next_note(stream.notes)["params"]["notifications"] == {
            "taskIds": [task_id]}
        next_note(stream.notes, "notifications/tasks", task_id, "working")
        client.request("tasks/cancel", {"taskId": task_id}, name=task_id)
        next_note(stream.notes, "notifications/tasks", task_id, "cancelled")
    finally:
        if stream is not None:
            stream.close()
        served.stop()

"""MCP tasks over HTTP (``acor mcp --http``, 2026-07-28, stateless): raw
JSON-RPC posts, and a task bound to the token that created it."""

import time

import httpx2
import pytest

from test_mcp_http import Served
from test_tasks import (EXT, LIMIT, SLOW, SLOW_ARGS, STEPS, STEPS_ARGS, Polls,
                        Raw, meta, wait_for)

TOKEN_A = "a" * 8 + "-token-of-alice-0123456789"
TOKEN_B = "b" * 8 + "-token-of-bob-012345678901"


class Http(Polls):
    """Raw posts to a served ``acor mcp --http`` with one bearer token."""

    def __init__(self, served, token):
        self.url = served.url
        self.token = token
        self.ids = 0

    def request(self, method, params=None, tasks=True, name=None):
        self.ids += 1
        params = dict(params or {})
        params["_meta"] = meta(tasks)
        headers = {"Content-Type": "application/json",
                   "Accept": "application/json, text/event-stream",
                   "Authorization": f"Bearer {self.token}",
                   "MCP-Protocol-Version": "2026-07-28",
                   "Mcp-Method": method}
        if name is not None:
            headers["Mcp-Name"] = name
        reply = httpx2.post(self.url, headers=headers, timeout=LIMIT, json={
            "jsonrpc": "2.0", "id": self.ids, "method": method,
            "params": params})
        # A JSON-RPC error comes with 400 (or another 4xx): its body is
        # the answer all the same.
        assert reply.status_code < 500, reply.text
        return reply.json()

    def call(self, name, arguments):
        return self.request("tools/call", {"name": name,
                                           "arguments": arguments},
                            name=name)

    def get(self, task_id):
        return self.request("tasks/get", {"taskId": task_id}, name=task_id)


@pytest.fixture
def http_project(project):
    project.add_tool("slow", SLOW, args=SLOW_ARGS, task="optional")
    project.add_tool("steps", STEPS, args=STEPS_ARGS, task="optional")
    return project


def serve(project, token):
    return Served(project, env={"ACOR_MCP_TOKEN": token})


def test_a_task_over_http_completes_and_cancels(http_project, tmp_path):
    served = serve(http_project, TOKEN_A)
    try:
        client = Http(served, TOKEN_A)
        discover = client.request("server/discover")
        assert discover["result"]["capabilities"]["extensions"] == {EXT: {}}
        go = tmp_path / "go"
        created = client.call("slow", {"go": str(go)})["result"]
        assert created["resultType"] == "task"
        assert client.get(created["taskId"])["result"]["status"] == "working"
        go.touch()
        done = client.until(created["taskId"], "completed")
        assert done["result"]["structuredContent"]["steps"] >= 0

        pidfile = tmp_path / "grandchild"
        running = client.call("slow", {"go": str(tmp_path / "never"),
                                       "grandchild": str(pidfile)})["result"]
        wait_for(pidfile.exists, "the grandchild started")
        ack = client.request("tasks/cancel", {"taskId": running["taskId"]},
                             name=running["taskId"])["result"]
        assert ack["resultType"] == "complete" and "status" not in ack
        assert client.until(running["taskId"], "cancelled", "completed",
                            "failed")["status"] == "cancelled"
    finally:
        served.stop()


def test_a_task_is_not_found_by_another_token_or_the_stdio_user(
        http_project, tmp_path):
    go = tmp_path / "go"
    go.touch()
    served = serve(http_project, TOKEN_A)
    try:
        alice = Http(served, TOKEN_A)
        created = alice.call("slow", {"go": str(go)})["result"]
        alice.until(created["taskId"], "completed")
    finally:
        served.stop()
    # The same store, another token: not found, never its status.
    served = serve(http_project, TOKEN_B)
    try:
        bob = Http(served, TOKEN_B)
        for method, params in (
                ("tasks/get", {}), ("tasks/cancel", {}),
                ("tasks/update", {"inputResponses": {}})):
            answer = bob.request(method, {"taskId": created["taskId"],
                                          **params})
            assert answer["error"]["code"] == -32602
            assert "not found" in answer["error"]["message"]
            assert "completed" not in str(answer)
    finally:
        served.stop()
    # The user at stdio is another identity too.
    raw = Raw(http_project)
    try:
        assert raw.get(created["taskId"])["error"]["code"] == -32602
    finally:
        raw.close()
    # Alice, back: hers still.
    served = serve(http_project, TOKEN_A)
    try:
        assert Http(served, TOKEN_A).get(created["taskId"])["result"][
            "status"] == "completed"
    finally:
        served.stop()


def test_a_stopped_replica_hands_its_task_to_the_next(http_project,
                                                       tmp_path):
    go, log = tmp_path / "go", tmp_path / "log"
    served = serve(http_project, TOKEN_A)
    try:
        client = Http(served, TOKEN_A)
        created = client.call("steps", {"go": str(go),
                                        "log": str(log)})["result"]
        wait_for(lambda: "checkpoint" in (client.get(created["taskId"])
                                          ["result"].get("statusMessage")
                                          or ""), "a checkpoint")
    finally:
        served.stop()  # SIGTERM: its runs stopped, its leases ended
    go.touch()
    served = serve(http_project, TOKEN_A)
    try:
        done = Http(served, TOKEN_A).until(created["taskId"], "completed",
                                           "failed")
        assert done["status"] == "completed", done
        assert done["result"]["structuredContent"]["resumed_from"] > 0
    finally:
        served.stop()


def test_named_tokens_are_told_apart_and_keep_their_tasks(http_project,
                                                          tmp_path):
    """One server, a token file of two named holders: each request is
    logged with its holder's name, and one holder's task is not found by
    the other."""
    token_file = tmp_path / "tokens"
    token_file.write_text(f"# the team\nalice: {TOKEN_A}\n\nbob: {TOKEN_B}\n")
    token_file.chmod(0o600)
    go = tmp_path / "go"
    go.touch()
    served = Served(http_project, "--token-file", str(token_file))
    try:
        alice, bob = Http(served, TOKEN_A), Http(served, TOKEN_B)
        created = alice.call("slow", {"go": str(go)})["result"]
        assert alice.until(created["taskId"], "completed")["result"][
            "isError"] is False
        answer = bob.get(created["taskId"])
        assert answer["error"]["code"] == -32602
        assert "completed" not in str(answer)
        wrong = httpx2.post(served.url, headers={
            "Authorization": "Bearer " + "c" * 32}, json={})
        assert wrong.status_code == 401
        wait_for(lambda: any("from bob" in line for line in served.err),
                 "bob's request logged")
        assert any("from alice" in line for line in served.err)
        assert not any(TOKEN_A in line or TOKEN_B in line
                       for line in served.err)
    finally:
        served.stop()


@pytest.mark.parametrize("text, says", [
    ("alice: short\n", "at least 16"),
    (f"alice: {TOKEN_A}\nalice: {TOKEN_B}\n", "twice"),
    (f"alice: {TOKEN_A}\nbob: {TOKEN_A}\n", "a token of its own"),
    (f"al ice: {TOKEN_A}\n", "NAME: TOKEN")])
def test_a_bad_named_token_file_refuses_to_start(http_project, tmp_path,
                                                 text, says):
    import subprocess
    import sys
    token_file = tmp_path / "tokens"
    token_file.write_text(text)
    token_file.chmod(0o600)
    done = subprocess.run(
        [sys.executable, "-m", "acor", "mcp", "--http", "--port", "0",
         "--token-file", str(token_file)], cwd=http_project.root,
        env=http_project.env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert says in done.stderr + done.stdout
    assert TOKEN_A not in done.stderr + done.stdout

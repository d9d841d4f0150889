"""`acor mcp --http`: the MCP server over streamable HTTP, as a real
subprocess, driven by the SDK's own client over real sockets in both
protocol generations (sessions up to 2025-11-25, stateless 2026-07-28),
and by raw HTTP requests for what a client should never be able to do:
reach it under a foreign Host or Origin, or without its token."""

import json
import re
import signal
import subprocess
import sys
import threading
import time

import pytest

from conftest import Project, base_env, pid_alive

pytest.importorskip("mcp", reason="acor mcp needs the extra: "
                                  "pip install 'acor-cli[mcp]'")

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from test_mcp import (ASKER, ASKER_ARGS, PROBE, PROBE_ARGS, _all_gone,
                      _scenario, a_person, e2e_project, texts)

assert e2e_project  # a fixture, used by name below

# What each generation's client negotiates over HTTP.
GENERATIONS = {"legacy": "2025-11-25", "2026-07-28": "2026-07-28"}
TOKEN = "t0ken-for-tests-only-0123456789"
KEY = "k" * 40


@pytest.fixture
def anyio_backend():
    return "asyncio"


class Served:
    """`acor mcp --http --port 0 ARGS...` in the project: its URL once it
    listens, its stderr kept, stopped (SIGTERM) when the test ends; run
    through ``as_user`` (a command prefix such as setpriv) when given."""

    def __init__(self, project, *args, env=None, as_user=()):
        full_env = {**project.env, **(env or {})}
        self.process = subprocess.Popen(
            [*as_user, sys.executable, "-m", "acor", "mcp", "--http",
             "--port", "0", *args], cwd=project.root, env=full_env,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.err: list[str] = []
        self._listening = threading.Event()
        threading.Thread(target=self._drain, daemon=True).start()
        if not self._listening.wait(30):
            self.stop()
            raise AssertionError("never listened:\n" + "".join(self.err))
        found = re.search(r"serving at (http://\S+/mcp)", self.err[0])
        assert found, self.err
        self.url = found.group(1)
        self.port = int(self.url.rsplit(":", 1)[1].split("/")[0])

    def _drain(self):
        for line in self.process.stderr:
            self.err.append(line)
            self._listening.set()
        self._listening.set()

    def stop(self, sig=signal.SIGTERM, timeout=20):
        if self.process.poll() is None:
            self.process.send_signal(sig)
        return self.process.wait(timeout=timeout)


@pytest.fixture
def served(e2e_project):
    started = []

    def start(*args, env=None):
        server = Served(e2e_project, *args, env=env)
        started.append(server)
        return server
    yield start
    for server in started:
        server.stop()


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    """One server, with default options, for the tests that only call it:
    e2e_project's tools in a project of the module's own."""
    root = tmp_path_factory.mktemp("http")
    project = Project(root / "proj", base_env(root))
    project.add_tool("probe", PROBE, args=PROBE_ARGS,
                     annotations={"readOnlyHint": True})
    project.add_tool("napper", PROBE, args=PROBE_ARGS, timeout=0.5)
    project.add_tool("asker", ASKER, args=ASKER_ARGS)
    project.add_wrapped("echo", ["{python}", "-c",
                                 "import sys; print(' '.join(sys.argv[1:]))"],
                        usage="acor echo WORD...")
    server = Served(project)
    yield server
    assert server.stop() == 130
    assert "Traceback" not in "".join(server.err), "".join(server.err)


def http_client(url, headers=None, transport=None):
    return streamable_http_client(url, http_client=httpx2.AsyncClient(
        headers=headers, transport=transport,
        timeout=httpx2.Timeout(30, read=300)))


# --- everything stdio does, over HTTP -------------------------------------

@pytest.mark.anyio
@pytest.mark.parametrize("mode", list(GENERATIONS))
async def test_end_to_end_over_http(mode, shared, tmp_path):
    """Listing, progress, errors, Input Needed answered through the client,
    free argv, two calls at once, cancellation, a timeout: the stdio
    scenario, unchanged, against the HTTP server."""
    server = shared
    asked = []
    async with Client(server.url, mode=mode,
                      elicitation_callback=a_person(asked)) as client:
        assert client.protocol_version == GENERATIONS[mode]
        if mode == "legacy":  # a pinned 2026 client skips discovery
            assert client.server_info.name == "acor"
        await _scenario(client, asked, tmp_path)


@pytest.mark.anyio
async def test_auto_mode_lands_on_2026_over_http(shared):
    server = shared
    async with Client(server.url, mode="auto") as client:
        assert client.protocol_version == "2026-07-28"
        assert len((await client.list_tools()).tools) == 5  # and acor_read


@pytest.mark.anyio
async def test_stateless_serves_every_request_alone(served):
    """--stateless: no session to pin a client to one replica; progress
    still streams, and a question the server cannot ask back says what
    is needed and the exact next call."""
    server = served("--stateless")
    for mode in GENERATIONS:
        await _stateless_calls(server, mode)


async def _stateless_calls(server, mode):
    async with Client(server.url, mode=mode) as client:
        seen = []

        async def on_progress(value, total, message):
            seen.append(value)
        done = await client.call_tool("probe", {"mode": "progress"},
                                      progress_callback=on_progress)
        assert done.structured_content == {"steps": 20}
        assert seen and seen[-1] == 100
        needs = await client.call_tool("asker", {"target": "dev"})
        assert "How many greetings?" in "\n".join(texts(needs))
        assert needs.meta["acor/result"]["state"] == "input_needed"


# --- scale out: replicas sharing ACOR_MCP_KEY -----------------------------

class RoundRobin(httpx2.AsyncBaseTransport):
    """A load balancer in the client: each request goes to the next
    replica's port, whatever the URL says."""

    def __init__(self, ports):
        self.ports = ports
        self.sent = []
        self._inner = httpx2.AsyncHTTPTransport()

    async def handle_async_request(self, request):
        port = self.ports[len(self.sent) % len(self.ports)]
        self.sent.append(port)
        request.url = request.url.copy_with(port=port)
        request.headers["host"] = f"127.0.0.1:{port}"
        return await self._inner.handle_async_request(request)

    async def aclose(self):
        await self._inner.aclose()


@pytest.mark.anyio
@pytest.mark.parametrize("shared", [True, False])
async def test_replicas_sharing_the_key_serve_one_2026_client(served,
                                                              shared):
    """Input Needed across two replicas: the question comes from one, the
    retry with the answers lands on the other, which can unseal the
    requestState only when both have the same ACOR_MCP_KEY."""
    first = served(env={"ACOR_MCP_KEY": KEY})
    second = served(env={"ACOR_MCP_KEY": KEY if shared else "z" * 40})
    balancer = RoundRobin([first.port, second.port])
    asked = []
    async with Client(http_client(first.url, transport=balancer),
                      mode="2026-07-28",
                      elicitation_callback=a_person(asked)) as client:
        calls = len(balancer.sent)
        if shared:
            result = await client.call_tool("asker", {"target": "dev"})
            assert texts(result) == ["3 x hello dev (greet-7)"]
        else:
            with pytest.raises(Exception, match="requestState"):
                await client.call_tool("asker", {"target": "dev"})
        assert len(asked) == 1
        # The question and the retry went to different replicas.
        assert set(balancer.sent[calls:]) == {first.port, second.port}


def test_an_unusable_key_is_refused_at_start(e2e_project):
    done = subprocess.run(
        [sys.executable, "-m", "acor", "mcp", "--http", "--port", "0"],
        cwd=e2e_project.root, env={**e2e_project.env, "ACOR_MCP_KEY": "short"},
        capture_output=True, text=True, timeout=30)
    assert done.returncode == 2
    assert "ACOR_MCP_KEY is too short" in done.stderr
    assert "E_MCP_KEY" in done.stderr and "secrets.token_hex" in done.stderr


# --- concurrency ----------------------------------------------------------

@pytest.mark.anyio
async def test_twenty_clients_at_once_every_call_completes(shared):
    """Twenty clients, both generations, each with its own connection and
    a call that streams progress: every one completes, with its own
    result and its own progress."""
    server = shared
    outcomes = {}

    async def one(index):
        mode = "legacy" if index % 2 else "2026-07-28"
        seen = []

        async def on_progress(value, total, message):
            seen.append(value)
        async with Client(server.url, mode=mode) as client:
            result = await client.call_tool("probe", {"mode": "progress"},
                                            progress_callback=on_progress)
        outcomes[index] = (result.structured_content, seen[-1] if seen
                           else None)
    with anyio.fail_after(120):
        async with anyio.create_task_group() as tg:
            for index in range(20):
                tg.start_soon(one, index)
    assert outcomes == {i: ({"steps": 20}, 100) for i in range(20)}


# --- safe by default ------------------------------------------------------

def _post(port, headers=None, host=None):
    """A raw initialize, as a browser or a stray client would send it."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"}}}
    sent = {"Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            **(headers or {})}
    if host is not None:
        sent["Host"] = host
    return httpx2.post(f"http://127.0.0.1:{port}/mcp", json=body,
                       headers=sent, timeout=30)


def test_a_foreign_host_or_origin_is_refused(shared):
    """DNS rebinding: a page at evil.example resolving to 127.0.0.1 sends
    its own Host and Origin; both are refused, the server's own pass."""
    port = shared.port
    assert _post(port, host="evil.example").status_code == 421
    assert _post(port, host=f"evil.example:{port}").status_code == 421
    assert _post(port, {"Origin": "http://evil.example"}).status_code == 403
    assert _post(port, {"Origin": f"http://evil.example:{port}"}) \
        .status_code == 403
    assert _post(port).status_code == 200
    assert _post(port, host=f"localhost:{port}").status_code == 200
    assert _post(port, {"Origin": f"http://localhost:{port}"}) \
        .status_code == 200


def test_allow_host_and_origin_admit_a_proxy_name(served):
    port = served("--allow-host", "mcp.example.com",
                  "--allow-origin", "https://app.example.com").port
    assert _post(port, host="mcp.example.com").status_code == 200
    assert _post(port, {"Origin": "https://app.example.com"}) \
        .status_code == 200
    assert _post(port, host="other.example.com").status_code == 421
    assert _post(port, {"Origin": "https://evil.example"}).status_code \
        == 403


def test_off_loopback_without_a_token_refuses_to_start(e2e_project):
    env = {k: v for k, v in e2e_project.env.items() if k != "ACOR_MCP_TOKEN"}
    done = subprocess.run(
        [sys.executable, "-m", "acor", "mcp", "--http", "--host", "0.0.0.0",
         "--port", "0"], cwd=e2e_project.root, env=env,
        capture_output=True, text=True, timeout=30)
    assert done.returncode == 2
    assert "needs a token" in done.stderr
    assert "export ACOR_MCP_TOKEN=" in done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""


@pytest.mark.anyio
async def test_off_loopback_with_a_token_requires_it_on_every_request(
        served):
    server = served("--host", "0.0.0.0", env={"ACOR_MCP_TOKEN": TOKEN})
    assert "bearer token required" in server.err[0]
    port = server.port
    missing = _post(port)
    assert missing.status_code == 401
    assert missing.headers["www-authenticate"].startswith("Bearer")
    assert _post(port, {"Authorization": "Bearer " + TOKEN[:-1] + "X"}) \
        .status_code == 401
    assert _post(port, {"Authorization": "Bearer " + TOKEN + "0"}) \
        .status_code == 401
    assert _post(port, {"Authorization": "Basic " + TOKEN}).status_code \
        == 401
    assert _post(port, {"Authorization": "Bearer " + TOKEN}).status_code \
        == 200
    # The token does not lift the Host check.
    assert _post(port, {"Authorization": "Bearer " + TOKEN},
                 host="evil.example").status_code == 421
    url = f"http://127.0.0.1:{port}/mcp"
    for mode in GENERATIONS:
        async with Client(http_client(url, {"Authorization": "Bearer " +
                                            TOKEN}), mode=mode) as client:
            result = await client.call_tool("echo", {"argv": ["hi"]})
            assert texts(result) == ["hi"]


def test_a_token_file_is_read_and_must_be_private(e2e_project, served,
                                                  tmp_path):
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    token_file.chmod(0o644)
    done = subprocess.run(
        [sys.executable, "-m", "acor", "mcp", "--http", "--host", "0.0.0.0",
         "--token-file", str(token_file)], cwd=e2e_project.root,
        env=e2e_project.env, capture_output=True, text=True, timeout=30)
    assert done.returncode == 2 and f"chmod 600 {token_file}" in done.stderr
    token_file.chmod(0o600)
    port = served("--host", "0.0.0.0", "--token-file", str(token_file)).port
    assert _post(port).status_code == 401
    assert _post(port, {"Authorization": "Bearer " + TOKEN}).status_code \
        == 200


@pytest.mark.parametrize("args, says", [
    (["--port", "8080"], "--port only applies with --http"),
    (["--http", "--port", "http"], "--port takes a whole number"),
    (["--http", "--workers", "0"], "--workers takes a whole number"),
    (["--http", "--host", "a/b"], "is not a host name"),
    (["--http", "--allow-origin", "evil.example"], "takes an origin"),
])
def test_bad_http_options_are_refused(e2e_project, args, says):
    done = subprocess.run([sys.executable, "-m", "acor", "mcp", *args],
                          cwd=e2e_project.root, env=e2e_project.env,
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 2 and says in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


def test_a_busy_port_is_a_clear_error(e2e_project, shared):
    port = shared.port
    done = subprocess.run(
        [sys.executable, "-m", "acor", "mcp", "--http", "--port", str(port)],
        cwd=e2e_project.root, env=e2e_project.env, capture_output=True,
        text=True, timeout=30)
    assert done.returncode == 2 and "E_MCP_LISTEN" in done.stderr
    assert "--port 0" in done.stderr


# --- stopping -------------------------------------------------------------

@pytest.mark.parametrize("mode", list(GENERATIONS))
def test_sigterm_stops_every_running_tool(e2e_project, served, tmp_path,
                                          mode):
    server = served()
    pidfile = tmp_path / "pids"

    async def call_and_wait():
        async with Client(server.url, mode=mode) as client:
            async with anyio.create_task_group() as tg:
                async def call():
                    try:
                        await client.call_tool("probe", {
                            "mode": "sleep", "pidfile": str(pidfile)})
                    except Exception:
                        pass  # the server went away: no answer is owed
                tg.start_soon(call)
                with anyio.fail_after(20):
                    while not pidfile.exists():
                        await anyio.sleep(0.02)
                assert server.stop() == 130
                tg.cancel_scope.cancel()
    anyio.run(call_and_wait)
    anyio.run(_all_gone, pidfile)
    assert not any(pid_alive(int(p)) for p in pidfile.read_text().split())
    assert "Traceback" not in "".join(server.err), "".join(server.err)


def test_workers_share_one_port_and_one_key(e2e_project, served):
    """--workers 2: uvicorn's own workers on one socket; the legacy
    protocol goes stateless and a 2026 retry may reach either worker."""
    server = served("--workers", "2")
    assert "stateless" in server.err[0] and "2 workers" in server.err[0]

    async def calls():
        for mode in list(GENERATIONS) * 3:
            asked = []
            async with Client(server.url, mode=mode,
                              elicitation_callback=a_person(asked)) \
                    as client:
                result = await client.call_tool("echo", {"argv": [mode]})
                assert texts(result) == [mode]
                if mode != "legacy":
                    greeted = await client.call_tool("asker",
                                                     {"target": "dev"})
                    assert texts(greeted) == ["3 x hello dev (greet-7)"]
    anyio.run(calls)
    # Two worker processes serve; stopping the parent stops both.
    children = subprocess.run(["pgrep", "-P", str(server.process.pid)],
                              capture_output=True, text=True).stdout.split()
    assert server.stop() == 130
    deadline = time.monotonic() + 10
    while any(pid_alive(int(pid)) for pid in children):
        assert time.monotonic() < deadline, "a worker outlived the server"
        time.sleep(0.05)
    assert json.loads(json.dumps(len(children))) >= 2

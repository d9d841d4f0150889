"""The server's secrets stay with the server (issue 31, item 6).

A real `acor mcp` (stdio, `--http` with a real token, `--http --workers`)
runs real tools, boxed and unboxed, Python tools forked warm and wrapped
programs executed, each printing its whole environment; no token, no key
and no `ACOR_MCP_*` variable reaches any of them. The server makes itself
undumpable, so its `/proc/PID/environ` (which keeps the environment it
started with, whatever it later drops) is closed to the user's other
processes: shown as an ordinary user (as root, the test drops to uid
65534, since root reads any process's environ). And a client that holds
the sealing key cannot lower an approval: what an answer needs comes from
the manifest on the server when the answer arrives.
"""

import base64
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest


pytest.importorskip("mcp", reason="acor mcp needs the extra: "
                                  "pip install 'acor-cli[mcp]'")

import httpx2
from mcp import Client, StdioServerParameters

from acor.cli.sandbox import kernel
from conftest import Project, base_env
from test_mcp_http import Served, http_client

TOKEN = "t0ken-for-the-secrets-test-0123456789"
KEY = "k3y-for-the-secrets-test-" + "0123456789" * 3
OFFERS = kernel.offers()
BOXABLE = OFFERS["landlock"] >= 1 and OFFERS["namespaces"]

# A Python tool (forked warm from the fork server): its environment, its
# /proc/self/environ, and with "ancestors", the environ of every ancestor
# (as root, every one is readable: only the test as an ordinary user asks).
ENV_TOOL = """\
import os, sys
from acor import AcorTool

def environ(pid):
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return f.read().decode("utf-8", "replace")
    except OSError as exc:
        return f"unreadable: {type(exc).__name__}"

def parent(pid):
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])

with AcorTool() as tool:
    seen = {"environ": dict(os.environ), "self": environ("self"),
            "ancestors": {}}
    pid = os.getppid() if "ancestors" in sys.argv else 1
    while pid > 1:
        seen["ancestors"][pid] = environ(pid)
        pid = parent(pid)
    tool.output(seen)
"""
# A program, executed: the whole environment, as `env` prints it.
ENV_PROGRAM = ["env"]


@pytest.fixture
def anyio_backend():
    return "asyncio"


def _tools(project):
    box = {"write": ["out"], "network": False}
    project.add_tool("envtool", ENV_TOOL, max_output=0)
    project.add_wrapped("envprog", ENV_PROGRAM, max_output=0)
    names = ["envtool", "envprog"]
    if BOXABLE:
        project.add_tool("boxedtool", ENV_TOOL, max_output=0, sandbox=box)
        project.add_wrapped("boxedprog", ENV_PROGRAM, max_output=0,
                            sandbox=box)
        names += ["boxedtool", "boxedprog"]
    return names


def _everything(result) -> str:
    return json.dumps(result.model_dump(mode="json"))


def _assert_no_secret(text: str, *secrets: str) -> None:
    assert "ACOR_MCP_" not in text
    for secret in secrets:
        assert secret not in text
    # Nor encoded as the environ's own bytes would be in a JSON string.
    for secret in secrets:
        assert base64.b64encode(secret.encode()).decode() not in text


async def _dump_every_tool(client, names) -> list[str]:
    seen = []
    for name in names:
        result = await client.call_tool(name, {"argv": []})
        assert not result.is_error, _everything(result)
        text = _everything(result)
        assert ("PATH" in text), text  # it did print an environment
        seen.append(text)
    return seen


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_no_tool_gets_the_key_or_token_over_stdio(project, mode):
    names = _tools(project)
    env = {k: v for k, v in project.env.items()}
    env.update(ACOR_MCP_TOKEN=TOKEN, ACOR_MCP_KEY=KEY,
               ACOR_MCP_HTTP_OPTIONS='{"host": "x"}')
    server = StdioServerParameters(
        command=sys.executable, args=["-m", "acor", "mcp"],
        cwd=str(project.root), env=env)
    async with Client(server, mode=mode) as client:
        for text in await _dump_every_tool(client, names):
            _assert_no_secret(text, TOKEN, KEY)


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_no_tool_gets_the_key_or_token_over_http(project, mode):
    names = _tools(project)
    server = Served(project, env={"ACOR_MCP_TOKEN": TOKEN,
                                  "ACOR_MCP_KEY": KEY})
    try:
        async with Client(http_client(server.url, {
                "Authorization": "Bearer " + TOKEN}), mode=mode) as client:
            for text in await _dump_every_tool(client, names):
                _assert_no_secret(text, TOKEN, KEY)
    finally:
        assert server.stop() == 130
    assert TOKEN not in "".join(server.err) and KEY not in "".join(server.err)


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_no_tool_gets_the_key_or_token_from_workers(project, tmp_path,
                                                          mode):
    """--workers with --token-file and a key the parent generates: before,
    both were put in the environment for the workers, and every tool
    inherited them."""
    names = _tools(project)
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN)
    token_file.chmod(0o600)
    server = Served(project, "--workers", "2", "--token-file",
                    str(token_file))
    try:
        async with Client(http_client(server.url, {
                "Authorization": "Bearer " + TOKEN}), mode=mode) as client:
            for _ in range(2):  # either worker may answer
                for text in await _dump_every_tool(client, names):
                    _assert_no_secret(text, TOKEN)
    finally:
        workers = subprocess.run(
            ["pgrep", "-P", str(server.process.pid)], capture_output=True,
            text=True).stdout.split()
        # Neither in a worker's environment: the secrets come on the
        # start-up pipe (root may read these; what matters is what's in).
        for pid in workers:
            try:
                with open(f"/proc/{pid}/environ", "rb") as f:
                    raw = f.read().decode("utf-8", "replace")
            except OSError:
                continue
            _assert_no_secret(raw, TOKEN)
        assert server.stop() == 130
    assert len(workers) >= 2


# --- the server's /proc/PID/environ and memory -----------------------------

def _as_user() -> list[str]:
    """The argv prefix that runs a program as an ordinary process of this
    user. As root that is uid 0 with no capability (util-linux's setpriv
    empties the bounding set): root's capabilities read any process's
    environ, dumpable or not, and a process without them may read another
    only if that one is dumpable and holds no capability it lacks, so the
    server runs without them too and only dumpable decides. As any other
    user, nothing."""
    if os.geteuid() != 0:
        return []
    if shutil.which("setpriv") is None:
        pytest.skip("running as root, and setpriv (util-linux) is missing "
                    "to run processes without root's capabilities")
    return ["setpriv", "--bounding-set=-all", "--inh-caps=-all"]


def _reads(pid, as_user, what="environ"):
    """Whether another process of the user can open /proc/PID/WHAT (the
    kernel checks at open whether this reader may see that process)."""
    code = f"open('/proc/{pid}/{what}', 'rb'); print('opened')"
    done = subprocess.run([*as_user, sys.executable, "-c", code],
                          capture_output=True, text=True, timeout=60)
    if "opened" in done.stdout:
        return True
    assert "PermissionError" in done.stderr, done.stderr
    return False


def _closes_itself(pid, as_user, limit=60.0):
    """A worker closes itself as it takes its options (the token among
    them) from its parent's pipe: one still starting up may be open, but
    it holds nothing yet. Wait for it to close; while it is open, what it
    started with never holds the token."""
    deadline = time.monotonic() + limit
    while _reads(pid, as_user):
        code = f"print(open('/proc/{pid}/environ', 'rb').read())"
        seen = subprocess.run([*as_user, sys.executable, "-c", code],
                              capture_output=True, text=True, timeout=60)
        assert TOKEN not in seen.stdout
        assert time.monotonic() < deadline, f"worker {pid} never closed"
        time.sleep(0.1)


def _cmdline(pid) -> bytes:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read()
    except OSError:
        return b""


@pytest.mark.anyio
@pytest.mark.parametrize("args", [[], ["--workers", "2"]],
                         ids=["one-process", "workers"])
async def test_the_servers_environ_is_closed_to_the_users_other_processes(
        project, args):
    """As an ordinary process of the user (see _as_user): `acor mcp
    --http` (one process, or a parent and its workers), given its token in
    the environment, drops it from os.environ, but /proc/PID/environ keeps
    the environment a process started with; undumpable, the server's (and
    each worker's) is not readable by the user's other processes, nor its
    memory, while a plain process of the same user, the control, is. The
    tools it runs, warm (forked from the fork server) and executed, still
    work, and none reads the token from any ancestor."""
    project.add_tool("envtool", ENV_TOOL, max_output=0)
    project.add_wrapped("envprog", ENV_PROGRAM, max_output=0)
    as_user = _as_user()
    control = subprocess.Popen([*as_user, "sleep", "60"],
                               env={"SECRET": TOKEN})
    server = Served(project, *args, as_user=as_user,
                    env={"ACOR_MCP_TOKEN": TOKEN})
    try:
        assert _reads(control.pid, as_user)  # the reader can read
        assert not _reads(server.process.pid, as_user)
        assert not _reads(server.process.pid, as_user, "mem")
        async with Client(http_client(server.url, {
                "Authorization": "Bearer " + TOKEN}), mode="auto") as client:
            tool = await client.call_tool("envtool",
                                          {"argv": ["ancestors"]})
            prog = await client.call_tool("envprog", {"argv": []})
        for result in (tool, prog):
            assert not result.is_error, _everything(result)
            _assert_no_secret(_everything(result), TOKEN)
        # The workers (they have served a call by now) hold the token and
        # the key too: each closed as the parent is.
        workers = [pid for pid in subprocess.run(
            ["pgrep", "-P", str(server.process.pid)], capture_output=True,
            text=True).stdout.split() if args and
            # multiprocessing's resource tracker holds no secret
            b"resource_tracker" not in _cmdline(pid)]
        assert len(workers) >= 2 or not args
        for pid in workers:
            _closes_itself(pid, as_user)
        seen = tool.structured_content
        ancestors = seen["ancestors"]
        server_pid = str(server.process.pid)
        assert server_pid in ancestors  # the tool's chain reaches it
        assert ancestors[server_pid].startswith("unreadable")
        for pid in workers:
            if pid in ancestors:
                assert ancestors[pid].startswith("unreadable")
        for environ in ancestors.values():
            _assert_no_secret(environ, TOKEN)
    finally:
        control.kill()
        control.wait()
        assert server.stop() == 130


def test_undumpable_takes_effect_only_in_the_server():
    """The kernel resets dumpable at execve: a program the server runs is
    an ordinary process again (its children and the fork server keep
    working, as the tests above show); only the server is closed."""
    child = None
    code = ("from acor.cli.run.own_secrets import keep_private;"
            "import subprocess, sys, time;"
            "assert keep_private();"
            "child = subprocess.Popen(['sleep', '30']);"
            "print(child.pid, flush=True); time.sleep(30)")
    as_user = _as_user()
    proc = subprocess.Popen([*as_user, sys.executable, "-P", "-c", code],
                            stdout=subprocess.PIPE, text=True)
    try:
        child = int(proc.stdout.readline())
        deadline = time.monotonic() + 30
        while not os.path.exists(f"/proc/{child}"):
            assert time.monotonic() < deadline
            time.sleep(0.01)
        assert not _reads(proc.pid, as_user)
        assert _reads(child, as_user)
    finally:
        proc.kill()
        proc.wait()
        if child is not None:
            os.kill(child, 9)


# --- a leaked key cannot lower an approval ----------------------------------

class Tamper(httpx2.AsyncBaseTransport):
    """The client's own HTTP transport, holding the sealing key: every
    2026-07-28 retry's requestState is unsealed, changed by ``change``
    (state, params) and resealed, and the client answers for itself."""

    def __init__(self, key, change):
        from mcp.server.request_state import AESGCMRequestStateCodec
        self.codec = AESGCMRequestStateCodec([key])
        self.change = change
        self.inner = httpx2.AsyncHTTPTransport()
        self.tampered = []

    async def handle_async_request(self, request):
        from mcp.server.request_state import (_request_identity,
                                              compact_json)
        body = json.loads(request.content or b"null")
        params = (body or {}).get("params") if isinstance(body, dict) \
            else None
        if isinstance(params, dict) and params.get("requestState"):
            claims = json.loads(self.codec.unseal(params["requestState"]))
            state = json.loads(claims["s"])
            self.change(state, params)
            claims["s"] = json.dumps(state)
            claims["a"] = _request_identity("tools/call", params)[1]
            params["requestState"] = self.codec.seal(
                compact_json(claims).encode())
            params["inputResponses"] = {state["key"]: {
                "action": "accept", "content": {"yes": True}}}
            self.tampered.append(state)
            content = json.dumps(body).encode()
            headers = {k: v for k, v in request.headers.items()
                       if k.lower() != "content-length"}
            request = httpx2.Request(request.method, request.url,
                                     headers=headers, content=content)
        return await self.inner.handle_async_request(request)


def _drop_the_page(state, params):
    state.pop("page", None)


def _another_file(state, params):
    params["arguments"] = {"path": "precious"}


def _mint_a_question(state, params):
    """A state of the client's own making: fresh nonce, no page, the
    field named as a standard one."""
    state.update(page=None, nonce="n" * 24, audience="agent",
                 specs={"yes": {"type": "boolean"}}, human={"yes": True})


@pytest.mark.anyio
@pytest.mark.parametrize("change", [_drop_the_page, _another_file,
                                    _mint_a_question],
                         ids=["drop-the-page", "another-file",
                              "mint-a-question"])
async def test_a_client_with_the_key_cannot_approve_a_high_level_request(
        project, change):
    """Issue 31's attack: the client holds ACOR_MCP_KEY (here given; before,
    any tool's environment handed it over), unseals the requestState of a
    "level": "high" human-only argument, lowers or redirects it, reseals
    it and answers {"yes": true} itself. Refused, nothing deleted: what an
    answer needs comes from the manifest, and a page answers only the state
    it was opened for. In "another-file" a person did approve, on the page,
    deleting "victim"; the client redirects that approval to "precious"."""
    from mcp.shared.exceptions import MCPError
    from mcp_types import ElicitResult
    from sample_tools import HIGH, REMOVER
    project.add_tool("wiper", REMOVER, args=HIGH)
    for name in ("victim", "precious"):
        (project.root / name).write_text("keep me")
    server = Served(project, env={"ACOR_MCP_KEY": KEY})
    tamper = Tamper(KEY, change)
    pages = []

    async def a_person_on_the_page(ctx, params):
        assert getattr(params, "mode", None) == "url"
        pages.append(params.url)
        if change is _another_file:  # a person approves "victim" there
            async with httpx2.AsyncClient() as browser:
                token = params.url.split("token=", 1)[1]
                sent = await browser.post(params.url.split("?")[0], data={
                    "token": token, "f_yes": "true", "action": "approve"})
                assert sent.status_code == 200
        return ElicitResult(action="accept")
    try:
        async with Client(http_client(server.url, transport=tamper),
                          mode="auto", elicitation_callback=a_person_on_the_page
                          ) as client:
            try:
                result = await client.call_tool("wiper", {"path": "victim"})
            except MCPError as exc:
                refusal = exc.error.message
            else:
                refusal = _everything(result)
                assert result.is_error or "deleted" not in refusal
        assert tamper.tampered and pages
        assert (project.root / "victim").exists()
        assert (project.root / "precious").exists()
        assert "deleted" not in refusal
    finally:
        assert server.stop() == 130


def test_no_tool_gets_them_through_acor_run(project):
    """A test session that holds the token and key in its environment (a
    CI secret, say) runs tools through `acor_run`, warm and executed: none
    of them gets either."""
    _tools(project)
    (project.root / "test_env.py").write_text(f"""\
import json
import pytest

@pytest.mark.parametrize("name", ["envtool", "envprog"])
def test_env(acor_run, name):
    result = acor_run(name)
    assert result.exit_code == 0
    text = json.dumps([result.data,
                       [getattr(e, "text", "") for e in result.events]])
    assert "PATH" in text
    assert "ACOR_MCP_" not in text
    assert {TOKEN!r} not in text and {KEY!r} not in text
""")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:xdist", "-p",
         "no:cacheprovider", "-p", "no:hypothesispytest", "test_env.py"],
        cwd=project.root, env={**project.env, "ACOR_MCP_TOKEN": TOKEN,
                               "ACOR_MCP_KEY": KEY},
        capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 passed" in done.stdout


BOXED_RUN = """\
import sys
from acor.cli.run.own_secrets import keep_private
from acor.cli.run.launch import run
from acor.cli.run.request import build_request
assert keep_private()
result = run(build_request("boxedsh", [], cwd=sys.argv[1]))
print(result.exit_code, result.state,
      [(e.title, e.details) for e in result.errors])
"""


@pytest.mark.skipif(not BOXABLE, reason=f"no sandbox here: {OFFERS}")
def test_an_undumpable_server_still_boxes_a_tool_it_forks(tmp_path):
    """Without the fork server (it could not start), the runner forks a
    boxed tool from the server itself; that child inherits the server's
    undumpable state, and an undumpable process cannot map its own user
    namespace (its /proc/self files are root's), so every box failed for
    an ordinary user. The child is made dumpable again before it boxes
    itself. Run as an ordinary user (as root, uid 65534 through setpriv:
    root maps its namespace whatever it is)."""
    import tempfile
    prefix = []
    root = tempfile.mkdtemp(prefix="acor-box-")
    try:
        os.chmod(root, 0o755)
        project = Project(Path(root) / "proj", base_env(Path(root)))
        project.env["HOME"] = root
        project.add_wrapped("boxedsh", ["sh", "-c", "echo ok > out/ok"],
                            sandbox={"write": ["out"], "network": False})
        (project.root / "out").mkdir()
        if os.geteuid() == 0:
            if shutil.which("setpriv") is None:
                pytest.skip("running as root, and setpriv (util-linux) is "
                            "missing to drop to an ordinary user")
            prefix = ["setpriv", "--reuid=65534", "--regid=65534",
                      "--clear-groups", "--inh-caps=-all"]
            for folder, _, files in os.walk(root):
                os.chown(folder, 65534, 65534)
                for name in files:
                    os.chown(os.path.join(folder, name), 65534, 65534)
        runs = subprocess.run([*prefix, sys.executable, "-c", "import acor"],
                              cwd=root, env=project.env, capture_output=True,
                              text=True, timeout=120)
        if runs.returncode != 0:  # e.g. its libpython under /root, 0700
            pytest.skip("this interpreter cannot run acor as uid 65534: "
                        + runs.stderr.strip()[-200:])
        done = subprocess.run(
            [*prefix, sys.executable, "-P", "-c", BOXED_RUN,
             str(project.root)], cwd=root, env=project.env,
            capture_output=True, text=True, timeout=120)
        assert done.stdout.split()[:2] == ["0", "complete"], \
            done.stdout + done.stderr
        assert (project.root / "out" / "ok").read_text() == "ok\n"
    finally:
        shutil.rmtree(root, ignore_errors=True)

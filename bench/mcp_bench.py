"""The `acor mcp` measurements for `make bench` (bench/mcp_rows.py shows them).

Both talk to a real `acor mcp` over its stdin and stdout, as an agent client
does, with raw JSON-RPC lines (no SDK client in the way: its own validation
is not the server's time). Each function returns its samples in seconds.

* initialize_latency: `acor mcp` spawned -> its answer to `initialize`
  read, in a project with one tool and a warm discovery cache (a client
  restarting its servers). Target 1.0 s: agent clients allow about 1.5 s.
* tools_list_1000: one `tools/list` request -> the whole answer read and
  parsed, 1,000 tools with typed arguments, warm discovery cache.
* call_vs_sdk: one `tools/call` of a trivial Python tool, answered by
  `acor mcp` (a process per call, forked warm) and by a server on the SDK
  that answers in its own process (bench/tools/sdk_server.py), in
  alternating rounds through the same client code. Targets: at most 4x the
  SDK server, and at most 8 ms median.
* call_1000_tools: one `tools/call` in a project of 1,000 tools against
  the same call in a project of one, alternating rounds, each session
  having listed its tools first (as an SDK client does, so the check for
  a changed list runs after every call): what the size of the project
  costs a call. The server keeps its registry between calls and checks
  it with a stat of each path discovery depends on (about 2,000 here),
  before the call and after it.
* concurrent_calls: 10 calls sent at once, until all 10 are answered,
  against 10 times one call: how far concurrent calls use the cores.
* warm_fork: the warm start alone: a trivial Python program forked from
  the server and reaped, against starting it as a fresh interpreter.
* acor_run_per_run: one run of a trivial tool as the pytest fixture
  `acor_run` does it (in process, through the warm start).
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from harness import Result, alternate, bound_result, ratio_result

QUICK = os.environ.get("BENCH_QUICK", "") not in ("", "0")
STARTS = 3 if QUICK else 12
LISTINGS = 5 if QUICK else 30
CALLS = 10 if QUICK else 60
BURSTS = 3 if QUICK else 15
SDK_SERVER = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                          "tools", "sdk_server.py")
PING = ("from acor import AcorTool\n"
        "with AcorTool() as tool:\n    tool.output('ok')\n")
TOOLS = 1000
ACOR = os.path.join(os.path.dirname(sys.executable), "acor")
INITIALIZE = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {},
    "clientInfo": {"name": "acor-bench", "version": "1"}}}
ARGS = {"type": "object", "additionalProperties": False, "required": ["path"],
        "properties": {
            "path": {"type": "string", "description": "The input file",
                     "x-acor": {"position": 0}},
            "limit": {"type": "integer", "minimum": 1,
                      "description": "Rows to read", "x-acor": {"flag":
                                                                "--limit"}},
            "verbose": {"type": "boolean", "x-acor": {"flag": "--verbose"}}}}


def initialize_latency() -> list[float]:
    with tempfile.TemporaryDirectory(prefix="acor-mcp-bench-") as work:
        root = _project(work, 1)
        env = _env(work)
        _session(root, env).close()  # warms the discovery cache
        samples = []
        for _ in range(STARTS):
            started = time.perf_counter()
            session = _session(root, env)
            samples.append(time.perf_counter() - started)
            session.close()
        return samples


def tools_list_1000() -> list[float]:
    with tempfile.TemporaryDirectory(prefix="acor-mcp-bench-") as work:
        root = _project(work, TOOLS)
        session = _session(root, _env(work))
        try:
            session.notify("notifications/initialized")
            tools = session.request("tools/list")["tools"]  # warm-up
            # The project's tools, and acor's own (acor_read) beside them.
            ours = [t for t in tools if not t["name"].startswith("acor_")]
            if len(ours) != TOOLS:
                raise RuntimeError(f"listed {len(ours)} tools, not {TOOLS}")
            samples = []
            for _ in range(LISTINGS):
                started = time.perf_counter()
                session.request("tools/list")
                samples.append(time.perf_counter() - started)
            return samples
        finally:
            session.close()


def call_vs_sdk() -> Result:
    with tempfile.TemporaryDirectory(prefix="acor-mcp-bench-") as work:
        env = _env(work)
        acor = _session(_ping_project(work), env)
        sdk = _session(work, env, [sys.executable, SDK_SERVER])
        try:
            for session in (acor, sdk):
                session.notify("notifications/initialized")
            acor_samples, sdk_samples = alternate(
                lambda: _timed_call(acor), lambda: _timed_call(sdk), CALLS,
                warmup=5)
        finally:
            acor.close()
            sdk.close()
    result = ratio_result(
        "MCP call vs in-process SDK server", "`tools/call` of a trivial "
        f"tool, median of {CALLS} per-round ratios", acor_samples, sdk_samples, 4.0,
        detail=f"acor {_ms(acor_samples)}, SDK {_ms(sdk_samples)}")
    median = statistics.median(acor_samples)
    if median > 0.008:
        result.fail(f"median {median * 1000:.1f} ms is over 8 ms")
    return result


def call_1000_tools() -> Result:
    with tempfile.TemporaryDirectory(prefix="acor-mcp-bench-") as work:
        env = _env(work)
        big = _session(_project(work, TOOLS), env)
        small = _session(_ping_project(work), env)
        try:
            for session in (big, small):
                session.notify("notifications/initialized")
                session.request("tools/list")
            big_samples, small_samples = alternate(
                lambda: _timed_call(big, "tool0000", {"path": "x"}),
                lambda: _timed_call(small), CALLS, warmup=5)
        finally:
            big.close()
            small.close()
    return ratio_result(
        "MCP call, 1,000 tools", "`tools/call` with 1,000 tools / with 1 "
        f"tool, after a listing, median of {CALLS} per-round ratios",
        big_samples,
        small_samples, 3.0, detail=f"1,000 tools {_ms(big_samples)}, "
        f"1 tool {_ms(small_samples)}")


def concurrent_calls() -> Result:
    """Speed-up of 10 concurrent calls over 10 calls one after another."""
    with tempfile.TemporaryDirectory(prefix="acor-mcp-bench-") as work:
        acor = _session(_ping_project(work), _env(work))
        try:
            acor.notify("notifications/initialized")
            for _ in range(5):
                _timed_call(acor)
            speedups = []
            for _ in range(BURSTS):
                one = statistics.median(_timed_call(acor) for _ in range(5))
                started = time.perf_counter()
                acor.burst("tools/call", {"name": "ping", "arguments": {}},
                           10)
                speedups.append(10 * one / (time.perf_counter() - started))
        finally:
            acor.close()
    cores = min(os.cpu_count() or 1, 10)
    return bound_result("MCP, 10 concurrent calls", "10 calls at once "
                        "against 10 one after another (speed-up), median "
                        f"of {BURSTS} bursts",
                        speedups, round(cores * 0.6, 2), "x faster",
                        higher_is_better=True,
                        detail=f"{cores} cores: ideal {cores}x")


def warm_fork() -> list[float]:
    """Seconds from the request to the reaped exit of a trivial program
    forked warm (what the warm start adds to a tool's own run)."""
    from acor.cli.run.warm import WarmStarter
    with tempfile.TemporaryDirectory(prefix="acor-fork-bench-") as work:
        program = os.path.join(work, "noop.py")
        with open(program, "w") as f:
            f.write("pass\n")
        starter = WarmStarter()
        try:
            env = dict(os.environ, PYTHONUNBUFFERED="1",
                       PYTHONIOENCODING="utf-8")
            argv = [sys.executable, "-u", program]
            samples = []
            for i in range(CALLS + 5):
                started = time.perf_counter()
                proc = starter.spawn(argv, cwd=work, env=env)
                proc.reap(5.0, False)
                if i >= 5:
                    samples.append(time.perf_counter() - started)
        finally:
            starter.close()
    return samples


def acor_run_per_run() -> list[float]:
    """Seconds per in-process run of a trivial tool through the warm start,
    as ``acor_run`` runs it."""
    from acor.cli.discovery.registry import load_registry
    from acor.cli.run.launch import run
    from acor.cli.run.request import build_request
    from acor.cli.run.warm import WarmStarter
    with tempfile.TemporaryDirectory(prefix="acor-run-bench-") as work:
        root = _ping_project(work)
        saved = {k: os.environ.get(k) for k in ("ACOR_CACHE_DIR",
                                                "ACOR_NO_PACKAGE_TOOLS")}
        os.environ.update(ACOR_CACHE_DIR=os.path.join(work, "cache"),
                          ACOR_NO_PACKAGE_TOOLS="1")
        starter = WarmStarter()
        try:
            registry = load_registry(cwd=root)
            samples = []
            for i in range(CALLS + 5):
                started = time.perf_counter()
                result = run(build_request("ping", [], registry=registry,
                                           cwd=root), warm=starter)
                if result.exit_code != 0:
                    raise RuntimeError(f"ping ended {result.state}")
                if i >= 5:
                    samples.append(time.perf_counter() - started)
        finally:
            starter.close()
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value
    return samples


def _timed_call(session, name="ping", arguments=None) -> float:
    started = time.perf_counter()
    result = session.request("tools/call", {"name": name,
                                            "arguments": arguments or {}})
    elapsed = time.perf_counter() - started
    if result.get("isError"):
        raise RuntimeError(f"{name} failed: {result}")
    return elapsed


def _ms(samples) -> str:
    ordered = sorted(samples)
    p90 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.9))]
    return (f"median {statistics.median(samples) * 1000:.1f} ms, "
            f"p90 {p90 * 1000:.1f} ms")


def http_50_clients() -> Result:
    """`acor mcp --http`, 50 SDK clients connecting and calling at once
    (half 2025-11-25 sessions, half 2026-07-28): each call's latency, from
    the client opening to the result; every call must complete."""
    import re
    import threading

    import anyio
    from mcp import Client
    with tempfile.TemporaryDirectory(prefix="acor-mcp-bench-") as work:
        server = subprocess.Popen(
            [os.path.join(os.path.dirname(sys.executable), "acor"), "mcp",
             "--http", "--port", "0"], cwd=_ping_project(work),
            env=_env(work), stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE, text=True)
        try:
            found = re.search(r"serving at (\S+/mcp)",
                              server.stderr.readline())
            if found is None:
                raise RuntimeError("acor mcp --http did not start")
            threading.Thread(target=server.stderr.read, daemon=True).start()
            url = found.group(1)
            latencies, walls, failed = [], [], 0

            async def one(index, out):
                started = time.perf_counter()
                mode = "legacy" if index % 2 else "2026-07-28"
                async with Client(url, mode=mode) as client:
                    result = await client.call_tool("ping", {})
                if not result.is_error:
                    out.append(time.perf_counter() - started)

            async def burst():
                out = []
                started = time.perf_counter()
                async with anyio.create_task_group() as tg:
                    for index in range(50):
                        tg.start_soon(one, index, out)
                walls.append(time.perf_counter() - started)
                return out
            anyio.run(burst)  # warm-up: imports, the warm start, caches
            walls.clear()
            server_cpu, client_cpu = _cpu(server.pid), time.process_time()
            for _ in range(2 if QUICK else 5):
                done = anyio.run(burst)
                failed += 50 - len(done)
                latencies += done
            server_cpu = _cpu(server.pid) - server_cpu
            client_cpu = time.process_time() - client_cpu
        finally:
            server.terminate()
            server.wait(timeout=30)
    if failed:
        raise RuntimeError(f"{failed} of {50 * len(walls)} calls did "
                           "not complete")
    ordered = sorted(latencies)
    p95 = ordered[int(len(ordered) * 0.95) - 1]
    return bound_result(
        "MCP over HTTP, 50 clients at once", "each of 50 clients at once: "
        f"connect, call, result (median of {len(walls)} bursts' calls)",
        [s * 1000 for s in latencies],
        5000, "ms", higher_is_better=False,
        detail=f"all {len(latencies)} calls completed; p95 "
               f"{p95 * 1000:.0f} ms; 50 in {statistics.median(walls):.2f} s"
               f"; CPU: server {server_cpu:.1f} s, the 50 SDK clients "
               f"{client_cpu:.1f} s")


def _cpu(pid) -> float:
    """CPU seconds process ``pid`` has used (user and system)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(") ", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _ping_project(work) -> str:
    root = os.path.join(work, "ping-project")
    folder = os.path.join(root, "tools", "ping")
    os.makedirs(folder)
    with open(os.path.join(folder, "ping.py"), "w") as f:
        f.write(PING)
    with open(os.path.join(folder, "manifest.json"), "w") as f:
        json.dump({"name": "ping", "version": "1.0.0", "entry": "ping.py",
                   "description": "Answer at once"}, f)
    then = time.time() - 60
    for path in (os.path.join(folder, "ping.py"),
                 os.path.join(folder, "manifest.json"), folder,
                 os.path.dirname(folder), root):
        os.utime(path, (then, then))
    return root


class _Session:
    """`acor mcp` after `initialize` was answered."""

    def __init__(self, process) -> None:
        self.process = process
        self.next_id = 1

    def send(self, message) -> None:
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        self.process.stdin.flush()

    def notify(self, method) -> None:
        self.send({"jsonrpc": "2.0", "method": method})

    def request(self, method, params=None) -> dict:
        request_id, self.next_id = self.next_id, self.next_id + 1
        self.send({"jsonrpc": "2.0", "id": request_id, "method": method,
                   **({"params": params} if params is not None else {})})
        while True:
            message = self.read()
            if message.get("id") == request_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message["result"]

    def burst(self, method, params, count) -> None:
        """``count`` requests sent at once; returns when all are answered."""
        ids = set()
        for _ in range(count):
            request_id, self.next_id = self.next_id, self.next_id + 1
            ids.add(request_id)
            self.send({"jsonrpc": "2.0", "id": request_id, "method": method,
                       "params": params})
        while ids:
            message = self.read()
            if message.get("id") in ids:
                if "error" in message or message["result"].get("isError"):
                    raise RuntimeError(f"{method}: {message}")
                ids.discard(message["id"])

    def read(self) -> dict:
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError("acor mcp exited: " +
                               self.process.stderr.read().decode()[-2000:])
        return json.loads(line)

    def close(self) -> None:
        self.process.stdin.close()
        try:
            self.process.wait(timeout=30)
        finally:
            if self.process.poll() is None:
                self.process.kill()
            self.process.stdout.close()
            self.process.stderr.close()


def _session(root, env, argv=None) -> _Session:
    process = subprocess.Popen(argv or [ACOR, "mcp"], cwd=root, env=env,
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)
    session = _Session(process)
    session.send(INITIALIZE)
    answer = session.read()
    if "result" not in answer:
        session.close()
        raise RuntimeError(f"initialize failed: {answer}")
    return session


def _env(work) -> dict:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("ACOR_") and k != "PYTHONPATH"}
    env["ACOR_CACHE_DIR"] = os.path.join(work, "cache")
    env["ACOR_NO_PACKAGE_TOOLS"] = "1"  # exactly the bench's 1,000 tools
    return env


def _project(work, count) -> str:
    """A project with ``count`` tools, their files dated a minute back: the
    discovery cache does not trust a file changed in the last 2 s, and the
    rows measure a warm cache."""
    root = os.path.join(work, f"project-{count}")
    then = time.time() - 60
    for i in range(count):
        folder = os.path.join(root, "tools", f"tool{i:04d}")
        os.makedirs(folder)
        with open(os.path.join(folder, "cli.py"), "w") as f:
            f.write("from acor import AcorTool\n"
                    "with AcorTool() as tool:\n    tool.output('ok')\n")
        with open(os.path.join(folder, "manifest.json"), "w") as f:
            json.dump({"name": f"tool{i:04d}", "version": "1.0.0",
                       "description": f"Profile a CSV file, variant {i}",
                       "entry": "cli.py", "args": ARGS}, f)
        for name in ("cli.py", "manifest.json", ""):
            os.utime(os.path.join(folder, name), (then, then))
    for folder in (os.path.join(root, "tools"), root):
        os.utime(folder, (then, then))
    return root


if __name__ == "__main__":
    for measure in (initialize_latency, tools_list_1000):
        values = sorted(measure())
        print(f"{measure.__name__}: median {values[len(values) // 2]:.4f} s,"
              f" min {values[0]:.4f} s, max {values[-1]:.4f} s")

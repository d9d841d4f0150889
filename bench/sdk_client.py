"""MCP as a user's client meets it, for `make bench` (bench/mcp_rows.py
shows the rows): the official SDK's `Client` (2.x) against a real
`acor mcp` and against a server on the SDK that answers a trivial tool in
its own process (bench/tools/sdk_server.py), the same client code for
both, in alternating rounds.

* stdio_call(mode): one `call_tool` of a trivial tool over stdio, with
  the legacy handshake or at 2026-07-28; median of the per-round ratios.
* http_20_clients: 20 SDK clients at once over HTTP (half legacy, half
  2026-07-28), each making 20 calls one after another: calls per second
  of the whole burst, and each call's latency (median, p95), acor's
  bursts alternating with the SDK server's, the median of 5 bursts each
  (a burst's rate moves with what else the machine does in those
  seconds); with the CPU each server spent a call.
"""

import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import anyio
from mcp import Client, StdioServerParameters

from harness import QUICK, Result, ratio_result, spread
from mcp_bench import ACOR, SDK_SERVER, _env, _ping_project

ROUNDS = 10 if QUICK else 60
CLIENTS = 20
CALLS_PER_CLIENT = 20
BURSTS = 2 if QUICK else 5


def stdio_legacy() -> Result:
    return stdio_call("legacy")


def stdio_modern() -> Result:
    return stdio_call("2026-07-28")


def stdio_call(mode: str) -> Result:
    """acor against the SDK server, one SDK-client call each per round;
    the detail adds the CPU each server spent a call."""
    with tempfile.TemporaryDirectory(prefix="acor-sdk-bench-") as work:
        env = _env(work)
        acor = StdioServerParameters(command=ACOR, args=["mcp"],
                                     cwd=_ping_project(work), env=env)
        sdk = StdioServerParameters(command=sys.executable,
                                    args=[SDK_SERVER], cwd=work, env=env)
        acor_samples, sdk_samples, cpu = anyio.run(_alternate, acor, sdk,
                                                   mode)
    name = "legacy handshake" if mode == "legacy" else mode
    return ratio_result(
        f"MCP call, SDK client, {name}", "`call_tool` of a trivial tool "
        f"over stdio, SDK 2.x `Client`, median of {ROUNDS} per-round "
        "ratios", acor_samples, sdk_samples, 4.0,
        detail=f"acor {_ms(acor_samples)}, SDK {_ms(sdk_samples)}; server "
               f"CPU a call: acor {cpu[0] * 1000:.1f} ms (with its fork "
               f"server and tools), SDK {cpu[1] * 1000:.1f} ms")


async def _alternate(acor: StdioServerParameters,
                     sdk: StdioServerParameters, mode: str
                     ) -> tuple[list[float], list[float], list[float]]:
    async with Client(acor, mode=mode) as a, Client(sdk, mode=mode) as b:
        for _ in range(5):
            await _timed(a)
            await _timed(b)
        pids = [_child(acor.command), _child(SDK_SERVER)]
        cpu = [_tree_cpu(pid) for pid in pids]
        samples_a: list[float] = []
        samples_b: list[float] = []
        for i in range(ROUNDS):
            if i % 2:
                samples_b.append(await _timed(b))
                samples_a.append(await _timed(a))
            else:
                samples_a.append(await _timed(a))
                samples_b.append(await _timed(b))
        cpu = [(_tree_cpu(pid) - before) / ROUNDS
               for pid, before in zip(pids, cpu, strict=True)]
    return samples_a, samples_b, cpu


def _child(named: str) -> int:
    """The pid of this process's child whose command line has ``named``."""
    for pid in _children(os.getpid()):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if named.encode() in f.read():
                    return pid
        except OSError:
            continue
    raise RuntimeError(f"no server process running {named}")


def _children(pid: int) -> list[int]:
    children = []
    try:
        for thread in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{thread}/children") as f:
                children += [int(child) for child in f.read().split()]
    except OSError:
        pass
    return children


async def _timed(client: Client) -> float:
    started = time.perf_counter()
    result = await client.call_tool("ping", {})
    elapsed = time.perf_counter() - started
    if result.is_error:
        raise RuntimeError(f"ping failed: {result}")
    return elapsed


def http_20_clients() -> Result:
    """20 clients x 20 calls over HTTP, acor's bursts alternating with the
    SDK server's; the ratio is the median of the bursts' calls/s ratios,
    and the latency's the median of their median latencies' ratios. The
    detail adds the CPU each server spent a call (its process, and for
    acor the fork server and the tools it forked)."""
    with tempfile.TemporaryDirectory(prefix="acor-sdk-bench-") as work:
        env = _env(work)
        acor = _start([ACOR, "mcp", "--http", "--port", "0"],
                      _ping_project(work), env, r"serving at (\S+/mcp)")
        port = _free_port()
        sdk = _start([sys.executable, SDK_SERVER, "--http", str(port)], work,
                     env, r"(Uvicorn running on)")
        servers = {"acor": (acor[0].pid, acor[1]),
                   "sdk": (sdk[0].pid, f"http://127.0.0.1:{port}/mcp")}
        try:
            runs: dict[str, list[tuple[float, list[float], float]]] = {
                "acor": [], "sdk": []}
            for _, url in servers.values():  # warm-up: imports, warm start
                anyio.run(_burst, url)
            for i in range(BURSTS):
                order = ("acor", "sdk") if i % 2 == 0 else ("sdk", "acor")
                for who in order:
                    pid, url = servers[who]
                    cpu = _tree_cpu(pid)
                    rate, latencies = anyio.run(_burst, url)
                    cpu = _tree_cpu(pid) - cpu
                    runs[who].append((rate, latencies,
                                      cpu / (CLIENTS * CALLS_PER_CLIENT)))
        finally:
            for process in (acor[0], sdk[0]):
                process.terminate()
                process.wait(timeout=30)
    rates = [a[0] / s[0]
             for a, s in zip(runs["acor"], runs["sdk"], strict=True)]
    median, noise = spread(rates)
    latency_ratio = statistics.median(
        statistics.median(a[1]) / statistics.median(s[1])
        for a, s in zip(runs["acor"], runs["sdk"], strict=True))
    acor_lat = [x for _, lat, _ in runs["acor"] for x in lat]
    sdk_lat = [x for _, lat, _ in runs["sdk"] for x in lat]
    cpu = {who: statistics.median(c for _, _, c in runs[who]) * 1000
           for who in runs}
    result = Result(
        "MCP over HTTP, 20 clients x 20 calls", "calls/s, acor over the "
        f"in-process SDK server, median of {BURSTS} alternating bursts",
        median, 0.7, "x faster", noise, median >= 0.7 * (1 - noise),
        detail=f"acor {statistics.median(r for r, _, _ in runs['acor']):.0f}"
               f" calls/s, {_ms(acor_lat, 95)}; SDK "
               f"{statistics.median(r for r, _, _ in runs['sdk']):.0f} "
               f"calls/s, {_ms(sdk_lat, 95)}; median latency "
               f"{latency_ratio:.2f}x (target <= 2x, median of the bursts'"
               f"); server CPU a call: acor {cpu['acor']:.1f} ms (with its "
               f"fork server and tools), SDK {cpu['sdk']:.1f} ms")
    if latency_ratio > 2.0 * (1 + noise):
        result.fail(f"median latency {latency_ratio:.2f}x the SDK's")
    return result


def _tree_cpu(pid: int) -> float:
    """CPU seconds of process ``pid`` and its live children, with what
    those children reaped (acor's fork server, and the tools it forked)."""
    total = _cpu(pid)[0]
    for child in _children(pid):
        try:
            own, reaped = _cpu(child)
        except OSError:
            continue  # ended between the two reads
        total += own + reaped
    return total


def _cpu(pid: int) -> tuple[float, float]:
    """(user + system, the same of its reaped children), in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(") ", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return ((int(fields[11]) + int(fields[12])) / tick,
            (int(fields[13]) + int(fields[14])) / tick)


async def _burst(url: str) -> tuple[float, list[float]]:
    """(calls per second, each call's latency) for 20 clients at once."""
    latencies: list[float] = []

    async def one(index: int) -> None:
        mode = "legacy" if index % 2 else "2026-07-28"
        async with Client(url, mode=mode) as client:
            for _ in range(CALLS_PER_CLIENT):
                latencies.append(await _timed(client))

    started = time.perf_counter()
    async with anyio.create_task_group() as group:
        for index in range(CLIENTS):
            group.start_soon(one, index)
    wall = time.perf_counter() - started
    return CLIENTS * CALLS_PER_CLIENT / wall, latencies


def _start(argv: list[str], cwd: str, env: dict[str, str],
           ready: str) -> tuple[subprocess.Popen[str], str]:
    """A server started and announced (the pattern ``ready`` on stderr);
    its stderr drained from then on."""
    process = subprocess.Popen(argv, cwd=cwd, env=env,
                               stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True)
    assert process.stderr is not None
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        line = process.stderr.readline()
        if not line:
            break
        found = re.search(ready, line)
        if found:
            threading.Thread(target=process.stderr.read, daemon=True).start()
            return process, found.group(1)
    process.kill()
    raise RuntimeError(f"{' '.join(argv)} did not start")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _ms(samples: list[float], percent: int = 90) -> str:
    ordered = sorted(samples)
    tail = ordered[min(len(ordered) - 1, len(ordered) * percent // 100)]
    return (f"median {statistics.median(samples) * 1000:.1f} ms, "
            f"p{percent} {tail * 1000:.1f} ms")


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    for row in (stdio_legacy, stdio_modern, http_20_clients):
        r = row()
        print(r.name, f"{r.value:.2f}", r.ok, r.detail)

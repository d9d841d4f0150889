"""The `acor mcp` measurements for `make bench` (bench/mcp_rows.py shows them).

Both talk to a real `acor mcp` over its stdin and stdout, as an agent client
does, with raw JSON-RPC lines (no SDK client in the way: its own validation
is not the server's time). Each function returns its samples in seconds.

* initialize_latency: `acor mcp` spawned -> its answer to `initialize`
  read, in a project with one tool and a warm discovery cache (a client
  restarting its servers). Target 1.0 s: agent clients allow about 1.5 s.
* tools_list_1000: one `tools/list` request -> the whole answer read and
  parsed, 1,000 tools with typed arguments, warm discovery cache.
"""

import json
import os
import subprocess
import sys
import tempfile
import time

QUICK = os.environ.get("BENCH_QUICK", "") not in ("", "0")
STARTS = 3 if QUICK else 12
LISTINGS = 5 if QUICK else 30
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
            if len(tools) != TOOLS:
                raise RuntimeError(f"listed {len(tools)} tools, not {TOOLS}")
            samples = []
            for _ in range(LISTINGS):
                started = time.perf_counter()
                session.request("tools/list")
                samples.append(time.perf_counter() - started)
            return samples
        finally:
            session.close()


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


def _session(root, env) -> _Session:
    process = subprocess.Popen([ACOR, "mcp"], cwd=root, env=env,
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

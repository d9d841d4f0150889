"""The fault matrix: every way a tool can die or misbehave, and what acor
makes of it, driven as an agent drives it: `acor <tool>`, in process (the
tool a real process with real pipes) unless the row needs acor to be a
process of its own: a signal sent to acor, or a daemon that only acor's
subreaper can end.

For every fault the row says the final section and the exit code; the test
also checks that the run has exactly one final status and that it is last,
that no process is left (the tool writes its own pid, its child's and its
grandchild's; all must be gone), and that the line the tool wrote before the
fault was relayed.
"""

import io
import json
import signal
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from acor import parse
from acor.cli.output.formats import make_sink
from acor.cli.run.launch import run
from acor.cli.run.request import build_request
from conftest import headings, pid_alive

# Every tool starts so: a child and a grandchild in its process group, all
# three pids written down, then one raw line that must survive the fault.
# (The child's output goes elsewhere, so that it does not hold the pipes.)
PRELUDE = """
import os, signal, subprocess, sys, time
from acor import AcorTool, framing
pids, grandchild_file = sys.argv[1], sys.argv[1] + ".grandchild"
script = f"sleep 60 & echo $! > {grandchild_file}; wait"
child = subprocess.Popen(["sh", "-c", script], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
while not os.path.exists(grandchild_file) or \\
        not open(grandchild_file).read().strip():
    time.sleep(0.005)
grandchild = int(open(grandchild_file).read())
with open(pids + ".tmp", "w") as f:
    f.write(f"{os.getpid()} {child.pid} {grandchild}")
os.rename(pids + ".tmp", pids)
print("line before the fault", flush=True)
"""

FAULTS = {
    # name: (tool code after the prelude, acor options, action on acor,
    #        final heading, exit code, error code or None)
    "crash before start": (
        "raise RuntimeError('boom before start')",
        (), None, "Status: Failed", 1, "E_TOOL_CRASHED"),
    "crash mid-section": (
        "tool = AcorTool().start()\n"
        "tool.progress(10, 'working')\n"
        "mark = '\\x1eacor:' + framing.inherited_token() + '\\x1e'\n"
        "sys.stdout.write(mark + '## Output\\nhalf a section\\n')\n"
        "sys.stdout.flush()\n"
        "os._exit(9)",
        (), None, "Status: Failed", 1, "E_TOOL_CRASHED"),
    "os._exit": (
        "AcorTool().start().progress(10, 'working')\n"
        "os._exit(7)",
        (), None, "Status: Failed", 1, "E_TOOL_CRASHED"),
    "SIGKILL": (
        "AcorTool().start().progress(10, 'working')\n"
        "os.kill(os.getpid(), signal.SIGKILL)",
        (), None, "Status: Failed", 1, "E_TOOL_KILLED"),
    "SIGSEGV": (
        "import ctypes\n"
        "AcorTool().start().progress(10, 'working')\n"
        "ctypes.string_at(0)",
        (), None, "Status: Failed", 1, "E_TOOL_KILLED"),
    "unhandled exception": (
        "with AcorTool() as tool:\n"
        "    tool.progress(10, 'working')\n"
        "    raise KeyError('missing')",
        (), None, "Status: Failed", 1, "E_UNHANDLED_EXCEPTION"),
    "timeout with grandchildren": (
        "with AcorTool() as tool:\n"
        "    tool.progress(10, 'working')\n"
        "    time.sleep(60)",
        ("--timeout", "0.5"), None, "Status: Failed", 124, "E_TIMEOUT"),
    "timeout, SIGTERM ignored": (
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "with AcorTool() as tool:\n"
        "    tool.progress(10, 'working')\n"
        "    time.sleep(60)",
        ("--timeout", "0.5"), None, "Status: Failed", 124, "E_TIMEOUT"),
    "idle timeout": (
        "with AcorTool() as tool:\n"
        "    tool.progress(10, 'working')\n"
        "    time.sleep(60)",
        ("--idle-timeout", "0.5"), None, "Status: Failed", 124,
        "E_IDLE_TIMEOUT"),
    "SIGINT": (
        "with AcorTool() as tool:\n"
        "    tool.progress(10, 'working')\n"
        "    time.sleep(60)",
        (), signal.SIGINT, "Status: Cancelled", 130, None),
    "SIGINT, ignored by the tool": (
        "signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
        "with AcorTool() as tool:\n"
        "    tool.progress(10, 'working')\n"
        "    time.sleep(60)",
        (), signal.SIGINT, "Status: Cancelled", 130, None),
    "SIGTERM": (
        "with AcorTool() as tool:\n"
        "    tool.progress(10, 'working')\n"
        "    time.sleep(60)",
        (), signal.SIGTERM, "Status: Cancelled", 130, None),
    "stdout closed": (
        "tool = AcorTool().start()\n"
        "tool.progress(10, 'working')\n"
        "os.close(1)\n"
        "time.sleep(0.3)\n"
        "sys.exit(0)",
        (), None, "Status: Failed", 1, "E_NO_FINAL_STATUS"),
    "stdout and stderr closed, still working": (
        "tool = AcorTool().start()\n"
        "tool.progress(10, 'working')\n"
        "os.close(1)\n"
        "os.close(2)\n"
        "time.sleep(0.3)\n"
        "open(pids + '.worked', 'w').close()\n"
        "os._exit(0)",
        (), None, "Status: Failed", 1, "E_NO_FINAL_STATUS"),
    "reads stdin": (
        "with AcorTool() as tool:\n"
        "    tool.progress(10, 'working')\n"
        "    tool.output(repr(sys.stdin.read()))",
        (), None, "Status: Complete", 0, None),
    "exit 0 without a final status": (
        "AcorTool().start().progress(10, 'working')\n"
        "sys.exit(0)",
        (), None, "Status: Failed", 1, "E_NO_FINAL_STATUS"),
    "daemon keeps stdout open": (
        "with AcorTool() as tool:\n"
        "    if os.fork() == 0:\n"
        "        time.sleep(60)\n"
        "        os._exit(0)\n"
        "    tool.progress(10, 'working')",
        (), None, "Status: Complete", 0, None),
    "setsid daemon keeps stdout open": (
        "with AcorTool() as tool:\n"
        "    if os.fork() == 0:\n"
        "        os.setsid()\n"
        "        if os.fork() == 0:\n"
        "            open(pids + '.daemon', 'w').write(str(os.getpid()))\n"
        "            time.sleep(60)\n"
        "        os._exit(0)\n"
        "    while not os.path.exists(pids + '.daemon'):\n"
        "        time.sleep(0.005)\n"
        "    tool.progress(10, 'working')",
        (), None, "Status: Complete", 0, None),
    "hangs after its final status": (  # a timeout long past any start-up
        "with AcorTool() as tool:\n"
        "    tool.progress(10, 'working')\n"
        "time.sleep(60)",
        ("--timeout", "5"), None, "Status: Complete", 0, None),
    "crash after its final status": (
        "with AcorTool() as tool:\n"
        "    tool.progress(10, 'working')\n"
        "os._exit(5)",
        (), None, "Status: Complete", 0, None),
}

# Rows that need acor to be a process of its own: signalled, or the
# subreaper of a daemon that left the tool's group.
OWN_PROCESS = {"SIGINT", "SIGINT, ignored by the tool", "SIGTERM",
               "setsid daemon keeps stdout open"}

FINALS = ("Status: Complete", "Status: Failed", "Status: Cancelled",
          "Input Needed")


def wait_gone(pids, seconds=5.0):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        alive = [pid for pid in pids if pid_alive(pid)]
        if not alive:
            return []
        time.sleep(0.02)
    return alive


@pytest.fixture
def fast_kill(project):
    project.env["ACOR_KILL_GRACE"] = "0.2"
    return project


@pytest.mark.parametrize("fault", list(FAULTS))
def test_fault_matrix(fast_kill, tmp_path, fault):
    project = fast_kill
    code, options, action, final, exit_code, error_code = FAULTS[fault]
    project.add_tool("faulty", PRELUDE + code)
    pids = tmp_path / "pids"
    started = time.monotonic()
    if fault in OWN_PROCESS:
        out, err, returncode = run_as_process(project, options, pids,
                                              action)
    else:
        result = project.acor(*options, "faulty", str(pids))
        out, err, returncode = result.stdout, result.stderr, \
            result.returncode
    elapsed = time.monotonic() - started

    # The final section, and only one, last; the exit code.
    seen = headings(out)
    assert seen[-1] == final, (seen, err)
    assert sum(h in FINALS for h in seen) == 1, seen
    assert returncode == exit_code, (out, err)
    errors = [e for e in parse(out) if e.type == "error"]
    if error_code is None:
        assert not errors, errors
    else:
        assert errors[-1].code == error_code, errors
        assert errors[-1].recovery  # always a next step
    # No line written before the fault is lost.
    assert "line before the fault" in out
    if "working" in code:
        assert "Progress: 10%" in seen
    if fault == "crash mid-section":
        assert "half a section" in out  # the cut-off section, as text
    if fault == "stdout and stderr closed, still working":
        # Closing the pipes is not exiting: acor waited for the exit.
        assert (tmp_path / "pids.worked").exists()
        assert "exit code: 0" in out
    if fault == "hangs after its final status":
        # The transcript keeps its ending; the stop is told on stderr.
        assert "acor: faulty did not exit after its final status: " \
            "stopped (E_TIMEOUT)" in err
    if fault == "reads stdin":
        assert "\n''\n" in out  # end of file at once, no hang
    # No process is left behind: the tool, its child, its grandchild, and
    # a daemon that left the group with setsid().
    tool_pid, child_pid, grandchild_pid = map(int, pids.read_text().split())
    left = [tool_pid, child_pid, grandchild_pid]
    daemon = tmp_path / "pids.daemon"
    if daemon.exists():
        left.append(int(daemon.read_text()))
    assert wait_gone(left) == []
    # The tool's own traceback may reach stderr; never one from acor.
    assert "/cli/" not in err, err
    # Ends promptly: the timeout, the kill grace, the drain grace.
    assert elapsed < 10, elapsed


def run_as_process(project, options, pids, action):
    proc = project.popen(*options, "faulty", str(pids))
    first = b""
    if action is not None:
        # Signal acor mid-run: once the tool's progress is through.
        while b"\nworking\n" not in first:
            line = proc.stdout.readline()
            assert line, "acor ended before the tool started"
            first += line
        proc.send_signal(action)
    rest, err = proc.communicate(timeout=30)
    return (first + rest).decode(), err.decode(), proc.returncode


def test_sixteen_parallel_runs_each_get_their_own_transcript(project,
                                                              monkeypatch):
    """16 runs at once, each in a thread of this process (as the MCP server
    runs them), against one project, starting with a cold discovery cache:
    every run finishes, well formed, with its own data, in markdown or
    JSON."""
    project.add_tool("par", """
        import sys, time
        from acor import AcorTool
        run = sys.argv[1]
        with AcorTool() as tool:
            for i in range(5):
                tool.progress(i * 20, f"run {run} step {i}")
                print(f"raw {run} {i}", flush=True)
                time.sleep(0.02)
            tool.output({"run": run})
            tool.ai_directive(f"directive of run {run}")
    """)
    for key, value in project.env.items():
        if key.startswith("ACOR_"):
            monkeypatch.setenv(key, value)
    fmts = ["markdown", "json"] * 8

    def one(i):
        out = io.BytesIO()
        # Progress is not coalesced here (interval 0): every section is
        # checked.
        sink = make_sink(fmts[i], "par", 0, out=out)
        result = run(build_request("par", [str(i)], cwd=str(project.root), timeout=60), sink=sink)
        sink.close()
        return result.exit_code, out.getvalue().decode(), result.stderr

    with ThreadPoolExecutor(16) as pool:
        results = list(pool.map(one, range(16)))
    for i, (code, out, err) in enumerate(results):
        assert code == 0, err
        mine = [f"raw {i} {k}" for k in range(5)]
        if fmts[i] == "json":
            events = [json.loads(line) for line in out.splitlines()]
            assert events[-1]["tool"] == "par"
            assert all(e["v"] == 2 for e in events)
            kinds = [e["type"] for e in events if e["type"] != "text"]
            assert kinds == ["status"] + ["progress"] * 5 + [
                "output_data", "ai_directive", "status", "result"]
            assert [e["message"] for e in events
                    if e["type"] == "progress"] == [
                f"run {i} step {k}" for k in range(5)]
            assert [e["data"] for e in events
                    if e["type"] == "output_data"] == [{"run": str(i)}]
            assert [e["text"] for e in events if e["type"] == "text"] == mine
            assert events[-1]["state"] == "complete"
        else:
            assert headings(out) == ["Status: Ready"] + [
                f"Progress: {k * 20}%" for k in range(5)] + [
                "Output Data", "AI Directive", "Status: Complete"]
            # (In Markdown a raw line after a section reads as part of its
            # body: see docs/security.md. Here: each where it was written.)
            for k in range(5):
                assert f"## Progress: {k * 20}%\nrun {i} step {k}\n\n" \
                    f"raw {i} {k}\n" in out
            evs = parse(out)
            assert [e.data for e in evs if e.type == "output_data"] == [
                {"run": str(i)}]
            assert [e.items for e in evs if e.type == "ai_directive"] == [
                [f"directive of run {i}"]]
        # Nothing of another run.
        assert f"run {(i + 1) % 16} " not in out

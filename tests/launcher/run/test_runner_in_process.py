"""The runner, called in process as the MCP server and the pytest plugin
call it: results, events, every ending, from any thread."""

import os
import signal
import threading
import time

import pytest

from acor.cli.run.launch import Cancel, run
from acor.cli.run.request import build_request
from acor.events import Error, OutputData, Progress, Status
from conftest import pid_alive

OK = """
    from acor import AcorTool
    with AcorTool() as tool:
        tool.progress(50, "half")
        tool.output({"answer": 42})
"""


@pytest.fixture
def tools(project, monkeypatch):
    """A project whose tools the runner finds from its directory."""
    for key, value in project.env.items():
        if key.startswith("ACOR_"):
            monkeypatch.setenv(key, value)
    monkeypatch.delenv("ACOR_CONFIG", raising=False)
    monkeypatch.chdir(project.root)
    return project


def test_a_run_from_another_thread_returns_exit_code_and_events(tools):
    tools.add_tool("ok", OK)
    box, handlers = {}, []
    before = signal.getsignal(signal.SIGINT)

    def during(event):
        handlers.append(signal.getsignal(signal.SIGINT))
    worker = threading.Thread(
        target=lambda: box.update(r=run(build_request("ok"), on_event=during)))
    worker.start()
    worker.join(60)
    result = box["r"]
    assert (result.exit_code, result.state, result.error_code) == (
        0, "complete", None)
    assert [e.type for e in result.events] == [
        "status", "progress", "output_data", "status"]
    assert result.data == {"answer": 42}
    assert result.of(OutputData)[0].data == {"answer": 42}
    assert result.of("progress") == [Progress(50, "half")]
    assert result.tool == "ok" and result.version == "1.0.0"
    assert result.duration > 0 and result.errors == []
    # The caller's signal handlers are untouched, during the run and after
    # (whatever they are: pytest's, or SIG_IGN under a background shell).
    assert set(handlers) == {before}
    assert signal.getsignal(signal.SIGINT) is before


def test_on_event_sees_every_event_in_order(tools):
    tools.add_tool("ok", OK)
    seen = []
    result = run(build_request("ok"), on_event=seen.append)
    assert seen == result.events and seen[-1] == Status("complete")


def test_several_runs_at_once_each_get_their_own_result(tools):
    tools.add_tool("echo", """
        import sys
        from acor import AcorTool
        with AcorTool() as tool:
            tool.output({"arg": sys.argv[1]})
    """)
    results = {}

    def one(i):
        results[i] = run(build_request("echo", [str(i)]))

    threads = [threading.Thread(target=one, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert {i: r.data for i, r in results.items()} == {
        i: {"arg": str(i)} for i in range(6)}


def test_cancel_from_another_thread_stops_the_whole_group(tools, tmp_path):
    pidfile = tmp_path / "child.pid"
    tools.add_tool("slow", f"""
        import subprocess, sys, time
        from acor import AcorTool
        with AcorTool() as tool:
            child = subprocess.Popen([sys.executable, "-c",
                                      "import time; time.sleep(60)"])
            open({str(pidfile)!r}, "w").write(str(child.pid))
            tool.progress(1, "started")
            time.sleep(60)
    """)
    cancel = Cancel()

    def on_event(event):
        if event.type == "progress":
            cancel.set()

    started = time.monotonic()
    result = run(build_request("slow"), on_event=on_event, cancel=cancel)
    assert time.monotonic() - started < 20
    assert (result.exit_code, result.state) == (130, "cancelled")
    assert result.events[-1] == Status("cancelled")
    assert ended_soon(int(pidfile.read_text()))


def ended_soon(pid, within=5.0):
    """SIGKILL is delivered asynchronously: the process is gone (or a
    zombie) a moment after the run returns."""
    deadline = time.monotonic() + within
    while pid_alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def test_unknown_tool_is_a_result_not_an_exception(tools):
    tools.add_tool("hello", OK)
    result = run(build_request("helo", ["x"]))
    assert (result.exit_code, result.state, result.error_code) == (
        2, "failed", "E_UNKNOWN_TOOL")
    assert result.next == ["acor", "hello", "x"]
    assert result.events == [result.errors[0], Status("failed")]


def test_a_skipped_manifest_is_named_invalid_with_its_path(tools):
    folder = tools.root / "tools" / "broken2"
    folder.mkdir()
    (folder / "manifest.json").write_text(
        '{"name": "broken2", "description": "no entry"}')
    result = run(build_request("broken2"))
    error = result.errors[0]
    assert (result.exit_code, error.code) == (2, "E_INVALID_MANIFEST")
    assert "missing required field(s): entry" in error.title
    assert str(folder) in error.details and error.recovery
    assert result.next == ["acor", "doctor"]


def test_timeout_advises_the_same_command_with_twice_the_time(tools):
    tools.add_tool("slow", """
        import time
        from acor import AcorTool
        with AcorTool() as tool:
            time.sleep(30)
    """)
    result = run(build_request("slow", ["a b"], timeout=0.5, command=["acor", "--format", "json"]))
    assert (result.exit_code, result.state, result.error_code) == (
        124, "timeout", "E_TIMEOUT")
    assert result.next == ["acor", "--format", "json", "--timeout", "1",
                           "slow", "a b"]
    assert result.errors[0].next == result.next


def test_a_usage_error_from_the_tool_exits_2(tools):
    tools.add_tool("picky", """
        from acor import AcorTool, ToolState
        with AcorTool() as tool:
            tool.error("E_USAGE", "unknown option --bogus")
            tool.stop(ToolState.FAILED)
    """)
    result = run(build_request("picky", ["--bogus"]))
    assert (result.exit_code, result.state, result.error_code) == (
        2, "failed", "E_USAGE")


def test_a_session_run_cut_short_is_resumed_by_the_same_command(tools):
    tools.add_tool("resumable", """
        import sys
        from acor import AcorTool
        tool = AcorTool().start()
        tool.session("s-1")
        sys.exit(7)
    """)
    result = run(build_request("resumable", ["--session", "s-1"]))
    assert (result.exit_code, result.session) == (1, "s-1")
    assert result.error_code == "E_TOOL_CRASHED"
    assert result.next == ["acor", "resumable", "--session", "s-1"]


def test_a_tool_that_cannot_start_is_reported(tools):
    folder = tools.add_tool("gone", OK)
    result = run(build_request("gone"))
    assert result.exit_code == 0
    os.chmod(folder / "gone.py", 0)
    (folder / "gone.py").unlink()
    result = run(build_request("gone"))
    assert result.exit_code in (1, 2)
    assert result.errors and result.events[-1] == Status("failed")


def test_the_result_holds_the_tools_stderr(tools):
    tools.add_tool("noisy", """
        import sys
        from acor import AcorTool
        with AcorTool() as tool:
            print("warming up", file=sys.stderr, flush=True)
    """)
    result = run(build_request("noisy"))
    assert result.exit_code == 0 and "warming up" in result.stderr


def test_errors_carry_their_codes(tools):
    tools.add_tool("bad", """
        from acor import AcorTool
        with AcorTool() as tool:
            tool.error("E_NOPE", "it broke", recovery="fix it")
    """)
    result = run(build_request("bad"))
    assert result.errors == [Error("it broke", "E_NOPE", None, "fix it")]
    assert (result.exit_code, result.error_code) == (1, "E_NOPE")


class RecordingSink:
    """A sink that records started() and each event, in order."""

    def __init__(self):
        self.calls = []

    def started(self):
        self.calls.append("started")

    def emit(self, event):
        self.calls.append(event.type)

    def due(self):
        return None

    def tick(self):
        pass


def test_a_sink_is_told_the_tool_started_before_any_event(tools):
    # A format loads its encoders in started(), while the tool starts up,
    # so that no section waits for an import: once, before the first event.
    tools.add_tool("ok", OK)
    sink = RecordingSink()
    assert run(build_request("ok"), sink=sink).exit_code == 0
    assert sink.calls == ["started", "status", "progress", "output_data",
                          "status"]


@pytest.mark.parametrize("name", ["nope", "missing-program"])
def test_a_tool_that_never_starts_is_not_reported_started(tools, name):
    tools.add_wrapped("missing-program", ["/nonexistent/acor-test/prog"])
    sink = RecordingSink()
    result = run(build_request(name), sink=sink)
    assert result.exit_code != 0
    assert sink.calls == ["error", "status"]

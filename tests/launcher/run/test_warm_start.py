"""The warm start: a Python tool forked from acor's server is, for
everything the protocol promises, the same tool as one started cold."""

import json
import os
import signal
import sys
import textwrap
import threading
import time

import pytest

from acor.cli.run.launch import Cancel, run
from acor.cli.run.request import build_request
from acor.cli.run.warm import WarmStarter
from conftest import pid_alive

REPORT = """
    '''The report's docstring.'''
    import json, os, sys
    from acor import AcorTool
    with AcorTool() as tool:
        tool.output({
            "argv": sys.argv, "file": __file__, "name": __name__,
            "cwd": os.getcwd(), "path0": sys.path[0],
            "env": os.environ.get("WARM_PROBE"),
            "frame_env": [k for k in os.environ if k.startswith("ACOR_FRAME")],
            "stdin": sys.stdin.read(),
            "stdout_fd": os.isatty(1), "pgid_is_pid": os.getpgid(0) == os.getpid(),
            "sid_is_pid": os.getsid(0) == os.getpid(),
            "main_module": sys.modules["__main__"].__dict__ is globals(),
            "doc": __doc__, "builtins": type(__builtins__).__name__,
            "loader": type(__loader__).__name__, "spec": __spec__,
            "sigint": str(__import__("signal").getsignal(2)),
            "sigpipe": str(__import__("signal").getsignal(13)),
        })
"""


@pytest.fixture
def tools(project, monkeypatch):
    for key, value in project.env.items():
        if key.startswith("ACOR_"):
            monkeypatch.setenv(key, value)
    monkeypatch.delenv("ACOR_CONFIG", raising=False)
    monkeypatch.chdir(project.root)
    return project


@pytest.fixture(scope="module")
def starter():
    warm = WarmStarter()
    yield warm
    warm.close()


def both(name, argv=(), starter=None, **kwargs):
    """The result of a cold run and of a warm one, the warm one checked to
    have started warm."""
    cold = run(build_request(name, list(argv), **kwargs))
    warm = run(build_request(name, list(argv), **kwargs), warm=starter)
    return cold, warm


def test_what_a_tool_sees_of_its_start_is_the_same_warm(tools, starter):
    tools.add_tool("report", REPORT)
    (tools.root / "sub").mkdir()
    env = {"WARM_PROBE": "yes"}
    from acor.cli.discovery.registry import load_registry
    cold, warm = both("report", ["a b", "--x"], starter, env=env,
                      cwd=str(tools.root / "sub"),
                      registry=load_registry(cwd=str(tools.root)))
    assert cold.state == warm.state == "complete", (cold.errors, warm.errors)
    assert warm.data == cold.data
    assert warm.data["argv"][1:] == ["a b", "--x"]
    assert warm.data["name"] == "__main__" and warm.data["main_module"]
    assert warm.data["frame_env"] == []  # the token is taken, not left
    assert warm.data["pgid_is_pid"] and warm.data["sid_is_pid"]


def test_a_warm_run_is_forked_not_started(tools, starter):
    tools.add_tool("origin", """
        import sys
        from acor import AcorTool
        with AcorTool() as tool:
            tool.output({"orig": sys.orig_argv, "mods": "acor.acortool" in
                         sys.modules})
    """)
    cold, warm = both("origin", (), starter)
    assert "-c" not in cold.data["orig"] and "-c" in warm.data["orig"]


def test_a_manifest_can_opt_out_of_the_warm_start(tools, starter):
    tools.add_tool("cold", """
        import sys
        from acor import AcorTool
        with AcorTool() as tool:
            tool.output({"orig": sys.orig_argv})
    """, warm=False)
    result = run(build_request("cold", []), warm=starter)
    assert "-c" not in result.data["orig"]


@pytest.mark.parametrize("code, state", [
    ("import sys; sys.exit(0)", "failed"),       # no final status
    ("import sys; sys.exit(5)", "failed"),
    ("raise ValueError('boom')", "failed"),
    ("import os; os._exit(7)", "failed"),
    ("def (", "failed"),                         # does not compile
    ("""
from acor import AcorTool
with AcorTool() as tool:
    tool.fail("nope", code="E_NOPE")
""", "failed"),
    ("""
from acor import AcorTool
with AcorTool() as tool:
    tool.input_needed("which?", fields={"x": {"type": "string"}})
""", "input_needed"),
])
def test_endings_and_exit_codes_are_the_same_warm(tools, starter, code,
                                                  state):
    tools.add_tool("ending", code)
    cold, warm = both("ending", (), starter)
    assert (warm.state, warm.exit_code, warm.error_code,
            warm.tool_exit_code) == (cold.state, cold.exit_code,
                                     cold.error_code, cold.tool_exit_code)
    assert warm.state == state


def test_a_crash_names_the_tools_own_line_warm(tools, starter):
    tools.add_tool("crash", """
        from acor import AcorTool
        with AcorTool() as tool:
            raise KeyError("missing")
    """)
    cold, warm = both("crash", (), starter)
    assert [e.to_dict().get("details") for e in warm.errors] == \
        [e.to_dict().get("details") for e in cold.errors]


def test_stdin_is_the_callers_when_the_tool_reads_it(tools, starter,
                                                     tmp_path):
    tools.add_tool("report", REPORT)
    result = run(build_request("report", []), warm=starter)
    assert result.data["stdin"] == ""  # /dev/null unless the tool asks


SLOW = """
    import os, subprocess, sys, time
    from acor import AcorTool
    with AcorTool() as tool:
        child = subprocess.Popen([sys.executable, "-c",
                                  "import time; time.sleep(60)"])
        daemon = subprocess.Popen([sys.executable, "-c",
                                   "import os, time; os.setsid(); "
                                   "time.sleep(60)"])
        with open(os.environ["PIDS"], "w") as f:
            f.write(f"{child.pid} {daemon.pid}")
        tool.progress(10, "started")
        time.sleep(60)
"""


def _wait_for(path):
    for _ in range(500):
        if path.exists() and path.read_text():
            return [int(p) for p in path.read_text().split()]
        time.sleep(0.01)
    raise AssertionError("the tool never started")


def test_a_timeout_ends_the_whole_tree_warm(tools, starter, tmp_path):
    tools.add_tool("slow", SLOW)
    pids = tmp_path / "pids"
    result = run(build_request("slow", [], timeout=1.5, env={"PIDS": str(pids)}), warm=starter)
    assert (result.state, result.error_code, result.exit_code) == (
        "timeout", "E_TIMEOUT", 124)
    for pid in _wait_for(pids):
        for _ in range(200):
            if not pid_alive(pid):
                break
            time.sleep(0.01)
        assert not pid_alive(pid), pid


def test_a_cancel_signals_the_group_and_ends_cancelled_warm(tools, starter,
                                                            tmp_path):
    tools.add_tool("slow", SLOW)
    pids = tmp_path / "pids"
    cancel = Cancel()
    box = {}
    worker = threading.Thread(target=lambda: box.update(r=run(build_request("slow", [], env={"PIDS": str(pids)}), warm=starter, cancel=cancel)))
    worker.start()
    child, daemon = _wait_for(pids)
    cancel.set(signal.SIGTERM)
    worker.join(30)
    cancel.close()
    assert box["r"].state == "cancelled" and box["r"].exit_code == 130
    for pid in (child, daemon):
        for _ in range(200):
            if not pid_alive(pid):
                break
            time.sleep(0.01)
        assert not pid_alive(pid), pid


def test_programs_the_tool_starts_cannot_read_the_token_warm(tools,
                                                             starter):
    tools.add_tool("spy", """
        import os, subprocess, sys
        from acor import AcorTool
        with AcorTool() as tool:
            out = subprocess.run(
                [sys.executable, "-c",
                 "import os; print(sorted(k for k in os.environ "
                 "if k.startswith('ACOR_FRAME'))); "
                 "print(len(os.listdir('/proc/self/fd')))"],
                capture_output=True, text=True).stdout.split("\\n")
            tool.output({"env": out[0], "fds": int(out[1])})
    """)
    cold, warm = both("spy", (), starter)
    assert warm.data == cold.data and warm.data["env"] == "[]"


def test_a_thread_the_tool_leaves_running_ends_its_run_warm(tools,
                                                          starter):
    # The main thread ends first; the process waits for its non-daemon
    # thread, which writes the final status (the sleep only makes sure
    # the main thread has ended: it does not have to be long to pass).
    tools.add_tool("late", """
        import threading, time
        from acor import AcorTool

        def finish():
            time.sleep(0.3)
            with AcorTool() as tool:
                tool.output({"from": threading.current_thread().name})
        threading.Thread(target=finish, name="finisher").start()
    """)
    cold, warm = both("late", (), starter)
    assert warm.state == cold.state == "complete", (warm.errors, cold.errors)
    assert warm.data == cold.data == {"from": "finisher"}


ENVIRON_REPORT = """
    import json, os
    from acor import AcorTool
    with AcorTool() as tool:
        tool.output(dict(os.environ))
"""


def _environ_seen(result, kind):
    if kind == "python":
        return result.data
    # A program's standard output comes as Output events, whole lines.
    return json.loads("\n".join(event.text for event in result.events
                                if type(event).__name__ == "Output"))


@pytest.mark.parametrize("kind", ["python", "program"])
def test_a_tool_has_the_calls_environment_not_the_servers_warm(
        tools, monkeypatch, kind):
    """The server started with an environment the call then changed: a
    variable removed, one changed, one added. The tool sees the call's,
    exactly as a cold start gives it."""
    if kind == "python":
        tools.add_tool("environ", ENVIRON_REPORT)
    else:  # executed by a process the server forks
        tools.add_wrapped("environ", [
            sys.executable, "-c",
            "import json, os; print(json.dumps(dict(os.environ)))"])
    monkeypatch.setenv("WARM_GONE", "server")
    monkeypatch.setenv("WARM_CHANGED", "server")
    starter = WarmStarter()
    try:
        monkeypatch.delenv("WARM_GONE")
        monkeypatch.setenv("WARM_CHANGED", "call")
        cold, warm = both("environ", (), starter,
                          env={"WARM_ADDED": "call"})
    finally:
        starter.close()
    assert cold.state == warm.state == "complete", (cold.errors, warm.errors)
    seen = _environ_seen(warm, kind)
    assert seen == _environ_seen(cold, kind)
    assert "WARM_GONE" not in seen
    assert (seen["WARM_CHANGED"], seen["WARM_ADDED"]) == ("call", "call")


def test_concurrent_warm_runs_each_get_their_own_result(tools, starter):
    tools.add_tool("echo", """
        import sys
        from acor import AcorTool
        with AcorTool() as tool:
            tool.output({"n": sys.argv[1]})
    """)
    results = {}

    def one(n):
        results[n] = run(build_request("echo", [str(n)]), warm=starter)
    threads = [threading.Thread(target=one, args=(n,)) for n in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert {n: r.data for n, r in results.items()} == \
        {n: {"n": str(n)} for n in range(16)}


def test_a_run_starts_cold_when_the_server_is_gone(tools):
    tools.add_tool("echo", """
        from acor import AcorTool
        with AcorTool() as tool:
            tool.output({"ok": True})
    """)
    warm = WarmStarter()
    warm._server.kill()
    warm._server.wait()
    result = run(build_request("echo", []), warm=warm)
    warm.close()
    assert result.state == "complete" and result.data == {"ok": True}


def test_a_changed_entry_is_compiled_again(tools, starter):
    tools.add_tool("v", """
        from acor import AcorTool
        with AcorTool() as tool:
            tool.output({"v": 1})
    """)
    assert run(build_request("v", []), warm=starter).data == {"v": 1}
    entry = tools.root / "tools" / "v" / "v.py"
    entry.write_text(entry.read_text().replace('"v": 1', '"v": 22'))
    assert run(build_request("v", []), warm=starter).data == {"v": 22}


PROGRAM_REPORT = [
    "bash", "-c",
    # Its signals and descriptors read by bash itself, before it forks:
    # what it started with. Read by a child of bash, they would be bash's of
    # the moment, which change around each fork (bash blocks SIGCHLD,
    # SIGINT and SIGTERM while it makes a child, and holds a pipe's both
    # ends a while): seen or not as the scheduler decides. mapfile reads
    # the status in one read (read -r would read it in pieces, each of a
    # newer status whose lengths may differ).
    'mapfile -t status < /proc/$$/status; open=(/proc/$$/fd/*); '
    'for line in "${status[@]}"; do '
    'case $line in SigBlk:*|SigIgn:*) echo "$line";; esac; done; '
    'trap -p; echo "cwd=$PWD sid=$(ps -o sid= -p $$ | tr -d " ") pid=$$ '
    'probe=$WARM_PROBE fds=${#open[@]}"; cat']


def test_a_program_the_server_executes_starts_as_a_cold_one(tools):
    """A tool that is not a Python entry is executed by a process the
    server forks (so that it is supervised alike): what it sees of its
    start is what a cold start gives it, fresh signal dispositions and
    descriptors included."""
    tools.add_wrapped("shell", PROGRAM_REPORT)
    (tools.root / "sub").mkdir()
    from acor.cli.discovery.registry import load_registry
    # Both inherit the blocked signals of who starts them (a cold run the
    # launcher's thread's now, the server the launcher's when it began):
    # one known mask for both, whatever an earlier test in this process
    # left blocked (multiprocessing blocks SIGINT and SIGTERM a while).
    mask = signal.pthread_sigmask(signal.SIG_SETMASK, [signal.SIGUSR2])
    try:
        starter = WarmStarter()
        try:
            cold, warm = both("shell", [], starter,
                              env={"WARM_PROBE": "yes"},
                              cwd=str(tools.root / "sub"),
                              registry=load_registry(cwd=str(tools.root)))
        finally:
            starter.close()
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    assert cold.state == warm.state == "complete", (cold.errors, warm.errors)

    def seen(result):
        # Each Output is whole lines, its last without its line break.
        text = "\n".join(e.text for e in result.events
                         if type(e).__name__ == "Output")
        fields = dict(word.split("=", 1) for word in text.split()
                      if "=" in word)
        assert fields.pop("sid") == fields.pop("pid")  # a session of its own
        return fields, [line for line in text.splitlines()
                        if line.startswith("Sig")]
    assert seen(warm) == seen(cold)
    assert seen(warm)[0]["probe"] == "yes"
    # Blocked: only what both were started with (SIGTERM, say, is not).
    assert seen(warm)[1][0] == f"SigBlk:\t{1 << signal.SIGUSR2 - 1:016x}"


def test_a_program_that_cannot_start_fails_as_it_does_cold(tools, starter):
    tools.add_wrapped("missing", ["/nonexistent/program", "x"])
    tools.add_wrapped("not-executable", [str(tools.root)])
    for name in ("missing", "not-executable"):
        cold, warm = both(name, [], starter)
        assert [e.to_dict() for e in warm.errors] == \
            [e.to_dict() for e in cold.errors], name
        assert (warm.exit_code, warm.state) == (cold.exit_code, cold.state)
        assert warm.errors[0].code == "E_TOOL_NOT_RUNNABLE"
    assert starter.serving()  # a failed start does not end the server


def test_a_shell_tools_daemon_is_ended_with_its_run(tools, starter,
                                                    tmp_path):
    pid_file = tmp_path / "pid"
    tools.add_wrapped("spawner", [
        "bash", "-c", "setsid sleep 60 >/dev/null 2>&1 </dev/null & "
        f"echo $! > '{pid_file}'"])
    result = run(build_request("spawner", []), warm=starter)
    assert result.state == "complete", result.errors
    pid = int(pid_file.read_text())
    alive = pid_alive(pid)
    if alive:
        os.kill(pid, signal.SIGKILL)
    assert not alive


def test_the_spare_process_ends_with_the_server(tools):
    """Between calls the server keeps a spare process forked for the next
    one; closing the starter (or its caller exiting) ends it too."""
    tools.add_tool("report", REPORT)
    starter = WarmStarter()
    try:
        assert run(build_request("report", []), warm=starter).state == "complete"
        server = starter._server.pid
        spares = set()
        for _ in range(200):  # forked once the call has ended
            spares = {int(pid) for task in os.listdir(f"/proc/{server}/task")
                      for pid in open(f"/proc/{server}/task/{task}/children"
                                      ).read().split()}
            if spares:
                break
            time.sleep(0.01)
        assert len(spares) == 1, spares
        # The next call is the spare's: it runs as the spare's pid.
        pids = tools.root / "pids"
        tools.add_tool("whoami", f"""
            import os
            from acor import AcorTool
            with AcorTool() as tool:
                open({str(pids)!r}, "w").write(str(os.getpid()))
        """)
        assert run(build_request("whoami", []), warm=starter).state == "complete"
        assert {int(pids.read_text())} == spares
    finally:
        starter.close()
    for pid in spares:
        assert not pid_alive(pid), pid

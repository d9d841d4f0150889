"""`acor sessions` says each session's state and the command that resumes
it (issue 38, point 6), from the record the launcher keeps of a session's
last run (acor.cli.run.session_record): run through real `acor`
processes, a run killed with SIGKILL, the resume command run as it is
printed, and the table in a real pseudo-terminal at 120 and 60 columns.
"""

import json
import os
import re
import signal
import subprocess
import time

import pytest

from conftest import ACOR_SCRIPT, children
from terminal import Terminal

# A resumable tool: binds --session, resumes from its last checkpoint,
# saves one, then ends as --mode says: complete, fail (only on a first
# run, so that the resume completes), ask (Input Needed for --format),
# or hang (waits to be killed, after saying it saved).
SESSIONS = """
import sys, time
from acor import AcorTool
args = sys.argv[1:]
def opt(name, default=None):
    return args[args.index(name) + 1] if name in args else default
with AcorTool() as tool:
    tool.session(opt("--session"))
    last = tool.resume()
    step = 1 if last is None else last[1]["step"] + 1
    tool.checkpoint(f"step-{step}", {"step": step})
    mode = opt("--mode", "complete")
    if mode == "fail" and step == 1:
        tool.fail("E_FLAKY", "The source went away", "Run it again.")
    if mode == "ask" and opt("--format") is None:
        tool.input_needed("Which format?", {"format": {
            "type": "string", "enum": ["pdf", "html"]}})
    if mode == "hang":
        print("saved", file=sys.stderr, flush=True)
        time.sleep(300)
    tool.output({"step": step})
"""


@pytest.fixture
def proj(project):
    project.add_tool("etl", SESSIONS)
    (project.root / ".acor").mkdir()
    (project.root / ".acor" / "config.yaml").write_text(
        "tools_dirs: [tools]\nstate_dir: state\n")
    return project


def acor(proj, *args, cwd=None):
    """``acor ARGS`` as a person or an agent runs it: its own process."""
    return subprocess.run([ACOR_SCRIPT, *args], cwd=cwd or proj.root,
                          env=proj.env, capture_output=True, text=True,
                          timeout=60)


def listed(proj, cwd=None):
    result = acor(proj, "sessions", "--json", cwd=cwd)
    assert result.returncode == 0, result.stdout + result.stderr
    return {s["session"]: s for s in json.loads(result.stdout)["sessions"]}


def test_a_complete_run_is_complete_with_nothing_to_resume(proj):
    assert acor(proj, "etl", "--session", "s1").returncode == 0
    session = listed(proj)["s1"]
    assert session["state"] == "complete" and session["resume"] is None
    assert session["checkpoint"] == "step-1"


def test_a_failed_run_resumes_with_the_command_it_lists(proj):
    """The command is the run's own, exact: run as it is printed (by a
    shell), it carries on from the last checkpoint and completes."""
    failed = acor(proj, "--timeout", "50", "etl", "--session", "s1",
                  "--mode", "fail", "--note", "two words")
    assert failed.returncode == 1
    session = listed(proj)["s1"]
    assert session["state"] == "failed"
    assert session["resume"]["argv"] == [
        "acor", "--timeout", "50", "etl", "--session", "s1", "--mode",
        "fail", "--note", "two words"]
    assert session["resume"]["cwd"] == str(proj.root)
    command = session["resume"]["command"]
    assert command == ("acor --timeout 50 etl --session s1 --mode fail "
                       "--note 'two words'")
    env = dict(proj.env, PATH=os.path.dirname(ACOR_SCRIPT) + os.pathsep
               + proj.env.get("PATH", ""))
    rerun = subprocess.run(["sh", "-c", command], cwd=proj.root, env=env,
                           capture_output=True, text=True, timeout=60)
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    assert '"step": 2' in rerun.stdout
    again = listed(proj)["s1"]
    assert again["state"] == "complete" and again["resume"] is None


def test_from_another_directory_the_command_goes_there_first(proj):
    assert acor(proj, "etl", "--session", "s1", "--mode",
                "fail").returncode == 1
    elsewhere = proj.root / "sub"
    elsewhere.mkdir()
    session = listed(proj, cwd=elsewhere)["s1"]
    assert session["resume"]["command"] == (
        f"cd {proj.root} && acor etl --session s1 --mode fail")


def test_input_needed_resumes_where_a_person_is_asked(proj):
    """An agent's run (--no-input, --format json) that needs input: the
    command to resume is the one a person runs to be asked."""
    result = acor(proj, "--no-input", "--format", "json", "etl",
                  "--session", "s1", "--mode", "ask")
    assert result.returncode == 3
    session = listed(proj)["s1"]
    assert session["state"] == "input_needed"
    assert session["resume"]["argv"] == ["acor", "etl", "--session", "s1",
                                         "--mode", "ask"]


def test_a_run_killed_with_sigkill_is_interrupted_never_running(proj):
    """While the run lives its session is running, with nothing to
    resume; once acor is killed with SIGKILL (no end recorded), it is
    interrupted, and resumes with the run's command."""
    proc = subprocess.Popen(
        [ACOR_SCRIPT, "etl", "--session", "s1", "--mode", "hang"],
        cwd=proj.root, env=proj.env, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while (listed(proj).get("s1") or {}).get("state") != "running":
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        assert listed(proj)["s1"]["resume"] is None
    finally:
        tools = children(proc.pid, "etl.py")
        proc.kill()  # SIGKILL: acor records no end
        proc.wait(timeout=30)
        for tool in tools:  # the tool leads a process group of its own
            os.killpg(tool, signal.SIGKILL)
        proc.stdout.close()
        proc.stderr.close()
    session = listed(proj)["s1"]
    assert session["state"] == "interrupted"
    assert session["resume"]["argv"] == ["acor", "etl", "--session", "s1",
                                         "--mode", "hang"]


def test_a_timed_out_run_resumes_with_the_time_acor_offers(proj):
    """acor's own timeout: the command is the one its error gave, the same
    run with more time."""
    result = acor(proj, "--timeout", "3", "etl", "--session", "s1",
                  "--mode", "hang")
    assert result.returncode == 124, result.stdout + result.stderr
    session = listed(proj)["s1"]
    assert session["state"] == "timeout"
    argv = session["resume"]["argv"]
    assert argv[:2] == ["acor", "--timeout"] and float(argv[2]) > 3
    assert argv[3:] == ["etl", "--session", "s1", "--mode", "hang"]


def test_piped_output_adds_state_and_resume_to_each_row(proj):
    assert acor(proj, "etl", "--session", "s1", "--mode",
                "fail").returncode == 1
    assert acor(proj, "etl", "--session", "s2").returncode == 0
    lines = acor(proj, "sessions").stdout.splitlines()
    assert lines[0].split() == ["TOOL", "SESSION", "LAST", "CHECKPOINT",
                                "TIME", "COUNT", "STATE", "RESUME"]
    s1, s2 = (line.split(None, 6) for line in lines[1:3])
    assert s1[:3] == ["etl", "s1", "step-1"] and s1[4:6] == ["1", "failed"]
    assert s1[6] == "acor etl --session s1 --mode fail"
    assert s2[5:] == ["complete", "-"]


def test_a_committed_record_cannot_offer_another_command(proj):
    """The state dir may come with the repository: a record whose command
    is not `acor` running this tool is not one acor wrote."""
    assert acor(proj, "etl", "--session", "s1").returncode == 0
    record = proj.root / "state" / "etl" / ".s1.run"
    data = json.loads(record.read_text())
    data.update(state="failed", resume=["rm", "-rf", "/"])
    record.write_text(json.dumps(data))
    session = listed(proj)["s1"]
    assert session["state"] is None and session["resume"] is None
    assert "rm -rf" not in acor(proj, "sessions").stdout


@pytest.mark.parametrize("before_tool", [
    ["--no-sandbox"], ["--config", "/tmp/other.yaml"],
    ["--config=/tmp/other.yaml"], ["--sandbox", "--no-sandbox"],
    ["--unknown"]], ids=["no sandbox", "config", "config=", "both",
                         "unknown"])
def test_a_committed_record_cannot_offer_acor_a_weaker_run(proj,
                                                          before_tool):
    """Nor `acor --no-sandbox etl ...` or `acor --config X etl ...`: a
    person pasting what `acor sessions` offers would unbox the tool, or
    run another config's tools under its name."""
    assert acor(proj, "etl", "--session", "s1").returncode == 0
    record = proj.root / "state" / "etl" / ".s1.run"
    data = json.loads(record.read_text())
    data.update(state="failed",
                resume=["acor", *before_tool, "etl", "--session", "s1"])
    record.write_text(json.dumps(data))
    session = listed(proj)["s1"]
    assert session["state"] is None and session["resume"] is None
    assert before_tool[-1] not in acor(proj, "sessions").stdout


def test_a_record_of_another_config_offers_no_command(proj):
    """The record names the config its run read: a path a repository may
    have committed, so it is never put into a command; the state shows."""
    assert acor(proj, "etl", "--session", "s1", "--mode",
                "fail").returncode == 1
    record = proj.root / "state" / "etl" / ".s1.run"
    data = json.loads(record.read_text())
    data.update(config="/tmp/other.yaml")
    record.write_text(json.dumps(data))
    session = listed(proj)["s1"]
    assert session["state"] == "failed" and session["resume"] is None
    assert "other.yaml" not in acor(proj, "sessions").stdout


def test_safe_options_before_the_tool_stay_in_the_command(proj):
    assert acor(proj, "--timeout", "30", "--sandbox", "etl", "--session",
                "s1", "--mode", "fail").returncode == 1
    session = listed(proj)["s1"]
    assert session["resume"]["argv"] == [
        "acor", "--timeout", "30", "--sandbox", "etl", "--session", "s1",
        "--mode", "fail"]


def test_clearing_a_session_clears_its_record(proj):
    assert acor(proj, "etl", "--session", "s1", "--mode",
                "fail").returncode == 1
    assert (proj.root / "state" / "etl" / ".s1.run").exists()
    assert acor(proj, "sessions", "--clear", "s1").returncode == 0
    assert not (proj.root / "state" / "etl" / ".s1.run").exists()


@pytest.mark.parametrize("columns,env", [
    pytest.param(120, {}, id="120"), pytest.param(60, {}, id="60"),
    pytest.param(80, {"NO_COLOR": "1"}, id="no-color"),
    pytest.param(100, {"TERM": "dumb"}, id="dumb")])
def test_at_a_terminal_a_state_column_and_each_resume_command_whole(
        proj, columns, env):
    long_note = "a-value-long-enough-to-need-a-line-of-its-own"
    assert acor(proj, "etl", "--session", "s1", "--mode", "fail",
                "--note", long_note, "--out", "reports/today").returncode == 1
    assert acor(proj, "etl", "--session", "s2").returncode == 0
    command = listed(proj)["s1"]["resume"]["command"]
    term = Terminal(proj, "sessions", columns=columns, env=env)
    assert term.finish() == 0
    lines = [line for line in term.plain.splitlines() if line.strip()]
    assert all(len(line) <= columns for line in lines), lines
    assert lines[0].split() == ["TOOL", "SESSION", "STATE", "CHECKPOINT",
                                "SAVED", "COUNT"]
    assert lines[1].split()[:4] == ["etl", "s1", "failed", "step-1"]
    assert lines[2].split()[:4] == ["etl", "s2", "complete", "step-1"]
    start = lines.index("To resume:")
    assert lines[start + 1].strip() == "etl s1 (failed):"
    shown = lines[start + 2:]
    # Broken between words only: each line that goes on ends with a
    # backslash, and the lines joined are the command.
    assert all(line.endswith(" \\") for line in shown[:-1])
    joined = " ".join(line.strip().removesuffix(" \\") for line in shown)
    assert joined == command
    assert re.search(r"\bs2\b", "\n".join(shown)) is None
    if columns == 60:
        assert len(shown) > 1

"""Resumable runs end to end: a tool's session and checkpoints through `acor`
(run in process; the tool is a real process), a run killed mid-file, and
the rerun that carries on.

The store itself (atomic files, concurrent writers, SIGKILL during writes)
is tested in test_sessions.py; here it is the contract a tool and an agent
see: `## Session`, `## Session Checkpoint`, resume(), `acor sessions`.
"""

import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
import time

import pytest

from acor import parse
from conftest import REPO, base_env, children, headings

SAMPLE = REPO / "tools" / "csvprofile" / "sample" / "orders.csv"
FILE = "data/orders.csv"  # relative to the project root, the same in every run


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    """The profile of FILE by one run without a session, start to end."""
    root = tmp_path_factory.mktemp("uninterrupted")
    (root / "data").mkdir()
    shutil.copy(SAMPLE, root / FILE)
    subprocess.run([sys.executable, str(REPO / "tools" / "csvprofile" /
                                        "csvprofile.py"), FILE, "--out", "out"],
                   cwd=root, env=base_env(root), check=True,
                   capture_output=True, timeout=60)
    return json.loads((root / "out" / "orders.profile.json").read_text())


@pytest.fixture
def proj(project):
    """A project with csvprofile, the sample as data/orders.csv and its state
    dir set in .acor/config.yaml (the launcher passes it as ACOR_STATE_DIR)."""
    shutil.copytree(REPO / "tools" / "csvprofile",
                    project.root / "tools" / "csvprofile")
    (project.root / "data").mkdir()
    shutil.copy(SAMPLE, project.root / FILE)
    (project.root / ".acor").mkdir()
    (project.root / ".acor" / "config.yaml").write_text(
        "tools_dirs: [tools]\nstate_dir: state\n")
    project.state = project.root / "state"
    return project


def events(stdout):
    return [e.to_dict() for e in parse(stdout)]


def of_type(stdout, kind):
    return [e for e in events(stdout) if e["type"] == kind]


def checkpoints(stdout):
    return [e["id"] for e in of_type(stdout, "checkpoint")]


def offset(checkpoint_id):
    return int(checkpoint_id.split("-")[1])


def sessions_json(proj):
    result = proj.acor("sessions", "--json")
    assert result.returncode == 0, result.stdout + result.stderr
    # --format json before the command says the same (issue 20, item 20).
    same = proj.acor("--format", "json", "sessions")
    assert json.loads(same.stdout) == json.loads(result.stdout)
    return json.loads(result.stdout)["sessions"]


def profile_of(proj, out):
    return json.loads((proj.root / out / "orders.profile.json").read_text())


def lines_of(stream):
    """stream's lines on a queue (None at EOF), read by a thread so that a
    test can wait for them with a deadline."""
    lines = queue.Queue()

    def pump():
        for line in stream:
            lines.put(line)
        lines.put(None)
    threading.Thread(target=pump, daemon=True).start()
    return lines


def read_until_checkpoints(proc, count, timeout=20):
    """What proc wrote until `count` checkpoints were written."""
    lines, seen, deadline = lines_of(proc.stdout), [], time.monotonic() + timeout
    while sum(ln.startswith("## Session Checkpoint: ") for ln in seen) < count:
        line = lines.get(timeout=max(0.01, deadline - time.monotonic()))
        assert line is not None, "EOF before the checkpoints:\n" + "".join(seen)
        seen.append(line)
    return "".join(seen), lines


# --- a killed run, resumed ---------------------------------------------------

# 10 chunks of 20 rows, 0.1 s apart: the second checkpoint comes at about
# 0.1 s, the end not before 0.9 s.
SLOW = ("--session", "s1", "--chunk-rows", "20", "--slow", "0.1")


def killed_under_acor(proj):
    """SIGKILL the tool (acor's child) after 2 checkpoints: acor reports it."""
    seen = []

    def on_line(line):
        seen.append(line)
        if line.startswith("## Session Checkpoint: ") and sum(
                ln.startswith("## Session Checkpoint: ") for ln in seen) == 2:
            (tool,) = children(os.getpid(), "csvprofile.py")
            os.kill(tool, signal.SIGKILL)

    result = proj.acor("csvprofile", FILE, *SLOW, "--out", "out1",
                       on_line=on_line)
    assert result.returncode == 1
    transcript = result.stdout
    assert [e["code"] for e in of_type(transcript, "error")] == ["E_TOOL_KILLED"]
    assert headings(transcript)[-1] == "Status: Failed"
    return transcript


def killed_standalone(proj):
    """The tool run directly (no launcher), ACOR_STATE_DIR set, SIGKILLed."""
    env = dict(proj.env, ACOR_STATE_DIR=str(proj.state))
    proc = subprocess.Popen(
        [sys.executable, "tools/csvprofile/csvprofile.py", FILE, *SLOW,
         "--out", "out1"], cwd=proj.root, env=env, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True)
    try:
        transcript, _ = read_until_checkpoints(proc, 2)
    finally:
        proc.kill()
        assert proc.wait(timeout=20) == -signal.SIGKILL
    return transcript


def killed_by_timeout(proj):
    """acor's own --timeout stops the tool: exit 124, E_TIMEOUT.

    The timeout counts from the launch, start-up included, so the tool is
    paced for a slow machine: its second checkpoint comes about 1 s after
    it starts (a start-up of up to 5 s still leaves two before the
    timeout), its end not before 9 s, long after it."""
    paced = ("--session", "s1", "--chunk-rows", "20", "--slow", "1")
    result = proj.acor("--timeout", "6", "csvprofile", FILE, *paced,
                      "--out", "out1")
    assert result.returncode == 124, result.stdout + result.stderr
    assert [e["code"] for e in of_type(result.stdout, "error")] == ["E_TIMEOUT"]
    return result.stdout


@pytest.mark.parametrize("kill", [killed_under_acor, killed_standalone,
                                  killed_by_timeout])
def test_a_killed_run_resumes_from_its_last_checkpoint(proj, kill,
                                                      uninterrupted):
    size = (proj.root / FILE).stat().st_size
    transcript = kill(proj)
    seen = checkpoints(transcript)
    assert len(seen) >= 2 and all(0 < offset(c) < size for c in seen)
    assert "Status: Complete" not in headings(transcript)
    # The store's newest checkpoint: the last one relayed, or one saved
    # after it that the kill kept from being relayed.
    (saved,) = sessions_json(proj)
    assert (saved["tool"], saved["session"]) == ("csvprofile", "s1")
    latest = saved["checkpoint"]
    assert offset(latest) >= offset(seen[-1])
    assert 1 <= saved["checkpoints"] <= 2  # csvprofile keeps the newest 2

    result = proj.acor("csvprofile", FILE, "--session", "s1", "--chunk-rows",
                      "20", "--out", "out2")
    assert result.returncode == 0, result.stdout + result.stderr
    hs = headings(result.stdout)
    assert hs[:3] == ["Status: Ready", "Session: s1", "Status: Working"]
    statuses = [e["message"] for e in of_type(result.stdout, "status")]
    resumed = (f"Resumed from checkpoint {latest} of session s1: byte "
               f"{offset(latest)} of {size}")
    assert any(m.startswith(resumed) for m in statuses), statuses
    # it carried on: every checkpoint of the rerun lies after the old one
    again = checkpoints(result.stdout)
    assert again and offset(again[0]) > offset(latest)
    assert offset(again[-1]) == size
    # and the result is the one an uninterrupted run gives, sha256 included
    assert profile_of(proj, "out2") == uninterrupted


def test_a_finished_session_resumes_at_the_end_without_rereading(
        proj, uninterrupted):
    first = proj.acor("csvprofile", FILE, "--session", "done", "--out", "o1")
    assert first.returncode == 0, first.stdout
    size = (proj.root / FILE).stat().st_size
    assert checkpoints(first.stdout)[-1] == f"offset-{size}"
    again = proj.acor("csvprofile", FILE, "--session", "done", "--out", "o2")
    assert again.returncode == 0, again.stdout
    statuses = [e["message"] for e in of_type(again.stdout, "status")]
    assert any("(the whole file)" in m and f"byte {size} of {size}" in m
               for m in statuses), statuses
    assert checkpoints(again.stdout) == []  # nothing new to save
    assert profile_of(proj, "o1") == profile_of(proj, "o2") == uninterrupted


def test_a_changed_file_starts_over_and_says_why(proj):
    first = proj.acor("csvprofile", FILE, "--session", "s2", "--out", "o1")
    assert first.returncode == 0
    with open(proj.root / FILE, "a") as f:
        f.write("ORD-9999,C-001,2024-06-30,shipped,SKU-A10,1,1.00,1.00,true,,\n")
    result = proj.acor("csvprofile", FILE, "--session", "s2", "--out", "o2")
    assert result.returncode == 0, result.stdout
    statuses = [e["message"] for e in of_type(result.stdout, "status")]
    assert any(m.startswith("Starting over at byte 0: checkpoint offset-")
               and "the file changed since (size" in m for m in statuses), \
        statuses
    assert not any(m.startswith("Resumed") for m in statuses)
    assert profile_of(proj, "o2")["rows"] == 201


def test_same_size_and_mtime_but_other_bytes_start_over(proj):
    """The prefix digest catches what size and mtime cannot."""
    path = proj.root / FILE
    first = proj.acor("csvprofile", FILE, "--session", "s3", "--chunk-rows",
                     "50", "--out", "o1")
    assert first.returncode == 0
    stat = path.stat()
    data = path.read_bytes()
    path.write_bytes(data.replace(b"ORD-1002,", b"ORD-2002,", 1))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    result = proj.acor("csvprofile", FILE, "--session", "s3", "--out", "o2")
    statuses = [e["message"] for e in of_type(result.stdout, "status")]
    assert any("sha256 differs" in m for m in statuses), statuses
    assert profile_of(proj, "o2")["sha256"] != profile_of(proj, "o1")["sha256"]


def test_input_needed_then_key_continues_the_session(proj):
    """The command in Input Needed keeps --session, and answering it reuses
    the pass already made (the auto pass tracked every id-like column)."""
    (proj.root / "data" / "two.csv").write_text(
        "order_id,invoice_id,amount\n"
        + "".join(f"{a},{100 + i},{i}\n" for i, a in enumerate(
            [1, 2, 3, 4, 5, 6, 7, 8, 9, 2])))
    asked = proj.acor("csvprofile", "data/two.csv", "--session", "k",
                     "--out", "o")
    assert asked.returncode == 3
    message = of_type(asked.stdout, "input_needed")[0]["message"]
    assert "acor csvprofile data/two.csv --out o --session k --key '<KEY>'" \
        in message  # <KEY>: the field's placeholder, as acor fills it
    answered = proj.acor("csvprofile", "data/two.csv", "--out", "o",
                        "--session", "k", "--key", "order_id")
    assert answered.returncode == 0, answered.stdout
    statuses = [e["message"] for e in of_type(answered.stdout, "status")]
    assert any(m.startswith("Resumed from checkpoint") for m in statuses)
    summary = of_type(answered.stdout, "output_data")[0]["data"]
    assert summary["duplicates"] == [{"value": "2", "lines": [3, 11]}]


def test_bad_session_id_is_a_usage_error_before_anything_is_written(proj):
    result = proj.acor("csvprofile", FILE, "--session", "../escape")
    assert result.returncode == 2  # an E_USAGE error, then Status: Failed
    error = of_type(result.stdout, "error")[0]
    assert error["code"] == "E_USAGE" and "contains '/'" in error["title"]
    assert "--session orders-1" in error["recovery"]
    assert not proj.state.exists()
    assert not (proj.root / "escape.json").exists()


def test_a_corrupt_session_is_reported_with_the_way_out(proj):
    (proj.state / "csvprofile").mkdir(parents=True)
    (proj.state / "csvprofile" / "bad.json").write_text("{oops")
    result = proj.acor("csvprofile", FILE, "--session", "bad")
    assert result.returncode == 1
    error = of_type(result.stdout, "error")[0]
    assert error["code"] == "E_SESSION_CORRUPT"
    assert "acor sessions --clear bad --tool csvprofile" in error["recovery"]
    assert proj.acor("sessions", "--clear", "bad").returncode == 0
    assert not (proj.state / "csvprofile" / "bad.json").exists()


def test_a_save_waits_for_the_lock_another_writer_holds(tmp_path):
    """Two writers of one session take turns (the lock file); one that
    waits too long says which session and file are locked."""
    import fcntl
    from acor.sessions import SessionStore
    store = SessionStore(tmp_path, "etl", lock_timeout=10)
    store.save("s", "c1", {"n": 1})  # creates the folder and the lock file
    holder = open(tmp_path / "etl" / ".s.lock", "r+")
    fcntl.flock(holder, fcntl.LOCK_EX)
    release = threading.Timer(0.1, holder.close)
    release.start()
    started = time.monotonic()
    store.save("s", "c2", {"n": 2})  # waits for the holder
    assert time.monotonic() - started >= 0.05
    release.join()
    assert store.latest("s")[:2] == ("c2", {"n": 2})
    with open(tmp_path / "etl" / ".s.lock", "r+") as holder:
        fcntl.flock(holder, fcntl.LOCK_EX)
        impatient = SessionStore(tmp_path, "etl", lock_timeout=0.05)
        with pytest.raises(TimeoutError) as caught:
            impatient.save("s", "c3", {"n": 3})
    assert "session 's' of etl stayed locked for 0.05 s" in str(caught.value)
    assert ".s.lock" in str(caught.value)
    assert store.latest("s")[:2] == ("c2", {"n": 2})


# --- the library calls, in a tool process ---------------------------------

API_TOOL = """
    import json, os, sys
    from acor import AcorTool, AcorStateError
    results = {}
    with AcorTool() as tool:
        for what, call in (("checkpoint", lambda: tool.checkpoint("c", {})),
                           ("resume", tool.resume)):
            try:
                call()
            except AcorStateError as exc:
                results[what + " without session"] = str(exc)
        for bad in ("../up", "", "a/b", ".hidden", "x" * 129, "nul"):
            try:
                tool.session(bad)
            except ValueError as exc:
                results.setdefault("bad ids", []).append(bad)
        results["state dir exists after bad ids"] = os.path.exists(
            os.environ["ACOR_STATE_DIR"])
        tool.session(sys.argv[1])
        results["first resume"] = tool.resume()
        for n in range(int(sys.argv[2])):
            tool.checkpoint(f"step-{n}", {"n": n, "items": list(range(n))})
        results["last resume"] = tool.resume()
        try:
            tool.checkpoint("bad", {"not json": object()})
        except TypeError as exc:
            results["non-JSON state"] = str(exc)
        tool.output(results)
"""


def run_api_tool(proj, *args):
    result = proj.acor("api", *args)
    assert result.returncode == 0, result.stdout + result.stderr
    return result, of_type(result.stdout, "output_data")[0]["data"]


def test_session_checkpoint_and_resume_in_a_tool_process(proj):
    proj.add_tool("api", API_TOOL)
    result, data = run_api_tool(proj, "run-1", "3")
    assert "has no session" in data["checkpoint without session"]
    assert "tool.session(session_id)" in data["resume without session"]
    assert len(data["bad ids"]) == 6
    assert data["state dir exists after bad ids"] is False
    assert data["first resume"] is None
    assert data["last resume"] == ["step-2", {"n": 2, "items": [0, 1]}]
    assert "object" in data["non-JSON state"]
    # Checkpoints are coalesced like progress: the first, then the latest
    # before any other section (step-1 only if it came an interval later).
    assert [h for h in headings(result.stdout)
            if not h.startswith("Session Checkpoint")] == [
        "Status: Ready", "Session: run-1", "Output Data", "Status: Complete"]
    assert checkpoints(result.stdout) in (["step-0", "step-2"],
                                          ["step-0", "step-1", "step-2"])
    # A new process, the same session: the state came from the disk.
    _, data = run_api_tool(proj, "run-1", "0")
    assert data["first resume"] == ["step-2", {"n": 2, "items": [0, 1]}]
    assert (proj.state / "api" / "run-1.json").is_file()

    (listed,) = sessions_json(proj)
    assert {k: listed[k] for k in ("tool", "session", "checkpoint",
                                   "checkpoints")} == {
        "tool": "api", "session": "run-1", "checkpoint": "step-2",
        "checkpoints": 3}
    cleared = proj.acor("sessions", "--clear", "run-1", "--json")
    assert cleared.returncode == 0
    assert json.loads(cleared.stdout)["cleared"]["session"] == "run-1"
    assert sessions_json(proj) == []
    _, data = run_api_tool(proj, "run-1", "0")
    assert data["first resume"] is None

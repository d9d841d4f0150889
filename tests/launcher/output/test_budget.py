"""The output budget (issue 22): a run costs the agent a bounded number of
bytes, and nothing is lost: the whole output is in a file the stream
names, with its size and sha256.

Every test runs the real ``acor`` on a real tool and reads what an agent
would read: its stdout."""

import hashlib
import json
import os
import re
import subprocess
import time

import pytest

from conftest import vm_hwm
from sample_tools import FLOOD, HOLDOUT


BIG_DATA = """
from acor import AcorTool
with AcorTool() as tool:
    tool.output({"rows": [{"id": i, "name": f"row {i}"} for i in
                          range(150000)], "meta": {"n": 150000}})
"""

BIG_ERROR = """
from acor import AcorTool
with AcorTool() as tool:
    tool.fail("E_BIG", "It broke", details="D" * 500_000 + "\\nTHE END",
              recovery="Fix it.")
"""


def spill_entry(events):
    files = [f for e in events if e["type"] == "output_files"
             for f in e["files"] if f.get("truncated")]
    assert len(files) == 1, events
    return files[0]


def parse(project, markdown):
    done = subprocess.run(project.argv("parse", "-"), cwd=project.root,
                          env=project.env, input=markdown,
                          capture_output=True, text=True, timeout=60)
    return [json.loads(line) for line in done.stdout.splitlines()]


def check_file(entry):
    path = entry["path"]
    assert os.path.isabs(path)
    data = open(path, "rb").read()
    assert len(data) == entry["bytes"]
    assert hashlib.sha256(data).hexdigest() == entry["sha256"]
    assert os.stat(path).st_mode & 0o077 == 0  # private to the user
    assert os.stat(os.path.dirname(path)).st_mode & 0o077 == 0
    return data


def test_a_flood_costs_the_agent_the_budget_and_loses_nothing(project):
    project.add_tool("flood", FLOOD)
    run = project.run("flood", "20000000")
    assert run.returncode == 0, run.stderr
    out = run.stdout
    assert len(out.encode()) <= 32 * 1024 + 1024 < HOLDOUT
    # The head and the tail are both in front of the agent, in order.
    assert "FIRST LINE OF THE FLOOD" in out
    assert out.index("left out here") < out.index("LAST LINE OF THE FLOOD")
    assert out.rstrip().endswith("## Status: Complete")
    assert "## Output Data" in out
    events = parse(project, out)
    entry = spill_entry(events)
    data = check_file(entry)
    assert b"line 00004999" in data and b"LAST LINE OF THE FLOOD" in data
    assert len(data) > 20_000_000
    # The note in place names the same file.
    assert f"the whole output is in {entry['path']}" in out
    # The file is the whole transcript: acor parse reads it back.
    whole = parse(project, data.decode())
    assert whole[-1] == {"type": "status", "state": "complete",
                         "message": ""}


def test_json_lines_carry_truncated_bytes_and_sha256(project):
    project.add_tool("flood", FLOOD)
    run = project.run("--format", "json", "flood", "5000000")
    assert run.returncode == 0, run.stderr
    assert len(run.stdout.encode()) < HOLDOUT
    lines = [json.loads(line) for line in run.stdout.splitlines()]
    result = lines[-1]
    assert result["type"] == "result" and result["truncated"] is True
    entry = spill_entry(lines)
    assert (result["bytes"], result["sha256"], result["output_file"]) == \
        (entry["bytes"], entry["sha256"], entry["path"])
    check_file(entry)


def test_max_output_0_passes_everything(project):
    project.add_tool("flood", FLOOD)
    run = project.run("--max-output", "0", "--format", "json", "flood",
                      "2000000")
    lines = [json.loads(line) for line in run.stdout.splitlines()]
    assert "truncated" not in lines[-1]  # false: left out
    assert "output_file" not in lines[-1]  # null: left out
    text = "".join(e.get("text", "") for e in lines if e["type"] == "text")
    assert text.count("xxxxx\n") >= 2_000_000 // 110


def test_a_run_within_budget_is_untouched_and_leaves_no_file(project):
    project.add_tool("flood", FLOOD)
    run = project.run("--format", "json", "flood", "1000")
    lines = [json.loads(line) for line in run.stdout.splitlines()]
    assert "truncated" not in lines[-1]  # false: left out
    assert not any(e["type"] == "output_files" for e in lines)
    spill = project.root / ".acor" / "state" / ".output"
    assert not spill.exists() or not list(spill.iterdir())


def test_large_output_data_is_a_file_and_a_summary(project):
    project.add_tool("big", BIG_DATA)
    run = project.run("--format", "json", "big")
    assert run.returncode == 0, run.stderr
    assert len(run.stdout.encode()) < HOLDOUT
    lines = [json.loads(line) for line in run.stdout.splitlines()]
    data = [e for e in lines if e["type"] == "output_data"]
    summary = data[-1]["data"]
    assert summary["acor_truncated"] is True
    assert summary["type"] == "object" and summary["keys"] == ["rows", "meta"]
    whole = open(summary["file"], "rb").read()
    assert hashlib.sha256(whole).hexdigest() == summary["sha256"]
    assert len(whole) == summary["bytes"]
    value = json.loads(whole)
    assert len(value["rows"]) == 150000 and value["meta"] == {"n": 150000}


def test_a_huge_error_keeps_its_head_and_tail(project):
    project.add_tool("broke", BIG_ERROR)
    run = project.run("--format", "json", "broke")
    assert run.returncode == 1
    assert len(run.stdout.encode()) < HOLDOUT
    lines = [json.loads(line) for line in run.stdout.splitlines()]
    error = [e for e in lines if e["type"] == "error"][-1]
    assert error["code"] == "E_BIG" and error["recovery"] == "Fix it."
    assert error["details"].startswith("DDDD")
    assert error["details"].endswith("THE END")
    assert "left out here" in error["details"]
    assert lines[-1]["state"] == "failed" and lines[-1]["truncated"]


@pytest.mark.parametrize("where", ["config", "manifest", "option"])
def test_max_output_comes_from_option_manifest_or_config(project, where):
    manifest = {"max_output": 65536} if where == "manifest" else {}
    project.add_tool("flood", FLOOD, **manifest)
    options = ["--max-output", "64k"] if where == "option" else []
    if where == "config":
        (project.root / ".acor").mkdir()
        (project.root / ".acor" / "config.yaml").write_text(
            "max_output: 64KiB\n")
    run = project.run(*options, "flood", "5000000")
    size = len(run.stdout.encode())
    assert 40 * 1024 < size <= 65 * 1024, size
    assert "65,536 bytes" in run.stdout


@pytest.mark.parametrize("value", ["12", "lots", "-1", "5 GiBs"])
def test_a_bad_max_output_is_a_usage_error(project, value):
    project.add_tool("flood", FLOOD)
    run = project.run("--max-output", value, "flood", "10")
    assert run.returncode == 2
    assert "--max-output" in run.stdout and "Traceback" not in run.stderr
    (project.root / ".acor").mkdir(exist_ok=True)
    (project.root / ".acor" / "config.yaml").write_text(
        f"max_output: {value!r}\n")
    run = project.run("flood", "10")
    assert run.returncode == 2 and "max_output" in run.stdout



@pytest.mark.skipif(not os.path.exists("/proc/self/status"),
                    reason="needs /proc")
@pytest.mark.parametrize("fmt", ["markdown", "json"])
def test_memory_stays_bounded_relaying_200_mb(project, fmt):
    project.add_tool("flood", FLOOD)
    proc = subprocess.Popen(project.argv("--format", fmt, "flood",
                                         "200000000"),
                            cwd=project.root, env=project.env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    peak = 0
    while proc.poll() is None:
        try:
            peak = max(peak, vm_hwm(proc.pid))
        except OSError:
            pass
        time.sleep(0.01)
    out, err = proc.communicate()
    assert proc.returncode == 0, err
    assert peak < 100 * 1024 * 1024, peak
    assert len(out) < HOLDOUT


def test_sessions_clear_output_removes_the_output_files(project):
    """`acor sessions --clear-output` deletes the files holding whole
    outputs; a tool's saved session is kept."""
    project.add_tool("flood", FLOOD)
    project.add_tool("saver", """\
        from acor import AcorTool
        with AcorTool() as tool:
            tool.session("keep-me")
            tool.checkpoint("c1", {"i": 1})
        """)
    project.run("flood", "2000000")
    project.run("saver")
    spill = project.root / ".acor" / "state" / ".output"
    assert list(spill.iterdir())
    run = project.run("sessions", "--clear-output")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "Removed 1 output file(s)" in run.stdout
    assert not list(spill.iterdir())
    listed = project.run("sessions", "--json")
    assert [s["session"] for s in json.loads(listed.stdout)["sessions"]] \
        == ["keep-me"]
    done = project.run("sessions", "--clear-output", "--json")
    assert json.loads(done.stdout)["cleared_output"]["files"] == 0


def test_a_bare_sessions_clear_is_a_usage_error_naming_both(project):
    """Issue 32, point 11: --clear with and without an id meant two
    things. Bare, it deletes nothing and names both commands."""
    project.add_tool("flood", FLOOD)
    project.run("flood", "2000000")
    spill = project.root / ".acor" / "state" / ".output"
    before = sorted(spill.iterdir())
    for fmt in ([], ["--format", "json"]):
        run = project.run(*fmt, "sessions", "--clear")
        assert run.returncode == 2, run.stdout + run.stderr
        assert "E_USAGE" in run.stdout
        assert "acor sessions --clear ID" in run.stdout
        assert "acor sessions --clear-output" in run.stdout
        assert "Traceback" not in run.stdout + run.stderr
    assert sorted(spill.iterdir()) == before


def test_sessions_clear_output_with_a_tool_removes_only_its_files(project):
    project.add_tool("flood", FLOOD)
    project.add_tool("flood-two", FLOOD)
    project.run("flood", "2000000")
    project.run("flood-two", "2000000")
    spill = project.root / ".acor" / "state" / ".output"
    run = project.run("sessions", "--clear-output", "--tool", "flood")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "Removed 1 output file(s) of flood" in run.stdout
    (left,) = spill.iterdir()
    assert "-flood-two-" in left.name


CHATTY = """
import time
from acor import AcorTool
with AcorTool() as tool:
    tool.session("s1")
    for i in range(2000):
        tool.progress_bar(i + 1, 2000, "work")
        tool.checkpoint(f"c{i}", {"i": i})
    tool.output("done")
"""


@pytest.mark.parametrize("budget", ["0", "32k"])
def test_a_checkpoint_storm_costs_a_few_dozen_sections(project, budget):
    """2,000 progress updates and 2,000 checkpoints: the latest of each is
    shown before any other section, the rest coalesced."""
    project.add_tool("chatty", CHATTY)
    run = project.run("--max-output", budget, "--format", "json", "chatty")
    assert run.returncode == 0, run.stderr
    events = [json.loads(line) for line in run.stdout.splitlines()]
    assert len(events) < 60, len(events)
    kinds = [e["type"] for e in events]
    last_cp = max(i for i, k in enumerate(kinds) if k == "checkpoint")
    last_progress = max(i for i, k in enumerate(kinds) if k == "progress")
    output = kinds.index("output")
    assert events[last_cp]["id"] == "c1999" and last_cp < output
    assert events[last_progress]["percent"] == 100 and last_progress < output


def test_a_checkpoint_does_not_rewrite_the_session_file(tmp_path):
    """Saves append to a journal, folded into the file every 64: 200
    saves replace the file a few times, not 200."""
    from acor.sessions import ROTATE, SessionStore
    store = SessionStore(tmp_path, "etl")
    replaced, inode = 0, None
    for n in range(200):
        store.save("s", f"c{n}", {"n": n, "pad": "x" * 1000})
        now = os.stat(tmp_path / "etl" / "s.json").st_ino
        replaced += now != inode  # a rename over it: a new inode
        inode = now
    assert replaced <= 200 // (ROTATE - 1) + 2
    assert store.latest("s").id == "c199"
    assert len(store._read("s")["checkpoints"]) == 200


SLOW_PROGRESS = """
import time
from acor import AcorTool
with AcorTool() as tool:
    args = tool.parse_args()
    if args.session:
        tool.session(args.session)
        tool.checkpoint("start", {"n": 0})
    time.sleep(0.5)
    tool.progress(10, "a tenth done")
    time.sleep(60)
"""
SESSION_ARGS = {"type": "object", "additionalProperties": False,
                "properties": {"session": {"type": "string",
                                           "x-acor": {"flag": "--session"}}}}


def test_a_timeout_estimates_the_time_needed_from_progress(project):
    project.add_tool("slowish", SLOW_PROGRESS, args=SESSION_ARGS)
    run = project.run("--format", "json", "--timeout", "4", "slowish",
                      timeout=60)
    lines = [json.loads(line) for line in run.stdout.splitlines()]
    error = [e for e in lines if e["type"] == "error"][-1]
    assert error["code"] == "E_TIMEOUT"
    # How long the tenth took is the machine's (at least the 0.5 s the tool
    # sleeps); what acor asks for follows from it: ten tenths, and a
    # quarter more, rounded up.
    said = re.search(r"progress: 10% after ([\d.]+) s, so about ([\d.]+) s "
                     r"in all at that rate", error["details"])
    assert said, error["details"]
    took, total = float(said[1]), float(said[2])
    assert took >= 0.5 and abs(total - took * 10) <= 0.5 + 0.05 * 10
    allowed = float(error["next"][error["next"].index("--timeout") + 1])
    assert total * 1.25 - 0.1 <= allowed <= total * 1.25 + 1.1, error
    # The tool takes --session: the advice says how to make it resumable.
    assert "pass --session" in error["recovery"]
    run = project.run("--format", "json", "--timeout", "4", "slowish",
                      "--session", "s1", timeout=60)
    lines = [json.loads(line) for line in run.stdout.splitlines()]
    error = [e for e in lines if e["type"] == "error"][-1]
    assert "checkpoints in session s1" in error["recovery"]
    assert error["next"][-2:] == ["--session", "s1"]


def test_project_python_is_the_projects_venv(project):
    """The bundled pytest wrapper runs "{project_python}": the project's
    .venv when there is one, else acor's interpreter."""
    import sys
    project.add_wrapped("which", ["{project_python}", "-c",
                                  "import sys; print(sys.executable)"])
    run = project.run("which")
    assert sys.executable in run.stdout
    fake = project.root / ".venv" / "bin" / "python"
    fake.parent.mkdir(parents=True)
    fake.write_text("#!/bin/sh\necho PROJECT VENV \"$@\"\n")
    fake.chmod(0o755)
    run = project.run("which")
    assert "PROJECT VENV -c" in run.stdout, run.stdout


def test_a_wrapped_programs_lines_are_grouped_by_time(project):
    """A program writing a line at a time (each its own pipe read) is
    relayed as a few Outputs, not one section a line; a progress line
    still comes in its place."""
    project.add_wrapped("lines", [
        "{python}", "-u", "-c",
        "import time\nfor i in range(60):\n"
        "    print('line', i, flush=True); time.sleep(0.004)\n"
        "print('50%', flush=True)\nprint('after', flush=True)"],
        progress_pattern=r"(?P<percent>\d+)%")
    run = project.run("--format", "json", "lines")
    events = [json.loads(line) for line in run.stdout.splitlines()]
    outputs = [e for e in events if e["type"] == "output"]
    assert len(outputs) <= 15, len(outputs)  # 60 reads, ~0.25 s
    text = "\n".join(e["text"] for e in outputs)
    assert text.split("\n") == [f"line {i}" for i in range(60)] + ["after"]
    kinds = [e["type"] for e in events]
    assert kinds.index("progress") < max(
        i for i, e in enumerate(events) if e["type"] == "output")
    assert events[kinds.index("progress") + 1]["text"] == "after"

"""Session storage (acor.sessions) and `acor sessions`
(acor.cli.commands.sessions).

Concurrency and crash tests use real processes: the file lock and the
atomic rename are what they test, and threads would share one process's
locks and never be killed mid-write.
"""

import json
import math
import multiprocessing
import os
import random
import subprocess
import sys
import time

import pytest
from click.testing import CliRunner

from acor.sessions import (CorruptSessionError, SessionStore, list_sessions,
                           state_dir_from_env, validate_checkpoint_id,
                           validate_session_id, validate_tool_name)
from acor.cli.commands.sessions import sessions
from conftest import REPO as REPO_PATH

REPO = str(REPO_PATH)


@pytest.fixture
def state(tmp_path):
    return tmp_path / "state"


def spawn(code, *args, **kwargs):
    """``python -c code args`` with the repository importable."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.Popen([sys.executable, "-c", code, *map(str, args)],
                            env=env, stdout=subprocess.PIPE, text=True,
                            **kwargs)


def listing(folder):
    return sorted(os.listdir(folder)) if os.path.isdir(folder) else []


def stored(state, tool, session, keep=None):
    """The session as every reader sees it: its file, with the journal's
    newer entries applied (acor.sessions: a save appends to the journal)."""
    store = SessionStore(state, tool, **({"keep": keep} if keep else {}))
    return store._read(session)


# --- save / latest ----------------------------------------------------------

def test_save_latest_round_trip(state):
    store = SessionStore(state, "etl")
    assert store.latest("run-1") is None
    store.save("run-1", "batch-1", {"offset": 100, "done": ["a.csv"]})
    store.save("run-1", "batch-2", {"offset": 200, "pair": (1, 2)})
    last = store.latest("run-1")
    assert (last.id, last.state, last.seq) == (
        "batch-2", {"offset": 200, "pair": [1, 2]}, 2)
    assert last.time.endswith("Z")
    # Saving an old id again makes it the newest, not a second entry.
    store.save("run-1", "batch-1", {"offset": 300})
    assert store.latest("run-1")[:2] == ("batch-1", {"offset": 300})
    data = stored(state, "etl", "run-1")
    assert data["format"] == "acor-session/1" and data["seq"] == 3
    assert [(k, v["seq"]) for k, v in data["checkpoints"].items()] == [
        ("batch-2", 2), ("batch-1", 3)]
    assert SessionStore(state, "other").latest("run-1") is None


def test_resume_in_a_new_process(state):
    SessionStore(state, "etl").save("run-1", "step-3", {"rows": 3000})
    code = ("import sys, json; from acor.sessions import SessionStore; "
            "c = SessionStore(sys.argv[1], 'etl').latest('run-1'); "
            "print(json.dumps([c.id, c.state]))")
    out, _ = spawn(code, state).communicate(timeout=30)
    assert json.loads(out) == ["step-3", {"rows": 3000}]


def test_history_is_bounded(state):
    store = SessionStore(state, "etl", keep=5)
    for n in range(12):
        store.save("s", f"cp-{n}", {"n": n})
    data = stored(state, "etl", "s", keep=5)
    assert list(data["checkpoints"]) == [f"cp-{n}" for n in range(7, 12)]
    assert store.latest("s").seq == 12


def test_state_dir_from_env(tmp_path, monkeypatch):
    monkeypatch.delenv("ACOR_STATE_DIR", raising=False)
    monkeypatch.chdir(tmp_path)
    assert state_dir_from_env() == str(tmp_path / ".acor" / "state")
    monkeypatch.setenv("ACOR_STATE_DIR", str(tmp_path / "elsewhere"))
    assert state_dir_from_env() == str(tmp_path / "elsewhere")


# --- validation -------------------------------------------------------------

BAD_IDS = ["../x", "a/b", "a\\b", ".hidden", "x" * 200, "a\x00b", "", "..",
           "a..b", "-rf", "a b", "a\n", "caf\u00e9", "nul", "CON.json", "a."]


@pytest.mark.parametrize("bad", BAD_IDS)
def test_bad_ids_are_refused_before_touching_disk(state, bad):
    for check in (validate_session_id, validate_checkpoint_id,
                  validate_tool_name):
        with pytest.raises(ValueError, match="for example '"):
            check(bad)
    with pytest.raises(ValueError, match="tool name"):
        SessionStore(state, bad)
    store = SessionStore(state, "etl")
    with pytest.raises(ValueError, match="session id .* is not allowed"):
        store.save(bad, "ok", {})
    with pytest.raises(ValueError, match="checkpoint id .* is not allowed"):
        store.save("ok", bad, {})
    for call in (store.latest, store.clear):
        with pytest.raises(ValueError, match="session id"):
            call(bad)
    assert not state.exists()
    assert listing(state.parent) == []


def test_validation_says_what_is_wrong():
    with pytest.raises(ValueError, match=r"contains '/'.*'run-2024-06-01'"):
        validate_session_id("../etc/passwd")
    with pytest.raises(ValueError, match=r"200 characters long \(at most 128"):
        validate_session_id("x" * 200)
    with pytest.raises(TypeError, match="must be a string, not int"):
        validate_session_id(42)
    assert validate_session_id("run-2024.06_01") == "run-2024.06_01"
    assert validate_session_id("x" * 128) == "x" * 128


def test_non_json_state_is_refused_and_file_untouched(state):
    store = SessionStore(state, "etl")
    store.save("s", "good", {"a": 1})
    path = state / "etl" / "s.json"
    before = path.read_bytes()
    loop = []
    loop.append(loop)
    cases = [({"when": {1, 2}}, TypeError, r"state\['when'\] is a set"),
             (object(), TypeError, "state is a object"),
             ({"rows": [1, b"x"]}, TypeError, r"\['rows'\]\[1\] is a bytes"),
             ({1: "a"}, TypeError, "key 1 of type int"),
             ({"x": math.nan}, ValueError, "nan"),
             ({"x": loop}, ValueError, "circular")]
    for value, error, message in cases:
        with pytest.raises(error, match=message):
            store.save("s", "bad", value)
        with pytest.raises(error):
            store.save("fresh", "bad", value)
    assert path.read_bytes() == before
    assert listing(state / "etl") == [".s.journal", ".s.lock", "s.json"]


# --- corrupt files ----------------------------------------------------------

@pytest.mark.parametrize("text", ["{oops", "", "[]", "\xff",
                                  '{"format": "acor-session/1"}',
                                  '{"format": "acor-session/1", "seq": 1, '
                                  '"checkpoints": {"a": {"seq": 1}}}'])
def test_corrupt_file_is_a_clear_error(state, text):
    folder = state / "etl"
    folder.mkdir(parents=True)
    path = folder / "s.json"
    path.write_text(text, encoding="latin-1")
    store = SessionStore(state, "etl")
    for call in (lambda: store.latest("s"), lambda: store.save("s", "c", {})):
        with pytest.raises(CorruptSessionError) as info:
            call()
        message = str(info.value)
        assert str(path) in message and info.value.path == str(path)
        assert "Delete it, or run `acor sessions --clear s --tool etl`" \
            in message
        assert info.value.__cause__ is None  # no json traceback chained
    assert path.read_text(encoding="latin-1") == text  # never overwritten
    [summary] = list_sessions(state)
    assert summary.error and summary.checkpoints == 0
    assert store.clear("s") and not path.exists()
    store.save("s", "c", {})
    assert store.latest("s").id == "c"


def test_a_lone_surrogate_in_state_round_trips(state):
    """Invalid UTF-8 decoded with surrogateescape (a file name from argv)
    is kept, escaped, instead of failing the save."""
    store = SessionStore(state, "etl")
    store.save("s", "c", {"name": "data\udcff.csv", "ok": "caf\u00e9"})
    assert store.latest("s").state == {"name": "data\udcff.csv",
                                       "ok": "caf\u00e9"}
    (state / "etl" / "s.json").read_bytes().decode("utf-8")  # valid UTF-8


def test_a_plain_file_where_the_tool_folder_would_be(state):
    state.mkdir()
    (state / "etl").write_text("not a folder")
    store = SessionStore(state, "etl")
    assert store.latest("s") is None and not store.clear("s")
    assert list_sessions(state) == []
    with pytest.raises(CorruptSessionError, match="not a directory"):
        store.save("s", "c", {})
    assert (state / "etl").read_text() == "not a folder"


def test_a_state_dir_that_is_a_file(tmp_path):
    """Reading or saving is an OSError for the caller to report (as
    before); listing and clearing find nothing."""
    state = tmp_path / "file"
    state.write_text("x")
    store = SessionStore(state, "etl")
    with pytest.raises(NotADirectoryError):
        store.latest("s")
    with pytest.raises(OSError):
        store.save("s", "c", {})
    assert not store.clear("s") and list_sessions(state) == []


def test_clear_removes_a_fifo_or_link_not_its_target(state, tmp_path):
    target = tmp_path / "target"
    target.write_text("keep")
    folder = state / "etl"
    folder.mkdir(parents=True)
    os.symlink(target, folder / "a.json")
    os.mkfifo(folder / "b.json")
    store = SessionStore(state, "etl")
    assert store.clear("a") and store.clear("b")
    assert listing(folder) == [".a.lock", ".b.lock"]
    assert target.read_text() == "keep"


def test_a_session_file_at_the_bound_is_read(state, monkeypatch):
    import acor.sessions
    store = SessionStore(state, "etl")
    store.save("s", "c", {"pad": ""})
    size = os.path.getsize(state / "etl" / "s.json")
    monkeypatch.setattr(acor.sessions, "MAX_BYTES", size)
    assert store.latest("s").id == "c"
    monkeypatch.setattr(acor.sessions, "MAX_BYTES", size - 1)
    with pytest.raises(CorruptSessionError, match="over the"):
        store.latest("s")


def test_stale_temp_files_of_dead_writers_are_removed(state):
    store = SessionStore(state, "etl")
    store.save("s", "c1", {})
    folder = state / "etl"
    (folder / ".s.deadbeef0001.tmp").write_text('{"torn')
    (folder / ".s.x.deadbeef0002.tmp").write_text("another session's")
    store.save("s", "c2", {})
    assert listing(folder) == [".s.journal", ".s.lock",
                               ".s.x.deadbeef0002.tmp", "s.json"]


def test_reading_does_not_import_filelock(state):
    SessionStore(state, "etl").save("s", "c", {"n": 1})
    code = ("import sys; from acor.sessions import SessionStore, "
            "list_sessions; SessionStore(sys.argv[1], 'etl').latest('s'); "
            "list_sessions(sys.argv[1]); print('filelock' in sys.modules)")
    out, _ = spawn(code, state).communicate(timeout=30)
    assert out.strip() == "False"


# --- processes --------------------------------------------------------------
# Forked, not spawned: real processes with their own locks that SIGKILL can
# hit anywhere, without paying an interpreter start for each one.

needs_fork = pytest.mark.skipif(
    "fork" not in multiprocessing.get_all_start_methods(),
    reason="needs fork() and SIGKILL")
# Python 3.12+ warns of any fork in a process with threads (pytest-xdist's
# worker has some); these children take no lock those threads hold.
forks_beside_threads = pytest.mark.filterwarnings(
    "ignore:This process .* is multi-threaded, use of fork:"
    "DeprecationWarning")


def _writer(state, me, gate):
    store = SessionStore(state, "etl")
    gate.wait(30)
    for k in range(5):
        store.save("shared", f"p{me}-{k}", {"p": me, "k": k})


@needs_fork
@forks_beside_threads
def test_sixteen_processes_lose_no_checkpoint(state):
    fork = multiprocessing.get_context("fork")
    gate = fork.Event()
    procs = [fork.Process(target=_writer, args=(state, i, gate))
             for i in range(16)]
    for p in procs:
        p.start()
    gate.set()  # all at once: maximum contention
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    data = stored(state, "etl", "shared")
    points = data["checkpoints"]
    assert set(points) == {f"p{i}-{k}" for i in range(16) for k in range(5)}
    assert sorted(e["seq"] for e in points.values()) == list(range(1, 81))
    for i in range(16):  # each process's own saves stay in its order
        seqs = [points[f"p{i}-{k}"]["seq"] for k in range(5)]
        assert seqs == sorted(seqs)
    assert listing(state / "etl") == [".shared.journal", ".shared.lock",
                                      "shared.json"]


BLOB = "x" * 300_000


def _crash_loop(state, report):
    """Save big checkpoints forever; report each finished save's n."""
    store = SessionStore(state, "etl", keep=4)
    last = store.latest("crash")
    n = last.state["n"] + 1 if last else 0
    os.write(report, b"go\n")
    while True:
        store.save("crash", f"cp-{n}", {"n": n, "blob": BLOB, "tail": n})
        os.write(report, b"%d\n" % n)
        n += 1


def _read_until(fd, stop):
    data = b""
    while stop is None or stop not in data:
        chunk = os.read(fd, 4096)
        if not chunk:
            break
        data += chunk
    return data


@needs_fork
@forks_beside_threads
def test_sigkill_mid_write_never_leaves_a_torn_file(state):
    fork = multiprocessing.get_context("fork")
    rng = random.Random()
    path = state / "etl" / "crash.json"
    store = SessionStore(state, "etl")
    done = None  # the last save a writer reported as finished
    torn_temps = 0  # kills that landed inside a write
    for i in range(30):
        read_end, write_end = os.pipe()
        proc = fork.Process(target=_crash_loop, args=(state, write_end))
        proc.start()
        os.close(write_end)
        # Odd rounds wait for one finished save: the kill then lands in a
        # later one and the session surely grows; even rounds may kill the
        # first write of all.
        head = _read_until(read_end, b"\n" if i % 2 else b"go\n")
        head += _read_until(read_end, b"\n") if i % 2 else b""
        assert head.startswith(b"go\n")
        time.sleep(rng.uniform(0, 0.03))
        proc.kill()
        proc.join(30)
        reported = [int(n) for n in (head + _read_until(read_end, None))
                    .split()[1:]]
        os.close(read_end)
        done = reported[-1] if reported else done
        torn_temps += any(name.endswith(".tmp")
                          for name in listing(state / "etl"))
        if not path.exists():
            assert done is None  # killed before its first save
            continue
        data = json.loads(path.read_bytes())  # never torn, never empty
        assert data["format"] == "acor-session/1"
        assert len(data["checkpoints"]) <= 4
        last = store.latest("crash")
        n = last.state["n"]
        assert last.id == f"cp-{n}"
        assert last.state == {"n": n, "blob": BLOB, "tail": n}
        # The newest complete save: the last one reported, or one that
        # finished before its writer could report it.
        expected = 0 if done is None else done + 1
        assert n in (expected - 1, expected)
        done = n
    assert done is not None and done >= 14  # odd rounds each saved once+
    assert torn_temps > 0  # some kills really did land mid-write


# --- acor sessions ----------------------------------------------------------

@pytest.fixture
def run(state, monkeypatch):
    monkeypatch.setenv("ACOR_STATE_DIR", str(state))
    runner = CliRunner()
    return lambda *args, **kw: runner.invoke(sessions, list(args), **kw)


def test_cli_lists_and_clears(state, run):
    assert run().output == f"No sessions in {state}.\n"
    SessionStore(state, "etl").save("run-1", "a", {})
    SessionStore(state, "etl").save("run-1", "b", {})
    SessionStore(state, "csv").save("run-2", "only", {"n": 1})
    result = run("--json")
    assert result.exit_code == 0
    data = json.loads(result.output)
    assert data["state_dir"] == str(state)
    assert [(s["tool"], s["session"], s["checkpoint"], s["checkpoints"])
            for s in data["sessions"]] == [("csv", "run-2", "only", 1),
                                           ("etl", "run-1", "b", 2)]
    assert all(s["time"].endswith("Z") and s["error"] is None
               for s in data["sessions"])
    text = run().output
    assert "etl" in text and "run-1" in text and "LAST CHECKPOINT" in text
    result = run("--clear", "run-1")
    assert result.exit_code == 0 and "Cleared session 'run-1' of etl" \
        in result.output
    assert not (state / "etl" / "run-1.json").exists()
    assert [s["session"] for s in json.loads(run("--json").output)
            ["sessions"]] == ["run-2"]


def test_cli_clear_unknown_ambiguous_and_invalid(state, run):
    result = run("--clear", "nope")
    assert result.exit_code == 2
    assert "## Error: No session 'nope'" in result.output
    assert "E_UNKNOWN_SESSION" in result.output
    SessionStore(state, "etl").save("dup", "a", {})
    SessionStore(state, "csv").save("dup", "a", {})
    result = run("--clear", "dup")
    assert result.exit_code == 2 and "several tools: csv, etl" in result.output
    assert "--tool csv" in result.output
    assert (state / "etl" / "dup.json").exists()
    assert run("--clear", "dup", "--tool", "csv").exit_code == 0
    assert run("--clear", "dup", "--tool", "csv").exit_code == 2
    assert (state / "etl" / "dup.json").exists()
    result = run("--clear", "../etl/dup", "--json")
    assert result.exit_code == 2
    error = json.loads(result.output.splitlines()[0])
    assert error["code"] == "E_USAGE" and "contains '/'" in error["title"]
    assert run("--tool", "a/b").exit_code == 2


def test_cli_reports_a_corrupt_file_and_clears_it(state, run):
    (state / "etl").mkdir(parents=True)
    (state / "etl" / "bad.json").write_text("{oops")
    SessionStore(state, "etl").save("good", "c", {})
    result = run()
    assert result.exit_code == 0 and "good" in result.output
    assert "bad.json is not a valid ACOR session file" in result.output
    assert "acor sessions --clear bad --tool etl" in result.output
    assert run("--clear", "bad").exit_code == 0
    assert [s["session"] for s in json.loads(run("--json").output)
            ["sessions"]] == ["good"]


def test_cli_takes_the_state_dir_from_the_launcher(tmp_path, run):
    launcher_dir = tmp_path / "from-config"
    SessionStore(launcher_dir, "etl").save("cfg", "c", {})
    result = run("--json", obj={"state_dir": str(launcher_dir)})
    assert [s["session"] for s in json.loads(result.output)["sessions"]] \
        == ["cfg"]
    assert json.loads(run("--json").output)["sessions"] == []

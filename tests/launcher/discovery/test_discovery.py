"""Discovery: hostile manifests are skipped with a reason while good tools
beside them keep working, and the cache serves warm runs without going
stale."""

import json
import marshal
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from acor.cli.discovery import cache

from acor.cli.discovery import registry

from acor.cli.discovery import sources
from acor.cli.discovery.registry import Registry, load_registry

from conftest import REPO
EXAMPLES = int(os.environ.get("ACOR_FUZZ_EXAMPLES", "40"))


# Each test gets its own cache dir and no config from the environment.
pytestmark = pytest.mark.usefixtures("isolated_discovery")


@pytest.fixture
def project(tmp_path):
    root = tmp_path / "proj"
    (root / "tools").mkdir(parents=True)
    return root


def acor_tool(tools, folder, entry="main.py", code="print('hi')\n",
              executable=False, **fields):
    """A good tool folder named after its tool; ``fields`` add to or
    override its manifest."""
    path = tools / folder
    (path / entry).parent.mkdir(parents=True, exist_ok=True)
    (path / entry).write_text(code)
    if executable:
        (path / entry).chmod(0o755)
    data = {"name": folder, "version": "1.0.0",
            "description": f"the {folder} tool", "entry": entry}
    data.update(fields)
    (path / "manifest.json").write_text(json.dumps(data))
    return path


def wrapped_tool(tools, name, **fields):
    data = {"name": name, "description": f"wrapped {name}",
            "command": ["echo", name]}
    data.update(fields)
    path = tools / f"{name}.json"
    path.write_text(json.dumps({k: v for k, v in data.items()
                                if v is not None}))
    return path


def age(root):
    """Backdate every mtime under ``root``: the cache refuses to save
    timestamps from the last 2 s (they may still change unseen)."""
    past = time.time() - 3600
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            os.utime(os.path.join(folder, name), (past, past),
                     follow_symlinks=False)
    os.utime(root, (past, past))


def load(root):
    return load_registry(cwd=str(root))


def skipped_reason(registry, path):
    reasons = [s.reason for s in registry.skipped if s.path == str(path)]
    assert reasons, f"{path} was not skipped: {registry.skipped}"
    return reasons[0]


# -- good tools ------------------------------------------------------------

def test_acor_tool_argv_runs_python_entries_with_this_interpreter(project):
    folder = acor_tool(project / "tools", "hello", timeout=5,
                       usage="acor hello")
    spec = load(project).get("hello")
    assert spec.kind == "acor" and spec.path == str(folder)
    assert spec.manifest_path == str(folder / "manifest.json")
    assert spec.argv == [sys.executable, "-u",
                         os.path.realpath(folder / "main.py")]
    assert (spec.timeout, spec.usage, spec.warnings) == (5, "acor hello", [])


def test_acor_tool_with_an_executable_entry(project):
    folder = acor_tool(project / "tools", "sh", entry="bin/run",
                       code="#!/bin/sh\necho hi\n", executable=True)
    assert load(project).get("sh").argv == [
        os.path.realpath(folder / "bin" / "run")]


def test_wrapped_tool_is_loaded_like_the_shipped_pytest_manifest(project):
    (project / "tools" / "pytest.json").write_text(
        (REPO / "manifests" / "pytest.json").read_text())
    spec = load(project).get("pytest")
    assert spec.kind == "wrapped" and spec.argv == ["{project_python}",
                                                     "-m", "pytest"]
    assert spec.errors["1"]["code"] == "E_TESTS_FAILED"
    assert spec.cwd_mode == "invocation" and spec.version == "1.0.0"
    assert "percent" in spec.progress_pattern and spec.warnings == []


def test_wrapped_defaults_and_relative_command(project):
    tools = project / "tools"
    (tools / "bin").mkdir()
    (tools / "bin" / "lint").write_text("#!/bin/sh\n")
    (tools / "bin" / "lint").chmod(0o755)
    wrapped_tool(tools, "lint", command=["./bin/lint", "-q"],
                 cwd="project", errors={"02": {"message": "m",
                                               "recovery": "r"}})
    spec = load(project).get("lint")
    assert spec.argv == [os.path.realpath(tools / "bin" / "lint"), "-q"]
    assert (spec.version, spec.cwd_mode) == ("1.0.0", "project")
    assert spec.errors == {"2": {"message": "m", "recovery": "r"}}


def test_unknown_fields_warn_but_the_tool_loads(project):
    acor_tool(project / "tools", "t", timout=5)
    spec = load(project).get("t")
    assert spec is not None and spec.timeout is None
    [warning] = spec.warnings
    assert "'timout'" in warning and "did you mean 'timeout'" in warning


def test_folders_without_manifest_and_other_files_are_ignored(project):
    tools = project / "tools"
    (tools / "__pycache__").mkdir()
    (tools / "README.md").write_text("hi")
    (tools / ".hidden.json").write_text("{")
    acor_tool(tools, "ok")
    registry = load(project)
    assert list(registry.tools) == ["ok"] and registry.skipped == []


# -- hostile manifests -----------------------------------------------------

def hostile_cases():
    """case -> (manifest fields or raw "manifest" text, files in the folder,
    what the skip reason must mention)."""
    big = json.dumps({"name": "bad", "pad": "x" * 300_000})
    return {
        "malformed JSON": (dict(manifest='{"name": "bad",\n  "version": }'),
                           None, "line 2"),
        "not an object": (dict(manifest='["bad"]'), None, "JSON object"),
        "missing fields": (dict(manifest='{"name": "bad"}'), None,
                           "missing required field(s): description, entry"),
        "wrong type": (dict(timeout="soon"), None, "'timeout' must be"),
        "zero timeout": (dict(timeout=0), None, "'timeout' must be"),
        "bool timeout": (dict(timeout=True), None, "'timeout' must be"),
        "NaN": (dict(manifest='{"name": "bad", "timeout": NaN}'), None,
                "NaN"),
        "args not a schema": (dict(args=["a", 1]), None, "'args' must be"),
        "args without x-acor": (dict(args={"properties": {"p": {
            "type": "string"}}}), None, "x-acor"),
        "uppercase name": (dict(name="Bad"), None, "'name' must be"),
        "name with space": (dict(name="a b"), None, "'name' must be"),
        "name with newline": (dict(name="bad\n"), None, "'name' must be"),
        "leading dash": (dict(name="-bad"), None, "'name' must be"),
        "too long name": (dict(name="a" * 65), None, "'name' must be"),
        "reserved name": (dict(name="list"), None, "built-in"),
        "dotdot entry": (dict(entry="../ok/main.py"), None, "outside"),
        "absolute entry": (dict(entry="/bin/sh"), None, "absolute"),
        "missing entry": (dict(entry="nope.py"), None, "not an existing"),
        "entry is a folder": (dict(entry="."), None, "not an existing"),
        "huge manifest": (dict(manifest=big), None, "256 KiB"),
        "long string": (dict(description="d" * 5000), None, "over the 4096"),
        "NUL in entry": (dict(entry="main.py\u0000x"), None, "NUL"),
        "duplicate key": (dict(manifest='{"name": "bad", "name": "x"}'),
                          None, "twice"),
        "not executable": (dict(entry="run.sh"), {"run.sh": "#!/bin/sh\n"},
                           "chmod +x"),
        "huge number": (dict(manifest='{"timeout": ' + "9" * 5000 + "}"),
                        None, "unreadable JSON"),
    }


@pytest.mark.parametrize("case", sorted(hostile_cases()))
def test_hostile_manifest_is_skipped_and_good_tool_survives(project, case):
    fields, files, expected = hostile_cases()[case]
    tools = project / "tools"
    acor_tool(tools, "ok")
    folder = tools / "bad"
    folder.mkdir()
    for name, text in (files or {"main.py": "print()\n"}).items():
        (folder / name).write_text(text)
    data = {"name": "bad", "version": "1", "description": "d",
            "entry": "main.py"}
    data.update(fields)
    raw = data.pop("manifest", None) or json.dumps(data)
    (folder / "manifest.json").write_text(raw)
    registry = load(project)
    assert expected in skipped_reason(registry, folder)
    assert list(registry.tools) == ["ok"]
    assert all(s.recovery for s in registry.skipped)


def test_symlinked_entry_leading_out_is_refused(project, tmp_path):
    outside = tmp_path / "outside.py"
    outside.write_text("print('pwned')\n")
    folder = acor_tool(project / "tools", "bad", entry="link.py")
    (folder / "link.py").unlink()
    (folder / "link.py").symlink_to(outside)
    assert "outside" in skipped_reason(load(project), folder)


def test_sibling_prefix_is_not_inside(project):
    """/p/tools/bad-evil starts with /p/tools/bad, yet is not inside it."""
    tools = project / "tools"
    evil = tools / "bad-evil"
    evil.mkdir()
    (evil / "payload.py").write_text("print('pwned')\n")
    folder = acor_tool(tools, "bad", entry="p.py")
    (folder / "p.py").unlink()
    (folder / "p.py").symlink_to(evil / "payload.py")
    assert "outside" in skipped_reason(load(project), folder)


def test_tool_folder_linking_outside_the_tools_dir_is_refused(project):
    """tools/ vs tools-evil/: a string prefix check would let this in."""
    evil = acor_tool(project / "tools-evil", "evil")
    (project / "tools" / "evil").symlink_to(evil)
    acor_tool(project / "tools", "ok")
    registry = load(project)
    assert "outside" in skipped_reason(registry, project / "tools" / "evil")
    assert list(registry.tools) == ["ok"]


def test_a_symlinked_tools_dir_is_fine(project, tmp_path):
    acor_tool(tmp_path / "shared", "ok")
    (project / "tools").rmdir()
    (project / "tools").symlink_to(tmp_path / "shared")
    assert list(load(project).tools) == ["ok"]


@pytest.mark.parametrize("fields, expected", [
    (dict(progress_pattern="(?P<percent>\\d+"), "not a valid regular"),
    (dict(progress_pattern="(\\d+)%"), "named group 'percent'"),
    (dict(command=[]), "'command' must be"),
    (dict(command="echo hi"), "'command' must be"),
    (dict(command=["echo", 3]), "'command' must be"),
    (dict(command=["../escape.sh"]), "outside"),
    (dict(command=["./missing"]), "not an existing"),
    (dict(errors={"one": {"message": "m", "recovery": "r"}}), "exit code"),
    (dict(errors={"1": {"message": "m"}}), "errors['1']"),
    (dict(errors=[]), "'errors' must be"),
    (dict(cwd="home"), "'cwd' must be"),
    (dict(description=None), "missing required field(s): description"),
])
def test_bad_wrapped_manifest_is_skipped(project, fields, expected):
    acor_tool(project / "tools", "ok")
    path = wrapped_tool(project / "tools", "bad", **fields)
    registry = load(project)
    assert expected in skipped_reason(registry, path)
    assert list(registry.tools) == ["ok"]


# -- name clashes ----------------------------------------------------------

def test_first_tools_dir_wins_and_the_loser_is_reported(project):
    (project / ".acor").mkdir()
    (project / ".acor" / "config.yaml").write_text(
        "tools_dirs: [first, tools]\n")
    winner = acor_tool(project / "first", "dup")
    loser = acor_tool(project / "tools", "dup")
    also = wrapped_tool(project / "tools", "dup")
    registry = load(project)
    assert registry.get("dup").path == str(winner)
    assert [(s.name, s.winner_path, s.loser_path)
            for s in registry.shadowed] == [("dup", str(winner), str(loser)),
                                            ("dup", str(winner), str(also))]


def test_close_matches(project):
    acor_tool(project / "tools", "pytest-fast")
    acor_tool(project / "tools", "lint")
    registry = load(project)
    assert registry.close_matches("pytest-fats") == ["pytest-fast"]
    assert registry.get("nope") is None


# -- the cache -------------------------------------------------------------

def refuse_cold_path(monkeypatch):
    def cold(*args, **kwargs):
        raise AssertionError("the cold path ran")
    monkeypatch.setattr(registry, "scan", cold)
    monkeypatch.setattr(registry, "read_config", cold)


def test_second_load_is_served_from_the_cache(project, monkeypatch):
    (project / ".acor").mkdir()
    (project / ".acor" / "config.yaml").write_text("timeout: 7\n")
    acor_tool(project / "tools", "a", timout=1)
    wrapped_tool(project / "tools", "b", progress_pattern="(?P<percent>\\d+)")
    acor_tool(project / "tools", "bad", name="BAD")
    age(project)
    cold = load(project)
    files = os.listdir(cache.cache_dir())
    assert any(f.startswith("registry-") and f.endswith(".marshal")
               for f in files)
    refuse_cold_path(monkeypatch)
    warm = load(project / "tools")  # cwd below the root: same project
    assert warm.to_dict() == cold.to_dict()
    assert warm.config.timeout == 7 and warm.skipped and \
        warm.get("a").warnings


def test_fresh_timestamps_are_not_cached(project):
    acor_tool(project / "tools", "a")
    load(project)  # just written: a second edit could share the timestamp
    assert not os.path.exists(cache.cache_path(str(project), None))


@pytest.mark.parametrize("change", ["manifest", "config", "new tool",
                                    "chmod entry", "new tools dir",
                                    "manifest added", "folder renamed",
                                    "folder removed", "entry replaced"])
def test_cache_is_invalidated_by_changes(project, monkeypatch, change):
    (project / ".acor").mkdir()
    config = project / ".acor" / "config.yaml"
    config.write_text("tools_dirs: [tools, later]\n")
    folder = acor_tool(project / "tools", "a", entry="run",
                       code="#!/bin/sh\n", executable=True)
    empty = acor_tool(project / "tools", "empty")  # no manifest.json yet
    os.rename(empty / "manifest.json", empty / "manifest.txt")
    age(project)
    before = load(project)
    assert cache.read(str(project), str(config)) is not None
    if change == "manifest":
        (folder / "manifest.json").write_text(json.dumps(
            {"name": "a", "version": "2.0.0", "description": "d",
             "entry": "run"}))
        os.utime(folder / "manifest.json")
    elif change == "config":
        config.write_text("tools_dirs: [tools, later]\ntimeout: 3\n")
    elif change == "new tool":
        acor_tool(project / "tools", "b")
    elif change == "chmod entry":
        (folder / "run").chmod(0o644)
    elif change == "manifest added":
        os.rename(project / "tools" / "empty" / "manifest.txt",
                  project / "tools" / "empty" / "manifest.json")
    elif change == "folder renamed":
        os.rename(folder, project / "tools" / "c")
    elif change == "folder removed":
        shutil.rmtree(folder)
    elif change == "entry replaced":
        (folder / "run.new").write_text("#!/bin/sh\necho new\n")
        (folder / "run.new").chmod(0o755)
        os.rename(folder / "run.new", folder / "run")
    else:
        acor_tool(project / "later", "b")
    assert cache.read(str(project), str(config)) is None
    after = load(project)
    # A replaced program is rescanned (it may no longer be runnable), and
    # runs from the same path: the registry may well read the same.
    assert (after.to_dict() != before.to_dict()) is \
        (change != "entry replaced")


def test_files_written_in_a_tool_folder_keep_the_cache(project,
                                                      monkeypatch):
    # A Python tool's imports write __pycache__ beside it on its first
    # run: that must not cost the next call a rescan.
    folder = acor_tool(project / "tools", "a")
    age(project)
    cold = load(project)
    (folder / "__pycache__").mkdir()
    (folder / "__pycache__" / "helper.cpython-311.pyc").write_bytes(b"x")
    (folder / "notes.txt").write_text("scratch")
    refuse_cold_path(monkeypatch)
    assert load(project).to_dict() == cold.to_dict()


def test_corrupt_cache_is_ignored(project):
    acor_tool(project / "tools", "a")
    age(project)
    load(project)
    path = cache.cache_path(str(project), None)
    good = Path(path).read_bytes()
    key = [str(project), None, sys.executable, sources.user_tools_dir(),
           sources.packages_searched()]
    for junk in (b"{not json", b"", b"\xff" * 10, marshal.dumps([]),
                 marshal.dumps({"format": 1}),
                 marshal.dumps(compile("1", "x", "eval")),
                 marshal.dumps({"format": cache.FORMAT, "key": key,
                                "fingerprint": [], "payload": {"tools": 5}}),
                 marshal.dumps({"format": cache.FORMAT, "key": key,
                                "fingerprint": 7, "payload": {}}),
                 good[:len(good) // 2], good[:-1]):
        Path(path).write_bytes(junk)
        assert list(load(project).tools) == ["a"]


@settings(max_examples=EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_fuzz_a_damaged_cache_file_never_breaks_discovery(project, data):
    # Torn writes cannot happen (temp file + rename), but a disk can still
    # hand back damaged bytes: cut short, or with bytes changed. Whatever
    # marshal makes of them, discovery answers, and a file that cannot be
    # the cache is a miss.
    if not (project / "tools" / "a").exists():
        acor_tool(project / "tools", "a", args=SMALL_ARGS)
        age(project)
    path = Path(cache.cache_path(str(project), None))
    path.unlink(missing_ok=True)
    load(project)  # a miss: writes the file afresh
    good = path.read_bytes()
    blob = bytearray(good[:data.draw(st.integers(0, len(good)))])
    for _ in range(data.draw(st.integers(0, 4))):
        if blob:
            blob[data.draw(st.integers(0, len(blob) - 1))] = \
                data.draw(st.integers(0, 255))
    path.write_bytes(bytes(blob))
    registry = load(project)
    assert set(registry.tools) <= {"a"}
    if len(blob) < len(good):
        assert list(registry.tools) == ["a"]
    for spec in registry.tools.values():  # a schema read when asked for
        assert spec.args_schema is None or isinstance(spec.args_schema, dict)


SMALL_ARGS = {"type": "object", "properties": {
    "n": {"type": "integer", "x-acor": {"flag": "--n"}}}}


def test_a_cached_args_schema_that_no_longer_reads_comes_from_its_manifest(
        project):
    acor_tool(project / "tools", "a", args=SMALL_ARGS)
    age(project)
    registry = load(project)
    cached = registry.to_cache()
    for damaged in (b"", b"\xff\x00", marshal.dumps(5)):
        cached["tools"][0]["args_schema"] = damaged
        assert Registry.from_dict(cached).get("a").args_schema == SMALL_ARGS


def test_no_cache_env_and_unwritable_cache_dir(project, tmp_path,
                                               monkeypatch):
    acor_tool(project / "tools", "a")
    age(project)
    monkeypatch.setenv("ACOR_NO_CACHE", "1")
    load(project)
    assert not os.path.exists(cache.cache_dir())
    monkeypatch.delenv("ACOR_NO_CACHE")
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("ACOR_CACHE_DIR", str(blocker / "cache"))
    assert list(load(project).tools) == ["a"]  # no cache, no error


def test_cache_location_follows_xdg(monkeypatch, tmp_path):
    monkeypatch.delenv("ACOR_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache.cache_dir() == str(tmp_path / "xdg" / "acor")
    monkeypatch.setenv("XDG_CACHE_HOME", "relative")  # invalid per XDG
    assert cache.cache_dir() == os.path.join(
        os.path.expanduser("~"), ".cache", "acor")


def test_registry_round_trips_through_the_cache_form(project):
    schema = {"type": "object", "properties": {"n": {
        "type": "integer", "x-acor": {"flag": "--n"}}}}
    acor_tool(project / "tools", "a", args=schema)
    acor_tool(project / "tools", "b")
    registry = load(project)
    cached = marshal.loads(marshal.dumps(registry.to_cache()))
    assert isinstance(cached["tools"][0]["args_schema"], bytes)
    back = Registry.from_dict(cached)
    assert back.get("a").args_schema == schema  # read when asked for
    assert back.get("b").args_schema is None
    assert back.to_dict() == registry.to_dict()
    assert Registry.from_dict(registry.to_dict()).to_dict() == \
        registry.to_dict()


# Records, for each module imported, which module's code asked for it:
# what acor itself imports, told apart from what the standard library
# imports for its own reasons (3.13's differs from 3.11's).
IMPORTERS = """
import sys
asked = {}
class Recorder:
    def find_spec(self, name, path=None, target=None):
        frame = sys._getframe(1)
        while frame and frame.f_globals.get("__name__", "").startswith(
                ("importlib", "_frozen_importlib")):
            frame = frame.f_back
        asked.setdefault(name, frame.f_globals.get("__name__") if frame
                         else None)
        return None
sys.meta_path.insert(0, Recorder())
"""


def test_import_pulls_in_no_heavy_modules():
    """Discovery's import asks for no third-party library and none of the
    slow standard modules; a standard module may import what it likes."""
    code = IMPORTERS + (
        "import acor.cli.discovery.registry\n"
        "third = {'yaml', 'click', 'rich', 'filelock', 'orjson'}\n"
        "slow = {'dataclasses', 'difflib', 'hashlib', 'typing', 'json'}\n"
        "ours = {n for n, by in asked.items() if (by or '').startswith("
        "'acor')}\n"
        "print(sorted(third & set(sys.modules)), sorted(slow & ours))")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO / "tests",
                         text=True, capture_output=True, check=True).stdout
    assert out.strip() == "[] []"


def test_import_weight_test_sees_what_acor_asks_for():
    """The recorder names acor as the importer of what acor imports, and
    not of what a standard module imports in turn."""
    code = IMPORTERS + (
        "import acor.cli.discovery.cache, json\n"
        "print(asked.get('acor._safefs'), asked.get('json.decoder'))")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO / "tests",
                         text=True, capture_output=True, check=True).stdout
    assert out.split() == ["acor.cli.discovery.cache", "json"]


@settings(max_examples=EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.recursive(st.none() | st.booleans() | st.integers() |
                    st.floats(allow_nan=False) | st.text(max_size=20),
                    lambda kids: st.lists(kids, max_size=4) |
                    st.dictionaries(st.sampled_from(
                        ["name", "version", "description", "entry", "args",
                         "timeout", "command", "errors", "cwd",
                         "progress_pattern", "x"]), kids, max_size=8),
                    max_leaves=20))
def test_property_any_manifest_loads_or_is_skipped(project, data):
    monkey = pytest.MonkeyPatch()
    monkey.setenv("ACOR_NO_CACHE", "1")
    try:
        tools = project / "tools"
        (tools / "x").mkdir(exist_ok=True)
        (tools / "x" / "manifest.json").write_text(json.dumps(data))
        (tools / "y.json").write_text(json.dumps(data))
        registry = load(project)
        assert len(registry.tools) + len(registry.skipped) + \
            len(registry.shadowed) == 2
    finally:
        monkey.undo()


"""`acor new`: a tool that works unedited, or a wrapper manifest; never
an overwrite."""

import json
import os
import shlex
import subprocess
import sys

import pytest
from click.testing import CliRunner

from acor.cli.commands import check_rules
from acor.cli.commands.new import name_problem, new_command, tool_files

from conftest import base_env


@pytest.mark.parametrize("name", ["wc", "my-tool", "x_2", "a" * 64, "9lives"])
def test_good_names(name):
    assert name_problem(name) is None


@pytest.mark.parametrize("name, words", [
    ("", "not a tool name"), ("Wc", "not a tool name"),
    ("-x", "not a tool name"), ("a" * 65, "not a tool name"),
    ("a b", "not a tool name"), ("list", "an acor command"),
])
def test_bad_names(name, words):
    assert words in name_problem(name)


def test_the_generated_files_are_valid():
    files = tool_files("my-tool")
    assert sorted(files) == ["cli.py", "manifest.json", "sample.txt",
                             "test_my_tool.py"]
    manifest = json.loads(files["manifest.json"])
    assert manifest_problems(manifest) == []
    assert manifest["name"] == "my-tool"
    compile(files["cli.py"], "cli.py", "exec")
    compile(files["test_my_tool.py"], "test_my_tool.py", "exec")
    # The test's expected counts are the sample's.
    sample = files["sample.txt"].encode()
    lines = sample.count(b"\n")
    assert f'"lines": {lines}' in files["test_my_tool.py"]
    assert f'"words": {len(sample.split())}' in files["test_my_tool.py"]


def manifest_problems(manifest):
    return [(v.where, v.problem) for v in
            check_rules.manifest_violations(manifest)]


@pytest.fixture
def in_project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ACOR_CONFIG", raising=False)
    return tmp_path


def new(*args):
    result = CliRunner().invoke(new_command, list(args),
                                standalone_mode=False)
    assert result.exception is None, result.output
    return result.return_value, result.output


def test_new_creates_a_tool_folder_and_says_what_next(in_project):
    code, output = new("wc")
    assert code == 0
    folder = in_project / "tools" / "wc"
    assert sorted(os.listdir(folder)) == ["cli.py", "manifest.json",
                                          "sample.txt", "test_wc.py"]
    # acor's own interpreter, where its pytest fixture acor_run is.
    assert ("Next:\n  acor check wc\n  "
            f"{shlex.join([sys.executable, '-m', 'pytest', 'tools/wc'])}\n"
            ) in output


def test_new_refuses_to_overwrite_anything(in_project):
    new("wc")
    manifest = (in_project / "tools" / "wc" / "manifest.json").read_text()
    code, output = new("wc")
    assert code == 2
    assert "E_USAGE" in output and "already exists" in output
    assert (in_project / "tools" / "wc" / "manifest.json").read_text() == \
        manifest
    code, _ = new("wc", "--wrap", "wc -l")  # wc.json would shadow tools/wc
    assert code == 2
    assert not (in_project / "tools" / "wc.json").exists()


def test_new_wrap_writes_a_wrapper_manifest(in_project):
    code, output = new("lines", "--dir", "more", "--wrap", "wc -l")
    assert code == 0
    manifest = json.loads((in_project / "more" / "lines.json").read_text())
    assert manifest["command"] == ["wc", "-l"]
    assert manifest_problems(manifest) == []
    # more/ is not a tools dir of this project: it says so.
    assert "is not one of this project's tools dirs" in output
    assert "acor check more/lines.json" in output


@pytest.mark.parametrize("args, words", [
    (["Bad Name"], "not a tool name"),
    (["x", "--wrap", ""], "--wrap needs a program"),
    (["x", "--wrap", "'unclosed"], "Cannot read --wrap"),
])
def test_new_refuses_bad_input_with_exit_2(in_project, args, words):
    code, output = new(*args)
    assert code == 2
    assert words in output
    assert not (in_project / "tools").exists()


def test_a_new_tool_goes_to_the_configured_tools_dir(in_project):
    (in_project / ".acor").mkdir()
    (in_project / ".acor" / "config.yaml").write_text(
        "tools_dirs: [plugins]\n")
    (in_project / "sub").mkdir()
    os.chdir(in_project / "sub")
    code, output = new("wc")
    assert code == 0
    assert (in_project / "plugins" / "wc" / "manifest.json").is_file()
    assert "is not one of" not in output


def _call_is_wired():
    from acor.cli.commands.app import cli
    return "call" in cli.commands


def test_a_new_tool_passes_check_and_its_own_tests_unedited(in_project,
                                                           monkeypatch):
    from acor.cli.commands.check import check_command
    monkeypatch.setenv("ACOR_CACHE_DIR", str(in_project / ".cache"))
    assert new("wc")[0] == 0
    result = CliRunner().invoke(check_command, ["wc"], standalone_mode=False)
    assert result.return_value == 0, result.output
    assert "wc conforms (3 example(s) run)." in result.output
    env = base_env(in_project)
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p",
                           "no:cacheprovider", "-p", "no:xdist", "-p",
                           "no:hypothesispytest", "tools/wc"], cwd=in_project,
                          env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "4 passed" in proc.stdout


@pytest.mark.skipif(not _call_is_wired(), reason="`acor call` is not a "
                    "command yet")
def test_a_call_that_does_not_fit_the_schema_runs_nothing(in_project):
    assert new("wc")[0] == 0
    proc = subprocess.run([sys.executable, "-m", "acor", "--format", "json",
                           "call", "wc", '{"path": 3}'], cwd=in_project,
                          env=base_env(in_project), capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    error = next(e for e in events if e["type"] == "error")
    assert error["code"] == "E_USAGE"
    assert "path" in error["title"] + (error["details"] or "")
    # Nothing ran: the tool's own Ready never came.
    assert {"type": "status", "state": "ready"} not in [
        {k: e.get(k) for k in ("type", "state")} for e in events]

"""A tool's validated arguments as one JSON object (``ACOR_ARGS``): what a
tool in any language reads instead of parsing its own flags, through the
real launcher, and read back exactly by acor.sh."""

import json
import os
import random
import subprocess
from pathlib import Path

import pytest

import acor
from conftest import ACOR_SCRIPT, REPO, without_acor_vars

SH = Path(acor.__file__).parent / "share" / "acor.sh"

ARGS = {
    "type": "object", "additionalProperties": False,
    "required": ["files"],
    "properties": {
        "files": {"type": "array", "items": {"type": "string"},
                  "x-acor": {"position": 0}},
        "count": {"type": "integer", "x-acor": {"flag": "--count"}},
        "ratio": {"type": "number", "x-acor": {"flag": "--ratio"}},
        "name": {"type": "string", "x-acor": {"flag": "--name"}},
        "loud": {"type": "boolean", "x-acor": {"flag": "--loud"}},
        "yes": {"type": "boolean", "x-acor": {"human": True}}}}

# Writes what it was given: the environment's object and acor.sh's reading
# of it, as JSON for the test to compare; touches a marker when it runs.
PROBE_SH = """\
#!/usr/bin/env bash
. "${ACOR_SH:?run this tool with acor}"
touch ran
acor_start
acor_arg_array files files
name=$(acor_arg name; printf x); name=${name%x}
given=$(acor_arg count) || given=absent
acor_output_data json "{\\"env\\": ${ACOR_ARGS:-null},
 \\"file\\": $(acor_json_string "${ACOR_ARGS_FILE:-}"),
 \\"files\\": [$(for f in "${files[@]}"; do acor_json_string "$f"; echo ,; done) 0],
 \\"name\\": $(acor_json_string "$name"),
 \\"count\\": $(acor_json_string "$given"),
 \\"loud\\": $(acor_json_string "$(acor_arg loud)")}"
"""


@pytest.fixture
def probe(project):
    folder = project.root / "tools" / "probe"
    folder.mkdir(parents=True)
    (folder / "probe.sh").write_text(PROBE_SH)
    (folder / "probe.sh").chmod(0o755)
    (folder / "manifest.json").write_text(json.dumps({
        "name": "probe", "version": "1.0.0", "entry": "probe.sh",
        "description": "echo its arguments", "args": ARGS}))
    return project


def acor(project, *args, env=None):
    return subprocess.run([ACOR_SCRIPT, *args], cwd=project.root,
                          env={**project.env, **(env or {})},
                          capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL)


def given(done):
    """The probe's report, from the JSON result line."""
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    data = [e["data"] for e in lines if e.get("type") == "output_data"]
    assert data, done.stdout + done.stderr
    return data[0]


def test_a_shell_tool_reads_its_arguments_as_one_object(probe):
    done = acor(probe, "--format", "json", "probe", "--count", "3",
                "--name", 'q"\\\tz,', "--", "a b", "-x\ny", "--not-a-flag",
                env={"ACOR_ARGS": '{"files": ["forged"]}'})
    assert done.returncode == 0, done.stdout
    report = given(done)
    expected_files = ["a b", "-x\ny", "--not-a-flag"]
    assert report["env"] == {"files": expected_files, "count": 3,
                             "ratio": None, "name": 'q"\\\tz,',
                             "loud": False}
    assert report["files"][:-1] == expected_files
    assert report["name"] == 'q"\\\tz,'
    assert (report["count"], report["loud"]) == ("3", "false")
    assert report["file"] == ""


def test_an_argument_not_given_is_null_and_acor_arg_says_so(probe):
    report = given(acor(probe, "--format", "json", "probe", "f"))
    assert report["env"]["count"] is None
    assert report["count"] == "absent"


def test_arguments_the_schema_refuses_stop_before_the_tool_runs(probe):
    done = acor(probe, "--format", "json", "probe", "f", "--count", "many")
    assert done.returncode == 2
    events = [json.loads(line) for line in done.stdout.splitlines()]
    record = events[-1]
    assert record["error_code"] == "E_USAGE"
    assert "--count" in [e for e in events if e["type"] == "error"][0][
        "title"]
    assert record["next"] == ["acor", "--format", "json", "probe", "--help"]
    assert not (probe.root / "ran").exists()


def test_help_is_answered_from_the_schema(probe):
    done = acor(probe, "probe", "--help")
    assert done.returncode == 0
    assert "usage: acor probe FILES" in done.stdout
    assert "--count COUNT" in done.stdout
    assert not (probe.root / "ran").exists()


def test_a_human_only_argument_is_never_in_the_object(probe):
    done = acor(probe, "--format", "json", "probe", "f", "--yes")
    assert done.returncode == 2  # only a person gives it: not on argv
    assert not (probe.root / "ran").exists()
    report = given(acor(probe, "--format", "json", "probe", "f"))
    assert "yes" not in report["env"]


def test_arguments_too_large_for_the_environment_come_in_a_file(probe):
    files = [f"file-{i:06d}-" + "x" * 90 for i in range(1200)]  # ~120 KiB
    done = acor(probe, "--format", "json", "--max-output", "0", "probe",
                *files)
    assert done.returncode == 0, done.stdout[-2000:]
    report = given(done)
    assert report["env"] is None
    assert report["files"][:-1] == files
    path = report["file"]
    assert path and not os.path.exists(path)  # removed with the run


def test_no_room_for_the_arguments_file_is_an_error_not_a_crash(probe):
    files = [f"file-{i:06d}-" + "x" * 90 for i in range(1200)]
    done = acor(probe, "--format", "json", "probe", *files,
                env={"TMPDIR": str(probe.root / "no-such-dir")})
    assert done.returncode == 1 and "Traceback" not in done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    assert events[-1]["error_code"] == "E_TOOL_NOT_RUNNABLE"
    assert events[-1]["next"][:4] == ["acor", "--format", "json", "probe"]
    assert not (probe.root / "ran").exists()


def test_a_failed_write_of_the_arguments_file_leaves_no_file(probe,
                                                              tmp_path):
    """The file cannot be written whole (here a file-size limit, as a
    full disk would): the run ends as above and no partial file is left
    in the temp dir."""
    import resource
    files = [f"file-{i:06d}-" + "x" * 90 for i in range(1200)]
    tmp = tmp_path / "tmp"
    tmp.mkdir()

    def small_files():  # in acor's process only: 64 KiB a file at most
        resource.setrlimit(resource.RLIMIT_FSIZE, (65536, 65536))
    done = subprocess.run(
        [ACOR_SCRIPT, "--format", "json", "probe", *files],
        cwd=probe.root, env={**probe.env, "TMPDIR": str(tmp)},
        capture_output=True, text=True, timeout=60,
        stdin=subprocess.DEVNULL, preexec_fn=small_files)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    assert events[-1]["error_code"] == "E_TOOL_NOT_RUNNABLE"
    assert not (probe.root / "ran").exists()
    assert list(tmp.iterdir()) == []


def test_a_wrapped_program_gets_them_and_a_python_entry_does_not(project):
    project.add_wrapped("env-args", ["/bin/sh", "-c",
                                     'printf "%s" "$ACOR_ARGS"', "sh"],
                        args={"type": "object", "properties": {
                            "n": {"type": "integer",
                                  "x-acor": {"flag": "--n"}}}})
    done = acor(project, "env-args", "--n", "7")
    text = done.stdout.split("## Output\n")[1].split("\n\n## Status")[0]
    assert json.loads(text) == {"n": 7}
    project.add_tool("py", """\
        import os
        from acor import AcorTool
        with AcorTool() as tool:
            tool.output(repr(os.environ.get("ACOR_ARGS")))
        """, args={"type": "object", "properties": {
            "n": {"type": "integer", "x-acor": {"flag": "--n"}}}})
    done = acor(project, "py", "--n", "7", env={"ACOR_ARGS": "{}"})
    assert "None" in done.stdout  # tool.args is its object; nothing leaks


def test_the_bundled_shell_tool_takes_its_files_from_the_object(project):
    import shutil
    repo = REPO
    shutil.copytree(repo / "tools" / "wc-sh", project.root / "tools" / "wc")
    (project.root / "-odd").write_text("one two\n")
    done = acor(project, "--format", "json", "wc-sh", "--", "-odd",
                "missing")
    events = [json.loads(line) for line in done.stdout.splitlines()]
    assert events[-1]["error_code"] == "E_FILE_NOT_FOUND", done.stdout
    data = [e["data"] for e in events if e["type"] == "output_data"]
    assert data == [[{"path": "-odd", "lines": 1, "words": 2, "bytes": 8}]]


# Pieces that exercise acor.sh's reading: JSON escapes, controls, commas
# and quotes at the ends, brackets, non-ASCII, lines that look like JSON.
PIECES = ["a", " ", ",", '"', "\\", "\\u0001", "\n", "\r", "\t", "\x01",
          "\x1f", "\x7f", "[", "]", " ]", "{", "}", "null", "é", "\u2028",
          "😀", '",', ': ', ' "x": 1', "\f", "\b", "-", "--"]


@pytest.mark.parametrize("seed", range(4))
def test_acor_sh_reads_back_every_value_exactly(seed):
    from acor.cli.arguments import argv_json
    rng = random.Random(seed)

    def text():
        return "".join(rng.choice(PIECES) for _ in range(rng.randint(0, 8)))
    values = {"files": [text() for _ in range(rng.randint(1, 5))],
              "name": text(), "count": rng.randint(-5, 5), "loud": True}
    argv = [f"--name={values['name']}", f"--count={values['count']}",
            "--loud", "--", *values["files"]]

    class Spec:
        name, description, args_schema = "probe", "", ARGS
    env = without_acor_vars(os.environ)
    env["ACOR_ARGS"] = argv_json(Spec, argv)
    script = f'''. "{SH}"
acor_arg_array files f
for item in "${{f[@]}}"; do printf '%s\\0' "$item"; done
printf '%s\\0' "$(acor_arg name; printf x)" "$(acor_arg count)" \\
    "$(acor_arg loud)"
acor_arg ratio || printf 'absent\\0'
'''
    done = subprocess.run(["bash", "-c", script], env=env,
                          capture_output=True, timeout=30)
    out = done.stdout.decode().split("\0")[:-1]
    assert out == [*values["files"], values["name"] + "x",
                   str(values["count"]), "true", "absent"]

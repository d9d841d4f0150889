"""`acor check`: the published manifest schema, the stream rules, and the
command run on tools that break them (each caught, with its fix)."""

import json
from pathlib import Path

import pytest

from acor.cli.commands import check_rules
from acor.cli.commands.check_rules import (expectation_violations, manifest_violations,
                                  stream_violations)
from acor.events import (Error, InputNeeded, Output, OutputData, Progress,
                         Status, Text, Unknown)

from conftest import REPO


# --- the schema -------------------------------------------------------------

def test_the_schema_is_a_valid_draft_2020_12_schema():
    import jsonschema
    schema = check_rules.load_schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(schema)


MANIFESTS = sorted([*REPO.glob("tools/*/manifest.json"),
                    *REPO.glob("manifests/*.json")])


@pytest.mark.parametrize("path", MANIFESTS,
                         ids=[str(p.relative_to(REPO)) for p in MANIFESTS])
def test_every_manifest_in_the_repository_matches_the_schema(path):
    import jsonschema
    jsonschema.validate(json.loads(path.read_text()),
                        check_rules.load_schema(),
                        cls=jsonschema.Draft202012Validator)


TOOL = {"name": "wc", "description": "Count", "entry": "cli.py"}
WRAPPED = {"name": "lint", "description": "Lint", "command": ["ruff"]}


def _problems(manifest):
    return [(v.where, v.problem) for v in manifest_violations(manifest)]


def test_a_minimal_manifest_of_each_kind_conforms():
    assert _problems(TOOL) == []
    assert _problems(WRAPPED) == []


@pytest.mark.parametrize("change, where, words, fix", [
    ({"description": None}, "manifest", "'description' is missing",
     '"description": "What the tool does"'),
    ({"name": "My Tool"}, "manifest.name", "not allowed", "lowercase"),
    ({"timout": 3}, "manifest", "unknown field 'timout'", "'timeout'"),
    ({"timeout": 0}, "manifest.timeout", "too small", "above 0"),
    ({"version": 1}, "manifest.version", "must be a string, not the number",
     "a string"),
    ({"stdin": "yes"}, "manifest.stdin", "true or false", "true or false"),
    ({"cwd": "home"}, "manifest.cwd", '"home" is not allowed', '"project"'),
    ({"annotations": {"readOnly": True}}, "manifest.annotations",
     "unknown field 'readOnly'", "'readOnlyHint'"),
    ({"args": {"type": "object", "properties": {
        "path": {"type": "string"}}}},
     "manifest.args.properties.path", "'x-acor' is missing", "position"),
    ({"args": {"type": "object", "properties": {"path": {
        "type": "string", "x-acor": {"position": 0, "flag": "--path"}}}}},
     "manifest.args.properties.path.x-acor", "x-acor must say", "--name"),
    ({"args": {"type": "object", "properties": {"n": {
        "type": "integer", "pattern": "x", "x-acor": {"flag": "--n"}}}}},
     "manifest.args.properties.n", "unknown field 'pattern'", "Remove it"),
    ({"examples": [{"args": ["x"]}]}, "manifest.examples[0]",
     "'exit_code' is missing", '"exit_code": 0'),
    ({"examples": [{"args": [], "exit_code": 0, "events": ["stauts"]}]},
     "manifest.examples[0].events[0]", '"stauts" is not allowed', "status"),
])
def test_a_manifest_that_fails_the_schema_is_caught_with_its_fix(
        change, where, words, fix):
    manifest = {**TOOL, **change}
    manifest = {k: v for k, v in manifest.items() if v is not None}
    violations = manifest_violations(manifest)
    assert [v.where for v in violations] == [where]
    assert words in violations[0].problem
    assert fix in violations[0].fix


def test_wrapped_error_entries_are_checked():
    violations = manifest_violations({**WRAPPED, "errors": {
        "one": {"message": "m", "recovery": "r"},
        "2": {"code": "tests_failed", "message": "m", "recovery": "r"},
        "3": {"message": "m"}}})
    assert [v.where for v in violations] == [
        "manifest.errors", "manifest.errors.2.code", "manifest.errors.3"]


def test_a_manifest_that_is_not_an_object():
    assert _problems([]) == [("manifest", "must be an object, not a list")]


# --- the stream -------------------------------------------------------------

READY, DONE, FAILED = Status("ready"), Status("complete"), Status("failed")


def _stream(events, code=0, **kw):
    return [v.problem for v in stream_violations(
        events, "example 1", tool_exit_code=code, **kw)]


@pytest.mark.parametrize("events, code", [
    ([READY, Progress(50), OutputData("json", {}), DONE], 0),
    ([READY, Error("No file", "E_FILE_NOT_FOUND"), FAILED], 1),
    ([READY, Error("Bad call", "E_USAGE"), FAILED], 2),
    ([READY, InputNeeded("Which column?")], 3),
    ([READY, Text(""), Text("plain print # not a heading"), DONE], 0),
    ([READY, Status("cancelled")], 130),
])
def test_a_well_behaved_run_has_no_violations(events, code):
    assert _stream(events, code) == []


def test_a_raw_status_print_is_caught():
    problems = _stream([READY, Text("done\n## Status: Complete"),
                        Error("The tool exited without a final status",
                              "E_NO_FINAL_STATUS"), FAILED],
                       error_code="E_NO_FINAL_STATUS")
    assert problems == [
        "the tool printed '## Status: Complete' itself: acor shows it as "
        "plain text, not as a section",
        "the run ends without a final status"]


def test_a_run_without_a_final_status_is_caught_once():
    violations = stream_violations(
        [READY, Progress(10), Error("The tool exited with code 1 before "
                                    "finishing", "E_TOOL_CRASHED"), FAILED],
        "example 1", tool_exit_code=1, error_code="E_TOOL_CRASHED")
    assert [v.problem for v in violations] == [
        "the run ends without a final status (it crashed)"]
    assert "tool.stop()" in violations[0].fix


@pytest.mark.parametrize("events, code, problem", [
    ([READY, DONE], 1, "ended with `## Status: Complete` but exited 1, "
     "not 0"),
    ([READY, FAILED], 0, "ended with `## Status: Failed` but exited 0, "
     "not 1"),
    ([READY, Error("x", "E_USAGE"), FAILED], 1, "ended with `## Status: "
     "Failed` after E_USAGE but exited 1, not 2"),
    ([READY, InputNeeded("?")], 0, "ended with Input Needed but exited 0, "
     "not 3"),
])
def test_an_exit_code_that_disagrees_with_the_ending_is_caught(events, code,
                                                               problem):
    violations = stream_violations(events, "example 1", tool_exit_code=code)
    assert [v.problem for v in violations] == [f"the tool {problem}"]
    assert violations[0].fix.startswith("Exit ")


@pytest.mark.parametrize("events, problem", [
    ([Text("starting"), READY, DONE], "the run does not start with "
     "`## Status: Ready` (it starts with raw text 'starting')"),
    ([Progress(5), DONE], "the run does not start with `## Status: Ready` "
     "(it starts with a progress section)"),
    ([READY, Unknown("Progress: 150%", "", "progress is not 0-100%"), DONE],
     "the section `## Progress: 150%` is malformed: progress is not 0-100%"),
    ([READY, Progress(101), DONE], "progress 101% is outside 0-100"),
    ([READY, Error("oops", ""), DONE], "the error 'oops' has no code"),
    ([READY, DONE, FAILED], "the run has 2 endings (`## Status: Complete`, "
     "`## Status: Failed`)"),
    ([READY, DONE, Output("late")], "a output section comes after the "
     "ending"),
])
def test_each_stream_rule(events, problem):
    assert _stream(events) == [problem]


def test_a_timeout_is_reported_as_such_not_as_a_missing_ending():
    events = [READY, Error("Tool 'x' timed out after 2 s", "E_TIMEOUT"),
              FAILED]
    assert _stream(events, None, error_code="E_TIMEOUT", state="timeout") \
        == ["the run was stopped by a timeout (E_TIMEOUT)"]


def test_the_example_expectations():
    events = [READY, Progress(50), OutputData("json", 1), DONE]
    ok = {"args": [], "exit_code": 0, "events": ["status", "output_data"]}
    assert expectation_violations(ok, 0, events, "e") == []
    wrong = {"args": [], "exit_code": 1,
             "events": ["output_data", "progress"]}
    assert [v.problem for v in expectation_violations(
        wrong, 0, events, "e")] == [
        "exited 0, the example expects 1",
        "no 'progress' event where the example expects one (expected, in "
        "order: output_data, progress)"]


# --- acor check, run on tools ----------------------------------------------

@pytest.fixture
def checked(project, monkeypatch, tmp_path):
    """``checked(ref)``: run `acor check --json ref` in the project, in
    process; (exit code, report)."""
    from click.testing import CliRunner
    from acor.cli.commands.check import check_command
    monkeypatch.chdir(project.root)
    monkeypatch.setenv("ACOR_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("ACOR_CONFIG", raising=False)

    def run(ref):
        result = CliRunner().invoke(check_command, [ref, "--json"],
                                    standalone_mode=False)
        assert result.exception is None, result.output
        return result.return_value, json.loads(result.output)
    return run


EXAMPLE = [{"args": [], "exit_code": 0}]


def _violations(report):
    return [(v["problem"], v["fix"]) for v in report["violations"]]


def test_a_conforming_tool(project, checked):
    project.add_tool("good", """\
        from acor import AcorTool
        with AcorTool() as tool:
            tool.progress(50)
            tool.output({"ok": True})
    """, examples=[{"args": ["x"], "exit_code": 0,
                    "events": ["progress", "output_data"]}])
    code, report = checked("good")
    assert (code, report["conforms"], report["violations"]) == (0, True, [])
    assert report["examples"][0]["state"] == "complete"


def test_a_raw_status_print_is_caught_with_its_fix(project, checked):
    project.add_tool("raw", """\
        from acor import AcorTool
        tool = AcorTool()
        tool.start()
        print("## Status: Complete")
    """, examples=EXAMPLE)
    code, report = checked("raw")
    assert code == 1
    problems = dict(_violations(report))
    fix = problems["the tool printed '## Status: Complete' itself: acor "
                   "shows it as plain text, not as a section"]
    assert "never with print or echo" in fix
    assert "the run ends without a final status" in problems


def test_a_tool_without_a_final_status_is_caught(project, checked):
    project.add_tool("noend", """\
        from acor import AcorTool
        tool = AcorTool()
        tool.start()
        tool.output("working...")
    """, examples=[{"args": [], "exit_code": 1}])
    code, report = checked("noend")
    assert code == 1
    assert [p for p, _ in _violations(report)] == [
        "the run ends without a final status"]
    assert "tool.stop()" in report["violations"][0]["fix"]


def test_a_tool_whose_exit_code_disagrees_with_its_ending(project,
                                                          checked):
    project.add_tool("liar", """\
        import sys
        from acor import AcorTool
        with AcorTool() as tool:
            tool.output("all good")
        sys.exit(1)
    """, examples=EXAMPLE)
    code, report = checked("liar")
    assert code == 1
    assert _violations(report)[0][0] == (
        "the tool ended with `## Status: Complete` but exited 1, not 0")
    assert _violations(report)[0][1].startswith("Exit 0 after")


def test_sections_after_the_ending_are_caught(project, checked):
    project.add_tool("twice", """\
        from acor import AcorTool
        AcorTool().start().stop()
        AcorTool().start().stop()
    """, examples=EXAMPLE)
    code, report = checked("twice")
    assert code == 1
    assert [p for p, _ in _violations(report)] == [
        "the run has 2 endings (`## Status: Complete`, `## Status: "
        "Complete`)"]


def test_a_manifest_that_fails_the_schema_is_caught(project, checked):
    folder = project.add_tool("sloppy", "print('never run')\n",
                              timeout="soon", examples=EXAMPLE)
    for ref in ("sloppy", str(folder), str(folder / "manifest.json")):
        code, report = checked(ref)
        assert code == 1
        assert report["violations"] == [{
            "where": "manifest.timeout",
            "problem": "must be a number, not the string 'soon'",
            "fix": "Write a number there."}]
        assert report["examples"] == []  # nothing was run


def test_what_only_discovery_sees_is_reported_with_its_fix(project, checked):
    folder = project.add_tool("gone", "", examples=EXAMPLE)
    (folder / "gone.py").unlink()
    code, report = checked("gone")
    assert code == 1
    [violation] = report["violations"]
    assert violation["problem"].startswith("acor skips this manifest: "
                                           "'entry' 'gone.py' is not")
    assert violation["fix"]


def test_no_examples_is_a_warning(project, checked):
    project.add_tool("plain", "from acor import AcorTool\n"
                     "with AcorTool(): pass\n")
    code, report = checked("plain")
    assert (code, report["conforms"]) == (0, True)
    assert "no examples" in report["warnings"][0]


def test_an_unknown_tool_is_a_usage_error(project, checked):
    from click.testing import CliRunner
    from acor.cli.commands.check import check_command
    result = CliRunner().invoke(check_command, ["nope"],
                                standalone_mode=False)
    assert result.return_value == 2
    assert "E_UNKNOWN_TOOL" in result.output


def test_the_text_report_gives_each_problem_and_its_fix(project,
                                                         monkeypatch,
                                                         tmp_path):
    from click.testing import CliRunner
    from acor.cli.commands.check import check_command
    project.add_tool("liar", "import sys\nfrom acor import AcorTool\n"
                     "with AcorTool(): pass\nsys.exit(1)\n",
                     examples=EXAMPLE)
    monkeypatch.chdir(project.root)
    monkeypatch.setenv("ACOR_CACHE_DIR", str(tmp_path / "cache"))
    result = CliRunner().invoke(check_command, ["liar"],
                                standalone_mode=False)
    assert result.return_value == 1
    assert "  FAIL example 1: liar -> exit 0 (complete)" in result.output
    assert "    problem: the tool ended with" in result.output
    assert "    fix:     Exit 0 after" in result.output
    assert result.output.rstrip().endswith(
        "liar does not conform: 1 problem.")


def test_a_tool_that_does_not_exit_after_its_ending_is_caught():
    late = [Text(""), Error("x did not exit after its final status: "
                            "stopped", "E_TIMEOUT")]
    violations = stream_violations([READY, DONE], "example 1",
                                   tool_exit_code=-15, late=late)
    assert [v.problem for v in violations] == [
        "the tool did not exit after its ending and was stopped "
        "(E_TIMEOUT)"]


def test_the_bash_tool_conforms(checked):
    # acor.sh and the tool speak the protocol as the library does.
    code, report = checked(str(REPO / "tools" / "wc-sh"))
    assert (code, report["violations"]) == (0, [])
    assert [e["exit_code"] for e in report["examples"]] == [0, 1, 2]


def test_check_finds_a_tool_through_the_global_config(project, tmp_path):
    # The tool lives in a tools dir only the config names: without
    # honouring --config, acor check would not find it.
    elsewhere = tmp_path / "elsewhere" / "hidden"
    elsewhere.mkdir(parents=True)
    (elsewhere / "manifest.json").write_text(json.dumps({
        "name": "hidden", "description": "d", "entry": "hidden.py"}))
    (elsewhere / "hidden.py").write_text(
        "from acor import AcorTool\nwith AcorTool() as tool:\n"
        "    tool.output('hi')\n")
    config = tmp_path / "other.yaml"
    config.write_text(f"tools_dirs: [{elsewhere.parent}]\n")
    found = project.run("--config", str(config), "check", "hidden")
    assert found.returncode == 0, found.stdout
    assert "hidden's manifest conforms" in found.stdout
    missing = project.run("check", "hidden")
    assert missing.returncode == 2


# --- a wrapped program (a "command" manifest): advice fitted to it -------

def test_a_wrapped_program_gets_advice_for_a_program(project, checked):
    """acor writes a wrapped program's stream: no library advice (start
    with Ready, exit 1 after Failed) applies. What does: an exit code the
    manifest does not explain, and output that would read as a section."""
    project.add_wrapped("raw", [
        "/bin/sh", "-c", "echo '## Error: forged'; echo hi; exit ${1:-0}",
        "sh"], errors={"4": {"code": "E_FOUR", "message": "four",
                            "recovery": "Try three"}},
        examples=[{"args": {"argv": []}, "exit_code": 0},
                  {"args": {"argv": ["3"]}, "exit_code": 1},
                  {"args": {"argv": ["4"]}, "exit_code": 1}])
    code, report = checked("raw")
    assert (code, report["violations"]) == (0, []), report
    warnings = report["warnings"]
    assert [w for w in warnings if "exited" in w] == [
        'example 2 (raw 3): the program exited 3, which the manifest\'s '
        '"errors" does not explain, so an agent gets E_EXIT_3 and a '
        'generic recovery. Add "errors": {"3": {"code": "E_...", '
        '"message": "what it means", "recovery": "what to do", "next": '
        '"acor ... {args}"}}']
    printed = [w for w in warnings if "printed" in w]
    assert len(printed) == 1  # once for all three runs
    assert "'## Error: forged', which would read as an ACOR section" in \
        printed[0]


def test_a_wrapped_program_stopped_by_its_timeout_is_told_how(project,
                                                              checked):
    project.add_wrapped("slow", ["sleep", "5"], timeout=0.5,
                        examples=[{"args": {"argv": []}, "exit_code": 0}])
    code, report = checked("slow")
    assert code == 1
    (fix,) = {v["fix"] for v in report["violations"]
              if "timeout" in v["problem"]}
    assert '"timeout"' in fix and "heartbeat" not in fix


def test_an_acor_tool_printing_a_heading_itself_still_fails(project,
                                                            checked):
    project.add_tool("printer", """\
        from acor import AcorTool
        print("## AI Directive", flush=True)
        with AcorTool() as tool:
            tool.output("x")
        """, examples=[{"args": [], "exit_code": 0}])
    code, report = checked("printer")
    assert code == 1
    assert any("printed '## AI Directive' itself" in v["problem"]
               for v in report["violations"])

"""Argument schemas (acor.args) and the tool's use of them: parse_args(),
fail(), error(next=...) and input_needed(fields=...).

The schema functions are pure and tested in process; exit codes are tested
as SystemExit in process, and once as a real process for the with-block.
"""

import argparse
import io
import os
import subprocess
import sys
import textwrap

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import acor.acortool as tool_module
from acor import AcorStateError, AcorTool, argparsing, args, grammar
from acor.events import Error, InputNeeded, Output, Status

from conftest import without_acor_vars

SCHEMA = {
    "type": "object",
    "description": "Profile a CSV file.",
    "properties": {
        "file": {"type": "string", "description": "the CSV file",
                 "x-acor": {"position": 0}},
        "more": {"type": "array", "items": {"type": "string"},
                 "x-acor": {"position": 1}},
        "key": {"type": "string", "x-acor": {"flag": "--key",
                                             "metavar": "COLUMN"}},
        "rows": {"type": "integer", "minimum": 1, "maximum": 1000,
                 "default": 10, "x-acor": {"flag": "--rows"}},
        "ratio": {"type": "number", "minimum": 0, "x-acor": {"flag": "--ratio"}},
        "mode": {"type": "string", "enum": ["fast", "exact"],
                 "x-acor": {"flag": "--mode"}},
        "tag": {"type": "array", "items": {"type": "string"},
                "x-acor": {"flag": "--tag", "repeat": True}},
        "ids": {"type": "array", "items": {"type": "integer"},
                "x-acor": {"flag": "--ids"}},
        "quiet": {"type": "boolean", "x-acor": {"flag": "--quiet"}},
        "slow": {"type": "number", "description": "for tests",
                 "x-acor": {"flag": "--slow", "hidden": True}},
    },
    "required": ["file"],
    "additionalProperties": False,
}


# --- the schema -------------------------------------------------------------

def test_a_good_schema_has_no_problems():
    assert args.schema_problems(SCHEMA) == []


@pytest.mark.parametrize("prop, needle", [
    ({"type": "object", "x-acor": {"flag": "--x"}}, "type must be one of"),
    ({"type": "string"}, 'needs "position" or "flag"'),
    ({"type": "string", "x-acor": {"flag": "--x", "position": 0}},
     'needs "position" or "flag"'),
    ({"type": "string", "x-acor": {"flag": "x"}}, "look like --name"),
    ({"type": "boolean", "x-acor": {"position": 0}}, "must be a flag"),
    ({"type": "string", "x-acor": {"flag": "--x", "repeat": True}},
     "repeat is for arrays"),
    ({"type": "array", "items": {"type": "boolean"}, "x-acor": {"flag": "--x"}},
     "items must be"),
    ({"type": "string", "format": "uri", "x-acor": {"flag": "--x"}},
     "unknown key 'format'"),
    ({"type": "integer", "minimum": "1", "x-acor": {"flag": "--x"}},
     "minimum must be a number"),
    ({"type": "boolean", "default": True, "x-acor": {"flag": "--x"}},
     "default must be false"),
])
def test_schema_problems_name_the_property(prop, needle):
    problems = args.schema_problems({"properties": {"x": prop}})
    assert any(needle in p and "args.properties.x" in p for p in problems), \
        problems


def test_titles_and_unknown_x_acor_keys_are_accepted():
    schema = {"$schema": "x", "title": "t", "properties": {"x": {
        "type": "string", "title": "X", "x-acor": {"flag": "--x",
                                                   "later": 1}}}}
    assert args.schema_problems(schema) == []


@pytest.mark.parametrize("schema, needle", [
    ({"properties": {}, "oneOf": []}, "unknown key 'oneOf'"),
    ({"properties": {"a b": {"type": "string", "x-acor": {"flag": "--a"}}}},
     "is not a name"),
    ({"additionalProperties": {}}, "true or false"),
])
def test_top_level_problems(schema, needle):
    assert any(needle in p for p in args.schema_problems(schema))


def test_positions_must_run_without_gaps_and_only_the_last_may_be_an_array():
    gap = {"properties": {
        "a": {"type": "string", "x-acor": {"position": 0}},
        "b": {"type": "string", "x-acor": {"position": 2}}}}
    assert any("without gaps" in p for p in args.schema_problems(gap))
    early = {"properties": {
        "a": {"type": "array", "items": {"type": "string"},
              "x-acor": {"position": 0}},
        "b": {"type": "string", "x-acor": {"position": 1}}}}
    assert any("only the last" in p for p in args.schema_problems(early))


# JSON-shaped values where a schema's parts go: the validator is the one
# judge of a manifest's "args" (discovery, `acor check`, a tool's
# parse_args), so whatever a manifest holds, it answers with problems.
_VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(-2, 3), st.floats(width=16),
    st.sampled_from(["string", "integer", "number", "boolean", "array",
                     "object", "--x", "--y", "-", "--a b", "--a=b", "x",
                     "--\x01", "a", "b"]),
    st.lists(st.sampled_from(["a", "b", 1, None]), max_size=2))
_X_ACOR = st.one_of(_VALUES, st.fixed_dictionaries({}, optional={
    "position": st.one_of(st.integers(-1, 2), _VALUES),
    "flag": _VALUES, "repeat": st.booleans(), "hidden": st.booleans()}))
_PROPERTY = st.one_of(_VALUES, st.fixed_dictionaries({}, optional={
    "type": _VALUES, "x-acor": _X_ACOR, "enum": _VALUES, "default": _VALUES,
    "items": st.one_of(_VALUES, st.fixed_dictionaries(
        {}, optional={"type": _VALUES})),
    "minimum": _VALUES, "maximum": _VALUES, "bogus": _VALUES}))
_SCHEMAS = st.one_of(_VALUES, st.fixed_dictionaries({}, optional={
    "type": _VALUES, "additionalProperties": _VALUES, "bogus": _VALUES,
    "required": st.one_of(_VALUES, st.lists(_VALUES, max_size=3)),
    "properties": st.one_of(_VALUES, st.dictionaries(
        st.sampled_from(["a", "b", "c d"]), _PROPERTY, max_size=3))}))


@settings(max_examples=int(os.environ.get("ACOR_FUZZ_EXAMPLES", "300")),
          deadline=None)
@given(schema=_SCHEMAS)
def test_fuzz_schema_problems_answers_any_manifest_value(schema):
    problems = args.schema_problems(schema)
    assert isinstance(problems, list)
    if not problems:  # what it accepts, the rest of the module can use
        args.usage("acor t", schema)
        args.public_schema(schema)
        argparsing.to_argparse("t", schema)


def test_a_flag_used_twice_is_a_problem():
    twice = {"properties": {
        "a": {"type": "string", "x-acor": {"flag": "--a"}},
        "b": {"type": "string", "x-acor": {"flag": "--a"}}}}
    assert any("used twice" in p for p in args.schema_problems(twice))


def test_the_functions_refuse_a_bad_schema_with_every_problem():
    with pytest.raises(args.SchemaError, match="position.*flag"):
        args.validate({"properties": {"x": {"type": "string"}}}, {})


# --- validate ----------------------------------------------------------------

def test_valid_values_have_no_problems():
    assert args.validate(SCHEMA, {"file": "a.csv", "rows": 5, "ratio": 0.5,
                                  "mode": "fast", "tag": ["x"], "ids": [1, 2],
                                  "quiet": True, "more": []}) == []


def test_every_violation_is_listed_and_names_its_field():
    problems = args.validate(SCHEMA, {
        "rows": 0, "ratio": "0.5", "mode": "slow", "tag": ["a", 3],
        "quiet": "yes", "bogus": 1, "key": None})
    assert problems == [
        "file: is required",
        "rows: must be at least 1, not 0",
        'ratio: must be a number, not the string "0.5"',
        'mode: must be one of "fast", "exact", not the string "slow"',
        "tag[1]: must be a string, not the number 3",
        'quiet: must be a boolean, not the string "yes"',
        "bogus: is not an argument of this tool (arguments: file, more, key, "
        "rows, ratio, mode, tag, ids, quiet, slow)",
        "key: must be a string, not null"]


@pytest.mark.parametrize("value, ok", [(3, True), (3.0, True), (3.5, False),
                                       (True, False), (float("inf"), False),
                                       (10 ** 30, False)])
def test_integers_are_whole_numbers_not_booleans(value, ok):
    assert (args.validate(SCHEMA, {"file": "f", "rows": value}) == []) is ok


def test_the_path_example_of_the_contract():
    schema = {"properties": {"path": {"type": "string",
                                      "x-acor": {"position": 0}}}}
    assert args.validate(schema, {"path": 3}) == [
        "path: must be a string, not the number 3"]
    assert args.validate(schema, [3]) == [
        "the arguments must be an object, not an array"]


# --- to_argv -----------------------------------------------------------------

def test_to_argv_writes_flags_then_dashdash_then_positionals():
    argv = args.to_argv(SCHEMA, {
        "file": "-rf", "more": ["b", "--c"], "quiet": True, "rows": 5,
        "tag": ["x", "-y"], "ids": [1, 2], "ratio": 0.25, "mode": "exact"})
    assert argv == ["--rows", "5", "--ratio", "0.25", "--mode", "exact",
                    "--tag", "x", "--tag=-y", "--ids", "1", "2", "--quiet",
                    "--", "-rf", "b", "--c"]


def test_to_argv_leaves_out_what_is_not_given_and_false_flags():
    assert args.to_argv(SCHEMA, {"file": "a.csv", "quiet": False}) == [
        "--", "a.csv"]
    assert args.to_argv(SCHEMA, {"key": "id", "file": "a"}) == [
        "--key", "id", "--", "a"]


def test_to_argv_refuses_invalid_values():
    with pytest.raises(ValueError, match="file: is required"):
        args.to_argv(SCHEMA, {"rows": 2})


VALUES = st.fixed_dictionaries({"file": st.text(min_size=1)}, optional={
    "key": st.text(), "rows": st.integers(1, 1000),
    "ratio": st.floats(0, 1e6, allow_nan=False),
    "mode": st.sampled_from(["fast", "exact"]),
    "tag": st.lists(st.text()), "ids": st.lists(st.integers(), min_size=1),
    "quiet": st.booleans(), "more": st.lists(st.text())})


@settings(max_examples=200, deadline=None)
@given(values=VALUES)
def test_property_to_argv_parses_back_to_the_same_values(values):
    # Whatever the text (a leading "-", "--", "=", spaces), the tool's
    # parser reads back exactly what the caller meant.
    parsed = vars(argparsing.parse(SCHEMA, args.to_argv(SCHEMA, values), "t"))
    for name, value in values.items():
        assert parsed[name] == value, name


# --- public_schema and usage -------------------------------------------------

def test_public_schema_drops_x_acor_and_hidden_properties():
    public = args.public_schema(SCHEMA)
    assert "x-acor" not in repr(public)
    assert "slow" not in public["properties"]
    assert list(public) == list(SCHEMA)
    assert public["properties"]["rows"] == {
        "type": "integer", "minimum": 1, "maximum": 1000, "default": 10}
    assert "x-acor" in repr(SCHEMA)  # the caller's schema is untouched


def test_usage_lists_positionals_then_flags_and_hides_hidden_ones():
    assert args.usage("acor csvprofile", SCHEMA) == (
        "acor csvprofile FILE [MORE ...] [--key COLUMN] [--rows ROWS] "
        "[--ratio RATIO] [--mode MODE] [--tag TAG]... [--ids IDS ...] "
        "[--quiet]")


# --- parse and to_argparse ------------------------------------------------------

def test_parse_gives_attributes_with_defaults():
    values = argparsing.parse(SCHEMA, ["a.csv", "--rows", "7", "--tag", "x",
                                 "--tag=y", "--quiet"], "t")
    assert vars(values) == {"file": "a.csv", "more": [], "key": None,
                            "rows": 7, "ratio": None, "mode": None,
                            "tag": ["x", "y"], "ids": [], "quiet": True,
                            "slow": None}


@pytest.mark.parametrize("argv, message", [
    ([], "the following arguments are required: FILE"),
    (["a", "--rows", "0"], "argument --rows: must be at least 1, not 0"),
    (["a", "--rows", "x"], "argument --rows: must be an integer, not 'x'"),
    (["a", "--ratio", "nan"], "argument --ratio: must be a number, not 'nan'"),
    (["a", "--mode", "slow"], "argument --mode: invalid choice: 'slow'"),
    (["a", "--bogus"], "unrecognized arguments: --bogus"),
    (["a", "--ro", "3"], "unrecognized arguments: --ro"),  # no abbreviations
])
def test_parse_raises_usage_errors_with_the_usage(argv, message):
    with pytest.raises(args.UsageError) as raised:
        argparsing.parse(SCHEMA, argv, "acor t")
    assert raised.value.message.startswith(message)
    assert raised.value.usage == "usage: " + args.usage("acor t", SCHEMA)


def test_help_is_raised_before_missing_arguments_are_noticed():
    with pytest.raises(args.HelpRequested) as asked:
        argparsing.parse(SCHEMA, ["--help"], "acor t")
    text = asked.value.text
    assert text.startswith("usage: acor t FILE")
    assert "Profile a CSV file." in text and "the CSV file" in text
    assert "--slow" not in text and "(default: 10)" in text


def test_to_argparse_is_a_plain_argparse_parser():
    parser = argparsing.to_argparse("acor t", SCHEMA)
    assert isinstance(parser, argparse.ArgumentParser)
    assert parser.parse_args(["a.csv", "--ids", "1", "2"]).ids == [1, 2]
    with pytest.raises(SystemExit) as exited:
        parser.parse_args([])
    assert exited.value.code == 2


def test_percent_signs_in_descriptions_do_not_break_help():
    schema = {"properties": {"p": {"type": "integer", "description": "50% of",
                                   "x-acor": {"flag": "--p%"}}}}
    with pytest.raises(args.HelpRequested) as asked:
        argparsing.parse(schema, ["-h"], "t")
    assert "50% of" in asked.value.text


# --- the tool: parse_args, fail, next, fields -----------------------------------

@pytest.fixture
def events(monkeypatch):
    """Every event the tool renders, in order (the wire form of `next` and
    `fields` belongs to the grammar)."""
    seen = []
    render = tool_module.render

    def recording(event):
        seen.append(event)
        return render(event)
    monkeypatch.setattr(tool_module, "render", recording)
    return seen


def new_tool():
    stream = io.StringIO()
    return AcorTool("t", "1.0", stream=stream, frame_token=None), stream


def test_parse_args_returns_the_values(events):
    tool, _ = new_tool()
    values = tool.parse_args(["a.csv", "--rows", "3"], schema=SCHEMA)
    assert (values.file, values.rows, values.quiet) == ("a.csv", 3, False)
    assert events == []  # nothing written, not even Ready


def test_parse_args_usage_error_is_e_usage_then_failed_exit_2(events):
    tool, stream = new_tool()
    with pytest.raises(SystemExit) as exited:
        with tool:
            tool.parse_args(["a.csv", "--rows", "0"], schema=SCHEMA)
    assert exited.value.code == 2
    ready, error, failed = events
    assert (ready, failed) == (Status("ready"), Status("failed"))
    assert error.code == "E_USAGE"
    assert error.title == "argument --rows: must be at least 1, not 0"
    assert error.details == "usage: " + args.usage("acor t", SCHEMA)
    # The user's own command, the bad value corrected (the bound).
    assert error.next == ["acor", "t", "a.csv", "--rows", "1"]
    assert "acor t --help" in error.recovery
    assert grammar.parse(stream.getvalue())[-1] == Status("failed")


def test_parse_args_before_start_starts_to_report(events):
    tool, _ = new_tool()
    with pytest.raises(SystemExit) as exited:
        tool.parse_args(["--bogus"], schema=SCHEMA)
    assert exited.value.code == 2
    assert [e.type for e in events] == ["status", "error", "status"]


def test_parse_args_help_is_output_and_complete_exit_0(events):
    tool, _ = new_tool()
    with pytest.raises(SystemExit) as exited:
        with tool:
            tool.parse_args(["--help"], schema=SCHEMA)
    assert exited.value.code == 0
    assert [e.type for e in events] == ["status", "output", "status"]
    assert events[1].text.startswith("usage: acor t FILE")
    assert events[-1] == Status("complete")


def test_parse_args_without_a_schema_says_where_to_put_one(tmp_path,
                                                          monkeypatch):
    monkeypatch.setattr(sys, "argv", [str(tmp_path / "tool.py")])
    tool, _ = new_tool()
    with pytest.raises(ValueError, match='needs an "args" schema in .*'
                                         'manifest.json'):
        tool.parse_args([])


@pytest.mark.parametrize("code, exit_code", [("E_USAGE", 2), ("E_IO", 1)])
def test_fail_reports_and_ends_failed_in_one_call(events, code, exit_code):
    tool, stream = new_tool()
    with pytest.raises(SystemExit) as exited:
        with tool:
            tool.progress(10)
            tool.fail(code, "Cannot read x", recovery="Check x",
                      details="d", next=["acor", "t", "y"])
    assert exited.value.code == exit_code
    assert events[1:] == [Error("Cannot read x", code, "d", "Check x",
                                ["acor", "t", "y"]), Status("failed")]
    assert grammar.parse(stream.getvalue())[-1] == Status("failed")
    assert "E_UNHANDLED_EXCEPTION" not in stream.getvalue()


def test_fail_outside_the_context_manager_starts_first(events):
    tool, _ = new_tool()
    with pytest.raises(SystemExit) as exited:
        tool.fail("E_USAGE", "no file given")
    assert exited.value.code == 2
    assert [e.type for e in events] == ["status", "error", "status"]
    assert tool.state.value == "failed"


def test_fail_after_stop_is_a_state_error():
    tool, _ = new_tool()
    tool.start().stop()
    with pytest.raises(AcorStateError):
        tool.fail("E_X", "late")


def test_fail_checks_its_arguments_before_writing(events):
    tool, _ = new_tool()
    with pytest.raises(TypeError, match="next"):
        tool.fail("E_X", "m", next="acor t --help")  # a string, not an argv
    assert events == []


def test_error_carries_next(events):
    tool, _ = new_tool()
    tool.start().error("E_X", "m", next=("acor", "t", "--fix"))
    assert events[-1].next == ["acor", "t", "--fix"]
    for bad in ([], ["acor", 3], "acor t"):
        with pytest.raises(TypeError):
            tool.error("E_X", "m", next=bad)


def test_command_is_the_argv_that_runs_the_tool_again():
    tool, _ = new_tool()
    assert tool.command("a.csv", "--rows", 3) == ["acor", "t", "a.csv",
                                                   "--rows", "3"]


FIELDS = {"key": {"type": "string", "description": "the key column",
                  "enum": ["id", "email"]}}


def test_input_needed_carries_fields_audience_and_next(events):
    tool, _ = new_tool()
    tool.start()
    with pytest.raises(SystemExit) as exited:
        tool.input_needed("Which key?", fields=FIELDS, audience="human",
                          next=tool.command("a.csv", "--key", "<key>"))
    assert exited.value.code == 3
    assert events[-1] == InputNeeded("Which key?", FIELDS, "human",
                                     ["acor", "t", "a.csv", "--key", "<key>"])


CHOICES = {
    "tags": {"type": "array", "description": "labels to apply",
             "items": {"enum": ["bug", "docs", "ci"]},
             "default": ["bug"], "minItems": 1, "maxItems": 2},
    "owners": {"type": "array", "items": {"type": "string", "anyOf": [
        {"const": "ann", "title": "Ann Lee"},
        {"const": "bo", "title": "Bo Chan"}]}},
    "color": {"type": "string", "oneOf": [
        {"const": "r", "title": "Red"}, {"const": "g", "title": "Green"}]},
    "size": {"type": "string", "enum": ["s", "l"],
             "enumNames": ["Small", "Large"]}}


def test_input_needed_asks_for_several_choices_and_titled_ones(events):
    """SEP-1330's forms: a multi-select field (an array of choices, titled
    or not) and a single choice with titles, written and read whole."""
    tool, _ = new_tool()
    tool.start()
    with pytest.raises(SystemExit):
        tool.input_needed("Which labels?", fields=CHOICES)
    assert events[-1].fields == CHOICES
    [read] = grammar.parse(grammar.render(events[-1]))
    assert read.fields == CHOICES


@pytest.mark.parametrize("field", [
    {"type": "array", "items": {"type": "string"}},       # no choices
    {"type": "array", "items": {"enum": [1, 2]}},          # not strings
    {"type": "array", "items": {"enum": ["a"], "x": 1}},   # unknown key
    {"type": "array", "items": {"enum": ["a"]}, "default": ["b"]},
    {"type": "array", "items": {"enum": ["a"]}, "maxItems": -1},
    {"type": "integer", "oneOf": [{"const": "1", "title": "one"}]},
    {"type": "string", "oneOf": [{"const": "a"}]},         # no title
    {"type": "string", "enum": ["a", "b"], "enumNames": ["A"]},
    {"type": "string", "oneOf": [{"const": "a", "title": "x" * 5000}]},
])
def test_input_needed_refuses_choices_a_form_cannot_hold(events, field):
    tool, _ = new_tool()
    tool.start()
    with pytest.raises(ValueError):
        tool.input_needed("Which?", fields={"pick": field})
    assert [e.type for e in events] == ["status"]


@pytest.mark.parametrize("kwargs, error", [
    ({"audience": "robot"}, ValueError),
    ({"fields": {"key": {"type": "object"}}}, ValueError),
    ({"fields": {"key": {"type": "string", "x-acor": {}}}}, ValueError),
    ({"fields": {"two words": {"type": "string"}}}, ValueError),
    ({"fields": ["key"]}, TypeError),
    ({"next": "acor t"}, TypeError),
])
def test_input_needed_refuses_bad_fields_before_writing(events, kwargs, error):
    tool, _ = new_tool()
    tool.start()
    with pytest.raises(error):
        tool.input_needed("Which key?", **kwargs)
    assert tool.state.value == "running"
    assert [e.type for e in events] == ["status"]


# --- as a process: the with-block's exit code ---------------------------------

def run_script(tmp_path, source):
    script = tmp_path / "tool.py"
    script.write_text(textwrap.dedent(source))
    env = without_acor_vars(os.environ)
    env.pop("PYTHONPATH", None)
    return subprocess.run([sys.executable, str(script)], capture_output=True,
                          text=True, env=env, cwd=tmp_path, timeout=60)


@pytest.mark.parametrize("code, exit_code", [("E_USAGE", 2), ("E_INPUT", 1)])
def test_an_error_then_failed_exits_like_under_acor(tmp_path, code,
                                                   exit_code):
    proc = run_script(tmp_path, f"""
        from acor import AcorTool, ToolState
        with AcorTool("t") as tool:
            tool.error("{code}", "bad arguments")
            tool.stop(ToolState.FAILED)
        print("not reached")
    """)
    assert proc.returncode == exit_code, proc.stderr
    assert "not reached" not in proc.stdout
    assert proc.stderr == ""


def test_parse_args_reads_the_manifest_beside_the_script(tmp_path):
    (tmp_path / "manifest.json").write_text(
        '{"name": "greet", "description": "Greets.", "args": {"properties": '
        '{"name": {"type": "string", "default": "World", '
        '"x-acor": {"position": 0}}}}}')
    proc = run_script(tmp_path, """
        from acor import AcorTool
        with AcorTool() as tool:
            tool.output("Hello, " + tool.parse_args().name)
    """)
    assert proc.returncode == 0, proc.stderr
    assert grammar.parse(proc.stdout)[1] == Output("Hello, World")

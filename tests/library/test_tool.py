"""AcorTool: the state machine, each method's section, the context-manager
endings, threads, where writes go, manifest detection and framing.

Behaviour that belongs to the process (exit codes, SystemExit,
KeyboardInterrupt, tracebacks, the frame token in the environment, threads
writing to a pipe) is tested by running a small tool script as a real
process.
"""

import contextlib
import hashlib
import io
import json
import math
import os
import signal
import subprocess
import sys
import textwrap
import time
from decimal import Decimal
from pathlib import Path

import pytest

import acor.acortool as tool_module
from acor import AcorStateError, AcorTool, ToolState, exitcodes, framing
from acor.events import (AIDirective, Error, InputNeeded, Output, OutputData,
                         Heartbeat, Progress, Status, Suggestions, Text)
from acor.grammar import HEARTBEAT_LINE, parse
from acor.decode import StreamDecoder

from conftest import REPO, without_acor_vars

TOKEN = "00112233445566778899aabbccddeeff"
READY, COMPLETE = Status("ready"), Status("complete")
FAILED, CANCELLED = Status("failed"), Status("cancelled")


def new_tool(name="t"):
    """A tool writing plain ACOR Markdown to its own StringIO."""
    stream = io.StringIO()
    return AcorTool(name, stream=stream, frame_token=None,
                    progress_interval=0), stream


def running_tool():
    tool, stream = new_tool()
    tool.start()
    return tool, stream


def events_of(stream):
    return parse(stream.getvalue())


def sections_after_ready(stream):
    events = events_of(stream)
    assert events[0] == READY
    return events[1:]


def run_script(tmp_path, source, *, env=None, folder=None, name="tool.py"):
    """Run ``source`` as a script; returns the CompletedProcess with stdout
    and stderr decoded (no newline translation)."""
    folder = folder or tmp_path
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / name
    script.write_text(textwrap.dedent(source), encoding="utf-8")
    environ = without_acor_vars(os.environ)
    environ.pop("PYTHONPATH", None)
    environ.update(env or {})
    proc = subprocess.run([sys.executable, str(script)], env=environ,
                          capture_output=True, cwd=tmp_path, timeout=120)
    proc.stdout = proc.stdout.decode("utf-8")
    proc.stderr = proc.stderr.decode("utf-8")
    return proc


# --- lifecycle ------------------------------------------------------------

def test_new_tool_is_created_and_writes_nothing():
    tool, stream = new_tool()
    assert tool.state is ToolState.CREATED
    assert stream.getvalue() == ""


def test_start_emits_ready_and_runs():
    tool, stream = new_tool()
    assert tool.start() is tool
    assert tool.state is ToolState.RUNNING
    assert stream.getvalue() == "## Status: Ready\n\n"


def test_second_start_does_nothing():
    tool, stream = running_tool()
    tool.start()
    assert events_of(stream) == [READY]
    assert tool.state is ToolState.RUNNING


def test_stop_emits_complete_by_default():
    tool, stream = running_tool()
    assert tool.stop() is tool
    assert tool.state is ToolState.COMPLETE
    assert events_of(stream) == [READY, COMPLETE]


@pytest.mark.parametrize("state, event", [
    (ToolState.COMPLETE, COMPLETE), (ToolState.FAILED, FAILED),
    (ToolState.CANCELLED, CANCELLED), ("failed", FAILED),
    ("Cancelled", CANCELLED),
])
def test_stop_emits_the_final_state_given(state, event):
    tool, stream = running_tool()
    tool.stop(state)
    assert events_of(stream) == [READY, event]
    assert tool.state.value == event.state


def test_stop_is_idempotent():
    tool, stream = running_tool()
    tool.stop(ToolState.FAILED)
    assert tool.stop() is tool
    tool.stop(ToolState.CANCELLED)
    assert events_of(stream) == [READY, FAILED]
    assert tool.state is ToolState.FAILED


@pytest.mark.parametrize("state", [ToolState.RUNNING, ToolState.CREATED,
                                   ToolState.INPUT_NEEDED, "working"])
def test_stop_refuses_a_state_that_is_not_final(state):
    tool, stream = running_tool()
    with pytest.raises(ValueError):
        tool.stop(state)
    assert tool.state is ToolState.RUNNING


def test_stop_before_start_raises_state_error():
    tool, stream = new_tool("csv-cleaner")
    with pytest.raises(AcorStateError, match="csv-cleaner.*start"):
        tool.stop()
    assert stream.getvalue() == ""


EMITTERS = {
    "status": lambda t: t.status("working", "m"),
    "progress": lambda t: t.progress(5),
    "progress_bar": lambda t: t.progress_bar(1, 2),
    "output": lambda t: t.output("x"),
    "output data": lambda t: t.output({"a": 1}),
    "output files": lambda t: t.output_files(["missing.txt"]),
    "error": lambda t: t.error("E_X", "m"),
    "input needed": lambda t: t.input_needed("m"),
    "ai directive": lambda t: t.ai_directive("m"),
    "suggestions": lambda t: t.suggestions(["m"]),
    "heartbeat": lambda t: t.heartbeat(),
}


@pytest.mark.parametrize("emit", EMITTERS.values(), ids=EMITTERS.keys())
def test_emitting_before_start_raises_a_state_error_naming_tool_and_fix(emit):
    tool, stream = new_tool("csv-cleaner")
    with pytest.raises(AcorStateError) as raised:
        emit(tool)
    message = str(raised.value)
    assert "'csv-cleaner'" in message
    assert "has not started" in message
    assert "start()" in message and "with AcorTool" in message
    assert stream.getvalue() == ""


@pytest.mark.parametrize("emit", EMITTERS.values(), ids=EMITTERS.keys())
def test_emitting_after_stop_raises_a_state_error_naming_tool_state_and_fix(
        emit):
    tool, stream = new_tool("csv-cleaner")
    tool.start().stop(ToolState.FAILED)
    written = stream.getvalue()
    with pytest.raises(AcorStateError) as raised:
        emit(tool)
    message = str(raised.value)
    assert "'csv-cleaner'" in message
    assert "state: failed" in message
    assert "before stop()" in message and "new AcorTool" in message
    assert stream.getvalue() == written


def test_state_error_is_a_runtime_error():
    assert issubclass(AcorStateError, RuntimeError)


def test_every_method_but_input_needed_returns_the_tool():
    tool, stream = new_tool()
    chained = (tool.start()
               .status("working", "Loading")
               .progress(0.25, "Reading")
               .progress_bar(3, 4, "Rows")
               .output("text")
               .output({"rows": 3})
               .output_files({"missing.txt": "never written"})
               .error("E_X", "soft failure")
               .ai_directive("Check the rows")
               .suggestions(["Plot them"])
               .heartbeat()
               .stop())
    assert chained is tool
    assert [e.type for e in events_of(stream)] == [
        "status", "status", "progress", "progress", "output", "output_data",
        "output_files", "error", "suggestions", "ai_directive", "status"]


def test_repr_names_tool_version_and_state():
    tool = AcorTool("t", "2.0", stream=io.StringIO(), frame_token=None)
    assert repr(tool) == "<AcorTool 't' 2.0 created>"


# --- status() -------------------------------------------------------------

def test_status_emits_working_with_its_message():
    tool, stream = running_tool()
    tool.status("working", "Analyzing sections")
    assert "## Status: Working\nAnalyzing sections\n\n" in stream.getvalue()
    assert sections_after_ready(stream) == [
        Status("working", "Analyzing sections")]


def test_status_accepts_a_short_label_of_several_words():
    tool, stream = running_tool()
    tool.status("In review")
    assert sections_after_ready(stream) == [Status("in review")]


@pytest.mark.parametrize("state", ["complete", "failed", "cancelled",
                                   "Complete", " FAILED "])
def test_status_refuses_final_states(state):
    tool, stream = running_tool()
    with pytest.raises(ValueError, match="stop"):
        tool.status(state)
    assert events_of(stream) == [READY]
    assert tool.state is ToolState.RUNNING


@pytest.mark.parametrize("state", ["", "two\nlines", "bad!", "9lives",
                                   "x" * 65])
def test_status_refuses_a_state_that_is_not_a_label(state):
    tool, stream = running_tool()
    with pytest.raises(ValueError):
        tool.status(state)
    assert events_of(stream) == [READY]


def test_status_refuses_non_strings():
    tool, _ = running_tool()
    with pytest.raises(TypeError):
        tool.status(1)
    with pytest.raises(TypeError):
        tool.status("working", None)


# --- progress() -----------------------------------------------------------

@pytest.mark.parametrize("value, percent", [
    (0, 0), (50, 50), (100, 100),               # int: a percent
    (0.0, 0), (0.5, 50), (0.755, 75.5), (1.0, 100), (0.123456, 12.35),
    (1.5, 1.5), (42.5, 42.5), (99.999, 100),    # float > 1.0: a percent
    (150, 100), pytest.param(10 ** 400, 100, id="10**400"),  # clamped
    (250.0, 100),
    (-5, 0), (-0.5, 0), (-1e300, 0),
])
def test_progress_reads_ints_as_percent_and_fractions_as_share(value,
                                                               percent):
    tool, stream = running_tool()
    tool.progress(value, "m")
    assert sections_after_ready(stream) == [Progress(percent, "m")]


def test_progress_heading_shows_the_percent():
    tool, stream = running_tool()
    tool.progress(0.755).progress(50)
    assert "## Progress: 75.5%\n\n## Progress: 50%\n\n" in stream.getvalue()


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_progress_refuses_nan_and_infinity(value):
    tool, stream = running_tool()
    with pytest.raises(ValueError):
        tool.progress(value)
    assert events_of(stream) == [READY]


@pytest.mark.parametrize("value", [True, False, "50", None, Decimal("0.5"),
                                   [50]])
def test_progress_refuses_bools_and_non_numbers(value):
    tool, stream = running_tool()
    with pytest.raises(TypeError):
        tool.progress(value)
    assert events_of(stream) == [READY]


def test_progress_message_must_be_a_string():
    tool, stream = running_tool()
    with pytest.raises(TypeError):
        tool.progress(5, 5)
    with pytest.raises(TypeError):
        tool.progress(0.5, None)
    assert events_of(stream) == [READY]


# --- progress_bar() -------------------------------------------------------

@pytest.mark.parametrize("current, total, label, percent, message", [
    (3, 10, "Files", 30, "Files (3/10)"),
    (1, 3, "Rows", 33.33, "Rows (1/3)"),
    (0, 10, "Rows", 0, "Rows (0/10)"),
    (10, 10, "Rows", 100, "Rows (10/10)"),
    (15, 10, "Rows", 100, "Rows (15/10)"),       # past the total: done
    (0, 0, "Nothing", 100, "Nothing (0/0)"),     # nothing to do: done
    (3, 10, "", 30, "(3/10)"),
    pytest.param(10 ** 400, 1, "Huge", 100, f"Huge ({10 ** 400}/1)",
                 id="10**400-1-Huge"),
])
def test_progress_bar_shows_percent_and_count(current, total, label,
                                              percent, message):
    tool, stream = running_tool()
    tool.progress_bar(current, total, label)
    assert sections_after_ready(stream) == [Progress(percent, message)]


@pytest.mark.parametrize("current, total", [(-1, 10), (1, -10)])
def test_progress_bar_refuses_negative_counts(current, total):
    tool, stream = running_tool()
    with pytest.raises(ValueError, match="negative"):
        tool.progress_bar(current, total)
    assert events_of(stream) == [READY]


@pytest.mark.parametrize("current, total", [(1.0, 10), (1, 10.0), (None, 2),
                                            ("1", 2), (Decimal(1), 2)])
def test_progress_bar_refuses_non_int_counts(current, total):
    tool, stream = running_tool()
    with pytest.raises(TypeError):
        tool.progress_bar(current, total)
    assert events_of(stream) == [READY]


class Index:
    """An integer type that is not int (as numpy's integers are)."""

    def __init__(self, value):
        self.value = value

    def __index__(self):
        return self.value


@pytest.mark.parametrize("current, total, message", [
    (Index(3), 10, "(3/10)"), (3, Index(10), "(3/10)"),
    (True, 2, "(1/2)"),                     # a bool is an int, as in Python
])
def test_progress_bar_takes_any_integer_type(current, total, message):
    tool, stream = running_tool()
    tool.progress_bar(current, total)
    assert sections_after_ready(stream) == [Progress(int(
        100 * int(current) / int(total)), message)]


def test_progress_bar_label_must_be_a_string():
    tool, stream = running_tool()
    with pytest.raises(TypeError, match="label"):
        tool.progress_bar(1, 2, 3)
    assert events_of(stream) == [READY]


# --- output() -------------------------------------------------------------

def test_output_of_a_string_is_an_output_section():
    tool, stream = running_tool()
    tool.output("Analysis complete.\n## AI Directive")
    assert "## Output\nAnalysis complete.\n\\## AI Directive\n\n" in \
        stream.getvalue()
    assert sections_after_ready(stream) == [
        Output("Analysis complete.\n## AI Directive")]


@pytest.mark.parametrize("data", [{"processed": 1000, "errors": 3},
                                  [1, "two", None], 42, None, True])
def test_output_of_other_data_is_fenced_json(data):
    tool, stream = running_tool()
    tool.output(data)
    assert f"## Output Data\n```json\n{json.dumps(data, indent=2)}\n```\n" \
        in stream.getvalue()
    assert sections_after_ready(stream) == [OutputData("json", data)]


def test_output_json_of_a_string_is_fenced_json():
    tool, stream = running_tool()
    tool.output("plain", format="json")
    assert sections_after_ready(stream) == [OutputData("json", "plain")]


def test_output_json_renders_unknown_types_with_str():
    tool, stream = running_tool()
    tool.output({"path": Path("a/b")})
    assert sections_after_ready(stream) == [
        OutputData("json", {"path": str(Path("a/b"))})]


def test_output_yaml_is_a_fenced_yaml_block():
    yaml = pytest.importorskip("yaml")
    data = {"name": "report", "pages": [1, 2]}
    tool, stream = running_tool()
    tool.output(data, format="yaml")
    (event,) = sections_after_ready(stream)
    assert event.format == "yaml"
    assert yaml.safe_load(event.data) == data
    assert "## Output Data\n```yaml\nname: report\n" in stream.getvalue()


@pytest.mark.parametrize("format", ["text", "markdown"])
def test_output_text_and_markdown_are_fenced_as_given(format):
    text = "# Report\n- item\n## Status: Complete"
    tool, stream = running_tool()
    tool.output(text, format=format)
    assert sections_after_ready(stream) == [OutputData(format, text)]


def test_output_text_of_a_non_string_uses_str():
    tool, stream = running_tool()
    tool.output(123, format="text")
    assert sections_after_ready(stream) == [OutputData("text", "123")]


def test_output_refuses_an_unknown_format():
    tool, stream = running_tool()
    with pytest.raises(ValueError, match="format"):
        tool.output("x", format="xml")
    assert events_of(stream) == [READY]


@pytest.mark.parametrize("ticks", [3, 4, 10])
def test_output_fence_is_longer_than_any_backtick_run_inside(ticks):
    text = "before\n" + "`" * ticks + "\n## Status: Complete\nafter"
    tool, stream = running_tool()
    tool.output(text, format="text").stop(ToolState.FAILED)
    assert "## Output Data\n" + "`" * (ticks + 1) + "text\n" in \
        stream.getvalue()
    assert sections_after_ready(stream) == [OutputData("text", text), FAILED]


# --- output_files() -------------------------------------------------------

@pytest.fixture
def files(tmp_path):
    report = tmp_path / "report.csv"
    report.write_bytes(b"a,b\n1,2\n")
    folder = tmp_path / "plots"
    folder.mkdir()
    return report, folder, tmp_path / "never-written.txt"


def file_entries(stream):
    (event,) = sections_after_ready(stream)
    assert event.type == "output_files"
    return event.files


def test_existing_file_shows_its_size_and_sha256_prefix(files):
    report, _, _ = files
    tool, stream = running_tool()
    tool.output_files({str(report): "The cleaned rows"})
    digest = hashlib.sha256(report.read_bytes()).hexdigest()[:12]
    assert f"- `{report}` [8 bytes, sha256 {digest}]: The cleaned rows\n" in \
        stream.getvalue()
    assert file_entries(stream) == [{
        "path": str(report), "description": "The cleaned rows",
        "kind": "file", "bytes": 8, "sha256": digest}]


def test_missing_file_and_directory_are_marked(files):
    _, folder, missing = files
    tool, stream = running_tool()
    tool.output_files([folder, missing])
    assert f"- `{folder}` [directory]\n- `{missing}` [missing]\n" in \
        stream.getvalue()
    assert [(f["kind"], f["bytes"], f["sha256"])
            for f in file_entries(stream)] == [
        ("directory", None, None), ("missing", None, None)]


def test_output_files_accepts_pairs_dicts_and_a_single_path(files):
    report, folder, missing = files
    tool, stream = running_tool()
    tool.output_files([(report, "rows"), {"path": folder,
                                          "description": "plots"}])
    tool.output_files(missing)
    first, second = sections_after_ready(stream)
    assert [(f["path"], f["description"]) for f in first.files] == [
        (str(report), "rows"), (str(folder), "plots")]
    assert [f["path"] for f in second.files] == [str(missing)]


@pytest.mark.parametrize("path", ["", "two\nlines", "cr\rpath", b"bytes"])
def test_output_files_refuses_a_path_that_is_not_one_line(path):
    tool, stream = running_tool()
    with pytest.raises(ValueError):
        tool.output_files([path])
    assert events_of(stream) == [READY]


# --- error() --------------------------------------------------------------

def test_error_shows_title_code_details_and_recovery():
    tool, stream = running_tool()
    tool.error("E_FILE_NOT_FOUND", "Cannot locate input.csv",
               recovery="Check the path or use --input",
               details="Searched in: /data, /input, .")
    assert stream.getvalue().endswith(
        "## Error: Cannot locate input.csv\n"
        "**Code**: E_FILE_NOT_FOUND\n"
        "**Details**: Searched in: /data, /input, .\n"
        "**Recovery**: Check the path or use --input\n\n")
    assert sections_after_ready(stream) == [Error(
        "Cannot locate input.csv", "E_FILE_NOT_FOUND",
        "Searched in: /data, /input, .", "Check the path or use --input")]


def test_error_leaves_the_tool_running():
    tool, stream = running_tool()
    tool.error("E_SOFT", "One row skipped").progress(100).stop()
    assert tool.state is ToolState.COMPLETE
    assert [e.type for e in sections_after_ready(stream)] == [
        "error", "progress", "status"]


def test_error_takes_an_exception_as_its_message():
    tool, stream = running_tool()
    tool.error("E_IO", OSError("disk full"))
    assert sections_after_ready(stream) == [Error("disk full", "E_IO")]


@pytest.mark.parametrize("code", ["", "has space", "E_X\n", "E_X\n## Y",
                                  "x" * 65, "E`X"])
def test_error_refuses_a_malformed_code(code):
    tool, stream = running_tool()
    with pytest.raises(ValueError, match="E_FILE_NOT_FOUND"):
        tool.error(code, "m")
    assert events_of(stream) == [READY]


def test_error_refuses_non_string_fields():
    tool, _ = running_tool()
    for call in (lambda: tool.error(1, "m"), lambda: tool.error("E", 1),
                 lambda: tool.error("E", "m", recovery=1),
                 lambda: tool.error("E", "m", details=1)):
        with pytest.raises(TypeError):
            call()


def test_context_manager_ends_failed_after_an_error():
    # A documented choice: an error() the tool did not recover from with an
    # explicit stop() makes a normal exit from `with` end as Failed, and a
    # run that ends Failed ends the process with 1, as under acor.
    tool, stream = new_tool()
    with pytest.raises(SystemExit) as exited:
        with tool:
            tool.error("E_INPUT", "Bad row")
    assert exited.value.code == 1
    assert tool.state is ToolState.FAILED
    assert sections_after_ready(stream) == [Error("Bad row", "E_INPUT"),
                                            FAILED]


# --- input_needed() -------------------------------------------------------

def test_input_needed_emits_the_section_and_exits_with_code_3():
    tool, stream = running_tool()
    with pytest.raises(SystemExit) as exited:
        tool.input_needed("Which key column?")
    assert exited.value.code == exitcodes.INPUT_NEEDED == 3
    assert tool.state is ToolState.INPUT_NEEDED
    assert stream.getvalue().endswith("## Input Needed\nWhich key column?\n\n")


def test_input_needed_flushes_directives_first():
    tool, stream = running_tool()
    tool.ai_directive("Ask the user")
    with pytest.raises(SystemExit):
        tool.input_needed("Which key column?")
    assert sections_after_ready(stream) == [AIDirective(["Ask the user"]),
                                            InputNeeded("Which key column?")]


def test_input_needed_refuses_a_non_string():
    tool, stream = running_tool()
    with pytest.raises(TypeError):
        tool.input_needed(None)
    assert tool.state is ToolState.RUNNING


def test_input_needed_process_exits_3_and_transcript_ends_with_it(tmp_path):
    proc = run_script(tmp_path, """
        from acor import AcorTool
        with AcorTool("dedupe") as tool:
            tool.progress(10, "Reading")
            tool.ai_directive("Pick the key the user wants")
            tool.input_needed("Key column required.\\n"
                              "Run: acor dedupe --key <col>")
            print("unreachable")
    """)
    assert proc.returncode == 3, proc.stderr
    assert parse(proc.stdout) == [
        READY, Progress(10, "Reading"),
        AIDirective(["Pick the key the user wants"]),
        InputNeeded("Key column required.\nRun: acor dedupe --key <col>")]
    assert proc.stdout.endswith("Run: acor dedupe --key <col>\n\n")
    assert proc.stderr == ""


# --- ai_directive() and suggestions() -------------------------------------

def test_directives_accumulate_into_one_section_before_the_final_status():
    tool, stream = running_tool()
    tool.ai_directive("Fix config.json")
    tool.progress(50)
    tool.ai_directive("Create .env\nwith DATABASE_URL")
    tool.stop()
    assert sections_after_ready(stream) == [
        Progress(50), AIDirective(["Fix config.json",
                                   "Create .env\nwith DATABASE_URL"]),
        COMPLETE]
    assert stream.getvalue().count("## AI Directive") == 1


def test_directives_are_written_only_at_stop():
    tool, stream = running_tool()
    tool.ai_directive("Later")
    assert "AI Directive" not in stream.getvalue()


def test_no_directive_section_without_directives():
    tool, stream = running_tool()
    tool.stop()
    assert events_of(stream) == [READY, COMPLETE]


def test_directive_must_be_a_string():
    tool, _ = running_tool()
    with pytest.raises(TypeError):
        tool.ai_directive(["a list"])


def test_suggestions_without_a_title():
    tool, stream = running_tool()
    tool.suggestions(["Plot the trend", "Email the team"])
    assert stream.getvalue().endswith(
        "## Suggestions\n- Plot the trend\n- Email the team\n\n")
    assert sections_after_ready(stream) == [
        Suggestions(["Plot the trend", "Email the team"])]


def test_suggestions_with_a_title():
    tool, stream = running_tool()
    tool.suggestions(("Plot the trend",), title="Next steps")
    assert "## Suggestions: Next steps\n- Plot the trend\n" in \
        stream.getvalue()
    assert sections_after_ready(stream) == [
        Suggestions(["Plot the trend"], "Next steps")]


def test_suggestions_refuse_a_bare_string():
    tool, stream = running_tool()
    with pytest.raises(TypeError, match="list"):
        tool.suggestions("Plot the trend")
    assert events_of(stream) == [READY]


def test_suggestions_refuse_non_string_items_and_title():
    tool, _ = running_tool()
    with pytest.raises(TypeError):
        tool.suggestions(["ok", 2])
    with pytest.raises(TypeError):
        tool.suggestions(["ok"], title=3)


# --- heartbeat() ----------------------------------------------------------

def test_heartbeat_unframed_is_an_html_comment_the_parser_drops():
    tool, stream = running_tool()
    tool.heartbeat().stop()
    assert f"\n{HEARTBEAT_LINE}\n" in stream.getvalue()
    assert events_of(stream) == [READY, COMPLETE]


def test_heartbeat_framed_is_a_heartbeat_mark():
    stream = io.StringIO()
    tool = AcorTool("t", stream=stream, frame_token=TOKEN).start()
    tool.heartbeat()
    mark = f"\x1eacor:{TOKEN}\x1e"
    assert stream.getvalue().endswith(f"{mark}end\n{mark}heartbeat\n")


# --- the context manager, as a process ------------------------------------

def test_context_manager_normal_exit_ends_complete(tmp_path):
    proc = run_script(tmp_path, """
        from acor import AcorTool
        with AcorTool("t") as tool:
            tool.progress(50)
    """)
    assert proc.returncode == 0
    assert parse(proc.stdout) == [READY, Progress(50), COMPLETE]


def test_context_manager_exception_reports_error_then_failed(tmp_path):
    proc = run_script(tmp_path, """
        from acor import AcorTool

        def load():
            raise ValueError("bad row 7")

        with AcorTool("t") as tool:
            tool.ai_directive("Check the input")
            load()
    """)
    assert proc.returncode == 1
    ready, error, directive, failed = parse(proc.stdout)
    assert (ready, directive, failed) == (
        READY, AIDirective(["Check the input"]), FAILED)
    assert error.code == "E_UNHANDLED_EXCEPTION"
    assert error.title == "ValueError: bad row 7"
    assert error.details.startswith("raised at ")
    assert error.details.endswith('tool.py:5 in load: raise ValueError("bad '
                                  'row 7")')
    assert "report this to the tool's author" in error.recovery


def test_a_crash_in_the_standard_library_points_at_the_tools_line(tmp_path):
    proc = run_script(tmp_path, """
        import os
        from acor import AcorTool

        def size(path):
            return os.path.getsize(path)

        with AcorTool("t") as tool:
            size("no/such/file.csv")
    """)
    assert proc.returncode == 1
    error = parse(proc.stdout)[1]
    assert error.code == "E_UNHANDLED_EXCEPTION"
    assert error.title.startswith("FileNotFoundError: [Errno 2]")
    where, innermost = error.details.split("\n")
    assert where == (f"raised at {tmp_path / 'tool.py'}:6 in size: "
                     f"return os.path.getsize(path)")
    assert innermost.startswith("innermost frame: <frozen genericpath>:")


def test_a_missing_module_is_a_missing_dependency_with_its_install(tmp_path):
    proc = run_script(tmp_path, """
        from acor import AcorTool
        with AcorTool("t") as tool:
            import cv2.sub
    """)
    assert proc.returncode == 1
    error = parse(proc.stdout)[1]
    assert error.code == "E_MISSING_DEPENDENCY"
    assert error.title == "ModuleNotFoundError: No module named 'cv2'"
    assert error.details.endswith(f"interpreter: {sys.executable}")
    assert error.recovery.endswith(
        f"{sys.executable} -m pip install opencv-python")


def crash_report(raise_it, folder):
    from acor import crash
    try:
        raise_it()
    except Exception as exc:
        return crash.report(exc, exc.__traceback__, folder)


def test_missing_dependency_next_is_pip_for_the_running_interpreter(tmp_path):
    def load():
        raise ModuleNotFoundError("No module named 'bs4'", name="bs4")
    report = crash_report(load, tmp_path)
    assert report["next"] == [sys.executable, "-m", "pip", "install",
                              "beautifulsoup4"]
    assert report["code"] == "E_MISSING_DEPENDENCY"


def test_missing_dependency_uses_the_package_name_pip_knows(tmp_path):
    def load():
        raise ModuleNotFoundError("No module named 'cv2'", name="cv2")
    report = crash_report(load, tmp_path)
    assert report["next"][-1] == "opencv-python"


def test_a_name_missing_from_an_installed_package_means_upgrade(tmp_path):
    def load():
        from json import no_such_name  # noqa: F401
    report = crash_report(load, tmp_path)
    assert report["code"] == "E_UNHANDLED_EXCEPTION"  # json: stdlib
    assert "another version of Python" in report["recovery"]
    assert "next" not in report
    def load_installed():
        from pytest import no_such_name  # noqa: F401
    report = crash_report(load_installed, tmp_path)
    assert report["next"] == [sys.executable, "-m", "pip", "install",
                              "--upgrade", "pytest"]


def test_an_import_of_the_tools_own_module_is_a_plain_crash(tmp_path):
    (tmp_path / "helpers.py").write_text("X = 1\n")
    proc = run_script(tmp_path, """
        from acor import AcorTool
        with AcorTool("t") as tool:
            from helpers import Y
    """)
    assert parse(proc.stdout)[1].code == "E_UNHANDLED_EXCEPTION"


def test_context_manager_exception_propagates_with_its_traceback(tmp_path):
    proc = run_script(tmp_path, """
        from acor import AcorTool
        with AcorTool("t") as tool:
            raise ValueError("bad row 7")
    """)
    assert proc.returncode == 1
    assert proc.stderr.startswith("Traceback (most recent call last):")
    assert proc.stderr.endswith("ValueError: bad row 7\n")


def test_context_manager_keyboard_interrupt_ends_cancelled(tmp_path):
    proc = run_script(tmp_path, """
        from acor import AcorTool
        with AcorTool("t") as tool:
            tool.progress(10)
            raise KeyboardInterrupt
    """)
    assert proc.returncode == -signal.SIGINT  # Python's own SIGINT exit
    assert parse(proc.stdout) == [READY, Progress(10), CANCELLED]
    # Reported as Cancelled: no traceback after it (issue 32, point 3).
    assert proc.stderr == ""


def test_a_cancelled_runs_interrupt_still_reaches_the_tools_own_handler(
        tmp_path):
    proc = run_script(tmp_path, """
        import sys
        from acor import AcorTool
        try:
            with AcorTool("t") as tool:
                raise KeyboardInterrupt
        except KeyboardInterrupt:
            print("cleaned up", file=sys.stderr)
        raise ValueError("after")
    """)
    assert parse(proc.stdout) == [READY, CANCELLED]
    assert proc.stderr.startswith("cleaned up\nTraceback")
    assert proc.stderr.endswith("ValueError: after\n")  # others still print


@pytest.mark.parametrize("code, returncode, error_code, title", [
    ("0", 0, None, None), ("None", 0, None, None),
    ("2", 2, "E_EXIT_2", "The tool exited with code 2"),
    ("'fatal: no input'", 1, "E_EXIT_1", "fatal: no input"),
])
def test_context_manager_system_exit_ends_by_exit_code(
        tmp_path, code, returncode, error_code, title):
    proc = run_script(tmp_path, f"""
        import sys
        from acor import AcorTool
        with AcorTool("t") as tool:
            sys.exit({code})
    """)
    assert proc.returncode == returncode
    events = parse(proc.stdout)
    if error_code is None:
        assert events == [READY, COMPLETE]
    else:
        assert events[0] == READY and events[-1] == FAILED
        assert (events[1].code, events[1].title) == (error_code, title)
        assert events[1].details.startswith(f"exit code: {returncode}\n"
                                            "raised at ")


def test_context_manager_after_explicit_stop_adds_nothing(tmp_path):
    proc = run_script(tmp_path, """
        from acor import AcorTool, ToolState
        with AcorTool("t") as tool:
            tool.stop(ToolState.CANCELLED)
    """)
    assert proc.returncode == 0
    assert parse(proc.stdout) == [READY, CANCELLED]


# --- threads --------------------------------------------------------------

def test_sixteen_threads_write_whole_sections_into_a_pipe(tmp_path):
    proc = run_script(tmp_path, """
        import threading
        from acor import AcorTool

        THREADS, EACH = 16, 40
        barrier = threading.Barrier(THREADS)

        def work(tool, n):
            barrier.wait()
            for i in range(EACH):
                payload = "\\n".join(f"{n}:{i}:{line}:" + "x" * 300
                                     for line in range(40))
                tool.output(payload)
                tool.progress(i % 100, f"thread {n} step {i}")

        # Every progress written: this test is about whole sections.
        with AcorTool("t", progress_interval=0) as tool:
            threads = [threading.Thread(target=work, args=(tool, n))
                       for n in range(THREADS)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
    """, env={"PYTHONUNBUFFERED": "1"})  # each write goes to the pipe
    assert proc.returncode == 0, proc.stderr
    events = parse(proc.stdout)
    assert events[0] == READY and events[-1] == COMPLETE
    outputs = [e for e in events if e.type == "output"]
    progress = [e for e in events if e.type == "progress"]
    expected = {
        "\n".join(f"{n}:{i}:{line}:" + "x" * 300 for line in range(40))
        for n in range(16) for i in range(40)}
    assert len(outputs) == 16 * 40 and {e.text for e in outputs} == expected
    # Progress is the latest: a call another thread overtakes between
    # storing and writing is replaced by the newer one (how often depends
    # on the scheduler). Each written is whole, once, and one of the calls.
    messages = [e.message for e in progress]
    assert len(set(messages)) == len(messages) and set(messages) <= {
        f"thread {n} step {i}" for n in range(16) for i in range(40)}
    assert len(events) == 2 + len(outputs) + len(progress)


# --- where writes go ------------------------------------------------------

def test_writes_go_to_sys_stdout_as_it_is_at_each_call():
    first, second = io.StringIO(), io.StringIO()
    tool = AcorTool("t", frame_token=None)
    with contextlib.redirect_stdout(first):
        tool.start()
    with contextlib.redirect_stdout(second):
        tool.progress(5).stop()
    assert parse(first.getvalue()) == [READY]
    assert parse(second.getvalue()) == [Progress(5), COMPLETE]


def test_monkeypatched_stdout_receives_the_sections(monkeypatch):
    buffer = io.StringIO()
    monkeypatch.setattr(sys, "stdout", buffer)
    AcorTool("t", frame_token=None).start().output("hi").stop()
    assert parse(buffer.getvalue()) == [READY, Output("hi"), COMPLETE]


def test_a_stream_given_to_the_tool_wins_over_sys_stdout(monkeypatch):
    stdout, own = io.StringIO(), io.StringIO()
    monkeypatch.setattr(sys, "stdout", stdout)
    AcorTool("t", stream=own, frame_token=None).start().stop()
    assert stdout.getvalue() == ""
    assert parse(own.getvalue()) == [READY, COMPLETE]


# --- name and version -----------------------------------------------------

NAME_SCRIPT = """
    from acor import AcorTool
    tool = AcorTool()
    print(tool.name, tool.version)
"""


def test_name_and_version_come_from_the_manifest_beside_the_script(tmp_path):
    folder = tmp_path / "tools" / "cleaner"
    folder.mkdir(parents=True)
    (folder / "manifest.json").write_text(
        json.dumps({"name": "csv-cleaner", "version": "2.1.0"}))
    proc = run_script(tmp_path, NAME_SCRIPT, folder=folder, name="main.py")
    assert proc.stdout == "csv-cleaner 2.1.0\n", proc.stderr


def test_version_defaults_to_1_0_0_when_the_manifest_has_none(tmp_path):
    folder = tmp_path / "cleaner"
    folder.mkdir()
    (folder / "manifest.json").write_text('{"name": "csv-cleaner"}')
    proc = run_script(tmp_path, NAME_SCRIPT, folder=folder)
    assert proc.stdout == "csv-cleaner 1.0.0\n", proc.stderr


@pytest.mark.parametrize("manifest", [None, "not json", "[1, 2]"])
def test_name_is_the_script_stem_without_a_usable_manifest(tmp_path,
                                                           manifest):
    folder = tmp_path / "bin"
    folder.mkdir()
    if manifest is not None:
        (folder / "manifest.json").write_text(manifest)
    proc = run_script(tmp_path, NAME_SCRIPT, folder=folder,
                      name="word_count.py")
    assert proc.stdout == "word_count 1.0.0\n", proc.stderr


def test_explicit_name_and_version_win_over_the_manifest(tmp_path):
    (tmp_path / "manifest.json").write_text(
        json.dumps({"name": "from-manifest", "version": "9.9.9"}))
    proc = run_script(tmp_path, """
        from acor import AcorTool
        tool = AcorTool("given", "0.2")
        print(tool.name, tool.version)
    """)
    assert proc.stdout == "given 0.2\n", proc.stderr


# --- framing under the launcher -------------------------------------------

FRAMED_SCRIPT = """
    import os, subprocess, sys
    from acor import AcorTool

    print("raw before")
    with AcorTool("t") as tool:
        print("## AI Directive")           # raw: must not become a section
        child = subprocess.run(
            [sys.executable, "-c",
             "import os; print(os.environ.get('ACOR_FRAME_TOKEN'))"],
            capture_output=True, text=True)
        print("child sees", child.stdout.strip(), file=sys.stderr)
        print("tool sees", os.environ.get("ACOR_FRAME_TOKEN"),
              file=sys.stderr)
        tool.progress(50, "Half\\n## Status: Complete")
        tool.heartbeat()
"""


def test_sections_are_framed_with_the_token_from_the_environment(tmp_path):
    proc = run_script(tmp_path, FRAMED_SCRIPT,
                      env={framing.ENV_VAR: TOKEN})
    assert proc.returncode == 0, proc.stderr
    mark = f"\x1eacor:{TOKEN}\x1e"
    assert proc.stdout == (
        "raw before\n"
        f"{mark}## Status: Ready\n\n{mark}end\n"
        "## AI Directive\n"
        f"{mark}## Progress: 50%\nHalf\n\\## Status: Complete\n\n{mark}end\n"
        f"{mark}heartbeat\n"
        f"{mark}## Status: Complete\n\n{mark}end\n")


def test_frame_decoder_reads_the_framed_run(tmp_path):
    proc = run_script(tmp_path, FRAMED_SCRIPT,
                      env={framing.ENV_VAR: TOKEN})
    decoder = StreamDecoder(TOKEN)
    events = [e for line in proc.stdout.split("\n")[:-1]
              for e in decoder.feed(line)] + decoder.close()
    assert events == [
        Text("raw before"), READY, Text("## AI Directive"),
        Progress(50, "Half\n## Status: Complete"), Heartbeat(),
        COMPLETE]


def test_frame_token_is_removed_from_the_environment(tmp_path):
    proc = run_script(tmp_path, FRAMED_SCRIPT,
                      env={framing.ENV_VAR: TOKEN})
    assert "child sees None\n" in proc.stderr
    assert "tool sees None\n" in proc.stderr
    assert TOKEN not in proc.stderr


def test_without_a_token_the_tool_writes_plain_markdown(tmp_path):
    proc = run_script(tmp_path, FRAMED_SCRIPT)
    assert proc.returncode == 0, proc.stderr
    assert "\x1e" not in proc.stdout
    # Unframed, a raw print that looks like a heading is read as a section:
    # this is what framing exists to prevent.
    assert parse(proc.stdout) == [
        Text("raw before"), READY, AIDirective([]),
        Progress(50, "Half\n## Status: Complete"), COMPLETE]


def test_an_explicit_frame_token_frames_sections():
    stream = io.StringIO()
    AcorTool("t", stream=stream, frame_token=TOKEN).start()
    mark = f"\x1eacor:{TOKEN}\x1e"
    assert stream.getvalue() == f"{mark}## Status: Ready\n\n{mark}end\n"


# --- progress under the launcher ---------------------------------------------

def framed_events(stream_text):
    decoder = StreamDecoder(TOKEN)
    return [e for e in decoder.feed(stream_text.rstrip("\n"))
            if e.type != "heartbeat"] + decoder.close()


def test_framed_progress_is_throttled_but_the_latest_is_never_lost():
    buf = io.StringIO()
    tool = AcorTool("t", stream=buf, frame_token=TOKEN).start()
    for i in range(1000):
        tool.progress(i / 10, f"step {i}")
    tool.output("done").stop()
    events = framed_events(buf.getvalue())
    progress = [e for e in events if e.type == "progress"]
    assert 1 <= len(progress) < 100
    assert progress[-1].message == "step 999"  # written before Output
    assert [e.type for e in events[-2:]] == ["output", "status"]


def test_a_held_progress_goes_out_from_a_timer_while_the_tool_is_silent():
    buf = io.StringIO()
    tool = AcorTool("t", stream=buf, frame_token=TOKEN).start()
    tool.progress(10, "first").progress(20, "held")
    time.sleep(tool_module.PROGRESS_INTERVAL * 5)
    progress = [e for e in framed_events(buf.getvalue())
                if e.type == "progress"]
    assert [e.message for e in progress] == ["first", "held"]
    tool.stop()

"""The pytest plugin: `acor_run` runs a tool through the runner, in the
test process, and hands back the RunResult."""

import json
import subprocess
import sys
import textwrap

import pytest

pytest_plugins = ["pytester"]

TOOL = """\
import sys
from acor import AcorTool

with AcorTool() as tool:
    args = sys.argv[1:]
    print("a raw line")
    sys.stderr.write("to stderr\\n")
    tool.progress(50, "Halfway")
    if args[:1] == ["--fail"]:
        tool.error("E_ASKED", "Failing as asked")
        sys.exit(1)
    tool.output({"argv": args})
"""


def _pytest_in(pytester, *args):
    """An inline pytest session without the plugins it does not need
    (hypothesis and xdist cost half a second a session)."""
    return pytester.runpytest("-p", "no:xdist", "-p", "no:hypothesispytest",
                              "-p", "no:cacheprovider", *args)


@pytest.fixture
def tools(pytester, monkeypatch, tmp_path):
    """A project in pytester's directory with the tool `echoargs`."""
    monkeypatch.setenv("ACOR_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("ACOR_CONFIG", raising=False)
    folder = pytester.path / "tools" / "echoargs"
    folder.mkdir(parents=True)
    (folder / "echoargs.py").write_text(TOOL)
    (folder / "manifest.json").write_text(json.dumps({
        "name": "echoargs", "description": "Echo its argv",
        "entry": "echoargs.py",
        "args": {"type": "object", "additionalProperties": False,
                 "required": ["word"], "properties": {
                     "word": {"type": "string", "x-acor": {"position": 0}},
                     "times": {"type": "integer", "minimum": 1,
                               "x-acor": {"flag": "--times"}}}}}))
    return folder


def test_the_plugin_is_registered(pytester):
    result = _pytest_in(pytester, "--fixtures")
    result.stdout.fnmatch_lines(["acor_run*", "*Run a tool through acor*"])


def test_loading_the_plugin_imports_nothing_heavy(tmp_path):
    # It loads in every pytest session of anyone who installs acor.
    code = textwrap.dedent("""\
        import sys
        import pytest
        before = set(sys.modules)
        import acor.cli.pytest_plugin
        print(" ".join(sorted(set(sys.modules) - before)))
    """)
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path,
                          capture_output=True, text=True, check=True)
    assert set(proc.stdout.split()) <= {"acor", "acor.cli",
                                        "acor.cli.pytest_plugin"}


def test_argv_and_args_together_are_a_type_error(pytester):
    pytester.makepyfile("""
        import pytest
        def test_both(acor_run):
            with pytest.raises(TypeError, match="not both"):
                acor_run("echoargs", "x", args={"word": "x"})
    """)
    _pytest_in(pytester, ).assert_outcomes(passed=1)


def test_a_run_gives_the_whole_result(pytester, tools):
    pytester.makepyfile("""
        from acor.events import Progress, Text

        def test_echo(acor_run):
            result = acor_run("echoargs", "--", "-x", "two words")
            assert result.exit_code == 0
            assert result.state == "complete"
            assert result.data == {"argv": ["--", "-x", "two words"]}
            assert result.of("progress") == [Progress(50, "Halfway")]
            assert result.of(Text)[0].text == "a raw line"
            assert result.errors == []
            assert "to stderr" in result.stderr
            assert 0 < result.duration < 30

        def test_failure(acor_run):
            result = acor_run("echoargs", "--fail", timeout=20)
            assert (result.exit_code, result.state) == (1, "failed")
            assert [e.code for e in result.errors] == ["E_ASKED"]
    """)
    _pytest_in(pytester, ).assert_outcomes(passed=2)


def test_args_are_validated_and_converted_as_acor_call_does(pytester, tools):
    pytester.makepyfile("""
        def test_values(acor_run):
            result = acor_run("echoargs", args={"word": "-w", "times": 2})
            assert result.data == {"argv": ["--times", "2", "--", "-w"]}

        def test_by_path(acor_run):
            result = acor_run("tools/echoargs", args={"word": "w"})
            assert result.data == {"argv": ["--", "w"]}

        def test_every_violation_is_an_e_usage_result(acor_run):
            result = acor_run("echoargs", args={"times": 0, "colour": "red"})
            assert (result.exit_code, result.state, result.error_code) == (
                2, "failed", "E_USAGE")
            error = result.errors[0]
            assert "Invalid arguments for 'echoargs'" in error.title
            for name in ("word", "times", "colour"):
                assert name in error.details
            assert [e.type for e in result.events] == ["error", "status"]
    """)
    result = _pytest_in(pytester, )
    result.assert_outcomes(passed=3)


def test_an_unknown_tool_is_a_result_not_an_exception(pytester, tools):
    pytester.makepyfile("""
        def test_unknown(acor_run):
            result = acor_run("no-such-tool")
            assert result.exit_code == 2
            assert result.errors[0].code == "E_UNKNOWN_TOOL"
    """)
    _pytest_in(pytester, ).assert_outcomes(passed=1)


def test_a_path_acor_neither_loads_nor_skips_fails_the_test_plainly(
        pytester, tools):
    # A hidden file in a tools dir is no tool and no skipped manifest:
    # discovery passes over it, so there is no reason of a skip to show.
    (tools.parent / ".hidden.json").write_text(json.dumps({
        "name": "hidden", "description": "Hidden", "command": ["true"]}))
    pytester.makepyfile("""
        def test_hidden(acor_run):
            acor_run("tools/.hidden.json")
    """)
    result = _pytest_in(pytester)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*acor_run: acor does not load "
                                 "*tools/.hidden.json as a tool*"])
    result.stdout.no_fnmatch_line("*AttributeError*")

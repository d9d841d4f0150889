"""A tool's help and an approval's reason as a person reads them at a
terminal (issue 38, items 5 and 4): `acor TOOL --help` shows the help
and nothing else (no Ready, no Complete); an approval says its reason
once, in the request that says what is approved. In a real
pseudo-terminal at 120 and 60 columns and with NO_COLOR; piped, both are
what agents read today."""

import subprocess

import pytest

from conftest import ACOR_SCRIPT
from sample_tools import REMOVER, REMOVER_ARGS
from terminal import Terminal

SCREENS = [pytest.param(120, {}, id="120"), pytest.param(60, {}, id="60"),
           pytest.param(80, {"NO_COLOR": "1"}, id="no-color"),
           pytest.param(100, {"TERM": "dumb"}, id="dumb")]

HELPED = """\
from acor import AcorTool
with AcorTool() as tool:
    args = tool.parse_args()
    tool.output(f"ran with {args.count}")
"""
HELPED_ARGS = {"type": "object", "properties": {
    "count": {"type": "integer", "description": "how many times",
              "x-acor": {"flag": "--count"}}}}


def piped(project, *args):
    return subprocess.run([ACOR_SCRIPT, *args], cwd=project.root,
                          env=project.env, capture_output=True, text=True,
                          timeout=60, stdin=subprocess.DEVNULL)


@pytest.fixture
def helped(project):
    project.add_tool("helped", HELPED, args=HELPED_ARGS)
    return project


@pytest.mark.parametrize("columns,env", SCREENS)
@pytest.mark.parametrize("asked", ["--help", "-h"])
def test_a_tools_help_at_a_terminal_is_the_help_alone(
        helped, columns, env, asked):
    term = Terminal(helped, "helped", asked, columns=columns, env=env)
    assert term.finish() == 0, term.text
    lines = [line for line in term.screen if line]
    assert lines[0] == "usage: acor helped [--count COUNT]", lines
    assert lines[-1].split() == ["--count", "COUNT", "how", "many", "times"]
    assert not any("Complete" in line or "Ready" in line for line in lines)
    assert "●" not in term.plain


def test_a_refused_command_line_still_ends_failed(helped):
    term = Terminal(helped, "helped", "--count", "many", columns=100)
    assert term.finish() == 2
    assert [line for line in term.screen if line][-1].startswith("● Failed")


def test_a_run_that_gives_a_value_after_dashes_ends_complete(project):
    echo = project.add_wrapped("echoes", ["echo"])
    assert echo.exists()
    term = Terminal(project, "echoes", "--", "--help", columns=100)
    assert term.finish() == 0
    lines = [line for line in term.screen if line]
    assert lines[-1].startswith("● Complete in "), lines


def test_a_tools_help_piped_is_unchanged(helped):
    done = piped(helped, "helped", "--help")
    assert done.returncode == 0
    assert done.stdout.startswith("## Status: Ready\n\n## Output\n"
                                  "usage: acor helped")
    assert done.stdout.endswith("\n## Status: Complete\n\n")
    rich = piped(helped, "--format", "rich", "helped", "--help")
    assert rich.stdout.startswith("● Ready  helped\nusage: acor helped")
    assert rich.stdout.endswith("● Complete  helped\n")


@pytest.fixture
def remover(project):
    project.add_tool("remover", REMOVER, args=REMOVER_ARGS)
    (project.root / "victim").write_text("precious")
    return project


@pytest.mark.parametrize("columns,env", SCREENS)
def test_an_approval_says_its_reason_once(remover, columns, env):
    term = Terminal(remover, "remover", "victim", columns=columns, env=env)
    term.prompted("yes (boolean) Delete it for good [y/n]: ")
    shown = term.plain
    assert shown.count("Delete victim?") == 1, shown
    # In the request, which says what is approved; the panel above it
    # still names what is asked.
    assert "  reason:  Delete victim?\n" in shown
    assert shown.index("yes (boolean)") < shown.index("asks a person to")
    term.type("n")
    assert term.finish() == 0
    assert (remover.root / "victim").read_text() == "precious"


def test_not_asked_the_panel_keeps_the_reason(remover):
    term = Terminal(remover, "--no-input", "remover", "victim",
                    columns=100)
    assert term.finish() == 3
    panel = " ".join(line.strip("│ ") for line in term.screen
                     if line.startswith("│"))
    assert "Delete victim?" in panel
    assert "reason:" not in term.plain
    # What the person reads is written for them, not the agent's hand-over
    assert "Do not answer" not in term.plain, term.plain
    assert "Needs your input: run acor remover victim without --no-input" \
        in " ".join(term.plain.split()), term.plain


def test_an_approval_piped_is_unchanged(remover):
    done = piped(remover, "remover", "victim")
    assert done.returncode == 3
    assert "## Input Needed\nDelete victim?\n" in done.stdout

"""A run as a person watches it at a terminal (issue 38, items 2, 3 and
8): one live line with a spinner, the bar, the latest checkpoint, the
time elapsed and left; the 100% bar before the result; the tool's stderr
dimmed above the final status, which is the last line; plain lines where
the terminal cannot redraw. In a real pseudo-terminal at 120 and 60
columns, with NO_COLOR and TERM=dumb."""

import re

import pytest

from terminal import Terminal

STEPS = """\
import sys, time
from acor import AcorTool
with AcorTool() as tool:
    tool.session("s1")
    for i in range(30):
        tool.progress(100 * (i + 1) // 30, f"step ({i + 1}/30)")
        tool.checkpoint(f"c{i}", {"i": i})
        time.sleep(0.05)
    print("careful: a warning", file=sys.stderr)
    tool.output("the result")
"""

SILENT = """\
import time
from acor import AcorTool
with AcorTool() as tool:
    time.sleep(1.5)
    tool.output("the result")
"""

SCREENS = [pytest.param(120, {}, id="120"), pytest.param(60, {}, id="60"),
           pytest.param(80, {"NO_COLOR": "1"}, id="no-color"),
           pytest.param(100, {"TERM": "dumb"}, id="dumb")]
FINAL = re.compile(r"^● Complete in \d+\.\d s  steps$")


def watch(project, tool, columns, env):
    term = Terminal(project, tool, columns=columns, env=env)
    assert term.finish() == 0
    return term


@pytest.mark.parametrize("columns,env", SCREENS)
def test_a_long_run_is_one_line_then_its_result_then_its_status(
        project, columns, env):
    project.add_tool("steps", STEPS)
    term = watch(project, "steps", columns, env)
    lines = [line for line in term.screen if line]
    assert FINAL.match(lines[-1]), lines
    # The bar at 100% (one line), then the result, then the stderr and
    # the checkpoints summed up, then the final status.
    full = [i for i, line in enumerate(lines) if "100%" in line]
    assert len(full) == 1, lines
    result = lines.index("the result")
    assert full[0] < result
    warning = lines.index("careful: a warning")
    assert warning < len(lines) - 1
    assert lines[-2] == "Checkpoint c29 (30 in this run)"
    # No line for each checkpoint, no Ready at a terminal.
    assert not any(re.fullmatch(r"Checkpoint c\d+", line) for line in lines)
    assert not any("Ready" in line for line in lines)
    assert all(len(line) <= columns for line in lines)
    if env.get("TERM") == "dumb":
        assert "\x1b[" not in term.text  # nothing a dumb terminal cannot do
        assert lines[full[0]].startswith("steps  100%  30/30  step")
    else:
        assert "ETA " in term.plain  # once the progress gave a rate
        assert "⟳ c" in lines[full[0]]


@pytest.mark.parametrize("columns,env", SCREENS)
def test_silent_work_shows_a_sign_of_life_and_the_time(
        project, columns, env):
    project.add_tool("quiet", SILENT)
    term = watch(project, "quiet", columns, env)
    lines = [line for line in term.screen if line]
    assert lines[-2:][0] == "the result"
    assert re.match(r"^● Complete in \d+\.\d s  quiet$", lines[-1])
    # While it worked: the tool and the time elapsed (the live line goes
    # away at the end: it showed no progress).
    assert re.search(r"quiet .*0:0\d", term.plain)
    if env.get("TERM") != "dumb":
        assert not any(line.startswith(("⠋", "⠙", "⠹", "⠸", "⠼", "⠴",
                                        "⠦", "⠧", "⠇", "⠏"))
                       for line in lines)


ADVISES = """\
from acor import AcorTool
with AcorTool() as tool:
    tool.status("working", "thinking")
    tool.ai_directive("Summarise the result for the user")
    tool.suggestions(["try --fast"], title="Next")
    tool.output("the result")
"""


def test_what_is_for_the_agent_is_dimmed_and_nothing_is_blue(project):
    project.add_tool("advises", ADVISES)
    term = watch(project, "advises", 100,
                 {"NO_COLOR": None, "TERM": "xterm-256color"})
    lines = [line for line in term.screen if line]
    assert any(line.startswith("╭─ AI Directive (for the agent)")
               for line in lines)
    # Blue (SGR 34, 94, or 256-colour 4 and 12) is hard to read on a
    # dark theme: the person's view uses none.
    assert not re.search(r"\x1b\[(?:[0-9;]*;)?(?:34|94|38;5;(?:4|12))m",
                         term.text)
    assert "\x1b[2m" in term.text  # dim, the directive's style

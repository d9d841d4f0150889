"""What a person sees at a terminal (issue 38): every run and every error
of acor's own commands, in a real pseudo-terminal at 120 and 60 columns,
with NO_COLOR and with TERM=dumb. Piped output is the agents' and stays
as it was (the front door's and the run tests hold it)."""

import re
import subprocess

import pytest

from conftest import ACOR_SCRIPT
from terminal import Terminal

SCREENS = [pytest.param(120, {}, id="120"), pytest.param(60, {}, id="60"),
           pytest.param(80, {"NO_COLOR": "1"}, id="no-color"),
           pytest.param(100, {"TERM": "dumb"}, id="dumb")]

ERRORS = [(("--tiemout", "3", "hello"), "No such option", "--timeout 3"),
          (("show", "helo"), "Unknown tool 'helo'", "acor list"),
          (("sessions", "--clear", "nope"), "No session 'nope'",
           "acor sessions")]


def screen(project, *args, columns=120, env=None):
    term = Terminal(project, *args, columns=columns, env=env)
    code = term.finish()
    return code, term.plain


def panel_lines(text):
    return [line for line in text.splitlines() if line[:1] in "╭│╰"]


@pytest.mark.parametrize("columns,env", SCREENS)
@pytest.mark.parametrize("args,title,fix", ERRORS)
def test_a_built_in_commands_error_is_a_panel_at_a_terminal(
        project, columns, env, args, title, fix):
    code, text = screen(project, *args, columns=columns, env=env)
    assert code == 2
    assert "## Error" not in text and "**Code**" not in text
    lines = panel_lines(text)
    assert lines and lines[0].startswith("╭─ Error E_")
    # The panel is as wide as the terminal, never wider.
    assert {len(line) for line in lines} == {columns}
    body = " ".join(line.strip("│ ") for line in lines[1:-1])
    assert title in body and fix in body
    assert text.rstrip().splitlines()[-1].startswith("● Failed")


def test_a_long_error_keeps_what_to_do_in_the_panel(project):
    """The title is short (the code); the message, however long, is in
    the body, wrapped: the recovery at the end is whole."""
    code, text = screen(project, "--timeout", "1e999", "hello", columns=60)
    assert code == 2
    lines = panel_lines(text)
    assert lines[0].startswith("╭─ Error E_USAGE ─")
    body = " ".join(line.strip("│ ") for line in lines[1:-1])
    assert "as in the command below." in body
    assert "next: acor --timeout 60 hello" in body


@pytest.mark.parametrize("args", [a for a, _, _ in ERRORS])
def test_piped_errors_stay_acor_markdown_on_stdout(project, args):
    done = subprocess.run([ACOR_SCRIPT, *args], cwd=project.root,
                          env=project.env, capture_output=True, text=True,
                          timeout=60)
    assert done.stdout.startswith("## Error: ")
    assert done.stdout.rstrip().endswith("## Status: Failed")
    assert "╭" not in done.stdout + done.stderr


HELLO = """\
from acor import AcorTool
with AcorTool() as tool:
    tool.output("hi")
"""


def panel_body(text):
    return " ".join(line.strip("│ ") for line in panel_lines(text)[1:-1])


@pytest.mark.parametrize("args,meant,next_", [
    (("lst",), "list (a command)", "next: acor list"),
    (("--timeout", "3", "lsit"), "list (a command)",
     "next: acor --timeout 3 list"),
    (("hepl",), "help (a command), hello (a tool)", "next: acor help"),
    (("help", "hepl"), "hello (a tool)", "next: acor help hello"),
    (("help", "lsit"), "list (a command)", "next: acor help list"),
    (("helo", "--loud"), "hello (a tool), help (a command)",
     "next: acor hello --loud")])
def test_a_mistyped_name_at_a_terminal_names_the_tool_or_command_meant(
        project, args, meant, next_):
    project.add_tool("hello", HELLO)
    code, text = screen(project, *args, columns=100)
    assert code == 2
    body = panel_body(text)
    assert f"Did you mean: {meant}?" in body
    assert next_ in body


def test_a_mistyped_subcommand_is_corrected_in_next(project):
    code, text = screen(project, "sessions", "--clera", "x", columns=100)
    assert code == 2
    assert "next: acor sessions --clear x" in panel_body(text)


LONG = ("takes its time over many steps, writing progress and checkpoints "
        "as it goes, so that a person can watch it")


@pytest.mark.parametrize("columns", [120, 60])
def test_acor_list_at_a_terminal_is_a_table_that_fits(project, columns):
    project.add_tool("slow", HELLO, description=LONG)
    project.add_tool("hello", HELLO)
    code, text = screen(project, "list", columns=columns)
    assert code == 0
    lines = [line for line in text.splitlines() if line.strip()]
    assert lines[0].split() == ["TOOL", "VERSION", "KIND", "DESCRIPTION",
                                "FROM"]
    assert all(len(line) <= columns for line in lines)
    # Wrapped at words: every word of the description whole, in order.
    start = lines[0].index("DESCRIPTION")
    end = lines[0].index("FROM")
    cells = " ".join(line[start:end].strip() for line in lines[1:])
    assert LONG in " ".join(cells.split())


def test_doctor_counts_one_problem_as_one(project):
    broken = project.root / "tools" / "broken"
    broken.mkdir()
    (broken / "manifest.json").write_text('{"name": "broken"}')
    done = subprocess.run([ACOR_SCRIPT, "doctor"], cwd=project.root,
                          env=project.env, capture_output=True, text=True,
                          timeout=60)
    assert done.stdout.rstrip().endswith("1 problem found.")


SAVES = """\
from acor import AcorTool
with AcorTool() as tool:
    tool.session("run-42")
    tool.checkpoint("batch-7", {"done": 7})
    tool.output("saved")
"""


@pytest.mark.parametrize("columns", [120, 60])
def test_acor_sessions_at_a_terminal_says_how_long_ago(project, columns):
    project.add_tool("saver", SAVES)
    assert subprocess.run([ACOR_SCRIPT, "saver"], cwd=project.root,
                          env=project.env, capture_output=True,
                          timeout=60).returncode == 0
    code, text = screen(project, "sessions", columns=columns)
    assert code == 0
    lines = [line for line in text.splitlines() if line.strip()]
    assert lines[0].split() == ["TOOL", "SESSION", "STATE", "CHECKPOINT",
                                "SAVED", "COUNT"]
    row = lines[1].split()
    assert row[:4] == ["saver", "run-42", "complete", "batch-7"]
    assert re.fullmatch(r"just now|\d+ (min|h|d) ago", " ".join(row[4:-1]))
    assert all(len(line) <= columns for line in lines)


@pytest.mark.parametrize("args", [("show", "remover"), ("help", "remover")])
@pytest.mark.parametrize("columns", [120, 60])
def test_a_tools_page_at_a_terminal_is_for_its_user(project, args, columns):
    from sample_tools import REMOVER, REMOVER_ARGS
    project.add_tool("remover", REMOVER, args=REMOVER_ARGS,
                     sandbox={"write": ["."]})
    code, text = screen(project, *args, columns=columns)
    assert code == 0
    lines = [line.rstrip() for line in text.splitlines()]
    assert lines[0].startswith("remover 1.0.0  test tool remover")
    assert any(line.startswith("Usage: acor remover") for line in lines)
    header = next(line for line in lines if line.startswith("ARGUMENT"))
    assert header.split()[:2] == ["ARGUMENT", "TYPE"]
    row = next(line for line in lines if line.startswith("<path>"))
    assert "string (required)" in row
    asks = lines.index("Asks a person for")
    assert lines[asks + 1].strip() == "yes (boolean)"
    assert any(line.startswith("Box:") for line in lines)
    assert any(line.startswith("Budget:") for line in lines)
    # What an agent reads is not on a person's page.
    assert "framing:" not in text and '"x-acor"' not in text
    assert all(len(line) <= columns for line in lines)


def test_a_tools_page_piped_is_what_agents_read(project):
    from sample_tools import REMOVER, REMOVER_ARGS
    project.add_tool("remover", REMOVER, args=REMOVER_ARGS)
    done = subprocess.run([ACOR_SCRIPT, "show", "remover"], cwd=project.root,
                          env=project.env, capture_output=True, text=True,
                          timeout=60)
    assert "  framing: " in done.stdout and '"x-acor"' in done.stdout


@pytest.mark.parametrize("columns", [120, 80])
def test_acor_alone_at_a_terminal_fits_a_screen_and_cuts_nothing(
        project, columns):
    project.add_tool("hello", HELLO)
    project.add_tool("slow", HELLO, description=LONG)
    code, text = screen(project, columns=columns)
    assert code == 0
    lines = text.rstrip().splitlines()
    assert len(lines) <= 40
    assert "..." not in text.replace("[ARGS]...", "")  # no description cut
    assert "Commands:" in lines and "Tools:" in lines
    assert any(line.split()[:1] == ["list"] for line in lines)
    assert LONG in " ".join(text.split())  # wrapped, whole


def test_acor_alone_piped_is_the_whole_help(project):
    done = subprocess.run([ACOR_SCRIPT], cwd=project.root, env=project.env,
                          capture_output=True, text=True, timeout=60)
    # click 8.1 writes COMMAND, later versions [COMMAND]: both are its help.
    assert done.stdout.startswith("Usage: acor [OPTIONS] ")
    assert "COMMAND] [ARGS]" in done.stdout.splitlines()[0] or \
        "COMMAND [ARGS]" in done.stdout.splitlines()[0]
    assert "Options:" in done.stdout

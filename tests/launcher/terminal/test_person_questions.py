"""Questions as a person answers them at a terminal (issue 38, item 4):
the panel and each question's line give its choices, default and range;
answers are read one way, with one error style; the command run again
is shown first; a Ctrl-D leaves the prompt line; --no-input says what to
do. In a real pseudo-terminal."""

import pytest

from terminal import Terminal

ASKME = """\
from acor import AcorTool
with AcorTool() as tool:
    args = tool.parse_args()
    missing = {}
    if args.title is None:
        missing["title"] = {"type": "string",
                            "description": "The report's title"}
    if args.format is None:
        missing["format"] = {"type": "string", "enum": ["pdf", "html"],
                             "default": "pdf",
                             "description": "Output format"}
    if args.copies is None:
        missing["copies"] = {"type": "integer", "minimum": 1,
                             "maximum": 9, "description": "How many"}
    if missing:
        tool.input_needed("The report needs a few details", fields=missing)
    tool.output(f"made {args.title!r} as {args.format} x{args.copies}")
"""
ASKME_ARGS = {"type": "object", "properties": {
    "title": {"type": "string", "x-acor": {"flag": "--title"}},
    "format": {"type": "string", "enum": ["pdf", "html"],
               "x-acor": {"flag": "--format"}},
    "copies": {"type": "integer", "minimum": 1, "maximum": 9,
               "x-acor": {"flag": "--copies"}}}}

SURE = """\
from acor import AcorTool
with AcorTool() as tool:
    args = tool.parse_args()
    if not args.sure:
        tool.input_needed("Go ahead?", fields={
            "sure": {"type": "boolean", "description": "Really"}})
    tool.output("went ahead")
"""
SURE_ARGS = {"type": "object", "properties": {
    "sure": {"type": "boolean", "x-acor": {"flag": "--sure"}}}}


@pytest.fixture
def asking(project):
    project.add_tool("askme", ASKME, args=ASKME_ARGS)
    project.add_tool("sure", SURE, args=SURE_ARGS)
    return project


@pytest.mark.parametrize("columns,env", [(120, {}), (60, {}),
                                         (80, {"NO_COLOR": "1"}),
                                         (100, {"TERM": "dumb"})])
def test_each_question_with_its_choices_default_and_range(
        asking, columns, env):
    term = Terminal(asking, "askme", columns=columns, env=env)
    term.prompted("title (string) The report's title: ")
    screen = term.plain
    assert "choices: pdf, html · default: pdf" in screen
    assert "from 1 to 9" in screen
    assert screen.count("The report needs a few details") == 1
    term.type("My report")
    term.prompted("format (string) Output format (pdf, html) [pdf]: ")
    term.type("PDF")  # one choice matches, whatever its case
    term.prompted("copies (integer) How many (from 1 to 9): ")
    term.type("12")
    term.expect("✗ Must be at most 9, not 12.")
    term.prompted("copies (integer) How many (from 1 to 9): ")
    term.type("many")
    term.expect("✗ 'many' is not a whole number.")
    term.prompted("copies (integer) How many (from 1 to 9): ")
    term.type("3")
    assert term.finish() == 0
    lines = [line for line in term.screen if line]
    shown = lines.index("→ running acor askme --title 'My report' "
                        "--format pdf --copies 3")
    assert "made 'My report' as pdf x3" in lines[shown:]
    assert lines[-1].startswith("● Complete in ")


def test_a_wrong_yes_or_no_says_what_counts(asking):
    term = Terminal(asking, "sure", columns=100)
    term.prompted("sure (boolean) Really [y/n]: ")
    term.type("maybe")
    term.expect("✗ Answer yes or no (y, n, true, false, 1, 0 work too).")
    term.prompted("sure (boolean) Really [y/n]: ")
    term.type("Y")
    assert term.finish() == 0
    assert "→ running acor sure --sure" in term.screen
    assert "went ahead" in term.screen


def test_ctrl_d_leaves_the_prompt_line(asking):
    term = Terminal(asking, "sure", columns=100)
    term.prompted("sure (boolean) Really [y/n]: ")
    term.eof()
    assert term.finish() == 3
    said = [line for line in term.screen if "Not answered" in line]
    assert said and said[0].startswith("Not answered: sure was not run")


def test_no_input_tells_a_person_what_to_do(asking):
    term = Terminal(asking, "--no-input", "askme", "--copies", "2",
                    columns=120)
    assert term.finish() == 3
    lines = [line for line in term.screen if line]
    assert "Needs your input: run acor askme --copies 2 without --no-input" \
        in " ".join(lines)
    assert lines[-1] == "● Input needed  askme"

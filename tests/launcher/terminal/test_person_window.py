"""A window resized mid-run (issue 38, item 2): the live line is drawn
again at the new width and nothing of the line drawn at the old width is
left on the screen. In a real pseudo-terminal made narrower while the
tool runs, its screen rendered as tmux shows it, the lines drawn at the
old width rewrapped at the new one (:func:`terminal.wrapped_screen`)."""

from terminal import Terminal

# Works until the test says it may end (a file "go"), so the window is
# resized while it runs however loaded the machine is; writes a line on
# stderr when the test asks (a file "say"): printed above the live line.
LONG = """\
import os, sys, time
from acor import AcorTool
with AcorTool() as tool:
    step = 0
    while not os.path.exists("go"):
        step = min(step + 1, 90)
        tool.progress(step, f"step ({step}/100)")
        if os.path.exists("say"):
            os.remove("say")
            print("resized", file=sys.stderr, flush=True)
        time.sleep(0.05)
    tool.progress(100, "step (100/100)")
    tool.output("the result")
"""


def redrawn(term, times):
    """Wait until the live line was drawn ``times`` more times (each
    redraw erases the line it draws on)."""
    since = len(term.seen)
    term.wait(lambda seen: seen[since:].count(b"\x1b[2K") >= times)


def bars(rows):
    return [row for row in rows if "━" in row]


def test_a_narrower_window_leaves_no_stale_bar(project):
    project.add_tool("long", LONG)
    term = Terminal(project, "long", columns=120)
    term.expect("step")
    redrawn(term, 2)  # the bar drawn whole at 120 columns
    assert len(bars(term.rows)) == 1
    term.resize(60)
    (project.root / "say").write_text("")
    redrawn(term, 3)  # and again at 60, the tool running on
    term.expect("resized")
    mid_run = term.rows
    assert len(bars(mid_run)) == 1, mid_run
    assert "resized" in mid_run
    assert all(len(row) <= 60 for row in mid_run), mid_run
    (project.root / "go").write_text("")
    assert term.finish() == 0, term.text
    rows = [row for row in term.rows if row]
    assert len(bars(rows)) == 1 and "100%" in bars(rows)[0], rows
    assert rows[-2] == "the result"
    assert rows[-1].startswith("● Complete in ")
    assert all(len(row) <= 60 for row in rows), rows


def test_a_wider_window_leaves_no_stale_bar(project):
    project.add_tool("long", LONG)
    term = Terminal(project, "long", columns=60)
    term.expect("step")
    redrawn(term, 2)
    term.resize(120)
    redrawn(term, 3)
    assert len(bars(term.rows)) == 1, term.rows
    (project.root / "go").write_text("")
    assert term.finish() == 0, term.text
    rows = [row for row in term.rows if row]
    assert len(bars(rows)) == 1 and "100%" in bars(rows)[0], rows

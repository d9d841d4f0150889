"""A window resized mid-run (issue 38, item 2): the live line is drawn
again at the new width and nothing of the line drawn at the old width is
left on the screen. In a real pseudo-terminal made narrower while the
tool runs, its screen rendered as tmux shows it, the lines drawn at the
old width rewrapped at the new one (:func:`terminal.wrapped_screen`),
and in tmux itself where it is installed."""

import re
import shutil
import subprocess
import time

import pytest

from conftest import ACOR_SCRIPT
from terminal import Terminal

# Works until the test says it may end (a file "go"), so the window is
# resized while it runs however loaded the machine is; writes a line on
# stderr when the test asks (a file "say"): printed above the live line.
# Its session's line keeps the live line off the window's top row (where
# tmux pushes the start of a rewrapped frame into the scrollback).
LONG = """\
import os, sys, time
from acor import AcorTool
with AcorTool() as tool:
    tool.session("s1")
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


LIVE = re.compile(r"% \d+/100 .*\d:\d\d( · ETA \d+:\d\d)?$")  # a whole frame


def redrawn(term, times):
    """Wait until the live line was drawn ``times`` more times (each
    redraw erases the line it draws on), then until the screen is one a
    person sees (:func:`settled`)."""
    since = len(term.seen)
    term.wait(lambda seen: seen[since:].count(b"\x1b[2K") >= times)
    settled(term)


def settled(term):
    """Wait until the screen ends with a whole frame of the live line. A
    pseudo-terminal passes on one write in pieces, so a read can end
    inside a redraw: after the line was erased, or after a line printed
    above it but before the frame drawn under it. No person sees that
    screen; it is gone within the same write."""
    def on_a_frame(seen):
        written = [row for row in term.rows if row]
        return bool(written) and LIVE.search(written[-1]) is not None
    term.wait(on_a_frame)


def bars(rows):
    """The rows that hold a frame of the live line, or part of one: its
    percentage and count (at 120 columns they are in its first 60)."""
    return [row for row in rows if re.search(r"\d+% \d+/100", row)]


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
    settled(term)
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


def test_a_terminal_that_cuts_its_lines_keeps_the_rows_above_the_bar(
        project):
    """xterm, urxvt, st and GNU screen cut their lines when made narrower
    instead of rewrapping them: the frame drawn at 120 columns still takes
    one row, and the row above it is the tool's own output. Erasing the
    rows a rewrapping terminal would have added would erase that output;
    on a terminal not known to rewrap, nothing above the line is erased."""
    project.add_tool("long", LONG)
    term = Terminal(project, "long", columns=120, rewraps=False)
    term.expect("step")
    redrawn(term, 2)
    above = [row for row in term.rows if row and not bars([row])]
    assert above, term.rows  # the session's line, above the bar
    term.resize(60)
    redrawn(term, 3)
    mid_run = term.rows
    assert len(bars(mid_run)) == 1, mid_run
    assert [row for row in mid_run if row and not bars([row])] == \
        [row[:60] for row in above], mid_run
    (project.root / "go").write_text("")
    assert term.finish() == 0, term.text
    rows = [row for row in term.rows if row]
    assert rows[0] == above[0][:60] and \
        rows[-1].startswith("● Complete in "), rows


TMUX = shutil.which("tmux")


@pytest.mark.skipif(TMUX is None, reason="tmux is not installed")
def test_in_tmux_a_narrower_window_leaves_no_stale_bar(project, tmp_path):
    """The same in a real tmux, which rewraps its lines on a resize."""
    project.add_tool("long", LONG)
    config = tmp_path / "tmux.conf"
    config.write_text("set -g remain-on-exit on\n")
    env = {k: v for k, v in project.env.items()
           if k not in ("COLUMNS", "LINES", "TMUX")}

    def tmux(*args):
        return subprocess.run(
            [TMUX, "-S", str(tmp_path / "socket"), "-f", str(config),
             *args], env=env, capture_output=True, text=True, timeout=30,
            check=True).stdout

    def screen_until(holds, what):
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            # The scrollback too: tmux moves rows into it on a resize.
            rows = [row.rstrip() for row in tmux(
                "capture-pane", "-p", "-S", "-", "-t", "run").splitlines()]
            if holds(rows):
                return rows
            time.sleep(0.1)
        raise AssertionError(f"never {what}: {rows}")

    tmux("new-session", "-d", "-s", "run", "-x", "120", "-y", "40",
         "-c", str(project.root), ACOR_SCRIPT, "long")
    try:
        screen_until(lambda rows: any(LIVE.search(row) and len(row) > 100
                                      for row in rows), "a bar at 120")
        tmux("resize-window", "-t", "run", "-x", "60", "-y", "40")
        rows = screen_until(
            lambda rows: len(bars(rows)) == 1 and
            LIVE.search(bars(rows)[0]) is not None and
            len(bars(rows)[0]) < 60, "one bar, drawn at 60")
        (project.root / "go").write_text("")
        rows = screen_until(lambda rows: any(row.startswith("● Complete")
                                             for row in rows), "Complete")
        assert len(bars(rows)) == 1 and "100%" in bars(rows)[0], rows
    finally:
        tmux("kill-server")

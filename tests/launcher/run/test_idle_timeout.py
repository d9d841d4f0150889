"""Idle timeout and heartbeats, through `acor` (run in process; the tools
are real processes).

No output and no heartbeat for `idle_timeout` seconds: the launcher stops the
tool with E_IDLE_TIMEOUT (its recovery names tool.heartbeat()), Failed, exit
124. A heartbeat resets the timer and is consumed, never relayed; run without
the launcher it is a harmless HTML comment that parsers drop.
"""

import json
import subprocess
import sys
import time

from acor import parse
from conftest import headings

SILENT = """
    import sys, time
    from acor import AcorTool
    with AcorTool() as tool:
        tool.progress(10, "thinking")
        time.sleep(float(sys.argv[1]))
        tool.output("done")
"""

BEATING = """
    import sys, time
    from acor import AcorTool
    seconds, every = float(sys.argv[1]), float(sys.argv[2])
    with AcorTool() as tool:
        tool.progress(10, "thinking")
        end = time.monotonic() + seconds
        while time.monotonic() < end:   # silent work, but alive
            time.sleep(every)
            tool.heartbeat()
        tool.output("done")
"""


def events(stdout):
    return [e.to_dict() for e in parse(stdout)]


def timed(project, *args):
    start = time.monotonic()
    result = project.acor(*args)
    return result, time.monotonic() - start


def assert_idle_timeout(result):
    """Stopped by the idle timeout: the tool, silent for a minute, never
    got to print "done" (how soon it was stopped is the machine's)."""
    assert result.returncode == 124, result.stdout + result.stderr
    errors = [e for e in events(result.stdout) if e["type"] == "error"]
    assert [e["code"] for e in errors] == ["E_IDLE_TIMEOUT"]
    assert "tool.heartbeat()" in errors[0]["recovery"]
    assert "idle timeout" in errors[0]["recovery"]
    assert headings(result.stdout)[-2:] == ["Error: " + errors[0]["title"],
                                            "Status: Failed"]
    assert "done" not in result.stdout


def test_silence_past_the_idle_timeout_stops_the_tool(project):
    project.add_tool("silent", SILENT)
    result = project.acor("--idle-timeout", "0.5", "silent", "60")
    assert_idle_timeout(result)
    error = [e for e in events(result.stdout) if e["type"] == "error"][0]
    assert error["title"] == \
        "Tool 'silent' was silent for 0.5 s and was stopped"


def test_heartbeats_keep_a_silent_tool_alive_and_are_not_relayed(project):
    project.add_tool("beating", BEATING)
    # Longer than the idle timeout in all, a heartbeat every twentieth of
    # it: a busy machine would have to stall the tool for 2 s to miss one.
    result, elapsed = timed(project, "--idle-timeout", "2", "beating",
                            "2.4", "0.1")
    assert result.returncode == 0, result.stdout + result.stderr
    assert elapsed >= 2.4
    assert "heartbeat" not in result.stdout + result.stderr
    assert "\x1e" not in result.stdout
    assert headings(result.stdout) == [
        "Status: Ready", "Progress: 10%", "Output", "Status: Complete"]


def test_idle_timeout_from_the_manifest_applies(project):
    project.add_tool("silent", SILENT, idle_timeout=0.5)
    result = project.acor("silent", "60")
    assert_idle_timeout(result)


def test_the_flag_overrides_the_manifest(project):
    project.add_tool("silent", SILENT, idle_timeout=0.2)
    # Silent for longer than the manifest allows, not the flag.
    result = project.acor("--idle-timeout", "5", "silent", "0.5")
    assert result.returncode == 0, result.stdout
    assert headings(result.stdout)[-1] == "Status: Complete"


def test_standalone_heartbeat_is_a_harmless_comment(project, tmp_path):
    """Run directly (no launcher), a heartbeat is an HTML comment line that
    acor.parse and `acor parse` ignore."""
    folder = project.add_tool("beating", BEATING)
    env = {k: v for k, v in project.env.items() if k != "ACOR_FRAME_TOKEN"}
    result = subprocess.run(
        [sys.executable, str(folder / "beating.py"), "0.3", "0.05"],
        env=env, capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines.count("<!-- acor:heartbeat -->") >= 2
    assert [e.type for e in parse(result.stdout)] == [
        "status", "progress", "output", "status"]
    progress = [e for e in parse(result.stdout) if e.type == "progress"][0]
    assert progress.message == "thinking"  # the comment did not join it
    parsed = project.acor("parse", "-", input=result.stdout, env=env)
    assert parsed.returncode == 0, parsed.stderr
    assert "heartbeat" not in parsed.stdout
    assert [json.loads(ln)["type"] for ln in parsed.stdout.splitlines()] == [
        "status", "progress", "output", "status"]


def test_progress_bar_edge_cases_through_the_launcher(project):
    """The in-process cases are in test_tool.py; here the sections survive
    framing and the relay, in markdown and in the rich view."""
    project.add_tool("bar", """
        from acor import AcorTool
        with AcorTool() as tool:
            tool.progress_bar(0, 0, "Nothing")    # nothing to do: done
            tool.output("between")                # so no progress is coalesced
            tool.progress_bar(15, 10, "Past")     # past the total: done
            tool.output("between")
            tool.progress_bar(1, 3, "Third")
    """)
    result = project.acor("bar")
    assert result.returncode == 0, result.stdout
    progress = [(e["percent"], e["message"]) for e in events(result.stdout)
                if e["type"] == "progress"]
    assert progress == [(100, "Nothing (0/0)"), (100, "Past (15/10)"),
                        (33.33, "Third (1/3)")]
    assert "## Progress: 33.33%\nThird (1/3)\n" in result.stdout
    rich = project.acor("--format", "rich", "bar")
    assert rich.returncode == 0, rich.stdout
    assert "33% 1/3 Third" in rich.stdout  # the bar's last frame


def test_rich_view_shows_the_count_even_with_a_long_label():
    import io
    from rich.console import Console
    from acor.events import Progress, Status
    from acor.cli.output.rich_view import RichSink
    for width in (100, 60):
        console = Console(record=True, width=width, file=io.StringIO())
        sink = RichSink("csvprofile", console=console)
        sink.emit(Status("ready"))
        sink.emit(Progress(30, "Rows of a very long label that could never "
                               "fit on one line of any terminal (3/10)"))
        sink.emit(Progress(100, "Rows of a very long label that could never "
                                "fit on one line of any terminal (15/10)"))
        sink.emit(Status("complete"))
        sink.close()
        text = console.export_text()
        lines = text.splitlines()
        bar = next(ln for ln in lines if "15/10" in ln)
        assert "100%" in bar and "Rows" in bar, text
        assert bar.rstrip().endswith("…")  # the label is cut, not the count
        # the bar's last frame comes before the final status
        assert lines.index(bar) < next(i for i, ln in enumerate(lines)
                                       if "Complete" in ln)

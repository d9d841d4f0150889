"""Every ending says why (issue 32): a ported script's own exit (point 2),
a person's Ctrl-C at a prompt and mid-run (point 3), a `next` that is safe
to run as is (point 4), and a secret's prompt headed as one (point 11).

Each runs the installed `acor` in a real process: Markdown and JSON through
pipes, the rich view and every prompt on a real pseudo-terminal (Ctrl-C as
the ^C byte the terminal turns into SIGINT, or a SIGINT sent to acor), and
MCP with the official SDK client against a real `acor mcp`. Nothing waits
on a clock: each test waits for the text it needs, then acts."""

import json
import os
import signal
import subprocess

import pytest

from conftest import ACOR_SCRIPT
from terminal import READ, WAITS, Terminal, wait_blocked_in

SYSEXIT = """\
import sys
from acor import AcorTool
with AcorTool() as tool:
    tool.progress(10, "reading config")
    sys.exit("fatal: config file is corrupt")
"""

ARGPARSE = """\
import argparse
from acor import AcorTool
with AcorTool() as tool:
    parser = argparse.ArgumentParser(prog="ported")
    parser.add_argument("--count", type=int, required=True)
    args = parser.parse_args()
    tool.output(f"count {args.count}")
"""


def acor(project, *args, stdin=subprocess.DEVNULL):
    return subprocess.run([ACOR_SCRIPT, *args], cwd=project.root,
                          env=project.env, capture_output=True, text=True,
                          timeout=120, stdin=stdin)


def lines(stdout):
    return [json.loads(line) for line in stdout.splitlines()]


def the_result(stdout):
    return lines(stdout)[-1]


# --- 32.2: a ported script's own exit --------------------------------------

@pytest.fixture
def ported(project):
    project.add_tool("sysexit", SYSEXIT)
    project.add_tool("ported", ARGPARSE)
    return project


def test_a_ported_scripts_sys_exit_message_is_an_error_in_markdown(ported):
    done = acor(ported, "--format", "markdown", "sysexit")
    assert done.returncode == 1
    assert "## Error: fatal: config file is corrupt\n" in done.stdout
    assert "**Code**: E_EXIT_1\n" in done.stdout
    assert "sysexit.py:5 in <module>" in done.stdout  # where it exited
    assert done.stdout.rstrip().endswith("## Status: Failed")


def test_a_ported_scripts_sys_exit_message_is_an_error_in_json(ported):
    done = acor(ported, "--format", "json", "sysexit")
    assert done.returncode == 1
    error = next(e for e in lines(done.stdout) if e["type"] == "error")
    assert error["title"] == "fatal: config file is corrupt"
    assert error["code"] == "E_EXIT_1"
    result = the_result(done.stdout)
    assert (result["state"], result["error_code"]) == ("failed", "E_EXIT_1")


def test_a_ported_scripts_sys_exit_message_is_an_error_in_the_rich_view(
        ported):
    term = Terminal(ported, "sysexit")
    assert term.finish() == 1
    assert "fatal: config file is corrupt" in term.text
    assert "E_EXIT_1" in term.text
    assert "Failed" in term.text


@pytest.mark.parametrize("fmt", ["markdown", "json"])
def test_a_ported_scripts_argparse_error_is_e_usage_with_its_usage(ported,
                                                                   fmt):
    done = acor(ported, "--format", fmt, "ported", "--count", "x")
    assert done.returncode == 2
    if fmt == "markdown":
        assert ("## Error: argument --count: invalid int value: 'x'\n"
                in done.stdout)
        assert "**Code**: E_USAGE\n" in done.stdout
        assert "**Details**: usage: ported [-h] --count COUNT\n" \
            in done.stdout
        assert "**Next**: acor ported --help\n" in done.stdout
    else:
        error = next(e for e in lines(done.stdout) if e["type"] == "error")
        assert error["code"] == "E_USAGE"
        assert error["details"] == "usage: ported [-h] --count COUNT"
        assert error["next"] == ["acor", "ported", "--help"]
        result = the_result(done.stdout)
        assert result["error_code"] == "E_USAGE"
        assert result["next"] == ["acor", "ported", "--help"]


def test_a_ported_scripts_argparse_error_in_the_rich_view(ported):
    term = Terminal(ported, "ported")
    assert term.finish() == 2
    assert "the following arguments are required: --count" in term.text
    assert "E_USAGE" in term.text
    assert "usage: ported [-h] --count COUNT" in term.text


def test_a_ported_scripts_argparse_help_completes_with_its_usage(ported):
    done = acor(ported, "--format", "json", "ported", "--help")
    assert done.returncode == 0
    result = the_result(done.stdout)
    assert (result["state"], result.get("error_code")) == ("complete", None)
    assert "usage: ported [-h] --count COUNT" in done.stdout
    assert not [e for e in lines(done.stdout) if e["type"] == "error"]


EXITS = {
    "zero": ("sys.exit(0)", 0, None, None),
    "none": ("sys.exit(None)", 0, None, None),
    "bare": ("sys.exit()", 0, None, None),
    "code": ("sys.exit(3)", 1, "E_EXIT_3", "The tool exited with code 3"),
    "true": ("sys.exit(True)", 1, "E_EXIT_1", "The tool exited with code 1"),
    "negative": ("sys.exit(-1)", 1, "E_EXIT_255",
                 "The tool exited with code 255"),
    "object": ("sys.exit(['bad', 'list'])", 1, "E_EXIT_1",
               "['bad', 'list']"),
    "nested": ("stop('fatal: from a helper')", 1, "E_EXIT_1",
               "fatal: from a helper"),
    "parser exit": ("argparse.ArgumentParser().exit(4, 'no input\\n')", 1,
                    "E_EXIT_4", "no input"),
}


@pytest.mark.parametrize("how", list(EXITS))
def test_every_kind_of_sys_exit_ends_as_its_code_says(project, how):
    call, exit_code, error_code, title = EXITS[how]
    project.add_tool("exits", f"""\
import argparse
import sys
from acor import AcorTool

def stop(message):
    raise SystemExit(message)

with AcorTool() as tool:
    {call}
""")
    done = acor(project, "--format", "json", "exits")
    assert done.returncode == exit_code, done.stdout
    result = the_result(done.stdout)
    errors = [e for e in lines(done.stdout) if e["type"] == "error"]
    if error_code is None:
        assert result["state"] == "complete" and not errors
        return
    assert result["state"] == "failed"
    assert result.get("error_code") == error_code
    assert errors[-1]["title"] == title
    if how == "nested":
        assert "in stop: raise SystemExit(message)" in errors[-1]["details"]


def test_an_exit_after_the_tools_own_error_adds_no_second_error(project):
    project.add_tool("said", """\
import sys
from acor import AcorTool
with AcorTool() as tool:
    tool.error("E_NO_INPUT", "no input file", recovery="give one")
    sys.exit(1)
""")
    done = acor(project, "--format", "json", "said")
    errors = [e for e in lines(done.stdout) if e["type"] == "error"]
    assert [e["code"] for e in errors] == ["E_NO_INPUT"]
    assert the_result(done.stdout)["error_code"] == "E_NO_INPUT"


CLICK_TOOL = """\
import click
from acor import AcorTool

@click.command()
@click.option("--count", type=int, required=True)
def main(count):
    if count < 0:
        raise click.ClickException("count must not be negative")
    click.echo(f"count {count}")

with AcorTool() as tool:
    main()
"""


@pytest.mark.parametrize("args,exit_code,error_code,title", [
    (["--count", "x"], 2, "E_USAGE", "'x' is not a valid integer."),
    (["--count", "-1"], 1, "E_EXIT_1", "count must not be negative"),
    (["--help"], 0, None, None),
    (["--count", "2"], 0, None, None)])
def test_a_ported_click_scripts_exits_say_why(project, args, exit_code,
                                              error_code, title):
    project.add_tool("clicky", CLICK_TOOL)
    done = acor(project, "--format", "json", "clicky", *args)
    assert done.returncode == exit_code, done.stdout
    result = the_result(done.stdout)
    assert result.get("error_code") == error_code
    errors = [e for e in lines(done.stdout) if e["type"] == "error"]
    if error_code is None:
        assert not errors
        assert ("Usage: " if args == ["--help"] else "count 2") in \
            done.stdout
        return
    assert title in errors[-1]["title"]
    if error_code == "E_USAGE":
        assert errors[-1]["details"].startswith("Usage: ")
        assert errors[-1]["next"] == ["acor", "clicky", "--help"]


def test_acor_check_explains_a_tool_that_ends_itself(ported):
    for name, args, code in (("sysexit", [], 1),
                             ("ported", ["--count", "x"], 2)):
        path = ported.root / "tools" / name / "manifest.json"
        manifest = json.loads(path.read_text())
        manifest["examples"] = [{"args": args, "exit_code": code}]
        path.write_text(json.dumps(manifest))
    said = acor(ported, "check", "sysexit")
    assert said.returncode == 0, said.stdout
    assert "ended itself with sys.exit" in said.stdout
    assert 'tool.fail("E_SOMETHING", message' in said.stdout
    parsed = acor(ported, "check", "ported")
    assert parsed.returncode == 0, parsed.stdout
    assert "own argument parser refused its arguments" in parsed.stdout
    assert "tool.parse_args()" in parsed.stdout


# --- 32.4: a `next` safe to run as is --------------------------------------

@pytest.mark.parametrize("fmt", ["markdown", "json"])
def test_next_never_installs_a_module_name_nobody_knows(project, fmt):
    project.add_tool("typo", """\
from acor import AcorTool
with AcorTool() as tool:
    import numpyy_not_installed
""")
    done = acor(project, "--format", fmt, "typo")
    assert done.returncode == 1
    assert "numpyy_not_installed" in done.stdout  # what is missing is said
    assert "pip install" not in done.stdout
    assert "A person should decide what to install" in done.stdout
    if fmt == "json":
        result = the_result(done.stdout)
        assert result["error_code"] == "E_MISSING_DEPENDENCY"
        assert result.get("next") is None
    else:
        assert "**Next**" not in done.stdout


def test_next_installs_a_well_known_module_by_its_distribution(project):
    project.add_tool("needs", """\
from acor import AcorTool
with AcorTool() as tool:
    import cv2
""")
    done = acor(project, "--format", "json", "needs")
    result = the_result(done.stdout)
    assert result["error_code"] == "E_MISSING_DEPENDENCY"
    assert result["next"][-3:] == ["pip", "install", "opencv-python"]


# --- 32.3 and 32.11: a person at the terminal ------------------------------

ASKER = """\
from pathlib import Path
from acor import AcorTool
FIELDS = {
    "yes": {"type": "boolean", "description": "Delete it for good"},
    "name": {"type": "string", "description": "who approves"},
    "color": {"type": "string", "enum": ["red", "blue"]},
    "token": {"type": "string", "description": "deploy token"}}
with AcorTool() as tool:
    args = tool.parse_args()
    Path("runs").open("a").write("run\\n")
    if getattr(args, args.which) is None:
        tool.input_needed("Need it", fields={args.which: FIELDS[args.which]},
                          audience="human")
    Path("answered").write_text(str(getattr(args, args.which)))
    tool.output("answered")
"""
ASKER_ARGS = {
    "type": "object", "additionalProperties": False, "required": ["which"],
    "properties": {
        "which": {"type": "string", "x-acor": {"position": 0}},
        "yes": {"type": "boolean", "x-acor": {"human": True}},
        "name": {"type": "string", "x-acor": {"human": True}},
        "color": {"type": "string", "enum": ["red", "blue"],
                  "x-acor": {"human": True}},
        "token": {"type": "string",
                  "x-acor": {"human": True, "secret": True}}}}
# What each prompt shows last before it waits.
PROMPTS = {"yes": "[y/n]: ", "name": "who approves: ",
           "color": "(red, blue): ", "token": "deploy token: "}


@pytest.fixture
def asker(project):
    project.add_tool("asker", ASKER, args=ASKER_ARGS)
    return project


@pytest.mark.parametrize("interrupt", ["^C byte", "SIGINT"])
@pytest.mark.parametrize("field", list(PROMPTS))
def test_ctrl_c_at_a_prompt_refuses_at_once_and_runs_nothing(asker, field,
                                                            interrupt):
    term = Terminal(asker, "asker", field)
    term.expect(PROMPTS[field])
    if field == "token":
        term.echo_off()
    wait_blocked_in(term.pid, READ)  # reading the answer, as a person sees
    if interrupt == "^C byte":
        os.write(term.fd, b"\x03")  # the terminal makes it SIGINT
    else:
        os.kill(term.pid, signal.SIGINT)
    code = term.finish()
    assert "nothing was approved" in term.text
    assert code == 3  # the question stays unanswered
    assert (asker.root / "runs").read_text() == "run\n"  # not run again
    assert not (asker.root / "answered").exists()
    assert "Traceback" not in term.text


def test_a_secret_prompt_is_headed_for_a_secret_not_an_approval(asker):
    term = Terminal(asker, "asker", "token")
    shown = term.expect(PROMPTS["token"])
    assert "asker asks a person for a secret:" in shown
    assert "approve" not in shown
    term.echo_off()
    term.type("tok")
    assert term.finish() == 0
    assert (asker.root / "answered").read_text() == "tok"


def test_an_approval_prompt_is_still_headed_as_an_approval(asker):
    term = Terminal(asker, "asker", "yes")
    shown = term.expect(PROMPTS["yes"])
    assert "asker asks a person to approve:" in shown
    term.type("n")
    assert term.finish() == 0


SLOW = """\
import sys
import time
from acor import AcorTool
with AcorTool() as tool:
    if len(sys.argv) > 2:
        tool.session(sys.argv[2])
        tool.checkpoint("c1", {"offset": 1})
    tool.progress(5, "started")
    time.sleep(600)
"""


@pytest.fixture
def slow(project):
    project.add_tool("slow", SLOW)
    return project


@pytest.mark.parametrize("fmt", ["rich", "markdown"])
def test_ctrl_c_mid_run_at_a_terminal_ends_cancelled_without_a_traceback(
        slow, fmt):
    term = Terminal(slow, "--format", fmt, "slow")
    term.expect("started")
    wait_blocked_in(term.pid, WAITS)
    os.write(term.fd, b"\x03")
    assert term.finish() == 130
    assert "Cancelled" in term.text
    assert "Traceback" not in term.text
    assert "KeyboardInterrupt" not in term.text


def _interrupted(project, *args):
    """acor with stdout and stderr piped, sent SIGINT once the tool has
    started: (exit code, stdout, stderr)."""
    proc = subprocess.Popen([ACOR_SCRIPT, *args], cwd=project.root,
                            env=project.env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    seen = b""
    while b"started" not in seen:
        chunk = proc.stdout.read1(65536)
        assert chunk, seen
        seen += chunk
    wait_blocked_in(proc.pid, WAITS)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    return proc.returncode, (seen + out).decode(), err.decode()


def test_ctrl_c_mid_run_with_piped_stderr_shows_no_traceback(slow):
    code, out, err = _interrupted(slow, "--format", "markdown", "slow")
    assert code == 130
    assert out.rstrip().endswith("## Status: Cancelled")
    assert "Traceback" not in err and "KeyboardInterrupt" not in err


RESUME = "Session s1 resumes with the same command: "


def test_a_cancelled_resumable_run_says_how_to_resume_in_markdown(slow):
    code, out, _ = _interrupted(slow, "--format", "markdown", "slow",
                                "--session", "s1")
    assert code == 130
    assert out.rstrip().endswith(
        "## Status: Cancelled\n" + RESUME
        + "acor --format markdown slow --session s1")


def test_a_cancelled_resumable_run_says_how_to_resume_in_json(slow):
    code, out, _ = _interrupted(slow, "--format", "json", "slow",
                                "--session", "s1")
    assert code == 130
    status = [e for e in lines(out) if e["type"] == "status"][-1]
    command = ["acor", "--format", "json", "slow", "--session", "s1"]
    assert status["state"] == "cancelled"
    assert status["message"] == RESUME + " ".join(command)
    assert the_result(out)["next"] == command


def test_a_cancelled_resumable_run_says_how_to_resume_in_the_rich_view(
        slow):
    term = Terminal(slow, "slow", "--session", "s1")
    term.expect("started")
    wait_blocked_in(term.pid, WAITS)
    os.write(term.fd, b"\x03")
    assert term.finish() == 130
    assert "Cancelled" in term.text
    assert RESUME + "acor slow --session s1" in term.text


# --- MCP: the SDK client against a real acor mcp ---------------------------

mcp = pytest.importorskip("mcp", reason="acor mcp needs the extra: "
                                        "pip install 'acor-cli[mcp]'")
MODES = ["legacy", "auto"]  # the handshake, and 2026-07-28


@pytest.fixture
def anyio_backend():
    return "asyncio"


def _server(project):
    from mcp_helpers import acor_mcp_stdio
    return acor_mcp_stdio(project)


def _texts(result):
    return "\n".join(b.text for b in result.content if b.type == "text")


@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
async def test_mcp_a_ported_scripts_exit_is_an_error_with_its_text(ported,
                                                                   mode):
    from mcp import Client
    async with Client(_server(ported), mode=mode) as client:
        said = await client.call_tool("sysexit", {})
        usage = await client.call_tool("ported", {"argv": ["--count", "x"]})
    assert said.is_error
    assert "fatal: config file is corrupt" in _texts(said)
    assert "E_EXIT_1" in _texts(said)
    assert said.meta["acor/result"]["error_code"] == "E_EXIT_1"
    assert usage.is_error
    assert "invalid int value: 'x'" in _texts(usage)
    assert "usage: ported [-h] --count COUNT" in _texts(usage)
    assert usage.meta["acor/result"]["error_code"] == "E_USAGE"


@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
async def test_mcp_a_failed_resumable_run_says_how_to_resume(project, mode):
    project.add_tool("crashy", """\
import sys
from acor import AcorTool
with AcorTool() as tool:
    tool.session(sys.argv[2])
    tool.checkpoint("c1", {"offset": 1})
    raise ValueError("row 7 is bad")
""")
    from mcp import Client
    async with Client(_server(project), mode=mode) as client:
        result = await client.call_tool(
            "crashy", {"argv": ["--session", "s1"]})
    assert result.is_error
    text = _texts(result)
    assert "row 7 is bad" in text
    assert 'Next call: {"name": "crashy", "arguments": {"argv": ' \
        '["--session", "s1"]}}' in text
    assert "It resumes session s1." in text
    assert result.meta["acor/result"]["next"][-2:] == ["--session", "s1"]


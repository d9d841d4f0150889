"""A wrapped tool's colours at a person's terminal (issue 38, point 8):
the bundled pytest wrapper run by `acor pytest` at a real pseudo-terminal
shows pytest's colours, because acor asks pytest for them (the manifest's
`color_env`, `PY_COLORS=1`) when the person's view shows colour; its
colours (SGR, and only SGR) become the view's styles and every other
control sequence the tool prints is stripped. With NO_COLOR, TERM=dumb,
another format, piped or over MCP, the tool is never asked for colour and
the agent's bytes are what they were: no colour code anywhere."""

import json
import re

import pytest
from rich.text import Text

from terminal import Terminal

# A person's terminal that shows colour (the project's environment sets
# NO_COLOR for every other test).
COLOUR = {"NO_COLOR": None, "TERM": "xterm-256color"}
BUNDLED = {"ACOR_NO_PACKAGE_TOOLS": None}  # the wrapper acor ships

SAMPLE = """\
def test_good():
    assert 1 + 1 == 2


def test_bad():
    assert 1 + 1 == 3
"""

# An SGR that sets red (31, 91) or green (32, 92) among its parameters,
# then the text it colours: how rich writes a style.
RED = r"\x1b\[(?:[0-9;]*;)?(?:31|91)(?:;[0-9;]*)?m[^\x1b]*"
GREEN = r"\x1b\[(?:[0-9;]*;)?(?:32|92)(?:;[0-9;]*)?m[^\x1b]*"
ANY_COLOUR = re.compile(r"\x1b\[(?:[0-9;]*;)?(?:3[0-7]|9[0-7]|38;)")

# What a tool could print to take over the terminal: a window title, a
# cursor move, a clear, a hyperlink, the alternate screen, the 8-bit CSI
# and a bell. None is rich's own.
TAKEOVER = {"title": "\x1b]0;pwned\x07", "move": "\x1b[7;3H",
            "clear": "\x1b[2J", "link": "\x1b]8;;https://evil.example\x1b\\",
            "alt": "\x1b[?1049h", "csi8": "\x9b2J", "bell": "\x07"}
PROBE = r'''
import os, sys
BAD = %r
coloured = os.environ.get("PROBE_COLOUR") == "1"
print("colour asked:", "yes" if coloured else "no", flush=True)
if coloured:
    print("\x1b[31mRED\x1b[0m plain \x1b[1;32mGREEN\x1b[0m", flush=True)
    print("\x1b[32mstep [ 50%%]\x1b[0m", flush=True)
    print("\x1b[8mHIDDEN\x1b[0m \x1b[5;31mBLINK\x1b[0m", flush=True)
else:
    print("RED plain GREEN", flush=True)
    print("step [ 50%%]", flush=True)
print("<<" + BAD + ">>", flush=True)
''' % "".join(f"{name}{seq}" for name, seq in TAKEOVER.items())


@pytest.fixture
def probe(project):
    project.add_wrapped(
        "probe", ["{python}", "-c", PROBE],
        color_env={"PROBE_COLOUR": "1"},
        progress_pattern=r"\[\s*(?P<percent>\d{1,3})%\]\s*$")
    return project


def pytest_project(project):
    (project.root / "test_sample.py").write_text(SAMPLE)
    return project


@pytest.mark.parametrize("columns", [120, 60])
def test_pytest_colours_reach_a_persons_terminal(project, columns):
    pytest_project(project)
    term = Terminal(project, "pytest", "-p", "no:cacheprovider",
                    "test_sample.py", columns=columns,
                    env={**COLOUR, **BUNDLED})
    assert term.finish() == 1, term.text
    raw = term.text
    # pytest's own colours, as the view's styles: the failure red, the
    # pass green, in the summary line pytest writes.
    assert re.search(RED + "1 failed", raw), raw
    assert re.search(GREEN + "1 passed", raw), raw
    assert re.search(RED + "FAILED", raw), raw
    lines = term.screen
    # Its progress lines are still the live line's, not output.
    assert not any(re.fullmatch(r"test_sample\.py \.F\s*\[100%\]", line)
                   for line in lines), lines
    assert any("1 failed, 1 passed" in line for line in lines), lines
    assert all(len(line) <= columns for line in lines), lines


@pytest.mark.parametrize("env", [pytest.param({"NO_COLOR": "1"},
                                              id="no-color"),
                                 pytest.param({"NO_COLOR": None,
                                               "TERM": "dumb"}, id="dumb")])
def test_no_colour_where_the_person_wants_none(project, env):
    pytest_project(project)
    term = Terminal(project, "pytest", "-p", "no:cacheprovider",
                    "test_sample.py", columns=100, env={**env, **BUNDLED})
    assert term.finish() == 1, term.text
    assert "1 failed, 1 passed" in term.plain
    assert not ANY_COLOUR.search(term.text), term.text


def test_a_tool_asked_for_colour_passes_only_its_colours(probe):
    term = Terminal(probe, "probe", columns=100, env=COLOUR)
    assert term.finish() == 0, term.text
    raw = term.text
    assert "colour asked: yes" in term.plain
    assert re.search(RED + "RED", raw), raw
    assert re.search(GREEN + "GREEN", raw), raw
    for name, sequence in TAKEOVER.items():
        assert sequence not in raw, name
    assert "\x1b]" not in raw  # no OSC of any kind
    # The text around them arrives; the bell is shown, not rung.
    assert "<<title" in term.plain and "bell\\x07>>" in term.plain
    # Nothing hidden, nothing flashing: conceal and blink are dropped,
    # the colour beside them kept.
    assert "HIDDEN BLINK" in term.screen, term.screen
    assert re.search(RED + "BLINK", raw), raw
    assert not any(span.style.conceal or span.style.blink
                   for span in Text.from_ansi(raw).spans
                   if not isinstance(span.style, str))
    # A coloured progress line is still progress, not output.
    assert "step [ 50%]" not in term.screen, term.screen


@pytest.mark.parametrize("args,env", [
    pytest.param((), {"NO_COLOR": "1"}, id="no-color"),
    pytest.param((), {"NO_COLOR": None, "TERM": "dumb"}, id="dumb"),
    pytest.param(("--format", "markdown"), COLOUR, id="markdown"),
    pytest.param(("--format", "json"), COLOUR, id="json"),
])
def test_a_tool_is_not_asked_for_colour_unless_the_view_shows_it(
        probe, args, env):
    term = Terminal(probe, *args, "probe", columns=100, env=env)
    assert term.finish() == 0, term.text
    assert "colour asked: no" in term.plain
    assert not ANY_COLOUR.search(term.text), term.text


@pytest.mark.parametrize("fmt", ["markdown", "json", "rich"])
def test_piped_output_is_the_agents_and_holds_no_colour(probe, fmt):
    # FORCE_COLOR makes rich colour a pipe: still not a person's terminal.
    env = {**probe.env, "FORCE_COLOR": "1", "TERM": "xterm-256color"}
    env.pop("NO_COLOR")
    run = probe.acor("--format", fmt, "probe", env=env)
    assert run.returncode == 0, run.stderr
    assert "colour asked: no" in run.stdout
    assert "RED plain GREEN" in run.stdout
    if fmt != "rich":
        assert "\x1b" not in run.stdout and "\x07" not in run.stdout
    if fmt == "json":
        lines = [json.loads(line) for line in run.stdout.splitlines()]
        assert {"type": "progress", "percent": 50,
                "message": "step [ 50%]"}.items() <= next(
            line for line in lines if line.get("type") == "progress").items()


def test_piped_pytest_is_as_it_was(project):
    pytest_project(project)
    env = {**project.env, "TERM": "xterm-256color"}
    env.pop("NO_COLOR")
    env.pop("ACOR_NO_PACKAGE_TOOLS")
    run = project.acor("pytest", "-p", "no:cacheprovider", "test_sample.py",
                       env=env)
    assert run.returncode == 1, run.stderr
    assert "1 failed, 1 passed" in run.stdout
    assert "\x1b" not in run.stdout
    assert "## Progress: 100%" in run.stdout


@pytest.mark.parametrize("value", [
    {}, ["PY_COLORS"], {"PY_COLORS": 1}, {"ACOR_HUMAN_FD": "3"},
    {"acor_args": "{}"}, {"1COLOR": "1"}, {"A-B": "1"}, {"": "1"},
    {"PY_COLORS": "1\n## AI Directive"}, {"PY_COLORS": "x" * 257},
    {f"V{i}": "1" for i in range(9)},
], ids=["empty", "list", "number", "acor-own", "acor-lower", "digit",
        "dash", "no-name", "line-break", "long", "too-many"])
def test_a_bad_color_env_skips_the_manifest_with_its_reason(project, value):
    project.add_wrapped("bad", ["true"], color_env=value)
    run = project.acor("bad")
    assert run.returncode != 0
    assert "E_INVALID_MANIFEST" in run.stdout, run.stdout
    assert "'color_env' must be" in run.stdout, run.stdout


mcp = pytest.importorskip("mcp", reason="acor mcp needs the extra")


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.mark.anyio
async def test_an_mcp_call_never_asks_a_tool_for_colour(probe):
    from mcp import Client

    from conftest import strings
    from mcp_helpers import acor_mcp_stdio
    async with Client(acor_mcp_stdio(probe), mode="2026-07-28") as client:
        result = await client.call_tool("probe", {"argv": []})
    dumped = result.model_dump(mode="json", by_alias=True)
    texts = "\n".join(strings(dumped))
    assert "colour asked: no" in texts
    assert "\x1b" not in texts

"""Only a person approves (issue 19): arguments only a person may give,
secrets, and approvals, through every path an agent has.

The terminal is a real pseudo-terminal (the `pty` module): acor asks the
person there exactly as it would ask you. The CLI paths run the installed
`acor` command; nothing is mocked.
"""

import json
import os
import subprocess

import pytest
from pathlib import Path

from conftest import ACOR_SCRIPT
from sample_tools import HIGH, REMOVER, REMOVER_ARGS
from terminal import Terminal


LOGIN = """\
from pathlib import Path
from acor import AcorTool
with AcorTool() as tool:
    args = tool.parse_args()
    if args.token is None:
        tool.input_needed("The deploy token, to log in", fields={
            "token": {"type": "string", "description": "deploy token"}},
            audience="human")
    Path("got-token").write_text(args.token)
    tool.output(f"logged in ({len(args.token)} characters)")
"""
LOGIN_ARGS = {
    "type": "object", "additionalProperties": False,
    "properties": {
        "token": {"type": "string",
                  "x-acor": {"human": True, "secret": True}}}}

SECRET = "s3cr3t-TOKEN-do-not-leak"

# The same approval from bash, with acor.sh.
REMOVER_SH = """\
#!/usr/bin/env bash
. "${ACOR_SH:?run this tool with acor}"
acor_start
if ! yes=$(acor_human yes); then
    acor_input_needed "Delete $1?" \\
        '{"yes": {"type": "boolean", "description": "Delete it for good"}}' \\
        human
fi
if [ "$yes" = true ]; then
    rm -- "$1"; acor_output "deleted $1"
else
    acor_output "kept $1 ($yes)"
fi
"""


@pytest.fixture
def humans(project):
    project.add_tool("remover", REMOVER, args=REMOVER_ARGS)
    project.add_tool("login", LOGIN, args=LOGIN_ARGS)
    folder = project.root / "tools" / "remover-sh"
    folder.mkdir()
    (folder / "run.sh").write_text(REMOVER_SH)
    (folder / "run.sh").chmod(0o755)
    (folder / "manifest.json").write_text(json.dumps({
        "name": "remover-sh", "version": "1.0.0", "entry": "run.sh",
        "description": "remove a file, if a person approves",
        "args": REMOVER_ARGS}))
    (project.root / "victim").write_text("precious")
    return project


def acor(project, *args, input=None):
    return subprocess.run([ACOR_SCRIPT, *args], cwd=project.root,
                          env=project.env, capture_output=True, text=True,
                          timeout=60, stdin=subprocess.DEVNULL
                          if input is None else None, input=input)


def result_line(stdout):
    return json.loads(stdout.strip().splitlines()[-1])


# --- what an agent can do: nothing that approves ---------------------------

def test_the_flag_on_the_command_line_is_refused(humans):
    done = acor(humans, "remover", "victim", "--yes")
    assert done.returncode == 2
    assert "E_USAGE" in done.stdout
    assert "only a person may give it" in done.stdout
    assert (humans.root / "victim").exists()


def test_acor_call_json_cannot_give_it(humans):
    done = acor(humans, "call", "remover",
                json.dumps({"path": "victim", "yes": True}))
    assert done.returncode == 2
    assert "yes: only a person may give this" in done.stdout
    assert (humans.root / "victim").exists()


def test_without_a_person_the_result_hands_the_command_to_one(humans):
    done = acor(humans, "--format", "json", "remover", "victim")
    assert done.returncode == 3, done.stdout
    record = result_line(done.stdout)
    assert record["state"] == "input_needed"
    assert record["audience"] == "human"
    # The tool's own next said `--yes`: an agent following it would
    # approve for the person. acor gives no next at all.
    assert "next" not in record  # null: left out
    assert "--yes" not in done.stdout
    assert "run this in their terminal" in done.stdout
    assert "acor remover victim" in done.stdout
    assert (humans.root / "victim").exists()


def test_the_rich_view_without_a_terminal_does_not_ask(humans):
    done = acor(humans, "remover", "victim", input="y\n")
    assert done.returncode == 3
    assert "acor remover victim" in done.stdout
    assert (humans.root / "victim").exists()


def test_an_inherited_channel_is_not_a_person(humans, tmp_path):
    # A descriptor named by an agent's environment is not the launcher's.
    env = dict(humans.env, ACOR_HUMAN_FD="0")
    done = subprocess.run([ACOR_SCRIPT, "remover", "victim"],
                          cwd=humans.root, env=env, input="yes=true\n",
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 3
    assert (humans.root / "victim").exists()


def test_a_schema_with_a_human_argument_is_checked(humans):
    bad = dict(REMOVER_ARGS, properties=dict(
        REMOVER_ARGS["properties"],
        yes={"type": "boolean", "default": True,
             "x-acor": {"human": True, "flag": "--yes"}}))
    humans.add_tool("badhuman", REMOVER, args=bad)
    problems = acor(humans, "doctor").stdout.replace("\n", " ")
    assert "badhuman" in problems
    assert "has no \"position\" or \"flag\"" in problems
    assert "has no default" in problems


# --- a person at a terminal --------------------------------------------------

@pytest.mark.parametrize("answer,tool", [
    ("n", "remover"), ("no", "remover"), ("false", "remover"),
    ("N", "remover"), ("No", "remover"), ("no", "remover-sh")])
def test_a_persons_no_keeps_the_file(humans, answer, tool):
    term = Terminal(humans, tool, "victim")
    shown = term.expect("[y/n]")
    # The request says what is approved, by whom, for how long.
    assert f"{tool} asks a person to approve" in shown
    assert f"command: acor {tool} victim" in shown
    assert "reason:  Delete victim?" in shown
    assert "valid for this call only" in shown
    term.type(answer)
    code = term.finish()
    assert (humans.root / "victim").read_text() == "precious"
    assert "kept victim" in term.text, term.text
    assert code == 0
    assert term.text.count("[y/n]") == 1  # asked once


@pytest.mark.parametrize("answer,tool", [("y", "remover"),
                                         ("yes", "remover"),
                                         ("y", "remover-sh")])
def test_a_persons_yes_deletes_it(humans, answer, tool):
    term = Terminal(humans, tool, "victim")
    term.expect("[y/n]")
    term.type(answer)
    assert term.finish() == 0, term.text
    assert not (humans.root / "victim").exists()
    assert "deleted victim" in term.text
    assert term.text.count("[y/n]") == 1


def test_refusing_at_the_prompt_runs_nothing_again(humans):
    term = Terminal(humans, "remover", "victim")
    term.expect("[y/n]")
    os.write(term.fd, b"\x04")  # Ctrl-D: no answer
    code = term.finish()
    assert code == 3
    assert "nothing was approved" in term.text
    assert (humans.root / "victim").read_text() == "precious"


def test_a_secret_is_typed_unseen_and_reaches_only_the_tool(humans):
    term = Terminal(humans, "login")
    shown = term.expect("secret: not shown as you type")
    assert "login asks a person for a secret" in shown
    term.expect("deploy token: ")
    # Echo is off by the time the prompt shows: nothing typed after it
    # can be seen, however fast.
    term.echo_off(timeout=0)
    term.type(SECRET)
    assert term.finish() == 0, term.text
    assert (humans.root / "got-token").read_text() == SECRET
    assert f"logged in ({len(SECRET)} characters)" in term.text
    assert SECRET not in term.text  # echo was off
    # Nowhere else: not in acor's cache, sessions, logs or any other file.
    (humans.root / "got-token").unlink()
    for folder in (humans.root, humans.root.parent / "acor-cache"):
        for path in folder.rglob("*"):
            if path.is_file():
                assert SECRET.encode() not in path.read_bytes(), path


def test_a_secret_is_never_taken_from_an_agent(humans):
    done = acor(humans, "call", "login", json.dumps({"token": SECRET}))
    assert done.returncode == 2
    assert "token: only a person may give this" in done.stdout
    assert SECRET not in done.stdout.replace(json.dumps(SECRET), "")
    assert not (humans.root / "got-token").exists()


# --- MCP: the SDK client against a real acor mcp ----------------------------

mcp = pytest.importorskip("mcp", reason="acor mcp needs the extra: "
                                        "pip install 'acor-cli[mcp]'")


def _server(project):
    from mcp_helpers import acor_mcp_stdio
    return acor_mcp_stdio(project)


def _texts(result):
    return "\n".join(b.text for b in result.content if b.type == "text")


MODES = ["legacy", "auto"]  # the handshake, and 2026-07-28


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
async def test_mcp_never_takes_a_human_argument(humans, mode):
    from mcp import Client
    async with Client(_server(humans), mode=mode) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert "yes" not in tools["remover"].input_schema["properties"]
        assert "token" not in json.dumps(tools["login"].input_schema)
        given = await client.call_tool("remover",
                                       {"path": "victim", "yes": True})
        assert given.is_error
        assert (humans.root / "victim").exists()
        # No person can be asked (no elicitation): hand it to one.
        asked = await client.call_tool("remover", {"path": "victim"})
        text = _texts(asked)
        assert "Only a person may answer this" in text
        assert "acor remover -- victim" in text  # runnable as is
        assert asked.meta["acor/result"]["next"] is None
        assert asked.meta["acor/result"]["audience"] == "human"
    assert (humans.root / "victim").exists()


def _answering(action, content=None, seen=None):
    from mcp_types import ElicitResult

    async def answer(ctx, params):
        if seen is not None:
            seen.append(params)
        return ElicitResult(action=action, content=content)
    return answer


@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("action,content,kept", [
    ("accept", {"yes": True}, False),
    ("accept", {"yes": False}, True),
    ("decline", None, True),
    ("cancel", None, True)])
async def test_mcp_asks_once_and_carries_the_answer(humans, mode, action,
                                                    content, kept):
    from mcp import Client
    seen = []
    async with Client(_server(humans), mode=mode,
                      elicitation_callback=_answering(action, content,
                                                      seen)) as client:
        result = await client.call_tool("remover", {"path": "victim"})
    assert len(seen) == 1  # one elicitation for the field set
    form = seen[0]
    assert "remover asks a person to approve" in form.message
    assert "command: acor remover -- victim" in form.message
    assert form.requested_schema["properties"]["yes"]["type"] == "boolean"
    assert (humans.root / "victim").exists() == kept
    text = _texts(result)
    if action == "accept":
        assert ("kept victim" if kept else "deleted victim") in text
    else:
        assert "deleted" not in text and "kept victim" not in text


@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
async def test_a_secret_is_never_asked_in_a_form(humans, mode):
    """A client that can open pages gets a URL on 127.0.0.1; the person
    answers there, and the answer never passes through the client."""
    import httpx2 as httpx
    from mcp import Client
    from mcp_types import ElicitResult
    seen = []

    async def person(ctx, params):
        seen.append(params)
        assert getattr(params, "mode", None) == "url", params
        assert SECRET not in params.message
        async with httpx.AsyncClient() as browser:
            page = await browser.get(params.url)
            assert page.status_code == 200
            assert "login" in page.text and 'type="password"' in page.text
            token = params.url.split("token=", 1)[1]
            sent = await browser.post(params.url.split("?")[0], data={
                "token": token, "f_token": SECRET, "action": "approve"})
            assert sent.status_code == 200
            again = await browser.get(params.url)  # one answer only
            assert again.status_code == 404
        return ElicitResult(action="accept")
    async with Client(_server(humans), mode=mode,
                      elicitation_callback=person) as client:
        result = await client.call_tool("login", {})
        assert not result.is_error, _texts(result)
        assert f"logged in ({len(SECRET)} characters)" in _texts(result)
        assert SECRET not in json.dumps(result.model_dump(mode="json"))
    assert len(seen) == 1
    assert (humans.root / "got-token").read_text() == SECRET



@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
async def test_a_high_level_approval_is_never_taken_from_a_form(humans,
                                                                mode):
    from mcp import Client
    humans.add_tool("wiper", REMOVER, args=HIGH)
    seen = []
    # A headless client that accepts whatever it is asked, with content.
    async with Client(_server(humans), mode=mode,
                      elicitation_callback=_answering(
                          "decline", None, seen)) as client:
        result = await client.call_tool("wiper", {"path": "victim"})
    assert len(seen) == 1
    assert getattr(seen[0], "mode", None) == "url"  # never a form
    assert not hasattr(seen[0], "requested_schema")
    assert (humans.root / "victim").exists()
    assert "deleted" not in _texts(result)


# --- acor new and acor check -------------------------------------------------

def test_acor_new_approval_makes_a_tool_that_waits_for_a_person(project):
    made = acor(project, "new", "wipe", "--approval")
    assert made.returncode == 0, made.stdout + made.stderr
    folder = project.root / "tools" / "wipe"
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["args"]["properties"]["yes"]["x-acor"] == {"human": True}
    checked = acor(project, "check", "wipe")
    assert checked.returncode == 0, checked.stdout
    assert (folder / "sample.txt").exists()  # the example deleted nothing
    tests = subprocess.run(
        [str(Path(ACOR_SCRIPT).with_name("pytest")), "-q",
         "-p", "no:cacheprovider", str(folder)], cwd=project.root,
        env=project.env, capture_output=True, text=True, timeout=120)
    assert tests.returncode == 0, tests.stdout + tests.stderr
    assert "4 passed" in tests.stdout


@pytest.mark.parametrize("given", [{"path": "victim", "yes": True},
                                   ["victim", "--yes"]])
def test_acor_check_refuses_an_example_that_approves(humans, given):
    folder = humans.root / "tools" / "remover"
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["examples"] = [{"args": given, "exit_code": 0}]
    (folder / "manifest.json").write_text(json.dumps(manifest))
    checked = acor(humans, "check", "remover")
    assert checked.returncode != 0
    assert "only a person may give" in checked.stdout
    assert '"exit_code": 3' in checked.stdout  # the fix
    assert (humans.root / "victim").exists()


def test_the_prompt_shows_a_tools_text_as_data(humans):
    """Issue 20, item 7: field descriptions and the reason reach the
    terminal without their escape sequences or bidi controls."""
    hostile = "Delete\x1b]0;pwned\x07\x1b[2J\u202eevil it"
    humans.add_tool("hostile", REMOVER.replace(
        '"Delete it for good"', repr(hostile)).replace(
        'f"Delete {args.path}?"', repr(hostile)), args=REMOVER_ARGS)
    term = Terminal(humans, "hostile", "victim")
    shown = term.expect("[y/n]")
    term.type("n")
    term.finish()
    assert "\x1b]0;pwned" not in shown and "\x1b[2J" not in shown
    assert "\u202e" not in shown
    assert "\\u202eevil it" in shown  # the control made visible
    assert (humans.root / "victim").exists()

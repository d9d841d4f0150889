"""What the ``acor`` command says before any tool runs, through a real
``acor`` process: where its errors go under ``acor mcp``, the ``next``
command of a bad option or argument, what each command says of a manifest
discovery skipped, help, and the definitions ``acor export`` prints."""

import json
import re
import subprocess

import pytest

from conftest import ACOR_SCRIPT


def run_acor(project, *args, stdin=subprocess.DEVNULL, timeout=60):
    return subprocess.run([ACOR_SCRIPT, *args], cwd=project.root,
                          env=project.env, stdin=stdin, capture_output=True,
                          timeout=timeout)


def next_line(text):
    """The ``next`` command of an ACOR error, as text: its ``**Next**:``
    line, or in JSON lines (--format json) the error's ``next``."""
    import shlex
    if text.startswith("{"):
        error = next(json.loads(line) for line in text.splitlines()
                     if json.loads(line)["type"] == "error")
        return shlex.join(error["next"])
    return next(line.removeprefix("**Next**: ") for line in
                text.splitlines() if line.startswith("**Next**: "))


# --- 31.11: under acor mcp, stdout is JSON-RPC from its first byte ---------

BAD_BEFORE_SERVING = [
    ["--timeout", "x", "mcp"],
    ["--timeout=x", "mcp"],
    ["--idle-timeout", "0", "mcp"],
    ["--timeout", "mcp"],
    ["--max-output", "zz", "mcp"],
    ["--format", "xml", "mcp"],
    ["--format", "json", "--timeout", "-1", "mcp"],
    ["--bogus", "mcp"],
    ["--no-input", "--bogus=1", "mcp"],
    ["--config", "missing.yaml", "mcp"],
    ["--config", "bad.yaml", "mcp"],
    ["mcp", "--bogus"],
    ["mcp", "--timeout", "x"],
]


@pytest.mark.parametrize("args", BAD_BEFORE_SERVING, ids=" ".join)
def test_31_11_a_bad_option_around_mcp_writes_nothing_to_stdout(project,
                                                                 args):
    """An MCP client reads the server's stdout as JSON-RPC: an error
    before serving (a global option before `mcp`, valid or unknown, a
    config that does not load, an option of mcp's own) goes to stderr in
    ACOR form, stdout stays empty, exit 2."""
    (project.root / "bad.yaml").write_text("tools_dirs: [\n")
    done = run_acor(project, *args)
    assert done.stdout == b""
    assert done.returncode == 2
    # In the format asked (--format json: JSON lines), on stderr.
    assert b"## Error: " in done.stderr or b'"type":"error"' in done.stderr
    assert b"E_USAGE" in done.stderr or b"E_CONFIG" in done.stderr


def test_31_11_a_valid_global_option_before_mcp_serves_json_rpc_only(
        project):
    """`acor --timeout 5 mcp` serves: every byte of stdout, from the
    first, is a JSON-RPC message."""
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                  "params": {"protocolVersion": "2025-06-18",
                             "capabilities": {},
                             "clientInfo": {"name": "t", "version": "1"}}}
    server = subprocess.Popen([ACOR_SCRIPT, "--timeout", "5", "mcp"],
                              cwd=project.root, env=project.env,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE)
    out, err = server.communicate(json.dumps(initialize).encode() + b"\n",
                                  timeout=60)
    assert out.startswith(b'{"'), (out[:200], err[-2000:])
    messages = [json.loads(line) for line in out.splitlines()]
    assert messages and all(m["jsonrpc"] == "2.0" for m in messages)
    assert messages[0]["result"]["serverInfo"]["name"] == "acor"


# --- 31.13: every command says the same of a manifest discovery skipped ----

def add_skipped_tool(project):
    """A manifest discovery skips: its entry does not exist."""
    folder = project.root / "tools" / "broken"
    folder.mkdir(parents=True)
    (folder / "manifest.json").write_text(json.dumps(
        {"name": "broken", "description": "a broken tool",
         "entry": "missing.py"}))
    return "'entry' 'missing.py' is not an existing file"


@pytest.mark.parametrize("args", [
    ["show", "broken"], ["--format", "json", "show", "broken"],
    ["help", "broken"], ["call", "broken", "{}"], ["broken", "x"],
    ["export", "skill", "broken", "--dir", "skills"],
    ["export", "openai", "broken"], ["export", "anthropic", "broken"]],
    ids=" ".join)
def test_31_13_every_command_names_a_skipped_manifest_and_why(project, args):
    reason = add_skipped_tool(project)
    done = run_acor(project, *args)
    text = done.stdout.decode()
    assert done.returncode == 2, text
    assert "E_INVALID_MANIFEST" in text and reason in text, text
    assert "E_UNKNOWN_TOOL" not in text


def test_31_13_acor_check_gives_the_same_reason(project):
    reason = add_skipped_tool(project)
    done = run_acor(project, "check", "broken")
    assert done.returncode == 1
    assert f"acor skips this manifest: {reason}" in done.stdout.decode()


def test_31_13_an_mcp_call_of_a_skipped_manifest_says_why(project):
    """Over MCP the call is a protocol error (the tool is not listed), and
    its message is what every command says of the manifest."""
    reason = add_skipped_tool(project)
    requests = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
         "params": {"name": "broken", "arguments": {}}}]
    server = subprocess.Popen([ACOR_SCRIPT, "mcp"], cwd=project.root,
                              env=project.env, stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    answers = {}
    try:
        for request in requests:
            server.stdin.write(json.dumps(request).encode() + b"\n")
            server.stdin.flush()
            while request.get("id") is not None and \
                    request["id"] not in answers:
                message = json.loads(server.stdout.readline())
                answers[message.get("id")] = message
    finally:
        server.stdin.close()
        server.wait(timeout=60)
        server.stdout.close()
        server.stderr.close()
    error = answers[2]["error"]
    assert error["code"] == -32602
    assert "E_INVALID_MANIFEST" in error["message"]
    assert reason in error["message"]


# --- 32.5: `next` is the user's own command, the bad word corrected --------

STATS_ARGS = {
    "type": "object", "required": ["count"], "additionalProperties": False,
    "properties": {
        "count": {"type": "integer", "minimum": 1, "maximum": 100,
                  "x-acor": {"position": 0}},
        "mode": {"type": "string", "enum": ["fast", "slow"],
                 "default": "fast", "description": "how",
                 "x-acor": {"flag": "--mode"}},
        "verbose": {"type": "boolean", "x-acor": {"flag": "--verbose"}}}}


def add_stats(project):
    """The same arguments twice: a Python tool that parses them itself
    (tool.parse_args) and a shell tool the launcher parses them for."""
    project.add_tool("stats", """
        from acor import AcorTool
        with AcorTool() as tool:
            tool.output(vars(tool.parse_args()))
        """, args=STATS_ARGS)
    folder = project.root / "tools" / "shstats"
    folder.mkdir()
    script = folder / "run.sh"
    script.write_text("#!/bin/sh\necho \"$ACOR_ARGS\"\n")
    script.chmod(0o755)
    (folder / "manifest.json").write_text(json.dumps(
        {"name": "shstats", "description": "stats in sh", "entry": "run.sh",
         "args": STATS_ARGS}))


@pytest.mark.parametrize("args, expected", [
    (["--timeout", "abc", "stats", "5"], "acor --timeout 60 stats 5"),
    (["--timeout=1e9", "stats", "5"], "acor --timeout=604800 stats 5"),
    (["--idle-timeout", "0", "stats", "5"], "acor --idle-timeout 30 stats 5"),
    (["--format", "xml", "stats", "5"], "acor --format json stats 5"),
    (["--format=jsno", "stats", "5"], "acor --format=json stats 5"),
    (["--max-output", "zz", "stats", "5"], "acor --max-output 64k stats 5"),
    (["--timeout", "--format", "json", "stats", "5"],
     "acor --timeout 60 --format json stats 5"),
    (["--timeout", "list"], "acor --timeout 60 list"),
    (["--timout", "5", "stats", "5"], "acor --timeout 5 stats 5"),
    (["list", "--jsn"], "acor list --json"),
    (["schema", "event"], "acor schema events"),
    (["export", "openai", "--respnses"], "acor export openai --responses"),
], ids=lambda v: " ".join(v) if isinstance(v, list) else "")
def test_32_5_a_bad_option_suggests_the_command_asked_corrected(
        project, args, expected):
    add_stats(project)
    done = run_acor(project, *args)
    assert done.returncode == 2
    assert next_line(done.stdout.decode()) == expected
    again = run_acor(project, *expected.split()[1:])
    assert again.returncode == 0, again.stdout + again.stderr


@pytest.mark.parametrize("tool", ["stats", "shstats"])
@pytest.mark.parametrize("args, fixed", [
    (["5", "--mode", "fsat"], "5 --mode fast"),
    (["5", "--mode=slwo"], "5 --mode=slow"),
    (["500"], "100"),
    (["5", "--verbos"], "5 --verbose"),
    (["abc"], None),            # nothing to derive: the tool's --help
    ([], None),
], ids=lambda v: " ".join(v) if isinstance(v, list) else "")
def test_32_5_a_tools_usage_error_suggests_the_corrected_command(
        project, tool, args, fixed):
    add_stats(project)
    done = run_acor(project, tool, *args)
    assert done.returncode == 2
    suggested = next_line(done.stdout.decode())
    if fixed is None:
        assert suggested == f"acor {tool} --help"
    else:
        assert suggested == f"acor {tool} {fixed}"
    # Runs as it is (the shell tool prints its ACOR_ARGS and no status:
    # what matters is that its arguments are accepted).
    again = run_acor(project, *suggested.split()[1:])
    assert again.returncode != 2 and b"E_USAGE" not in again.stdout, \
        again.stdout + again.stderr


def test_32_5_a_tools_help_lists_the_allowed_values(project):
    add_stats(project)
    for tool in ("stats", "shstats"):
        done = run_acor(project, tool, "--help")
        assert "one of: fast, slow" in done.stdout.decode()


# --- 32.11: help of a subcommand; the README documents acor export --------

def test_32_11_acor_help_takes_a_subcommand(project):
    asked = run_acor(project, "help", "export", "openai")
    direct = run_acor(project, "export", "openai", "--help")
    assert asked.returncode == 0, asked.stdout
    assert asked.stdout == direct.stdout
    assert asked.stdout.startswith(b"Usage: acor export openai ")
    wrong = run_acor(project, "help", "export", "nope")
    assert wrong.returncode == 2
    assert next_line(wrong.stdout.decode()) == "acor help export"


def test_32_11_the_readme_documents_every_built_in_command(project):
    """Each command `acor --help` lists has its line in the README's
    command summary, and `acor export` its own section."""
    from conftest import REPO
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    summary = readme[readme.index("## Running tools"):]
    summary = summary[:summary.index("\n```\n", summary.index("```") + 3)]
    listed = run_acor(project, "--help").stdout.decode()
    commands = listed[listed.index("Commands:"):listed.index("Tools:")]
    names = re.findall(r"^  (\w+)", commands, re.MULTILINE)
    assert "export" in names
    for name in names:
        assert f"\nacor {name}" in summary, name
    assert "## Agents without MCP: `acor export`" in readme


def test_32_11_make_demo_says_its_timeout_is_meant():
    """`make demo`'s timed-out step is expected: no "Error 124 (ignored)"
    from make, and any other exit fails the demo."""
    from conftest import REPO
    makefile = (REPO / "Makefile").read_text()
    demo = makefile[makefile.index("\ndemo:"):makefile.index("\n\n",
                                                           makefile.index(
                                                               "\ndemo:"))]
    step = next(line for line in demo.splitlines() if "--timeout 1" in line)
    assert not step.lstrip().startswith("-")  # make's "(ignored)" prefix
    assert "-eq 124" in demo


def test_32_5_an_option_error_comes_in_the_format_asked(project):
    """`--format json` before a bad option: the error is JSON lines, its
    next the same command with the bad value corrected."""
    done = run_acor(project, "--format", "json", "--timeout", "x", "list")
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert lines[0]["type"] == "error"
    assert lines[0]["next"] == ["acor", "--format", "json", "--timeout",
                                "60", "list"]
    assert lines[-1]["type"] == "result" and lines[-1]["exit_code"] == 2


def test_32_5_an_option_error_to_a_reader_gone_leaves_no_traceback(project):
    """`acor --format xml list | head -c0`: the pipe closed before the
    error is written; acor leaves quietly, as `cat` does."""
    import os
    read, write = os.pipe()
    os.close(read)
    try:
        done = subprocess.run([ACOR_SCRIPT, "--format", "xml", "list"],
                              cwd=project.root, env=project.env,
                              stdout=write, stderr=subprocess.PIPE,
                              timeout=60)
    finally:
        os.close(write)
    assert b"Traceback" not in done.stderr, done.stderr.decode()
    assert done.returncode == 141


def test_the_built_in_commands_are_named_in_one_place():
    # acor.cli.main dispatches these names, discovery refuses a tool named
    # like one, and the click application registers them: one list, and
    # the registrations held to it (a command registered but not listed
    # would be shadowed by a tool of its name; one listed but not
    # registered would answer "no such command").
    from acor.cli.command_names import BUILTIN_COMMANDS
    from acor.cli.commands.app import cli
    assert set(cli.commands) == BUILTIN_COMMANDS

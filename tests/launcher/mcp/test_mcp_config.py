"""`acor mcp --print-config CLIENT`: a snippet that works when copied.

Each client's shape is parsed as the client would (JSON, TOML), and the
command it names is started for real, from a folder that is not the
project (as GUI clients start servers), with the SDK's own client: it must
serve the project's tools and run them in the project."""

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from conftest import ACOR_SCRIPT

WHERE = '''
import os
from acor import AcorTool
with AcorTool() as tool:
    args = tool.parse_args()
    with open(args.path) as f:
        tool.output({"cwd": os.getcwd(), "text": f.read()})
'''
WHERE_ARGS = {"type": "object", "additionalProperties": False,
              "required": ["path"],
              "properties": {"path": {"type": "string",
                                      "x-acor": {"position": 0}}}}


def make_project(project, config=True):
    project.add_tool("where", WHERE, args=WHERE_ARGS, timeout=300)
    project.add_tool("other", "print('x')")
    (project.root / "data.txt").write_text("in the project\n")
    if config:
        (project.root / ".acor").mkdir()
        (project.root / ".acor" / "config.yaml").write_text(
            "tools_dirs: [tools]\n")
    sub = project.root / "deep" / "er"
    sub.mkdir(parents=True)
    return sub


def print_config(project, client, *args, cwd):
    return subprocess.run([ACOR_SCRIPT, "mcp", *args, "--print-config",
                           client], cwd=cwd, env=project.env,
                          capture_output=True, text=True, timeout=60)


def server_entry(client, stdout):
    """The acor entry of the snippet, read as the client reads it."""
    if client == "codex":
        return tomllib.loads(stdout)["mcp_servers"]["acor"]
    data = json.loads(stdout)
    if client == "vscode":
        entry = data["servers"]["acor"]
        assert entry.pop("type") == "stdio"
        return entry
    return data["mcpServers"]["acor"]


@pytest.mark.parametrize("client", ["claude", "cursor", "vscode", "codex"])
def test_each_shape_parses_and_pins_the_project(project, client):
    sub = make_project(project)
    done = print_config(project, client, cwd=sub)
    assert done.returncode == 0, done.stderr
    entry = server_entry(client, done.stdout)
    root = str(project.root)
    # The absolute path of this acor: GUI clients lack the venv's PATH.
    assert entry["command"] == ACOR_SCRIPT and os.path.isabs(ACOR_SCRIPT)
    assert entry["args"] == ["--config",
                             os.path.join(root, ".acor", "config.yaml"),
                             "mcp", "--cwd", root]
    if client == "codex":  # longer than Codex's 60 s default, and where's
        assert tomllib.loads(done.stdout)["mcp_servers"]["acor"][
            "tool_timeout_sec"] == 300 + 30
    # Where it goes, on stderr only: stdout is the snippet alone.
    assert {"claude": ".mcp.json", "cursor": ".cursor/mcp.json",
            "vscode": ".vscode/mcp.json",
            "codex": "config.toml"}[client] in done.stderr


def test_without_a_config_file_the_root_alone_pins_it(project):
    make_project(project, config=False)
    done = print_config(project, "vscode", "--tools", "where", "--tools",
                        "other", "--timeout", "9", cwd=project.root)
    assert done.returncode == 0, done.stderr
    assert server_entry("vscode", done.stdout)["args"] == [
        "mcp", "--cwd", str(project.root), "--tools", "other,where",
        "--timeout", "9"]


def test_an_unknown_tool_is_refused_before_any_snippet(project):
    sub = make_project(project)
    done = print_config(project, "claude", "--tools", "where,nope", cwd=sub)
    assert done.returncode == 2 and done.stdout == ""
    assert "unknown tool(s): nope" in done.stderr


@pytest.mark.parametrize("client, mode", [
    ("claude", "legacy"), ("cursor", "auto"), ("vscode", "legacy"),
    ("codex", "auto")])
def test_the_printed_command_serves_the_project_from_anywhere(
        project, tmp_path, client, mode):
    pytest.importorskip("mcp", reason="needs the extra: "
                                      "pip install 'acor-cli[mcp]'")
    import anyio
    from mcp import Client, StdioServerParameters
    sub = make_project(project)
    entry = server_entry(client, print_config(project, client,
                                              cwd=sub).stdout)
    elsewhere = tmp_path / "client-home"
    elsewhere.mkdir()
    env = {k: v for k, v in project.env.items()
           if k.startswith("ACOR_") or k in ("HOME", "XDG_CONFIG_HOME")}
    env["PATH"] = "/usr/bin:/bin"  # no virtualenv on it, as a GUI's

    async def scenario():
        params = StdioServerParameters(command=entry["command"],
                                       args=entry["args"], cwd=str(elsewhere),
                                       env=env)
        async with Client(params, mode=mode) as client_:
            assert client_.protocol_version == (
                "2026-07-28" if mode == "auto" else "2025-11-25")
            tools = {t.name for t in (await client_.list_tools()).tools}
            assert tools == {"where", "other", "acor_read"}
            # A relative path means the project's file: tools run there.
            done = await client_.call_tool("where", {"path": "data.txt"})
            assert not done.is_error, done.content
            assert done.structured_content == {
                "cwd": str(project.root), "text": "in the project\n"}
    anyio.run(scenario)


def test_a_hostile_project_path_is_escaped_and_reads_back_exactly(project,
                                                                  tmp_path):
    from conftest import Project
    odd = tmp_path / "p \"q' \\ \u202e\x7f\x1b[2J\nline"
    hostile = Project(odd, project.env)
    make_project(hostile)
    for client in ("claude", "codex"):
        done = print_config(hostile, client, cwd=odd)
        assert done.returncode == 0, done.stderr
        assert server_entry(client, done.stdout)["args"][-1] == str(odd)
        for raw in ("\u202e", "\x7f", "\x1b"):
            assert raw not in done.stdout and raw not in done.stderr


# --- acor mcp's options, as a client's log shows them ------------------

def run_mcp(project, *args, cwd=None):
    return subprocess.run([ACOR_SCRIPT, "mcp", *args], cwd=cwd or
                          project.root, env=project.env, input="",
                          capture_output=True, text=True, timeout=60)


def test_a_space_after_the_comma_is_a_usage_error_on_stderr(project):
    make_project(project)
    done = run_mcp(project, "--tools", "where,", "other")
    assert done.returncode == 2
    assert done.stdout == ""  # stdout is JSON-RPC's, even for this
    assert "unexpected extra argument (other)" in done.stderr
    assert "comma-separated without spaces" in done.stderr


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_repeated_tools_options_add_up(project, mode):
    pytest.importorskip("mcp")
    import anyio
    from mcp import Client, StdioServerParameters
    make_project(project)
    project.add_tool("third", "print('x')")

    async def listing():
        params = StdioServerParameters(
            command=ACOR_SCRIPT, args=["mcp", "--tools", "where", "--tools",
                                       "other"],
            cwd=str(project.root), env=project.env)
        async with Client(params, mode=mode) as client:
            return {t.name for t in (await client.list_tools()).tools}
    assert anyio.run(listing) == {"where", "other", "acor_read"}


def test_a_server_started_outside_the_project_says_how_to_pin_it(project,
                                                                 tmp_path):
    pytest.importorskip("mcp")
    make_project(project)
    elsewhere = tmp_path / "desktop-cwd"
    elsewhere.mkdir()
    done = run_mcp(project, "--tools", "where", cwd=elsewhere)
    assert done.returncode == 2 and done.stdout == ""
    assert "E_UNKNOWN_TOOL" in done.stderr
    assert f"acor mcp looked for tools in {elsewhere}" in done.stderr
    assert "--cwd /abs/project" in done.stderr
    assert "--print-config" in done.stderr
    # --cwd pins it: the same command, from the same place, now starts.
    pinned = run_mcp(project, "--tools", "where", "--cwd",
                     str(project.root), cwd=elsewhere)
    assert pinned.returncode == 0, pinned.stderr


def test_a_cwd_that_does_not_exist_is_a_clear_error(project, tmp_path):
    done = run_mcp(project, "--cwd", str(tmp_path / "gone"))
    assert done.returncode == 2 and done.stdout == ""
    assert "--cwd" in done.stderr and "No such file" in done.stderr

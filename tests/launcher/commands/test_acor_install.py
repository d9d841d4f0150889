"""`acor install --host H` writes acor's entry into the host's own file in
the project, keeping what else is there, and `--uninstall` takes only it
back out; both are idempotent. The hosts' commands (claude, codex, gemini)
are not installed here: the tests read the files those hosts read. Also
the hosts' own limits: the URL entry `acor mcp --http --print-config`
writes, and the output budget tools/list tells Claude Code."""

import json
import tomllib

import pytest
from mcp import Client, StdioServerParameters

from mcp_helpers import acor_mcp_stdio

TOOL = """\
from acor import AcorTool
with AcorTool() as tool:
    tool.output("done")
"""
# host -> (its file, a version of it with someone else's content, how to
# read it, where the servers are)
HOSTS = {
    "claude": (".mcp.json", '{"mcpServers": {"other": {"command": "x"}}}',
               json.loads, "mcpServers"),
    "cursor": (".cursor/mcp.json", '{"mcpServers": {"other": {"url": '
               '"http://h/mcp"}}}', json.loads, "mcpServers"),
    "vscode": (".vscode/mcp.json", '{"inputs": [], "servers": {"other": '
               '{"type": "stdio", "command": "x"}}}', json.loads, "servers"),
    "gemini": (".gemini/settings.json", '{"theme": "Dracula", '
               '"mcpServers": {"other": {"command": "x"}}}', json.loads,
               "mcpServers"),
    "codex": (".codex/config.toml", 'model = "o3"\n\n[mcp_servers.other]\n'
              'command = "x"\n\n[mcp_servers.other.env]\nA = "1"\n',
              tomllib.loads, "mcp_servers"),
}


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.fixture
def home_project(project, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    project.env["HOME"] = str(home)
    project.add_tool("plain", TOOL)
    return project


@pytest.mark.parametrize("host", sorted(HOSTS))
def test_install_keeps_the_rest_and_uninstall_takes_only_acor_out(
        home_project, host):
    relative, original, read, key = HOSTS[host]
    path = home_project.root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(original)
    done = home_project.run("install", "--host", host)
    assert done.returncode == 0, done.stdout + done.stderr
    data = read(path.read_text())
    entry = data[key]["acor"]
    assert entry["args"][-2:] == ["--cwd", str(home_project.root)]
    assert entry["command"].endswith("acor")
    assert data[key]["other"] == read(original)[key]["other"]
    for name, value in read(original).items():
        if name != key:
            assert data[name] == value
    written = path.read_bytes()
    again = home_project.run("install", "--host", host)
    assert again.returncode == 0 and "nothing to do" in again.stdout
    assert path.read_bytes() == written
    out = home_project.run("install", "--host", host, "--uninstall")
    assert out.returncode == 0 and "removed acor" in out.stdout
    assert read(path.read_text()) == read(original)
    twice = home_project.run("install", "--host", host, "--uninstall")
    assert twice.returncode == 0 and "nothing to do" in twice.stdout
    assert list((home_project.root.parent / "home").iterdir()) == []


@pytest.mark.parametrize("host", sorted(HOSTS))
def test_a_file_acor_created_is_gone_after_uninstall(home_project, host):
    relative = HOSTS[host][0]
    assert home_project.run("install", "--host", host).returncode == 0
    assert (home_project.root / relative).exists()
    assert home_project.run("install", "--host", host,
                            "--uninstall").returncode == 0
    assert not (home_project.root / relative).exists()


def test_a_file_acor_cannot_read_is_left_as_it_is(home_project):
    path = home_project.root / ".vscode" / "mcp.json"
    path.parent.mkdir()
    path.write_text('{"servers": { // a comment\n}}')
    done = home_project.run("install", "--host", "vscode")
    assert done.returncode == 2
    assert "is not one acor can edit" in done.stdout
    assert path.read_text() == '{"servers": { // a comment\n}}'


@pytest.mark.anyio
async def test_the_installed_entry_starts_a_server_with_the_tools(
        home_project, tmp_path):
    assert home_project.run("install", "--host", "claude").returncode == 0
    entry = json.loads((home_project.root / ".mcp.json").read_text())[
        "mcpServers"]["acor"]
    params = StdioServerParameters(
        command=entry["command"], args=entry["args"], cwd=str(tmp_path),
        env={k: v for k, v in home_project.env.items()
             if k.startswith("ACOR_") or k in ("PATH", "HOME",
                                                "XDG_CONFIG_HOME")})
    async with Client(params) as client:
        names = [t.name for t in (await client.list_tools()).tools]
    assert names == ["plain", "acor_read"]  # acor_read: linked files


# --- the hosts' limits ---------------------------------------------------

TOKEN = "f" * 43


@pytest.mark.parametrize("host,header", [
    ("claude", "Bearer ${ACOR_MCP_TOKEN}"),
    ("cursor", "Bearer ${env:ACOR_MCP_TOKEN}"),
    ("vscode", "Bearer ${input:acor-mcp-token}")])
def test_print_config_over_http_writes_the_url_and_no_token(
        project, host, header):
    project.env["ACOR_MCP_TOKEN"] = TOKEN
    done = project.run("mcp", "--http", "--host", "0.0.0.0", "--port",
                       "9000", "--allow-host", "box.example",
                       "--print-config", host)
    assert done.returncode == 0, done.stderr
    assert TOKEN not in done.stdout + done.stderr
    data = json.loads(done.stdout)
    servers = data["servers" if host == "vscode" else "mcpServers"]
    assert servers["acor"]["url"] == "http://box.example:9000/mcp"
    assert servers["acor"]["type"] == "http"
    assert servers["acor"]["headers"] == {"Authorization": header}
    if host == "vscode":
        (asked,) = data["inputs"]
        assert asked["id"] == "acor-mcp-token" and asked["password"] is True


def test_print_config_over_http_for_codex_names_the_token_variable(project):
    project.env["ACOR_MCP_TOKEN"] = TOKEN
    done = project.run("mcp", "--http", "--host", "0.0.0.0", "--allow-host",
                       "box.example", "--print-config", "codex")
    assert done.returncode == 0, done.stderr
    table = tomllib.loads(done.stdout)["mcp_servers"]["acor"]
    assert table == {"url": "http://box.example:8765/mcp",
                     "bearer_token_env_var": "ACOR_MCP_TOKEN"}


def test_print_config_on_loopback_needs_no_token(project):
    done = project.run("mcp", "--http", "--print-config", "claude")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["mcpServers"]["acor"] == {
        "type": "http", "url": "http://127.0.0.1:8765/mcp"}


def test_print_config_refuses_a_port_picked_at_start(project):
    done = project.run("mcp", "--http", "--port", "0", "--print-config",
                       "cursor")
    assert done.returncode == 2
    assert "--port 0 picks one at start" in done.stderr


@pytest.mark.anyio
async def test_tools_list_tells_claude_code_each_tools_output_budget(
        project):
    project.add_tool("plain", TOOL)
    project.add_tool("big", TOOL, max_output=1 << 20)
    project.add_tool("whole", TOOL, max_output=0)
    async with Client(acor_mcp_stdio(project)) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    key = "anthropic/maxResultSizeChars"
    assert tools["plain"].meta[key] == 32 * 1024 + 8192
    assert tools["big"].meta[key] == (1 << 20) + 8192
    assert key not in (tools["whole"].meta or {})

"""`acor export plugin --dir D`: one folder that is an Agent Plugin, a
Claude Code plugin with its marketplace, a Codex plugin and a Gemini CLI
extension. Each file is checked against its format's published schema
(tests/host_schemas, with their sources), and the server the folder names
is started as a host would start it, with the SDK client."""

import json
import pathlib
import shlex

import jsonschema
import pytest
from mcp import Client, StdioServerParameters

SCHEMAS = pathlib.Path(__file__).parent / "host_schemas"
TOOL = """\
from acor import AcorTool
with AcorTool() as tool:
    tool.output("done")
"""
SECRET_ARGS = {"type": "object", "properties": {
    "token": {"type": "string", "description": "the API token",
              "x-acor": {"human": True, "secret": True}},
    "where": {"type": "string", "x-acor": {"position": 0}}}}


@pytest.fixture
def anyio_backend():
    return "asyncio"


def validate(path, schema_file):
    schema = json.loads((SCHEMAS / schema_file).read_text())
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    problems = [e.message for e in cls(schema).iter_errors(
        json.loads(path.read_text()))]
    assert problems == [], f"{path.name}: {problems}"


def exported(project, *extra):
    project.add_tool("report_maker", TOOL, args=SECRET_ARGS)
    project.add_tool("plain", TOOL)
    done = project.run("export", "plugin", "--dir", "out", *extra)
    assert done.returncode == 0, done.stdout + done.stderr
    return project.root / "out"


def test_every_manifest_validates_against_its_published_schema(project):
    out = exported(project)
    validate(out / "plugin.json", "agent-plugins-1.0.0-plugin.schema.json")
    validate(out / "mcp.json", "agent-plugins-1.0.0-mcp.schema.json")
    validate(out / ".claude-plugin" / "plugin.json",
             "claude-code-plugin-manifest.json")
    validate(out / ".claude-plugin" / "marketplace.json",
             "claude-code-marketplace.json")
    validate(out / ".codex-plugin" / "plugin.json",
             "codex-plugin-manifest.json")
    gemini = json.loads((out / "gemini-extension.json").read_text())
    assert gemini["name"] == "out" and gemini["version"]  # its folder's
    assert set(gemini["mcpServers"]["acor"]) == {"command", "args"}


def test_the_names_and_skills_agree_across_the_formats(project):
    out = exported(project, "--name", "My Tools")
    names = {json.loads((out / path).read_text())["name"] for path in (
        "plugin.json", ".claude-plugin/plugin.json",
        ".claude-plugin/marketplace.json", ".codex-plugin/plugin.json",
        "gemini-extension.json")}
    assert names == {"my-tools"}
    market = json.loads((out / ".claude-plugin/marketplace.json").read_text())
    assert market["plugins"][0]["source"] == "./"
    skills = sorted(p.parent.name for p in out.glob("skills/*/SKILL.md"))
    assert skills == ["plain", "report-maker"]
    text = (out / "skills" / "report-maker" / "SKILL.md").read_text()
    assert text.startswith("---\nname: report-maker\n")


def test_no_file_holds_a_secret_and_none_is_asked_of_the_host(project):
    out = exported(project)
    for path in out.rglob("*.json"):
        data = json.loads(path.read_text())
        servers = data.get("mcpServers")
        for entry in (servers.values() if isinstance(servers, dict) else ()):
            assert "env" not in entry and "headers" not in entry
        assert "userConfig" not in data and "settings" not in data


def test_an_existing_folder_is_kept_unless_forced(project):
    out = exported(project)
    (out / "plugin.json").write_text("{}")
    again = project.run("export", "plugin", "--dir", "out")
    assert again.returncode == 2
    assert "exists already" in again.stdout
    assert "**Next**: acor export plugin --dir out --force" in again.stdout
    assert (out / "plugin.json").read_text() == "{}"
    forced = project.run("export", "plugin", "--dir", "out", "--force")
    assert forced.returncode == 0
    validate(out / "plugin.json", "agent-plugins-1.0.0-plugin.schema.json")


@pytest.mark.anyio
async def test_the_server_the_plugin_names_serves_the_projects_tools(
        project, tmp_path):
    out = exported(project)
    server = json.loads((out / "mcp.json").read_text())["mcpServers"]["acor"]
    assert server["type"] == "stdio"
    # A host starts it from a folder of its own, not the project's.
    params = StdioServerParameters(
        command=server["command"], args=server["args"], cwd=str(tmp_path),
        env={k: v for k, v in project.env.items()
             if k.startswith("ACOR_") or k in ("PATH", "HOME",
                                                "XDG_CONFIG_HOME")})
    async with Client(params) as client:
        names = sorted(t.name for t in (await client.list_tools()).tools)
        result = await client.call_tool("plain", {"argv": []})
    assert names == ["plain", "report_maker"]
    assert not result.is_error, shlex.join(server["args"])

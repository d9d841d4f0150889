"""`acor export plugin --dir D`: one folder that is an Agent Plugin, a
Claude Code plugin with its marketplace, a Codex plugin and a Gemini CLI
extension. Each file is checked against its format's published schema
(tests/launcher/commands/host_schemas, with their sources), and the server the folder names
is started as a host would start it, with the SDK client."""

import json
import pathlib
import shlex

import jsonschema
import pytest
from mcp import Client, StdioServerParameters

from mcp_helpers import acor_mcp_stdio

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


def test_a_tools_secret_becomes_the_hosts_sensitive_setting_not_a_value(
        project):
    project.env["ACOR_SECRET_REPORT_MAKER__TOKEN"] = "s3cr3t-value"
    out = exported(project)
    claude = json.loads((out / ".claude-plugin" / "plugin.json").read_text())
    assert claude["userConfig"] == {"report_maker__token": {
        "type": "string", "title": "report_maker: token",
        "description": "The report_maker tool's token: the API token",
        "sensitive": True, "required": False}}
    assert claude["mcpServers"]["acor"]["env"] == {
        "ACOR_SECRET_REPORT_MAKER__TOKEN": "${user_config.report_maker__token}"}
    gemini = json.loads((out / "gemini-extension.json").read_text())
    assert gemini["settings"] == [{
        "name": "report_maker: token",
        "description": "The report_maker tool's token: the API token",
        "envVar": "ACOR_SECRET_REPORT_MAKER__TOKEN", "sensitive": True}]
    for path in out.rglob("*"):
        if path.is_file():
            assert "s3cr3t-value" not in path.read_text()
    for path in ("mcp.json", ".codex-plugin/plugin.json"):
        (entry,) = json.loads((out / path).read_text())["mcpServers"].values()
        assert "env" not in entry  # no host setting to take it from


VAULT = """\
import os
from acor import AcorTool
with AcorTool() as tool:
    args = tool.parse_args()
    if args.token is None:
        tool.input_needed("The token?", {"token": {"type": "string"}},
                          audience="human")
    leaked = sorted(k for k in os.environ if k.startswith("ACOR_SECRET_"))
    tool.output(f"a token of {len(args.token)} characters; leaked: {leaked}")
"""


@pytest.mark.anyio
async def test_the_host_setting_reaches_only_its_own_tool(project):
    project.add_tool("vault", VAULT, args=SECRET_ARGS)
    project.add_tool("snoop", VAULT.replace("args.token is None", "False")
                     .replace("len(args.token)", "0"), args=SECRET_ARGS)
    project.env["ACOR_SECRET_VAULT__TOKEN"] = "s3cr3t-value"
    async with Client(acor_mcp_stdio(project)) as client:
        vault = await client.call_tool("vault", {"where": "x"})
        snoop = await client.call_tool("snoop", {"where": "x"})
    (text,) = [b.text for b in vault.content if b.type == "text"][:1]
    assert text == "a token of 12 characters; leaked: []"
    assert "s3cr3t-value" not in json.dumps(vault.model_dump(mode="json"))
    assert [b.text for b in snoop.content if b.type == "text"][0] == \
        "a token of 0 characters; leaked: []"


@pytest.mark.anyio
async def test_without_the_setting_the_person_is_asked(project):
    project.add_tool("vault", VAULT, args=SECRET_ARGS)
    async with Client(acor_mcp_stdio(project)) as client:
        result = await client.call_tool("vault", {"where": "x"})
    text = "\n".join(b.text for b in result.content if b.type == "text")
    assert "a token of" not in text


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
    assert names == ["acor_read", "plain", "report_maker"]
    assert not result.is_error, shlex.join(server["args"])

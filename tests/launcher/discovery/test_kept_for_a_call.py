"""What a long-lived server checks before a call (``load_registry(...,
for_tool=NAME)`` on its ``Kept`` registry): everything a call of that tool
depends on, and not the other tools' own files, which the check after
every call covers (tests/launcher/mcp/test_mcp_registry_changes.py runs
both through a real ``acor mcp``). Real projects on disk, real stats."""

import json
import os
import time

import pytest

from acor.cli.discovery.registry import Kept, load_registry

FUNCTION = '''\
from acor import tool


@tool
def {name}(count: int) -> str:
    """Say a count."""
    return str(count)
'''


@pytest.fixture
def served(project, monkeypatch):
    """A project of two folder tools and a function tool, dated a minute
    back (a scan with fresh timestamps is not kept), and a kept registry
    already loaded once as a server does at its first listing."""
    for key, value in project.env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.chdir(project.root)
    for name in ("echo", "other"):
        project.add_tool(name, "from acor import AcorTool\n")
    (project.root / "tools" / "counted.py").write_text(
        FUNCTION.format(name="counted"))
    then = time.time() - 60
    for folder, dirs, files in os.walk(project.root):
        for name in dirs + files:
            os.utime(os.path.join(folder, name), (then, then))
    kept = Kept()
    first = load_registry(kept=kept)
    assert set(first.tools) >= {"echo", "other", "counted"}
    assert load_registry(kept=kept) is first  # kept, not loaded again
    return project, kept, first


def describe(folder, text):
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["description"] = text
    (folder / "manifest.json").write_text(json.dumps(manifest))


def test_a_call_does_not_check_the_other_tools_files(served):
    project, kept, first = served
    describe(project.root / "tools" / "other", "edited")
    assert load_registry(kept=kept, for_tool="echo") is first
    assert load_registry(kept=kept, for_tool="counted") is first
    # The full check (the server's after every call) sees it.
    after = load_registry(kept=kept)
    assert after is not first
    assert after.get("other").description == "edited"


def test_a_call_sees_its_own_tools_manifest_edited(served):
    project, kept, first = served
    describe(project.root / "tools" / "echo", "edited")
    found = load_registry(kept=kept, for_tool="echo")
    assert found is not first
    assert found.get("echo").description == "edited"


def test_a_call_sees_its_function_tools_source_edited(served):
    project, kept, first = served
    (project.root / "tools" / "counted.py").write_text(
        FUNCTION.format(name="counted").replace("count: int",
                                                "count: int, step: int = 1"))
    found = load_registry(kept=kept, for_tool="counted")
    assert found is not first
    assert "step" in found.get("counted").args_schema["properties"]


def test_a_call_sees_a_tool_added_and_the_config_edited(served):
    project, kept, first = served
    project.add_tool("added", "from acor import AcorTool\n")
    found = load_registry(kept=kept, for_tool="echo")
    assert found is not first and "added" in found.tools
    config = project.root / ".acor" / "config.yaml"
    config.parent.mkdir()
    config.write_text("timeout: 7\n")
    assert load_registry(kept=kept, for_tool="echo").config.timeout == 7


def test_a_call_of_a_name_not_served_checks_everything(served):
    project, kept, first = served
    describe(project.root / "tools" / "other", "edited")
    assert load_registry(kept=kept, for_tool="nothing-such") is not first

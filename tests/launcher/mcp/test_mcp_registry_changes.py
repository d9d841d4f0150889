"""A running ``acor mcp`` keeps the registry it discovered between calls
(``acor.cli.discovery.registry.Kept``) and must still serve what is on
disk now: the official SDK client against a real ``acor mcp`` over stdio
(both protocol generations) sees a tool's edited manifest at the very
next call, is told of a tool added (and can call it), gets an error for a
tool removed, follows a config edited, and is told of a change the call
itself made.

Every project here is dated a minute back first (``settled``): discovery
does not keep a scan that holds a file changed in the last 2 s (the
racy-timestamp guard of ``acor.cli.discovery.cache``), so without that
every call would rescan and the kept registry would never be what is
tested.
"""

import json
import os
import shutil
import time

import pytest

pytest.importorskip("mcp", reason="acor mcp needs the extra: "
                                  "pip install 'acor-cli[mcp]'")

import anyio  # noqa: E402
import mcp_types as types  # noqa: E402
from mcp import Client  # noqa: E402
from mcp.shared.exceptions import MCPError  # noqa: E402

from mcp_helpers import acor_mcp_stdio  # noqa: E402
from test_mcp_http import Served, http_client  # noqa: E402

MODES = ("legacy", "2026-07-28")
ARGS = {"type": "object", "properties": {}, "additionalProperties": False}
WAIT = 60  # a bound on a hung server, never a measure of speed


def saying(word):
    return ("from acor import AcorTool\n\nwith AcorTool() as tool:\n"
            f"    tool.parse_args()\n    tool.output({word!r})\n")


# A tool that edits its own manifest's description while it runs (as the
# conformance suite's tool does): the change is the call's own.
SELF_EDITING = """
import json
from pathlib import Path

from acor import AcorTool

with AcorTool() as tool:
    tool.parse_args()
    manifest = Path(__file__).resolve().with_name("manifest.json")
    data = json.loads(manifest.read_text())
    data["description"] = "edited by its own call"
    manifest.write_text(json.dumps(data))
    tool.output("edited")
"""


def settled(project):
    """Every file and folder of ``project`` dated a minute back."""
    then = time.time() - 60
    for folder, dirs, files in os.walk(project.root):
        for name in dirs + files:
            os.utime(os.path.join(folder, name), (then, then))
    os.utime(project.root, (then, then))
    return project


@pytest.fixture
def two_tools(project):
    project.add_tool("echo", saying("v1"), args=ARGS)
    project.add_tool("other", saying("other"), args=ARGS)
    return settled(project)


def text(result):
    assert not result.is_error, result
    return "".join(block.text for block in result.content
                   if block.type == "text")


def names(listing):
    return {tool.name for tool in listing.tools}


class Notices:
    """The tools/list_changed notifications a legacy client got."""

    def __init__(self):
        self.got = anyio.Event()

    async def __call__(self, message):
        if isinstance(message, types.ToolListChangedNotification):
            self.got.set()


async def told_of_a_change(mode, client, notices, events):
    """Wait until the client of ``mode`` hears that the tools changed."""
    with anyio.fail_after(WAIT):
        if mode == "legacy":
            await notices.got.wait()
        else:
            event = await events.__anext__()
            assert type(event).__name__ == "ToolsListChanged"


def stdio(project, mode, scenario):
    """Run ``scenario(client, told)`` against ``acor mcp`` over stdio;
    ``told()`` waits for the change notice of ``mode``."""
    async def main():
        notices = Notices()
        async with Client(acor_mcp_stdio(project), mode=mode,
                          message_handler=notices) as client:
            if mode == "legacy":
                await scenario(client, lambda: told_of_a_change(
                    mode, client, notices, None))
                return
            async with client.listen(tools_list_changed=True) as events:
                await scenario(client, lambda: told_of_a_change(
                    mode, client, notices, events))
    anyio.run(main)


@pytest.mark.parametrize("mode", MODES)
def test_a_manifest_edited_between_two_calls_is_what_the_next_call_runs(
        two_tools, mode):
    folder = two_tools.root / "tools" / "echo"

    async def scenario(client, told):
        assert text(await client.call_tool("echo", {})) == "v1"
        (folder / "v2.py").write_text(saying("v2"))
        manifest = json.loads((folder / "manifest.json").read_text())
        manifest["entry"] = "v2.py"
        (folder / "manifest.json").write_text(json.dumps(manifest))
        assert text(await client.call_tool("echo", {})) == "v2"
    stdio(two_tools, mode, scenario)


@pytest.mark.parametrize("mode", MODES)
def test_a_tool_added_while_serving_is_announced_and_callable(two_tools,
                                                              mode):
    async def scenario(client, told):
        assert "added" not in names(await client.list_tools())
        assert text(await client.call_tool("echo", {})) == "v1"
        two_tools.add_tool("added", saying("new here"), args=ARGS)
        assert text(await client.call_tool("other", {})) == "other"
        await told()
        assert "added" in names(await client.list_tools())
        assert text(await client.call_tool("added", {})) == "new here"
    stdio(two_tools, mode, scenario)


@pytest.mark.parametrize("mode", MODES)
def test_a_tool_removed_while_serving_is_an_unknown_tool(two_tools, mode):
    async def scenario(client, told):
        assert "other" in names(await client.list_tools())
        assert text(await client.call_tool("other", {})) == "other"
        shutil.rmtree(two_tools.root / "tools" / "other")
        with pytest.raises(MCPError, match="Unknown tool: 'other'"):
            await client.call_tool("other", {})
        assert text(await client.call_tool("echo", {})) == "v1"
        await told()
        assert "other" not in names(await client.list_tools())
    stdio(two_tools, mode, scenario)


def test_a_config_edited_while_serving_is_followed(two_tools):
    config = two_tools.root / ".acor" / "config.yaml"
    config.parent.mkdir()
    config.write_text("tools_dirs: [tools]\n")
    more = two_tools.root / "more" / "extra"
    more.mkdir(parents=True)
    (more / "extra.py").write_text(saying("from more"))
    (more / "manifest.json").write_text(json.dumps({
        "name": "extra", "version": "1.0.0", "description": "extra",
        "entry": "extra.py", "args": ARGS}))
    settled(two_tools)

    async def scenario(client, told):
        assert "extra" not in names(await client.list_tools())
        assert text(await client.call_tool("echo", {})) == "v1"
        config.write_text("tools_dirs: [tools, more]\n")
        assert text(await client.call_tool("extra", {})) == "from more"
        await told()
    stdio(two_tools, "legacy", scenario)


@pytest.mark.parametrize("mode", MODES)
def test_a_change_the_call_itself_made_is_announced_after_it(project, mode):
    project.add_tool("editor", SELF_EDITING, args=ARGS)
    settled(project)

    async def scenario(client, told):
        listed = await client.list_tools()
        assert "editor" in names(listed)
        assert text(await client.call_tool("editor", {})) == "edited"
        await told()
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert tools["editor"].description == "edited by its own call"
    stdio(project, mode, scenario)


def test_a_locked_tool_whose_code_changed_in_place_is_refused(two_tools):
    """The kept registry is not the lock's check: a locked tool's code
    edited in place (its manifest untouched, so discovery keeps its
    registry) is refused at the next call all the same."""
    done = two_tools.acor("lock")
    assert done.returncode == 0, done.stderr
    settled(two_tools)
    program = two_tools.root / "tools" / "echo" / "echo.py"

    async def scenario(client, told):
        assert text(await client.call_tool("echo", {})) == "v1"
        with open(program, "r+") as f:  # the same file, its inode kept
            f.write(saying("v1").replace("v1", "xx"))
        with pytest.raises(MCPError, match="not what acor.lock pins"):
            await client.call_tool("echo", {})
    stdio(two_tools, "legacy", scenario)


def test_a_tool_added_while_serving_over_http_is_callable(two_tools):
    served = Served(two_tools)
    try:
        async def scenario():
            notices = Notices()
            async with Client(http_client(served.url), mode="legacy",
                              message_handler=notices) as client:
                assert "added" not in names(await client.list_tools())
                assert text(await client.call_tool("echo", {})) == "v1"
                two_tools.add_tool("added", saying("new here"), args=ARGS)
                assert text(await client.call_tool("echo", {})) == "v1"
                with anyio.fail_after(WAIT):
                    await notices.got.wait()
                assert text(await client.call_tool("added", {})) == \
                    "new here"
        anyio.run(scenario)
    finally:
        served.stop()

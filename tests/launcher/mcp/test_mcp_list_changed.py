"""``notifications/tools/list_changed``: the official SDK client against a
real ``acor mcp`` (stdio and HTTP, both generations) is told when a tool's
manifest changes between two calls, and lists the new definition; a
server that cannot tell it (stateless HTTP before 2026-07-28) says
``listChanged: false``."""

import json

import pytest

pytest.importorskip("mcp", reason="acor mcp needs the extra: "
                                  "pip install 'acor-cli[mcp]'")

import anyio  # noqa: E402
import mcp_types as types  # noqa: E402
from mcp import Client  # noqa: E402

from mcp_helpers import acor_mcp_stdio  # noqa: E402
from test_mcp_http import Served, http_client  # noqa: E402

MODES = ("legacy", "2026-07-28")
ECHO = """
from acor import AcorTool

with AcorTool() as tool:
    tool.parse_args()
    print("hello")
"""
ARGS = {"type": "object", "properties": {}, "additionalProperties": False}
WAIT = 60  # a bound on a hung server, never a measure of speed


@pytest.fixture
def changing(project):
    project.add_tool("echo", ECHO, args=ARGS)
    project.add_tool("other", ECHO, args=ARGS)
    return project


def describe(project, text):
    manifest = project.root / "tools" / "echo" / "manifest.json"
    data = json.loads(manifest.read_text())
    data["description"] = text
    manifest.write_text(json.dumps(data))


def description(listing):
    return {tool.name: tool.description for tool in listing.tools}["echo"]


class Notices:
    """The tools/list_changed notifications a legacy client got."""

    def __init__(self):
        self.got = anyio.Event()
        self.count = 0

    async def __call__(self, message):
        if isinstance(message, types.ToolListChangedNotification):
            self.count += 1
            self.got.set()


async def edit_between_calls_legacy(client, notices, project):
    assert client.server_capabilities.tools.list_changed is True
    assert description(await client.list_tools()) == "test tool echo"
    await client.call_tool("echo", {})
    assert notices.count == 0  # nothing changed: nothing said
    describe(project, "a changed description")
    await client.call_tool("other", {})
    with anyio.fail_after(WAIT):
        await notices.got.wait()
    assert description(await client.list_tools()) == "a changed description"
    await client.call_tool("other", {})
    assert notices.count == 1  # once per change


async def edit_between_calls_modern(client, project):
    async with client.listen(tools_list_changed=True) as events:
        assert description(await client.list_tools()) == "test tool echo"
        await client.call_tool("echo", {})
        describe(project, "a changed description")
        await client.call_tool("other", {})
        with anyio.fail_after(WAIT):
            event = await events.__anext__()
        assert type(event).__name__ == "ToolsListChanged"
        assert description(await client.list_tools()) == \
            "a changed description"


@pytest.mark.parametrize("mode", MODES)
def test_a_changed_tool_is_announced_over_stdio(changing, mode):
    async def scenario():
        if mode == "legacy":
            notices = Notices()
            async with Client(acor_mcp_stdio(changing), mode=mode,
                              message_handler=notices) as client:
                await edit_between_calls_legacy(client, notices, changing)
        else:
            async with Client(acor_mcp_stdio(changing), mode=mode) as client:
                await edit_between_calls_modern(client, changing)
    anyio.run(scenario)


@pytest.mark.parametrize("mode", MODES)
def test_a_changed_tool_is_announced_over_http(changing, mode):
    served = Served(changing)
    try:
        async def scenario():
            if mode == "legacy":
                notices = Notices()
                async with Client(http_client(served.url), mode=mode,
                                  message_handler=notices) as client:
                    await edit_between_calls_legacy(client, notices,
                                                    changing)
            else:
                async with Client(http_client(served.url),
                                  mode=mode) as client:
                    await edit_between_calls_modern(client, changing)
        anyio.run(scenario)
    finally:
        served.stop()


def test_stateless_http_promises_no_change_notice(changing):
    served = Served(changing, "--stateless")
    try:
        async def scenario():
            async with Client(http_client(served.url),
                              mode="legacy") as client:
                tools = client.server_capabilities.tools
                assert tools.list_changed is False
        anyio.run(scenario)
    finally:
        served.stop()


def test_a_tool_the_lock_stops_serving_is_announced(changing):
    """A locked tool whose description changed drops out of the listing:
    the client is told, and the new listing no longer has it."""
    done = changing.acor("lock")
    assert done.returncode == 0, done.stderr

    async def scenario():
        notices = Notices()
        async with Client(acor_mcp_stdio(changing), mode="legacy",
                          message_handler=notices) as client:
            listed = await client.list_tools()
            assert "echo" in {tool.name for tool in listed.tools}
            describe(changing, "a description nobody approved")
            await client.call_tool("other", {})
            with anyio.fail_after(WAIT):
                await notices.got.wait()
            listed = await client.list_tools()
            assert "echo" not in {tool.name for tool in listed.tools}
    anyio.run(scenario)

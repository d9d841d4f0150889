"""Files acor linked, read back over MCP: the official SDK client against a
real ``acor mcp --http`` (and ``acor mcp`` over stdio) reading a tool's
output files (text and binary) and the whole output of a budgeted run in
pieces, with ``resources/read`` and with the ``acor_read`` tool, and
refused every link that is not its own and every path it names itself."""

import base64
import hashlib
import json
import os
import time

import pytest

pytest.importorskip("mcp", reason="acor mcp needs the extra: "
                                  "pip install 'acor-cli[mcp]'")

import anyio  # noqa: E402
from mcp import Client, StdioServerParameters  # noqa: E402
from mcp.shared.exceptions import MCPError  # noqa: E402

from test_mcp_http import Served, http_client  # noqa: E402

TOKEN_A = "a" * 8 + "-token-of-alice-0123456789"
TOKEN_B = "b" * 8 + "-token-of-bob-012345678901"
# Links are signed under the service's key: servers that share it (replicas,
# a restart) share the links, and each refuses any other identity's.
KEY = "k" * 40
PIECE = 4096  # the project's max_output: a piece is at most this
MODES = ("legacy", "2026-07-28")

# Writes a text file larger than a piece (multi-byte characters across
# piece boundaries) and a binary one, reports both, and prints enough to
# be cut to fit the budget, so the whole output is a file too.
WRITER = """
import os
from acor import AcorTool

with AcorTool() as tool:
    tool.parse_args()
    os.makedirs("out", exist_ok=True)
    with open("out/report.txt", "w", encoding="utf-8") as f:
        f.write("".join(f"line {i} \\u00e9\\u4e2d\\U0001f600\\n"
                        for i in range(2000)))
    with open("out/image.bin", "wb") as f:
        f.write(bytes(range(256)) * 40)
    tool.output_files({"out/report.txt": "the report",
                       "out/image.bin": "an image"})
    print("FIRST LINE")
    for i in range(3000):
        print(f"filler line {i} " + "x" * 40)
    print("LAST LINE")
"""

SECRET = "not-for-any-client\n"


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.fixture
def files_project(project):
    project.add_tool("writer", WRITER, args={
        "type": "object", "properties": {}, "additionalProperties": False})
    (project.root / ".acor").mkdir(exist_ok=True)
    (project.root / ".acor" / "config.yaml").write_text(
        f"max_output: {PIECE}\n")
    (project.root / "secret.txt").write_text(SECRET)
    return project


def links(result):
    return {block.name: block for block in result.content
            if block.type == "resource_link"}


async def read_all(client, uri):
    """Every piece of ``uri`` by resources/read: (bytes, pieces)."""
    data, pieces, at = b"", 0, uri
    while at is not None:
        got = (await client.read_resource(at)).contents[0]
        meta = got.meta
        assert meta["acor/offset"] == len(data)
        assert meta["acor/length"] <= PIECE
        piece = got.text.encode() if hasattr(got, "text") else \
            base64.b64decode(got.blob)
        assert len(piece) == meta["acor/length"]
        data += piece
        pieces += 1
        at = meta.get("acor/next")
    return data, pieces


async def read_by_tool(client, uri):
    """Every piece of ``uri`` by the acor_read tool."""
    data, offset = b"", 0
    while offset is not None:
        done = await client.call_tool("acor_read", {"uri": uri,
                                                    "offset": offset})
        assert not done.is_error, done.content
        facts = done.structured_content
        body = done.content[0].text
        if facts["labelled"]:  # a piece that began like acor's own text
            body = body.removeprefix("[tool output] ")
        data += body.encode() if facts["encoding"] == "text" else \
            base64.b64decode(body)
        assert facts["length"] <= PIECE
        offset = facts["next_offset"]
    return data


async def refused(client, uri):
    with pytest.raises(MCPError) as caught:
        await client.read_resource(uri)
    assert caught.value.error.code == -32602
    assert "Resource not found" in caught.value.error.message
    done = await client.call_tool("acor_read", {"uri": uri})
    assert done.is_error
    assert "E_NOT_FOUND" in done.content[0].text
    assert SECRET.strip() not in str(done)


async def check_reads(client, project):
    """The writer's files and whole output, read back in pieces, both
    ways; the links listed; a path the client names itself refused."""
    done = await client.call_tool("writer", {})
    assert not done.is_error, done.content
    found = links(done)
    report, image = found["report.txt"], found["image.bin"]
    whole = [b for name, b in found.items()
             if name not in ("report.txt", "image.bin")]
    assert len(whole) == 1 and whole[0].meta["acor/truncated"] is True
    for link in (report, image, whole[0]):
        assert link.uri.startswith("acor://file/")
        assert str(project.root) not in link.uri
    text = (project.root / "out" / "report.txt").read_bytes()
    blob = (project.root / "out" / "image.bin").read_bytes()

    got, pieces = await read_all(client, report.uri)
    assert got == text and pieces > 1
    got, pieces = await read_all(client, image.uri)
    assert got == blob and pieces > 1
    first = (await client.read_resource(image.uri)).contents[0]
    assert first.mime_type == "application/octet-stream"
    assert hasattr(first, "blob")
    output, _ = await read_all(client, whole[0].uri)
    assert b"FIRST LINE" in output and b"LAST LINE" in output
    assert b"filler line 1500 " in output
    assert hashlib.sha256(output).hexdigest().startswith(
        whole[0].meta["acor/sha256"])
    shown = " ".join(b.text for b in done.content if b.type == "text")
    assert "filler line 1500 " not in shown
    # The budget's note names the whole output by its link, not its path.
    assert "the whole output is in acor://file/" in shown
    assert str(project.root) not in shown

    assert await read_by_tool(client, report.uri) == text
    by_tool = await read_by_tool(client, image.uri)
    assert len(by_tool) == len(blob)
    assert by_tool == blob
    # A range in the link's query: bytes 100 to 150.
    ranged = (await client.read_resource(
        f"{image.uri}?offset=100&length=50")).contents[0]
    assert base64.b64decode(ranged.blob) == blob[100:150]

    listed = {r.uri for r in (await client.list_resources()).resources}
    assert {report.uri, image.uri, whole[0].uri} <= listed
    # Paths and forged links are nothing acor linked.
    for uri in ((project.root / "secret.txt").as_uri(),
                (project.root / "out" / "report.txt").as_uri(),
                "acor://file/../../secret.txt",
                "acor://file/" + "A" * 32,
                report.uri.replace("acor://file/", "acor://file/x")[:-1]):
        await refused(client, uri)
    return report.uri, listed


def test_a_linked_file_is_read_in_pieces_over_http_by_its_token_alone(
        files_project):
    """Alice's links: read in pieces (text, binary, the whole output) by
    resources/read and acor_read; listed for her alone. Bob, on a server
    over the same project with his token, is refused each of them and
    lists none; so is the user at stdio."""
    served = Served(files_project, env={"ACOR_MCP_TOKEN": TOKEN_A,
                                        "ACOR_MCP_KEY": KEY})
    try:
        async def alice():
            headers = {"Authorization": "Bearer " + TOKEN_A}
            async with Client(http_client(served.url, headers),
                              mode="2026-07-28") as client:
                return await check_reads(client, files_project)
        uri, alices = anyio.run(alice)
    finally:
        served.stop()
    served = Served(files_project, env={"ACOR_MCP_TOKEN": TOKEN_B,
                                        "ACOR_MCP_KEY": KEY})
    try:
        async def bob():
            headers = {"Authorization": "Bearer " + TOKEN_B}
            async with Client(http_client(served.url, headers),
                              mode="legacy") as client:
                for link in alices:
                    await refused(client, link)
                assert not alices & {r.uri for r in (
                    await client.list_resources()).resources}
        anyio.run(bob)
    finally:
        served.stop()

    async def stdio_user():
        async with Client(stdio(files_project, KEY),
                          mode="legacy") as client:
            await refused(client, uri)
    anyio.run(stdio_user)

    # Alice again, after the restart: hers still.
    served = Served(files_project, env={"ACOR_MCP_TOKEN": TOKEN_A,
                                        "ACOR_MCP_KEY": KEY})
    try:
        async def alice_again():
            headers = {"Authorization": "Bearer " + TOKEN_A}
            async with Client(http_client(served.url, headers),
                              mode="legacy") as client:
                got = (await client.read_resource(uri)).contents[0]
                assert got.text.startswith("line 0 ")
        anyio.run(alice_again)
    finally:
        served.stop()


@pytest.mark.parametrize("mode", MODES)
def test_a_linked_file_is_read_in_pieces_over_stdio(files_project, mode):
    async def scenario():
        async with Client(stdio(files_project), mode=mode) as client:
            await check_reads(client, files_project)
    anyio.run(scenario)


def test_a_file_outside_the_project_is_never_linked(project, tmp_path):
    """A tool that reports a file it could not have written (outside the
    project) keeps a file:// link, and nothing serves it."""
    outside = tmp_path / "elsewhere.txt"
    outside.write_text(SECRET)
    project.add_tool("pointer", f"""
from acor import AcorTool

with AcorTool() as tool:
    tool.parse_args()
    tool.output_files({{{str(outside)!r}: "not mine"}})
""", args={"type": "object", "properties": {},
           "additionalProperties": False})

    async def scenario():
        async with Client(stdio(project), mode="2026-07-28") as client:
            done = await client.call_tool("pointer", {})
            link = links(done)["elsewhere.txt"]
            assert link.uri == outside.as_uri()
            await refused(client, link.uri)
            assert not (await client.list_resources()).resources
    anyio.run(scenario)


def test_a_record_planted_in_the_links_folder_is_never_served(
        files_project):
    """A repository (or a tool) that writes a link record naming a file of
    its choosing, for the identity that will read it, gets nothing: the
    record carries no seal under the server's key."""
    folder = files_project.root / ".acor" / "state" / "links"
    folder.mkdir(parents=True)
    planted = "P" * 32
    (folder / f"{planted}.json").write_text(json.dumps({
        "id": planted, "path": str(files_project.root / "secret.txt"),
        "owner": f"user:{os.getuid()}", "expires": time.time() + 3600,
        "name": "secret.txt", "mime": "text/plain", "text": True,
        "created": time.time(), "hmac": "0" * 64}))

    async def scenario():
        async with Client(stdio(files_project), mode="2026-07-28") as client:
            await refused(client, f"acor://file/{planted}")
            assert not (await client.list_resources()).resources
    anyio.run(scenario)


def stdio(project, key=None):
    env = {k: v for k, v in project.env.items()
           if (k.startswith("ACOR_") or k in ("PATH", "HOME", "NO_COLOR",
                                              "XDG_CONFIG_HOME"))
           and k not in ("ACOR_MCP_TOKEN", "ACOR_MCP_KEY")}
    if key is not None:
        env["ACOR_MCP_KEY"] = key
    return StdioServerParameters(command=project.argv()[0],
                                 args=["-m", "acor", "mcp"],
                                 cwd=str(project.root), env=env)

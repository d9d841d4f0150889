"""Every section the CLI relays is a result over MCP too (issue 31, item
10): a NUL in an Output Files path ended an `acor mcp` call as JSON-RPC
error -32603 with a traceback in the server's log, while the run had
completed; the client never learnt its outcome. A real `acor mcp` over
stdio, the SDK's client, both protocol generations: the case and its
neighbours (other odd contents of a section a tool's code emits) each end
as a result holding the rest of the run, the odd value shown as data."""

import json
from urllib.parse import quote

import pytest

pytest.importorskip("mcp", reason="acor mcp needs the extra: "
                                  "pip install 'acor-cli[mcp]'")

from mcp import Client

from mcp_helpers import acor_mcp_stdio

MODES = ["legacy", "auto"]  # the handshake, and 2026-07-28

# A tool whose code emits one odd section (the library's own checks
# bypassed, as any tool's code may), then an ordinary Output.
ODD = """\
from acor import AcorTool
from acor.events import OutputData, OutputFiles
with AcorTool() as tool:
    tool._emit("odd", {event})
    tool.output("after the odd section")
"""


def _files(**entry):
    return "OutputFiles([" + repr({"description": "", "bytes": 3,
                                   "sha256": "abcdef012345", **entry}) + "])"


CASES = {
    "nul-in-a-file-path": (_files(path="a\x00b", kind="file"), "a\\x00b"),
    "nul-in-a-directory-path": (_files(path="d\x00", kind="directory"),
                                "d\\x00"),
    "nul-in-a-missing-path": (_files(path="m\x00", kind="missing"),
                              "m\\x00"),
    "nul-in-a-description": (_files(path="f.txt", kind="file",
                                    description="why\x00not"), "f.txt"),
    "a-path-too-long-to-resolve": (_files(path="x/" * 3000, kind="file"),
                                   "x/x/"),
    "escapes-in-a-path": (_files(path="e\x1b[2J\u202e.txt", kind="file"),
                          "e"),
    "nul-in-output-data": ('OutputData("json", \'{"x": "a\\\\u0000b"}\')',
                           "a"),
    "an-escaped-surrogate-in-output-data": (
        'OutputData("json", \'{"k\\\\udcff": "\\\\ud800"}\')', "k"),
}


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.fixture
def odd_project(project):
    for name, (event, _) in CASES.items():
        project.add_tool(name, ODD.replace("{event}", event))
    return project


@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
async def test_an_odd_section_is_a_result_over_mcp(odd_project, mode):
    async with Client(acor_mcp_stdio(odd_project), mode=mode) as client:
        for name, (_, shown) in CASES.items():
            result = await client.call_tool(name, {"argv": []})
            wire = json.dumps(result.model_dump(mode="json"))
            texts = "\n".join(getattr(block, "text", "") or
                              getattr(block, "uri", "")
                              for block in result.content)
            assert "after the odd section" in texts, (name, wire)
            assert result.meta["acor/result"]["state"] == "complete", name
            assert not result.is_error, (name, wire)
            # Escaped as text, or as the link to what the escaped name
            # names (control bytes are cleaned before the result is built).
            assert shown in texts or quote(shown) in texts, (name, wire)

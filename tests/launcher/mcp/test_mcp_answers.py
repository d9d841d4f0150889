"""How a call ends when its question gets no answer, and what a heartbeat
tells the client (issue 32, item 9), through a real `acor mcp` and the
SDK's client in both protocol generations.

Decided (docs/mcp.md, "Questions and answers"): a declined or dismissed
form is not an error (isError: false: nothing failed, and an error
invites the model to correct itself and try again, the wrong lesson from
a person's no); the state is `input_needed`, exit 3, as the command line
ends a refused prompt; `_meta["acor/result"]["answer"]` says which ending
it was, and the text says what to do. A heartbeat's progress notification
always has a message: the tool's latest, or "still working".
"""

import pytest

pytest.importorskip("mcp", reason="acor mcp needs the extra: "
                                  "pip install 'acor-cli[mcp]'")

from mcp import Client
from mcp_types import ElicitResult

from mcp_helpers import acor_mcp_stdio
from sample_tools import REMOVER, REMOVER_ARGS

MODES = ["legacy", "auto"]  # the handshake, and 2026-07-28

BEATER = """\
import sys, time
from acor import AcorTool
with AcorTool() as tool:
    if "--with-message" in sys.argv:
        tool.progress(10, "reading the input")
    for _ in range(3):
        tool.heartbeat()
        time.sleep(0.15)
    tool.output("done")
"""


@pytest.fixture
def anyio_backend():
    return "asyncio"


def _texts(result):
    return "\n".join(b.text for b in result.content if b.type == "text")


@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("action, answer, says", [
    ("decline", "declined", "do not call the tool again to get around it"),
    ("cancel", "dismissed", "call the tool again when the user is ready")])
async def test_a_declined_or_dismissed_form_says_which_and_is_no_error(
        project, mode, action, answer, says):
    project.add_tool("remover", REMOVER, args=REMOVER_ARGS)
    (project.root / "victim").write_text("precious")

    async def person(ctx, params):
        return ElicitResult(action=action)
    async with Client(acor_mcp_stdio(project), mode=mode,
                      elicitation_callback=person) as client:
        result = await client.call_tool("remover", {"path": "victim"})
    meta = result.meta["acor/result"]
    assert result.is_error is False
    assert meta["state"] == "input_needed" and meta["exit_code"] == 3
    assert meta["answer"] == answer
    text = _texts(result)
    assert f"The question was {answer}" in text and says in text
    assert (project.root / "victim").read_text() == "precious"


@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("argv, message", [
    ([], "still working"), (["--with-message"], "reading the input")])
async def test_every_heartbeat_notification_has_a_message(project, mode,
                                                          argv, message):
    project.add_tool("beater", BEATER)
    seen = []

    async def progress(value, total, text):
        seen.append((value, text))
    async with Client(acor_mcp_stdio(project), mode=mode) as client:
        result = await client.call_tool("beater", {"argv": argv},
                                        progress_callback=progress)
    assert "done" in _texts(result)
    assert seen, "no progress notification at all"
    assert all(text for _, text in seen), seen
    assert seen[-1][1] == message
    values = [value for value, _ in seen]
    assert values == sorted(values) and len(set(values)) == len(values)

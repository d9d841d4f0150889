"""Input Needed with SEP-1330's choices: a multi-select field (an array of
choices, titled or not) and a single choice with titles, asked through the
client's own form by a real ``acor mcp`` in both protocol generations; the
answers come back as the client's form gave them (a list for the
multi-select) and reach the tool."""

import pytest

pytest.importorskip("mcp", reason="acor mcp needs the extra: "
                                  "pip install 'acor-cli[mcp]'")

from mcp import Client  # noqa: E402
from mcp_types import ElicitResult  # noqa: E402

from mcp_helpers import acor_mcp_stdio  # noqa: E402

MODES = ["legacy", "auto"]  # the handshake, and 2026-07-28

LABELLER = """\
from acor import AcorTool
with AcorTool() as tool:
    args = tool.parse_args()
    if not args.tags or not args.owners or args.color is None:
        tool.input_needed("Label the change.", fields={
            "tags": {"type": "array", "description": "labels",
                     "items": {"enum": ["bug", "docs", "ci"]},
                     "minItems": 1},
            "owners": {"type": "array", "items": {"anyOf": [
                {"const": "ann", "title": "Ann Lee"},
                {"const": "bo", "title": "Bo Chan"}]}},
            "color": {"type": "string", "oneOf": [
                {"const": "r", "title": "Red"},
                {"const": "g", "title": "Green"}]}})
    tool.output("tags=" + "+".join(args.tags) + " owners=" +
                "+".join(args.owners) + " color=" + args.color)
"""
LABELLER_ARGS = {
    "type": "object", "additionalProperties": False, "properties": {
        "tags": {"type": "array",
                 "items": {"type": "string", "enum": ["bug", "docs", "ci"]},
                 "x-acor": {"flag": "--tag", "repeat": True}},
        "owners": {"type": "array",
                   "items": {"type": "string", "enum": ["ann", "bo"]},
                   "x-acor": {"flag": "--owners"}},
        "color": {"type": "string", "enum": ["r", "g"],
                  "x-acor": {"flag": "--color"}}}}


@pytest.fixture
def anyio_backend():
    return "asyncio"


def _texts(result):
    return "\n".join(b.text for b in result.content if b.type == "text")


@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
async def test_a_form_asks_for_several_and_titled_choices(project, mode):
    project.add_tool("labeller", LABELLER, args=LABELLER_ARGS)
    asked = []

    async def person(ctx, params):
        asked.append(params.requested_schema)
        return ElicitResult(action="accept", content={
            "tags": ["bug", "ci"], "owners": ["bo", "ann"], "color": "g"})

    async with Client(acor_mcp_stdio(project), mode=mode,
                      elicitation_callback=person) as client:
        result = await client.call_tool("labeller", {})
    assert not result.is_error, _texts(result)
    assert "tags=bug+ci owners=bo+ann color=g" in _texts(result)
    [form] = asked
    props = form["properties"]
    assert props["tags"] == {"type": "array", "description": "labels",
                             "items": {"type": "string",
                                       "enum": ["bug", "docs", "ci"]},
                             "minItems": 1}
    assert props["owners"]["items"] == {"anyOf": [
        {"const": "ann", "title": "Ann Lee"},
        {"const": "bo", "title": "Bo Chan"}]}
    assert props["color"] == {"type": "string", "oneOf": [
        {"const": "r", "title": "Red"}, {"const": "g", "title": "Green"}]}


@pytest.mark.anyio
async def test_a_client_without_a_form_is_told_to_answer_with_a_list(
        project):
    project.add_tool("labeller", LABELLER, args=LABELLER_ARGS)
    async with Client(acor_mcp_stdio(project), mode="legacy") as client:
        result = await client.call_tool("labeller", {})
    text = _texts(result)
    assert "tags: (array; a list of any of bug, docs, ci; at least 1)" in text
    assert "owners: (array; a list of any of ann (Ann Lee), bo (Bo Chan))" \
        in text
    assert "color: (string; one of r (Red), g (Green))" in text

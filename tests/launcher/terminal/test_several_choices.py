"""A multi-select field (SEP-1330) asked at a real terminal: the prompt
says to answer with a comma-separated list of its choices, asks again for
anything else, and the tool gets the list."""

from terminal import Terminal

TAGGER = """\
from acor import AcorTool
with AcorTool() as tool:
    args = tool.parse_args()
    if not args.tags:
        tool.input_needed("Label the change.", fields={
            "tags": {"type": "array", "description": "labels",
                     "items": {"anyOf": [
                         {"const": "bug", "title": "A bug"},
                         {"const": "ci", "title": "The CI"}]}}})
    tool.output("tags=" + "+".join(args.tags))
"""
TAGGER_ARGS = {
    "type": "object", "additionalProperties": False, "properties": {
        "tags": {"type": "array",
                 "items": {"type": "string", "enum": ["bug", "ci"]},
                 "x-acor": {"flag": "--tag", "repeat": True}}}}


def test_a_multi_select_field_is_answered_as_a_list(project):
    project.add_tool("tagger", TAGGER, args=TAGGER_ARGS)
    term = Terminal(project, "tagger")
    shown = term.expect("comma-separated, of: bug, ci")
    assert "tags (array) labels" in shown
    term.type("bug, docs")
    term.expect("not a list of its choices")
    term.type("ci, bug")
    assert term.finish() == 0, term.text
    assert "tags=ci+bug" in term.text

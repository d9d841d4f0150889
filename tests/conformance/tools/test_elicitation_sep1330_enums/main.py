"""The conformance suite's elicitation-sep1330-enums: Input Needed asking
for every kind of choice (SEP-1330): single, titled, titled the older way
(enumNames), several, several with titles."""
import json

from acor import AcorTool

CHOICES = ["option1", "option2", "option3"]
TITLED = [{"const": f"value{i}", "title": f"Value {i}"} for i in (1, 2, 3)]

with AcorTool() as tool:
    args = tool.parse_args()
    if args.untitledSingle is None:
        tool.input_needed("Choose your options", fields={
            "untitledSingle": {"type": "string", "enum": CHOICES},
            "titledSingle": {"type": "string", "oneOf": TITLED},
            "legacyEnum": {"type": "string", "enum": ["opt1", "opt2"],
                           "enumNames": ["Option One", "Option Two"]},
            "untitledMulti": {"type": "array", "minItems": 1,
                              "items": {"type": "string", "enum": CHOICES}},
            "titledMulti": {"type": "array", "minItems": 1,
                            "items": {"anyOf": TITLED}}})
    content = {name: getattr(args, name) for name in (
        "untitledSingle", "titledSingle", "legacyEnum", "untitledMulti",
        "titledMulti")}
    tool.output("Elicitation completed: action=accept, content="
                + json.dumps(content))

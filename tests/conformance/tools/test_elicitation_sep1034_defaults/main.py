"""The conformance suite's elicitation-sep1034-defaults: Input Needed whose
fields carry a default of every primitive type."""
import json

from acor import AcorTool

with AcorTool() as tool:
    args = tool.parse_args()
    if args.name is None:
        tool.input_needed("Please review and update the form fields", fields={
            "name": {"type": "string", "description": "User name",
                     "default": "John Doe"},
            "age": {"type": "integer", "description": "User age",
                    "default": 30},
            "score": {"type": "number", "description": "User score",
                      "default": 95.5},
            "status": {"type": "string", "description": "User status",
                       "enum": ["active", "inactive", "pending"],
                       "default": "active"},
            "verified": {"type": "boolean", "default": True,
                         "description": "Verification status"}})
    content = {"name": args.name, "age": args.age, "score": args.score,
               "status": args.status, "verified": bool(args.verified)}
    tool.output("Elicitation completed: action=accept, content="
                + json.dumps(content))

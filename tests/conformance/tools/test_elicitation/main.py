"""The conformance suite's tools-call-elicitation: Input Needed with two
fields, which acor mcp turns into an elicitation request."""
from acor import AcorTool

with AcorTool() as tool:
    args = tool.parse_args()
    if args.username is None:
        tool.input_needed(args.message or "Please provide your information",
                          fields={"username": {"type": "string",
                                               "description": "Your name"},
                                  "email": {"type": "string",
                                            "description": "Your email"}})
    tool.output(f"User provided: {args.username} <{args.email}>")

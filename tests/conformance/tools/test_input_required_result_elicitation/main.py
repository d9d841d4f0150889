"""The conformance suite's input-required-result-* scenarios (SEP-2322)
that use its A1 tool: Input Needed for a name, then a greeting. acor keys
the input request by the field it asks for ("name")."""
from acor import AcorTool

with AcorTool() as tool:
    args = tool.parse_args()
    if args.name is None:
        tool.input_needed("What is your name?", fields={
            "name": {"type": "string", "description": "your name"}})
    tool.output(f"Hello, {args.name}!")

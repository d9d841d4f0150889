"""The conformance suite's input-required-result-multi-round: Input Needed
for a name, then for a colour, then the answer: two rounds, each with a
requestState of its own."""
from acor import AcorTool

with AcorTool() as tool:
    args = tool.parse_args()
    if args.name is None:
        tool.input_needed("Step 1: What is your name?", fields={
            "name": {"type": "string", "description": "your name"}})
    if args.color is None:
        tool.input_needed("Step 2: What is your favorite color?", fields={
            "color": {"type": "string", "description": "your colour"}})
    tool.output(f"{args.name} likes {args.color}.")

"""Tools several test folders run: a remover whose deletion only a person
may approve, and a flood of output far over the budget."""

REMOVER = """\
import os
from acor import AcorTool
with AcorTool() as tool:
    args = tool.parse_args()
    if args.yes is None:
        tool.input_needed(f"Delete {args.path}?", fields={
            "yes": {"type": "boolean", "description": "Delete it for good"}},
            audience="human",
            next=tool.command(args.path, "--yes"))
    if args.yes:
        os.remove(args.path)
        tool.output(f"deleted {args.path}")
    else:
        tool.output(f"kept {args.path}")
"""
REMOVER_ARGS = {
    "type": "object", "additionalProperties": False, "required": ["path"],
    "properties": {
        "path": {"type": "string", "x-acor": {"position": 0}},
        "yes": {"type": "boolean", "x-acor": {"human": True}}}}
HIGH = dict(REMOVER_ARGS, properties=dict(
    REMOVER_ARGS["properties"],
    yes={"type": "boolean", "x-acor": {"human": True, "level": "high"}}))

HOLDOUT = 128 * 1024  # what the issue allows in front of the agent per run

FLOOD = """
import sys
from acor import AcorTool
n = int(sys.argv[1])
with AcorTool() as tool:
    tool.progress(10, "start")
    print("FIRST LINE OF THE FLOOD")
    line = "x" * 90 + "\\n"
    chunk = "".join(f"line {i:08d} " + line for i in range(5000))
    written = 0
    while written < n:
        sys.stdout.write(chunk[:n - written])
        written += len(chunk)
    sys.stdout.flush()
    print("LAST LINE OF THE FLOOD")
    tool.output({"done": True})
"""

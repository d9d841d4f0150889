"""The conformance suite's server-stateless probe of the response stream: a
tool that needs input. At 2026-07-28 acor answers with an input_required
result, never a request of its own on the stream."""
from acor import AcorTool

with AcorTool() as tool:
    args = tool.parse_args()
    if args.answer is None:
        tool.input_needed("What is the answer?", fields={
            "answer": {"type": "string", "description": "the answer"}})
    tool.output(f"The answer: {args.answer}")

"""The conformance suite's input-required-result-request-state: Input
Needed for a confirmation; the retry, which acor accepts only with the
requestState it sealed, says "state-ok"."""
from acor import AcorTool

with AcorTool() as tool:
    args = tool.parse_args()
    if not args.ok:
        tool.input_needed("Please confirm", fields={
            "ok": {"type": "boolean", "description": "confirm"}})
    tool.output("Confirmed: state-ok")

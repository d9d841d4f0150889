"""The conformance suite's input-required-result-tampered-state: Input
Needed for a confirmation. acor seals the requestState (AES-GCM): a
tampered one is refused before the tool runs again."""
from acor import AcorTool

with AcorTool() as tool:
    args = tool.parse_args()
    if not args.confirm:
        tool.input_needed("Please confirm", fields={
            "confirm": {"type": "boolean", "description": "confirm"}})
    tool.output("Confirmed.")

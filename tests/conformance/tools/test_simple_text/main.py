"""The conformance suite's tools-call-simple-text: one line of text."""
from acor import AcorTool

with AcorTool() as tool:
    tool.parse_args()
    tool.output("This is a simple text response for testing.")

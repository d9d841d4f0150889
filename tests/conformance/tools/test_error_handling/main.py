"""The conformance suite's tools-call-error: a tool error (isError)."""
from acor import AcorTool

with AcorTool() as tool:
    tool.parse_args()
    tool.error("E_TEST", "This tool intentionally returns an error for "
               "testing", recovery="Nothing to fix: it always fails.")

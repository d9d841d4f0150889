"""The conformance suite's server-stateless probe of logging: a tool that
writes to its stderr. acor keeps a tool's stderr in the server's log and
sends no notifications/message."""
import sys

from acor import AcorTool

with AcorTool() as tool:
    tool.parse_args()
    print("a line for the server's log", file=sys.stderr, flush=True)
    tool.output("Logged to stderr.")

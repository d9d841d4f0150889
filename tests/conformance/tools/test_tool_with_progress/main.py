"""The conformance suite's tools-call-with-progress: three progress
reports, far enough apart that acor mcp (at most ~10 a second) sends each."""
import time

from acor import AcorTool

with AcorTool() as tool:
    tool.parse_args()
    for percent in (0, 50, 100):
        tool.progress(percent, f"{percent}%")
        time.sleep(0.15)
    tool.output("Progress test completed")

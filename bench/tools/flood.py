"""Benchmark tool: MB of text output, or N progress sections, via the library.

    flood.py output 100     # 100 MB as Output sections of 1 MB each
    flood.py progress 1000000
"""
import sys

from acor import AcorTool

kind, amount = sys.argv[1], int(sys.argv[2])
line = "x" * 79 + "\n"
chunk = line * (1_000_000 // len(line))
with AcorTool("flood") as tool:
    if kind == "output":
        for _ in range(amount):
            tool.output(chunk)
    else:
        for i in range(amount):
            tool.progress(i * 100 // amount, "working")

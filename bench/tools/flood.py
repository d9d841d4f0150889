"""Benchmark tool: MB of text output via the library.

    flood.py output 100     # 100 MB as Output sections of 1 MB each
"""
import sys

from acor import AcorTool

kind, amount = sys.argv[1], int(sys.argv[2])
if kind != "output":
    sys.exit(f"flood.py: unknown kind {kind!r} (only 'output')")
line = "x" * 79 + "\n"
chunk = line * (1_000_000 // len(line))
with AcorTool("flood") as tool:
    for _ in range(amount):
        tool.output(chunk)

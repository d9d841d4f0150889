"""Benchmark tool: N status sections, each carrying the time it was written."""
import sys
import time

from acor import AcorTool

count, pause = int(sys.argv[1]), float(sys.argv[2])
with AcorTool("ticker") as tool:
    for _ in range(count):
        tool.status("working", repr(time.time()))
        time.sleep(pause)

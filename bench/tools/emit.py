"""Benchmark: progress() calls per second into a pipe; prints the rate."""
import sys
import time

from acor import AcorTool

count = int(sys.argv[1])
tool = AcorTool("emit", stream=sys.stdout, frame_token=None).start()
start = time.perf_counter()
for i in range(count):
    tool.progress(i % 101, "step")
elapsed = time.perf_counter() - start
tool.stop()
print(count / elapsed, file=sys.stderr)

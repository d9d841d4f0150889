"""Benchmark tool: N ``progress_bar`` calls spread over SECONDS of work,
with one status section halfway, written as a tool run directly writes.

    paced.py N SECONDS

The work is a wait for the clock, every 1,000 calls, so the calls take
SECONDS in all unless the calls alone take longer. The seconds the loop
took go to stderr.
"""
import sys
from time import perf_counter

from acor import AcorTool


def main(n, seconds):
    with AcorTool("paced", "1.0.0") as tool:
        start = perf_counter()
        for i in range(1, n + 1):
            tool.progress_bar(i, n)
            if i == n // 2:
                tool.status("working", "halfway")
            if i % 1000 == 0:
                deadline = start + seconds * i / n
                while perf_counter() < deadline:
                    pass
        elapsed = perf_counter() - start
    print(elapsed, file=sys.stderr)


if __name__ == "__main__":
    main(int(sys.argv[1]), float(sys.argv[2]))

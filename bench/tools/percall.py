"""Benchmark tool: the cost of one ``progress_bar(i, n)`` call against one
call of an empty method, alternated over rounds in this one process.

    percall.py ROUNDS

The tool writes its sections to stdout as any tool would (framed when
ACOR_FRAME_TOKEN is set); the timings go to stderr as one JSON line:
{"calls": n, "a": [progress_bar round times], "b": [empty-method times]}.
"""
import json
import sys
from time import perf_counter

from acor import AcorTool


class Empty:
    def progress_bar(self, current, total, label=""):
        pass


# Two functions with the same body, so that each call site specialises for
# one receiver, as an author's loop does.
def loop_tool(tool, n):
    start = perf_counter()
    for i in range(n):
        tool.progress_bar(i, n)
    return perf_counter() - start


def loop_empty(obj, n):
    start = perf_counter()
    for i in range(n):
        obj.progress_bar(i, n)
    return perf_counter() - start


def main(rounds):
    empty = Empty()
    with AcorTool("percall", "1.0.0") as tool:
        # Size a round so the progress_bar loop takes about 40 ms.
        per_call = loop_tool(tool, 5000) / 5000
        n = max(20_000, min(2_000_000, int(0.04 / per_call)))
        loop_tool(tool, n)
        loop_empty(empty, n)
        a, b = [], []
        for i in range(rounds):
            if i % 2:
                b.append(loop_empty(empty, n))
                a.append(loop_tool(tool, n))
            else:
                a.append(loop_tool(tool, n))
                b.append(loop_empty(empty, n))
    print(json.dumps({"calls": n, "a": a, "b": b}), file=sys.stderr)


if __name__ == "__main__":
    main(int(sys.argv[1]))

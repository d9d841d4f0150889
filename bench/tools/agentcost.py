"""Benchmark tool: what a run costs the agent.

    agentcost.py raw 20      # 20 MB of raw text (print), then Output Data
    agentcost.py data 10     # an Output Data value of about 10 MB
    agentcost.py chatty 2000 # 2,000 progress updates and 2,000 checkpoints
"""
import sys

from acor import AcorTool

kind, amount = sys.argv[1], int(sys.argv[2])
with AcorTool("agentcost") as tool:
    if kind == "raw":
        line = "x" * 79 + "\n"
        chunk = line * (1_000_000 // len(line))
        for _ in range(amount):
            sys.stdout.write(chunk)
        sys.stdout.flush()
        tool.output({"megabytes": amount})
    elif kind == "data":
        rows = amount * 1_000_000 // 40
        tool.output([{"id": i, "name": f"row {i}"} for i in range(rows)])
    elif kind == "chatty":
        tool.session("bench")
        for i in range(amount):
            tool.progress_bar(i + 1, amount, "work")
            tool.checkpoint(f"c{i}", {"i": i})
        tool.output("done")
    else:
        sys.exit(f"agentcost.py: unknown kind {kind!r}")

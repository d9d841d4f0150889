"""What a run costs the agent (the output budget, issue 22): bytes and
sections relayed for a flood, a large Output Data and a loop of progress
and checkpoints, against the default budget; what a checkpoint costs the
tool; and what the budget costs a 100 MB flood."""

import json
import os
import shutil
import subprocess
import tempfile
import time

from harness import Result, alternate, bound_result, ratio_result, scale
from workspace import ACOR, PY

BUDGET = 32 * 1024  # acor's default --max-output


def _relayed(env, project, fmt, args):
    """(bytes, sections) acor relays for ``agentcost ARGS``."""
    done = subprocess.run([ACOR, "--format", fmt, "agentcost", *args],
                          cwd=project, env=env, capture_output=True,
                          timeout=300)
    if done.returncode:
        raise RuntimeError(f"agentcost {' '.join(args)} exited "
                           f"{done.returncode}: {done.stderr[-300:]!r}")
    out = done.stdout
    if fmt == "json":
        sections = sum(1 for line in out.splitlines()
                       if json.loads(line)["type"] not in ("text", "result"))
    else:
        sections = sum(1 for line in out.split(b"\n")
                       if line.startswith(b"## "))
    shutil.rmtree(os.path.join(project, ".acor", "state", ".output"),
                  ignore_errors=True)
    return len(out), sections


def agent_cost(env, project, name, args, what, max_sections=None):
    """The larger of the Markdown and JSON costs, against the budget (and,
    for a chatty run, a count of sections)."""
    costs = {fmt: _relayed(env, project, fmt, args)
             for fmt in ("markdown", "json")}
    worst = max(size for size, _ in costs.values())
    detail = ", ".join(f"{fmt} {size:,} B in {n} sections"
                       for fmt, (size, n) in costs.items())
    ok = worst <= BUDGET
    if max_sections is not None:
        ok = ok and max(n for _, n in costs.values()) <= max_sections
        detail += f"; at most {max_sections} sections"
    return Result(name, what, worst, BUDGET, "B", 0.0, ok, detail)


def checkpoint_cost():
    """Milliseconds a checkpoint costs the tool (save, synced), over
    2,000 saves to one session: flat, not growing with the session."""
    from acor.sessions import SessionStore
    count = scale(2000, 200)
    work = tempfile.mkdtemp(prefix="acor-bench-ckpt-")
    try:
        store = SessionStore(work, "bench")
        start = time.perf_counter()
        times = []
        for i in range(count):
            t = time.perf_counter()
            store.save("s", f"c{i}", {"i": i, "rows": list(range(20))})
            times.append((time.perf_counter() - t) * 1000)
        total = time.perf_counter() - start
    finally:
        shutil.rmtree(work, ignore_errors=True)
    last = times[-count // 10:]
    return bound_result(
        "checkpoint", f"one `tool.checkpoint()` save, over {count:,} to one "
        "session (synced)", times, 2.0, "ms", higher_is_better=False,
        detail=f"last tenth {sorted(last)[len(last) // 2]:.2f} ms, "
        f"{total:.1f} s in all")


def budgeted_flood(env, project, megabytes):
    """A flood under the default budget (32 KiB relayed, the whole output
    written, hashed, to a file) / the tool into /dev/null."""
    args = ["flood", "output", str(megabytes)]

    def via_acor():
        start = time.perf_counter()
        subprocess.run([ACOR] + args, cwd=project, env=env,
                       stdout=subprocess.DEVNULL, check=True)
        elapsed = time.perf_counter() - start
        shutil.rmtree(os.path.join(project, ".acor", "state", ".output"),
                      ignore_errors=True)
        return elapsed

    def direct():
        start = time.perf_counter()
        subprocess.run([PY, "tools/flood/flood.py", "output",
                        str(megabytes)], cwd=project, env=env,
                       stdout=subprocess.DEVNULL, check=True)
        return time.perf_counter() - start

    rounds = scale(7, 1)
    a, b = alternate(via_acor, direct, rounds, warmup=0)
    return ratio_result(f"{megabytes} MB, budgeted",
                        "`acor flood` (default budget: the whole output to "
                        "a file) / tool > /dev/null, median of "
                        f"{rounds} alternating rounds", a, b, 2.0)

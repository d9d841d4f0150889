"""What per-item progress costs a tool's author: each call, the sections it
writes when the tool runs directly, and progress() calls per second.

Every measurement runs in a tool process of its own, started with the
environment it would really have: ACOR_FRAME_TOKEN set under the launcher,
nothing run directly, and stdout a pipe either way.
"""

import json
import os
import statistics
import subprocess
import threading

from acor import parse
from acor.events import Progress, Status

from harness import bound_result, ratio_result, scale
from workspace import BENCH_TOOLS, PY


def _run_tool(argv, env):
    """Run a bench tool with stdout a pipe drained as it comes; returns
    (stdout bytes, stderr text)."""
    proc = subprocess.Popen([PY] + argv, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    chunks = []
    drain = threading.Thread(target=lambda: chunks.extend(
        iter(lambda: proc.stdout.read(1 << 16), b"")))
    drain.start()
    err = proc.stderr.read().decode()
    drain.join()
    if proc.wait():
        raise RuntimeError(f"{os.path.basename(argv[0])} exited "
                           f"{proc.returncode}: {err.strip()[-300:]}")
    return b"".join(chunks), err


def per_item(env, under_acor):
    """One progress_bar(i, n) call / one call of an empty method, both in
    the same loop, alternated over rounds inside one tool process. The few
    calls that do write are included, as an author pays for them."""
    if under_acor:
        env = dict(env, ACOR_FRAME_TOKEN=os.urandom(16).hex())
    out, err = _run_tool([os.path.join(BENCH_TOOLS, "percall.py"),
                          str(scale(15, 5))], env)
    times = json.loads(err.strip().splitlines()[-1])
    calls = times["calls"]
    per_call = [t / calls * 1e6 for t in times["a"]]
    empty = [t / calls * 1e6 for t in times["b"]]
    where = "under acor" if under_acor else "run directly"
    return ratio_result(
        f"per-item progress, {where}",
        "one `progress_bar(i, n)` / one empty method call", times["a"],
        times["b"], 3.0,
        detail=f"{statistics.median(per_call):.3f} vs "
        f"{statistics.median(empty):.3f} µs a call; "
        f"{out.count(b'## Progress:'):,} sections written in all")


def direct_sections(env):
    """1,000,000 progress_bar calls over about 1 s of work, run directly
    with stdout a pipe: how many Progress sections reach the pipe, and
    whether the latest one is written before the next other section and
    at the end."""
    calls = scale(1_000_000, 100_000)
    seconds = scale(1.0, 0.2)
    counts, elapsed, faults = [], [], []
    for _ in range(scale(3, 1)):
        out, err = _run_tool([os.path.join(BENCH_TOOLS, "paced.py"),
                              str(calls), str(seconds)], env)
        elapsed.append(float(err.strip().splitlines()[-1]))
        events = parse(out.decode())
        counts.append(sum(isinstance(e, Progress) for e in events))
        faults += _coalescing_faults(events, calls)
        if elapsed[-1] > 3 * seconds:
            break  # the calls alone take seconds: one sample says enough
    result = bound_result(
        "progress run directly",
        f"Progress sections from {calls:,} calls in ~{seconds:g} s, "
        "stdout a pipe", counts, 100, "sections", higher_is_better=False,
        detail=f"the calls took {statistics.median(elapsed):.2f} s")
    if faults:
        result.fail(faults[0])
    return result


def _coalescing_faults(events, calls):
    """Where the transcript hides progress it should show: the last call
    before the halfway status, and the last call of all."""
    def message(i):
        return f"({i}/{calls})"
    progress = [e for e in events if isinstance(e, Progress)]
    halfway = next((n for n, e in enumerate(events)
                    if isinstance(e, Status) and e.message == "halfway"),
                   None)
    faults = []
    if halfway is None:
        faults.append("no halfway status in the transcript")
    elif not (halfway and isinstance(events[halfway - 1], Progress)
              and events[halfway - 1].message == message(calls // 2)):
        faults.append(f"progress {message(calls // 2)} not written before "
                      "the halfway status")
    if not progress or progress[-1].message != message(calls):
        last = progress[-1].message if progress else "none"
        faults.append(f"last Progress written is {last}, not "
                      f"{message(calls)}")
    return faults


def emission(env):
    """progress() calls per second into a pipe (the old emission row)."""
    count = scale(200_000, 20_000)
    rates = []
    for _ in range(scale(5, 1)):
        _, err = _run_tool([os.path.join(BENCH_TOOLS, "emit.py"),
                            str(count)], env)
        rates.append(float(err.strip().splitlines()[-1]))
    return bound_result("emission", "`progress()` calls/s into a pipe",
                        rates, 100_000, "/s", higher_is_better=True)

"""make bench: acor's speed against its targets, measured side by side.

Prints one table of medians and ratios and exits 1 if a target is missed by
more than the noise measured for it (2 if acor is not installed as users
get it). ``BENCH_QUICK=1`` runs a smaller version of every measurement, for
a smoke test, not for numbers.
"""

import os
import platform
import shutil
import sys
import tempfile
import time

from harness import QUICK, broken, scale, table
from workspace import NotInstalled, clean_env, installed_acor, make_project

import budget
import functions
import mcp_rows
import progress
import startup
import streams


# BENCH_ONLY="tool import,launcher overhead": only the rows named, e.g. to
# compare two Pythons (`make bench PYTHON=... VENV=...`) on what differs,
# or one row alone; the names are the table's first column. Names hold
# commas themselves ("discovery, warm"): separated by ";", names are taken
# whole (BENCH_ONLY="sandbox, socket filter;discovery, warm"); separated
# by ",", a row is chosen when every comma-separated part of its name is
# among the parts given (BENCH_ONLY="MCP call, SDK client, 2026-07-28").
_ONLY = os.environ.get("BENCH_ONLY", "")
ONLY = {name.strip() for name in _ONLY.split(";" if ";" in _ONLY else ",")
        if name.strip()}


def chosen(name):
    """Whether BENCH_ONLY (or its absence) keeps the row ``name``."""
    if not ONLY or name in ONLY:
        return True
    return ";" not in _ONLY and \
        {part.strip() for part in name.split(",")} <= ONLY


DISCOVERY = {"discovery, warm", "discovery, cold"}


def measure(name, target, unit, row):
    """Run one row; a row that raises is a miss, shown with its error, and
    the other rows still run. None: a row BENCH_ONLY leaves out."""
    if not chosen(name):
        return None
    try:
        return row()
    except Exception as exc:
        return broken(name, "", target, unit,
                      f"{type(exc).__name__}: {exc}")


def rows(work, env):
    project = make_project(os.path.join(work, "proj"),
                           tools=("hello", "flood", "ticker", "agentcost"))
    big = make_project(os.path.join(work, "big"), copies=1000)
    small = make_project(os.path.join(work, "small"), copies=1)
    megabytes = scale(100, 10)
    peaks = []
    results = [
        measure("tool import", 1.3, "x",
                lambda: startup.tool_import(env, work)),
        measure("per-item progress, under acor", 3.0, "x",
                lambda: progress.per_item(env, under_acor=True)),
        measure("per-item progress, run directly", 3.0, "x",
                lambda: progress.per_item(env, under_acor=False)),
        measure("progress run directly", 100, "sections",
                lambda: progress.direct_sections(env)),
        measure("launcher overhead", 1.10, "x",
                lambda: startup.launcher(env, project)),
        measure("sandbox", 1.15, "x",
                lambda: startup.sandboxed(env, project)),
        measure("sandbox, socket filter", 1.1, "x",
                lambda: startup.socket_filter(env, work)),
    ]
    for fmt in ("markdown", "json"):
        results.append(measure(
            f"{megabytes} MB, {fmt}", 1.5, "x",
            lambda: streams.flood(env, project, megabytes, fmt, peaks)))
    results += [
        measure("memory", streams.RSS_LIMIT_MIB, "MiB",
                lambda: streams.memory(peaks, 2)),
        measure("relay latency", 5.0, "ms",
                lambda: streams.latency(env, project)),
        measure("emission", 100_000, "/s",
                lambda: progress.emission(env)),
        measure("parser", 50, "MB/s", streams.parser),
        measure(f"{megabytes} MB, budgeted", 2.0, "x",
                lambda: budget.budgeted_flood(env, project, megabytes)),
        measure("agent cost, 20 MB flood", budget.BUDGET, "B",
                lambda: budget.agent_cost(
                    env, project, "agent cost, 20 MB flood",
                    ["raw", str(scale(20, 5))],
                    "bytes relayed for 20 MB of raw text")),
        measure("agent cost, 10 MB data", budget.BUDGET, "B",
                lambda: budget.agent_cost(
                    env, project, "agent cost, 10 MB data",
                    ["data", str(scale(10, 2))],
                    "bytes relayed for a 10 MB Output Data")),
        measure("agent cost, checkpoints", budget.BUDGET, "B",
                lambda: budget.agent_cost(
                    env, project, "agent cost, checkpoints",
                    ["chatty", str(scale(2000, 300))],
                    "2,000 progress + 2,000 checkpoints", 60)),
        measure("checkpoint", 2.0, "ms", budget.checkpoint_cost),
    ]
    results += [measure(name, target, unit, lambda row=row: row(env, work))
                for name, target, unit, row in functions.ROWS]
    if any(chosen(name) for name in DISCOVERY):
        results += [row for row in startup.discovery(env, big, small)
                    if chosen(row.name)]
    results += mcp_rows.mcp_rows(chosen)
    return [result for result in results if result is not None]


def header(where, load_before):
    """When, where and how busy: the load average (1 min) before and after
    says how much the machine's other users may have moved the numbers."""
    return (f"acor bench, {time.strftime('%Y-%m-%d %H:%M')}, "
            f"{os.cpu_count()} cores ({platform.machine()}), "
            f"Python {platform.python_version()}, load {load_before:.1f} "
            f"before, {os.getloadavg()[0]:.1f} after"
            f"{'  (BENCH_QUICK: not for numbers)' if QUICK else ''}\n{where}")


def main():
    started = time.perf_counter()
    load_before = os.getloadavg()[0]
    work = tempfile.mkdtemp(prefix="acor-bench-")
    try:
        env = clean_env(os.path.join(work, "cache"))
        try:
            where = installed_acor(env, work)
        except NotInstalled as exc:
            print(f"make bench: {exc}", file=sys.stderr)
            return 2
        results = rows(work, env)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"\n{header(where, load_before)}\n")
    print(table(results))
    missed = [r.name for r in results if r.ok is False]
    counted = [r for r in results if r.ok is not None]
    print(f"\n{len(counted) - len(missed)} of {len(counted)} targets met "
          f"({len(results) - len(counted)} skipped) in "
          f"{time.perf_counter() - started:.0f} s"
          + (f"; missed: {', '.join(missed)}" if missed else ""))
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())

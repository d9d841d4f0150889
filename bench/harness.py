"""Side-by-side measurement for a noisy 2-core machine.

Absolute times drift with whatever else the machine does, so every target
that compares two things runs them alternately, A B B A A B ..., and reports
the median of the per-round ratios; the noise is the spread of those ratios
(half the interquartile range, relative to the median). A target is missed
only when the median is worse than the target by more than that noise.
"""

import os
import statistics
import subprocess
import time

QUICK = os.environ.get("BENCH_QUICK") == "1"


def scale(full, quick):
    """``full`` for a real run, ``quick`` under BENCH_QUICK=1."""
    return quick if QUICK else full


def run_once(argv, env=None, cwd=None):
    """Wall time of one command, output discarded; a failing command is an
    error, not a fast sample."""
    start = time.perf_counter()
    code = subprocess.run(argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL, check=False).returncode
    elapsed = time.perf_counter() - start
    if code != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {code} (in {cwd})")
    return elapsed


def alternate(run_a, run_b, rounds, warmup=2):
    """Run two callables alternately; returns (samples_a, samples_b)."""
    for _ in range(warmup):
        run_a()
        run_b()
    samples_a, samples_b = [], []
    for i in range(rounds):
        # Swap the order every round so neither always runs second.
        if i % 2:
            samples_b.append(run_b())
            samples_a.append(run_a())
        else:
            samples_a.append(run_a())
            samples_b.append(run_b())
    return samples_a, samples_b


def quartiles(values):
    if len(values) < 2:
        return values[0], values[0], values[0]
    q = statistics.quantiles(values, n=4, method="inclusive")
    return q[0], statistics.median(values), q[2]


def spread(values):
    """(median, noise): noise is half the IQR relative to the median."""
    low, median, high = quartiles(values)
    return median, ((high - low) / 2 / median if median else 0.0)


class Result:
    """One row of the table. ``ok`` is None for a row that was skipped."""

    def __init__(self, name, measured, value, target, unit, noise, ok,
                 detail=""):
        self.name = name
        self.measured = measured
        self.value = value
        self.target = target
        self.unit = unit
        self.noise = noise
        self.ok = ok
        self.detail = detail

    def fail(self, why):
        """Mark a row missed for a reason the numbers do not show (a wrong
        transcript, an error): a fast wrong answer is not a result."""
        self.ok = False
        self.detail = f"{why}; {self.detail}" if self.detail else why
        return self


class Unavailable(Exception):
    """A row that cannot be measured here (what it needs is missing): shown
    skipped, with the reason, not as a miss."""


def skipped(name, measured, target, unit, why):
    return Result(name, measured, None, target, unit, 0.0, None, why)


def broken(name, measured, target, unit, exc):
    """A row whose measurement raised: a miss, with the reason shown."""
    return Result(name, measured, None, target, unit, 0.0, False,
                  f"error: {exc}")


def ratio_result(name, measured, samples_a, samples_b, target, detail=None):
    """Median of the per-round A/B ratios against a ``<= target`` goal."""
    median, noise = spread([a / b for a, b in zip(samples_a, samples_b)])
    if detail is None:
        detail = (f"A {statistics.median(samples_a) * 1000:.1f} ms, "
                  f"B {statistics.median(samples_b) * 1000:.1f} ms")
    return Result(name, measured, median, target, "x", noise,
                  median <= target * (1 + noise), detail)


def bound_result(name, measured, samples, target, unit, higher_is_better,
                 detail=""):
    """Median of repeated samples against an absolute goal."""
    median, noise = spread(samples)
    if higher_is_better:
        ok = median >= target * (1 - noise)
    else:
        ok = median <= target * (1 + noise)
    return Result(name, measured, median, target, unit, noise, ok, detail)


def watch_peak_rss(proc, interval=0.01):
    """Poll a running process's high-water resident memory (VmHWM, MiB)
    until it exits; returns the last reading. VmHWM only grows, so polling
    misses at most what the process adds in its last ``interval``. (wait4's
    ru_maxrss would fold in the children it reaped: the tool, not the
    launcher.)"""
    peak = 0.0
    while proc.poll() is None:
        try:
            with open(f"/proc/{proc.pid}/status") as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        peak = max(peak, int(line.split()[1]) / 1024)
                        break
        except (OSError, ValueError):
            pass  # exited between poll() and open(): keep the last reading
        time.sleep(interval)
    return peak


# --- the table ---------------------------------------------------------------

def _cells(result):
    """(value, target) as printed."""
    value, target, unit = result.value, result.target, result.unit
    if unit == "x":
        cells = (f"{value:.2f}x" if value is not None else None,
                 f"<= {target:g}x")
    elif unit == "x faster":
        cells = (f"{value:.2f}x" if value is not None else None,
                 f">= {target:g}x")
    elif unit == "/s":
        cells = (f"{value:,.0f}/s" if value is not None else None,
                 f">= {target:,.0f}/s")
    elif unit == "MB/s":
        cells = (f"{value:.0f} MB/s" if value is not None else None,
                 f">= {target:g} MB/s")
    elif unit == "sections":
        cells = (f"{value:,.0f}" if value is not None else None,
                 f"<= {target:,}")
    else:
        cells = (f"{value:.2f} {unit}" if value is not None else None,
                 f"<= {target:g} {unit}")
    return cells[0] or "-", cells[1]


HIGHER_IS_BETTER = ("/s", "MB/s", "x faster")


def verdict(result):
    if result.ok is None:
        return "skipped"
    if not result.ok:
        return "MISSED"
    if result.value is not None and (
            result.value < result.target if result.unit in HIGHER_IS_BETTER
            else result.value > result.target):
        return "yes (within noise)"
    return "yes"


def table(results):
    """The results as aligned text columns, one row per target."""
    rows = [("what", "measured as", "median", "target", "noise", "met",
             "detail")]
    for r in results:
        value, target = _cells(r)
        noise = f"±{r.noise:.0%}" if r.value is not None and r.noise else ""
        rows.append((r.name, r.measured, value, target, noise, verdict(r),
                     r.detail))
    widths = [max(len(row[i]) for row in rows) for i in range(6)]
    lines = []
    for n, row in enumerate(rows):
        lines.append("  ".join(c.ljust(w) for c, w in zip(row, widths))
                     + "  " + row[6])
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(line.rstrip() for line in lines)

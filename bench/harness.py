"""Side-by-side measurement for a noisy 2-core machine.

Absolute times drift with whatever else the machine does, so every target
that compares two things runs them alternately, A B A B ..., and reports the
median of the per-pair ratios; the noise is the spread of those ratios (half
the interquartile range, relative to the median). A target is missed only
when the median is worse than the target by more than that noise.
"""

import os
import statistics
import subprocess
import time


def run_once(argv, env=None, cwd=None, stdin=None):
    """Wall time of one command, output discarded."""
    start = time.perf_counter()
    subprocess.run(argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, stdin=stdin, check=False)
    return time.perf_counter() - start


def alternate(run_a, run_b, rounds, warmup=2):
    """Run two callables alternately; returns (times_a, times_b)."""
    for _ in range(warmup):
        run_a()
        run_b()
    times_a, times_b = [], []
    for i in range(rounds):
        # Swap the order every round so neither always runs on a warm cache.
        if i % 2:
            times_b.append(run_b())
            times_a.append(run_a())
        else:
            times_a.append(run_a())
            times_b.append(run_b())
    return times_a, times_b


def quartiles(values):
    if len(values) < 2:
        return values[0], values[0], values[0]
    q = statistics.quantiles(values, n=4, method="inclusive")
    return q[0], statistics.median(values), q[2]


class Result:
    """One row of the table."""

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


def ratio_result(name, measured, times_a, times_b, target):
    """Median A/B ratio against a ``<= target`` goal."""
    ratios = [a / b for a, b in zip(times_a, times_b)]
    low, median, high = quartiles(ratios)
    noise = (high - low) / 2 / median
    detail = (f"A {statistics.median(times_a) * 1000:.1f} ms, "
              f"B {statistics.median(times_b) * 1000:.1f} ms")
    return Result(name, measured, median, target, "x", noise,
                  median <= target * (1 + noise), detail)


def bound_result(name, measured, samples, target, unit, higher_is_better,
                 detail=""):
    """Median of repeated samples against an absolute goal."""
    low, median, high = quartiles(samples)
    noise = (high - low) / 2 / median if median else 0.0
    if higher_is_better:
        ok = median >= target * (1 - noise)
    else:
        ok = median <= target * (1 + noise)
    return Result(name, measured, median, target, unit, noise, ok, detail)


def rss_peak(pid):
    """Peak resident memory of a live process, in MiB (VmHWM)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def cpu_count():
    return os.cpu_count() or 1

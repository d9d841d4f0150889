"""What the engine drivers share: the numbers one latency run prints."""

import json
import os
import statistics
import time


def tick(path: str) -> None:
    """A running job's sign of life: one line in its ticks file."""
    with open(path, "a") as f:
        f.write(f"{time.time()}\n")


def still_ticking(path: str, over_s: float = 3.0) -> bool:
    """Whether the job writing ``path`` still runs (a tick every 0.5 s)."""
    before = os.path.getsize(path) if os.path.exists(path) else 0
    time.sleep(over_s)
    return (os.path.getsize(path) if os.path.exists(path) else 0) > before


def cancel_line(engine: str, status: str, seconds: float, path: str) -> None:
    ticking = still_ticking(path)
    print(f"{engine} cancel: {status} {seconds:.2f} s after the request; "
          f"the job's work {'still runs' if ticking else 'stopped'}")


def report(engine: str, create: list[float], get: list[float]) -> None:
    """One JSON line: median and 95th percentile, in ms."""
    def p95(xs: list[float]) -> float:
        xs = sorted(xs)
        return xs[min(len(xs) - 1, int(len(xs) * 0.95))]
    print(json.dumps({
        "engine": engine, "rounds": len(create),
        "create_ms_median": round(statistics.median(create) * 1000, 2),
        "create_ms_p95": round(p95(create) * 1000, 2),
        "get_ms_median": round(statistics.median(get) * 1000, 2),
        "get_ms_p95": round(p95(get) * 1000, 2)}))

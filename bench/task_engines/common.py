"""What the engine drivers share: the numbers one latency run prints."""

import json
import statistics


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

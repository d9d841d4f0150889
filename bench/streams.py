"""What the launcher costs on the way out: relay latency, floods of output
(with the launcher's memory), and the parser on a long transcript."""

import io
import json
import os
import statistics
import subprocess
import threading
import time

from acor import AcorTool, parse

from harness import (Result, bound_result, ratio_result, scale,
                     watch_peak_rss)
from workspace import ACOR, PY

RSS_LIMIT_MIB = 32


def latency(env, project):
    """Section written by the tool -> line read from acor: the p99 of each
    of several runs, and their median (one run's tail moves with whatever
    else the machine does in that second; the median of runs does not)."""
    runs = [_latency_run(env, project, scale(300, 40))
            for _ in range(scale(5, 1))]
    p99s = [p99 for p99, _, _ in runs]
    p50 = statistics.median(p50 for _, p50, _ in runs)
    return bound_result("relay latency", f"section written -> read from "
                        f"acor, p99, median of {len(runs)} runs", p99s, 5.0,
                        "ms", higher_is_better=False,
                        detail=f"p50 {p50:.2f} ms; {runs[0][2]} sections a "
                               f"run; p99 of each run "
                               + ", ".join(f"{p:.1f}" for p in p99s))


def _latency_run(env, project, count):
    """(p99, p50, sections) of one run of ``count`` status sections."""
    proc = subprocess.Popen([ACOR, "--format", "json", "ticker", str(count),
                             "0.003"], cwd=project, env=env,
                            stdout=subprocess.PIPE, bufsize=0)
    delays = []
    for line in iter(proc.stdout.readline, b""):
        now = time.time()
        event = json.loads(line)
        if event.get("type") == "status" and event.get("state") == "working":
            delays.append((now - float(event["message"])) * 1000)
    proc.wait()
    if not delays:
        raise RuntimeError(f"ticker through acor gave no status sections "
                           f"(exit {proc.returncode})")
    delays.sort()
    return (delays[min(len(delays) - 1, int(len(delays) * 0.99))],
            delays[len(delays) // 2], len(delays))


def flood(env, project, megabytes, fmt, peaks):
    """``acor --format FMT flood output MB`` read from a pipe / the same
    tool run directly into /dev/null. Appends the launcher's peak RSS of
    every run to ``peaks``.

    The bench reads acor's output as a fast consumer would (1 MiB reads on
    the main thread), and the time stops when the pipe ends, not when the
    memory watcher next wakes: the bench's own costs are not acor's."""
    args = ["flood", "output", str(megabytes)]

    def via_acor():
        start = time.perf_counter()
        # --max-output 0: the relay itself, every byte to the reader (the
        # budgeted flood has its own row, bench/budget.py).
        proc = subprocess.Popen([ACOR, "--max-output", "0", "--format",
                                 fmt] + args, cwd=project,
                                env=env, stdout=subprocess.PIPE)
        peak = []
        watcher = threading.Thread(target=lambda: peak.append(
            watch_peak_rss(proc)))
        watcher.start()
        fd = proc.stdout.fileno()
        while os.read(fd, 1 << 20):
            pass
        proc.wait()
        elapsed = time.perf_counter() - start
        watcher.join()
        proc.stdout.close()
        peaks.append(peak[0])
        if proc.returncode:
            raise RuntimeError(f"acor {' '.join(args)} exited "
                               f"{proc.returncode}")
        return elapsed

    def direct(stdout=subprocess.DEVNULL):
        start = time.perf_counter()
        proc = subprocess.Popen([PY, "tools/flood/flood.py", "output",
                                 str(megabytes)], cwd=project, env=env,
                                stdout=stdout)
        if stdout == subprocess.PIPE:  # read as acor's output is read
            fd = proc.stdout.fileno()
            while os.read(fd, 1 << 20):
                pass
            proc.stdout.close()
        if proc.wait():
            raise RuntimeError(f"flood.py exited {proc.returncode}")
        return time.perf_counter() - start

    # No warm-up pair: the launcher row ran this project and cache before.
    # The tool into /dev/null is the row's yardstick; the tool into a pipe
    # this process reads, as it reads acor, is shown beside it: a pipe's
    # own cost (a reader on the machine's two cores, every byte copied in
    # and out of the kernel) is in A twice and not in B.
    rounds = scale(9, 1)
    runs = (via_acor, direct, lambda: direct(subprocess.PIPE))
    a, b, piped = [], [], []
    for i in range(rounds):  # the three in turn, another first each round
        for k in range(3):
            j = (i + k) % 3
            (a, b, piped)[j].append(runs[j]())
    ms = statistics.median(piped) * 1000
    return ratio_result(f"{megabytes} MB, {fmt}",
                        f"`acor --max-output 0 --format {fmt}` / tool > "
                        f"/dev/null, median of {rounds} rounds in turn",
                        a, b, 1.5,
                        detail=f"A {statistics.median(a) * 1000:.1f} ms, "
                               f"B {statistics.median(b) * 1000:.1f} ms; "
                               f"the tool into a pipe read as A is "
                               f"{ms:.1f} ms")


def memory(peaks, rows):
    """The launcher's peak RSS, the highest over every flood run."""
    highest = max(peaks)
    return Result("memory", f"launcher peak RSS, max over {len(peaks)} "
                  f"runs of {rows} rows", highest, RSS_LIMIT_MIB, "MiB", 0.0,
                  highest <= RSS_LIMIT_MIB,
                  f"lowest run {min(peaks):.1f} MiB")


def transcript(megabytes):
    """A realistic transcript: mostly output bodies, some small sections."""
    buf = io.StringIO()
    tool = AcorTool("t", stream=buf, frame_token=None).start()
    text = "\n".join(f"row {i}: value={i * 7} status=ok" for i in range(300))
    i = 0
    while buf.tell() < megabytes * 1_000_000:
        i += 1
        tool.status("working", f"chunk {i}")
        tool.output(text)
        if i % 5 == 0:
            tool.output({"chunk": i, "rows": list(range(50))})
        if i % 50 == 0:
            tool.error("E_WARN", f"chunk {i} slow", recovery="none needed")
            tool.suggestions(["look at chunk", "and the next one"])
    tool.stop()
    return buf.getvalue()


def parser():
    text = transcript(scale(50, 5))
    size = len(text.encode()) / 1e6
    rates = []
    for _ in range(scale(3, 1)):
        start = time.perf_counter()
        parse(text)
        rates.append(size / (time.perf_counter() - start))
    return bound_result("parser", f"`acor.parse` on a {size:.0f} MB "
                        "transcript", rates, 50, "MB/s",
                        higher_is_better=True)

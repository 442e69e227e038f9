"""Plain loops over one case, run in a fresh subprocess (no pytest, no plugin).

``python -m bench.detection.loop bare CASE N``  times N calls of the step; prints JSON.
``python -m bench.detection.loop trace CASE N [EVERY]``  samples RSS, threads and fds every
EVERY calls with psutil; prints JSON. Used to check the corpus and as the bare-loop baseline.
"""

from __future__ import annotations

import json
import sys
import time

from bench.detection.cases import CASES, close_step


def bare(name: str, iterations: int) -> dict:
    step = CASES[name].make()
    start = time.perf_counter()
    for _ in range(iterations):
        step()
    seconds = time.perf_counter() - start
    close_step(step)
    return {"case": name, "iterations": iterations, "seconds": seconds}


def trace(name: str, iterations: int, every: int) -> dict:
    import psutil

    process = psutil.Process()
    step = CASES[name].make()
    at, rss, threads, fds = [], [], [], []
    start = time.perf_counter()
    for i in range(1, iterations + 1):
        step()
        if i % every == 0:
            at.append(i)
            rss.append(process.memory_info().rss)
            threads.append(process.num_threads())
            fds.append(process.num_fds())
    seconds = time.perf_counter() - start
    close_step(step)
    return {"case": name, "iterations": iterations, "seconds": seconds, "at": at,
            "rss": rss, "threads": threads, "fds": fds}


def main(argv: list[str]) -> int:
    mode, name, iterations = argv[0], argv[1], int(argv[2])
    if mode == "bare":
        out = bare(name, iterations)
    elif mode == "trace":
        out = trace(name, iterations, int(argv[3]) if len(argv) > 3 else 10)
    else:
        raise SystemExit(f"unknown mode {mode!r}: use 'bare' or 'trace'")
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

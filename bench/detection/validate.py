"""Check the corpus without the plugin: every leak grows, every clean case is flat.

``python -m bench.detection.validate [--cases PATTERNS] [--iterations N]``

Each case runs N iterations in its own subprocess (``loop trace``), sampled every 10 steps.
Growth is measured from floor to floor (minimum over a window) between the middle and the end
of the run, after every bounded fill in the corpus has ended, so sawtooths and spikes do not
count. A leak must grow by at least half its nominal rate over that stretch (or by 256 KiB when
the rate is not nominal); a clean case must stay within 256 KiB
(the background-thread case moves by about 200 KiB at random) and 0 threads / fds.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

from bench.detection.cases import CASES, missing_requirements, select

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NOISE_BYTES = 256 * 1024


def floor(series: list, at: list, lo: int, hi: int) -> float:
    return min(v for v, i in zip(series, at, strict=True) if lo <= i <= hi)


def judge(case_name: str, data: dict) -> tuple[bool, str]:
    case = CASES[case_name]
    n = data["iterations"]
    at = data["at"]
    mid_lo, mid_hi, end_lo = n // 2, n // 2 + n // 7, n - n // 7
    out = {}
    for probe in ("rss", "threads", "fds"):
        out[probe] = floor(data[probe], at, end_lo, n) - floor(data[probe], at, mid_lo, mid_hi)
    span = end_lo - mid_lo
    text = (f"rss {out['rss'] / 1024:+9.1f} KiB ({out['rss'] / max(span, 1):8.1f} B/it) "
            f"threads {out['threads']:+5d} fds {out['fds']:+5d}")
    if case.truth == "clean":
        ok = out["rss"] <= NOISE_BYTES and out["threads"] <= 0 and out["fds"] <= 0
    elif case.probe == "rss":
        need = 0.5 * case.rate * span if case.rate else NOISE_BYTES
        ok = out["rss"] >= need
    else:
        ok = out[case.probe] > 0
    return ok, text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default=None)
    parser.add_argument("--heldout", action="store_true", help="check the held-out cases")
    parser.add_argument("--iterations", type=int, default=2000)
    args = parser.parse_args(argv)
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    bad = 0
    for case in select(args.cases, heldout=args.heldout):
        if missing_requirements(case):
            print(f"{case.name:32s} skipped (missing {missing_requirements(case)})")
            continue
        proc = subprocess.run(
            [sys.executable, "-m", "bench.detection.loop", "trace", case.name,
             str(args.iterations), "10"],
            cwd=ROOT, env=env, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            print(f"{case.name:32s} ERROR {proc.stderr.strip().splitlines()[-1:]}")
            bad += 1
            continue
        data = json.loads(proc.stdout)
        ok, text = judge(case.name, data)
        bad += not ok
        ms = data["seconds"] / data["iterations"] * 1e3
        print(f"{case.name:32s} {case.truth:5s} {'ok ' if ok else 'BAD'} {ms:6.2f} ms/it  {text}",
              flush=True)
    print(f"{bad} case(s) do not behave as labelled")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

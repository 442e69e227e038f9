"""How much glibc's bytes in use (the malloc probe) wiggle on clean loops: the measurement
behind the catalog's witness_resolution of malloc.

    python bench/witness_noise.py [--cases PATTERNS] [--heldout] [--iterations 3000]

Each clean case of the detection corpus runs in its own process for a fixed number of
calls with ``rss`` and ``malloc`` sampled, after the default warm-up. At the lengths where
an auto run judges (640 calls, then x1.5), the malloc series of the window so far is fitted
as the witness rule fits it, and the growth over the judged tail is printed wherever the
rule, without any resolution, would call it growth (lower bound above zero, still growing
late). The largest such growth is what the witness's resolution must stay above.

Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

#: Where an auto run judges: the shortest verdict, then each time the window grows by 1.5.
LENGTHS = (640, 960, 1440, 2160, 3240)


def one_case(name: str, iterations: int) -> dict[str, object]:
    from bench.detection.cases import CASES, close_step
    from pytest_membudget.judge.fit import trend
    from pytest_membudget.judge.spec import Budget, BudgetSpec
    from pytest_membudget.measure.loop import measure, open_measurement
    from pytest_membudget.settings import default_run

    spec = BudgetSpec((Budget("rss", "slope", 0.0, "bench"),),
                      default_run(iterations=iterations))
    m = open_measurement(spec, ("rss", "malloc"))
    step = CASES[name].make()
    try:
        for _ in measure(spec, m.probes, m):
            step()
    finally:
        close_step(step)
    x, series = m.window()
    y = series["malloc"]
    seen = []
    for length in (n for n in LENGTHS if n <= iterations):
        end = int((x <= x[0] + length).sum())
        t = trend(x[:end], y[:end], spec.run.confidence)
        growing = t.lower > 0 and t.late_slope > 0 and t.recent_slope > t.slope / 2
        seen.append({"calls": length, "slope": t.slope, "tail_growth": t.slope * t.tail_span,
                     "growing": bool(growing)})
    return {"case": name, "checkpoints": seen}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default=None)
    parser.add_argument("--heldout", action="store_true")
    parser.add_argument("--iterations", type=int, default=3240)
    parser.add_argument("--one", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one_case(args.one, args.iterations)))
        return 0
    from bench.detection.cases import missing_requirements, select

    worst = 0.0
    print(f"{'case':34} {'calls':>6} {'B/call':>9} {'tail growth B':>14} growing")
    for case in select(args.cases, heldout=args.heldout):
        if case.truth != "clean" or missing_requirements(case):
            continue
        out = subprocess.run([sys.executable, __file__, "--one", case.name, "--iterations",
                              str(args.iterations)], capture_output=True, text=True)
        if out.returncode:
            print(f"{case.name:34} failed: {out.stderr.strip().splitlines()[-1:]}")
            continue
        for c in json.loads(out.stdout.strip().splitlines()[-1])["checkpoints"]:
            if c["growing"]:
                worst = max(worst, c["tail_growth"])
            print(f"{case.name:34} {c['calls']:>6} {c['slope']:>9.2f} "
                  f"{c['tail_growth']:>14.0f} {'yes' if c['growing'] else ''}")
    print(f"largest tail growth the rule calls growing, on clean cases: {worst:.0f} B")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

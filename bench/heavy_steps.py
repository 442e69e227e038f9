"""Time to a verdict on heavy steps: 10, 50 and 100 ms of numpy work per call, clean or keeping
4 KiB or 64 KiB per call, each test at the plugin's defaults with ``rss=0``.

    python bench/heavy_steps.py [--repeats 3] [--steps 10,50,100] [--variants clean,4k,64k]
                                [--plugin-from DIR] [--json PATH]

Each run is a fresh pytest process on one generated test. The step is busy for its length on
the wall clock (small matrix products, their temporaries freed), so a loaded machine does less
work per call but the same number of calls per second; a leaking step keeps a filled array
per call. Printed per case: the verdict (F failed, . passed clearly, I passed with an
inconclusive line, E anything else), the measured calls, and the test's call-phase seconds,
with the median over repeats and the targets of the heavy-step rule:

- a leak of 4 or 64 KiB/call fails within 10 s at every step length;
- a clean step passes clearly within 4 s (10 ms), 12 s (50 ms) and 20 s (100 ms);
- with ``--torch``, a clean torch CPU training step (20 Adam updates of a 64-256-8 MLP on a
  batch of 256) budgeted ``rss=0, iter_time=0`` passes clearly within 20 s.

``--plugin-from DIR`` runs the copy of ``pytest_membudget/`` in DIR instead of the installed
one (to measure a version before a change beside the one after it).

``--sweep`` runs the same steps as unmarked tests under ``--membudget-sweep=report`` (the
plugin's defaults, ``membudget_sweep_seconds`` 2 s) and prints each test's sweep verdict
(L leaking, . clean or passed, C cut short, I inconclusive, E anything else), its repeats and
the seconds its sweep took. Its variants add ``lruN``: an ``lru_cache(maxsize=N)`` given a
new key per call, each entry 64 KiB: a bounded cache that is still filling.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VARIANTS = {"clean": 0, "4k": 4 * 1024, "64k": 64 * 1024}
#: Caches that fill and stop: 64 KiB kept per call for the first N calls after warm-up
#: (``--variants fill20,fill60``): what a verdict that stands in seconds still forgives.
FILL_BYTES = 64 * 1024
#: Seconds within which the verdict must stand: (step ms, variant) -> seconds.
TARGETS = {(ms, "64k"): 10.0 for ms in (10, 50, 100)}
TARGETS.update({(ms, "4k"): 10.0 for ms in (10, 50, 100)})
TARGETS.update({(10, "clean"): 4.0, (50, "clean"): 12.0, (100, "clean"): 20.0,
                (0, "torch"): 20.0})

TEST = '''\
import time

import numpy as np
import pytest

KEEP = []
A = np.random.default_rng(0).random((48, 48))


def step():
    deadline = time.perf_counter() + {seconds!r}
    while time.perf_counter() < deadline:
        (A @ A).sum()
    if {leak} and len(KEEP) < {most}:
        KEEP.append(np.ones({leak} // 8))


@pytest.mark.membudget(rss=0)
def test_step(membudget):
    membudget.run(step)
'''

TORCH_TEST = '''\
import pytest
import torch

torch.manual_seed(0)
MODEL = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 8))
OPTIMIZER = torch.optim.Adam(MODEL.parameters(), lr=1e-3)
X, Y = torch.randn(256, 64), torch.randn(256, 8)


def step():
    for _ in range(20):
        OPTIMIZER.zero_grad()
        torch.nn.functional.mse_loss(MODEL(X), Y).backward()
        OPTIMIZER.step()


@pytest.mark.membudget(rss=0, iter_time=0)
def test_step(membudget):
    membudget.run(step)
'''

SWEEP_TEST = '''\
import functools
import time

import numpy as np

KEEP = []
A = np.random.default_rng(0).random((48, 48))
CALLS = [0]


@functools.lru_cache(maxsize={cache})
def entry(key):
    return np.ones({leak} // 8)


def test_step():
    deadline = time.perf_counter() + {seconds!r}
    while time.perf_counter() < deadline:
        (A @ A).sum()
    CALLS[0] += 1
    if {cache}:
        entry(CALLS[0])
    elif {leak} and len(KEEP) < {most}:
        KEEP.append(np.ones({leak} // 8))
'''

CONFTEST = '''\
import json
from pathlib import Path


def pytest_runtest_logreport(report):
    if report.when != "call":
        return
    record = {"outcome": report.outcome, "duration": report.duration,
              "membudget": getattr(report, "membudget", None),
              "sweep": getattr(report, "membudget_sweep", None)}
    with Path(__file__).with_name("result.json").open("w") as out:
        json.dump(record, out)
'''


def _variant(name: str) -> tuple[int, int]:
    """Bytes kept per call and for how many calls (warm-up included)."""
    if name.startswith("fill"):
        return FILL_BYTES, 5 + int(name[4:])
    if name.startswith("lru") or name == "torch":
        return FILL_BYTES if name != "torch" else 0, 0
    return VARIANTS[name], 1 << 62


#: A sweep verdict, in one letter.
SWEEP_LETTERS = {"leak": "L", "clean": ".", "passed": ".", "cut short": "C",
                 "inconclusive": "I"}


def run_once(ms: int, variant: str, plugin_from: str | None,
             sweep: bool = False) -> dict[str, object]:
    with tempfile.TemporaryDirectory(prefix="membudget-heavy-") as directory:
        folder = Path(directory)
        leak, most = _variant(variant)
        cache = int(variant[3:]) if variant.startswith("lru") else 0
        source = (TORCH_TEST if variant == "torch" else
                  SWEEP_TEST.format(seconds=ms / 1000.0, leak=leak, most=most, cache=cache)
                  if sweep else TEST.format(seconds=ms / 1000.0, leak=leak, most=most))
        (folder / "test_heavy.py").write_text(source)
        (folder / "conftest.py").write_text(CONFTEST)
        (folder / "pytest.ini").write_text("[pytest]\n")
        env = dict(os.environ)
        if plugin_from:
            env["PYTHONPATH"] = os.pathsep.join(filter(None, [plugin_from,
                                                              env.get("PYTHONPATH")]))
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p",
             "no:randomly", "test_heavy.py",
             *(["--membudget-sweep=report"] if sweep else [])], cwd=folder, env=env,
            capture_output=True, text=True, timeout=300)
        result = folder / "result.json"
        if not result.exists():
            return {"verdict": "E", "calls": 0, "seconds": float("nan"),
                    "output": done.stdout[-2000:]}
        record = json.loads(result.read_text())
    if sweep:
        swept = record.get("sweep") or {}
        return {"verdict": SWEEP_LETTERS.get(str(swept.get("verdict")), "E"),
                "calls": swept.get("calls", 0), "seconds": swept.get("seconds", float("nan")),
                "sweep": swept.get("verdict"), "flagged": sorted(swept.get("flagged", {})),
                "allowed": swept.get("allowed"), "bound": swept.get("bound")}
    data = record.get("membudget") or {}
    verdict = ("F" if record["outcome"] == "failed" else
               "I" if data.get("inconclusive") else
               "." if record["outcome"] == "passed" else "E")
    return {"verdict": verdict, "calls": data.get("iterations", 0),
            "seconds": record["duration"], "stopped": data.get("stopped")}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--steps", default="10,50,100")
    parser.add_argument("--variants", default="clean,4k,64k")
    parser.add_argument("--plugin-from", default=None)
    parser.add_argument("--json", default=None)
    parser.add_argument("--sweep", action="store_true",
                        help="unmarked tests under --membudget-sweep=report")
    parser.add_argument("--torch", action="store_true",
                        help="also a clean torch CPU training step (rss=0, iter_time=0)")
    args = parser.parse_args(argv)
    cases = [(int(ms), variant) for ms in args.steps.split(",")
             for variant in args.variants.split(",")]
    if args.torch:
        cases.append((0, "torch"))
    runs: dict[str, list[dict[str, object]]] = {f"{ms}ms/{v}": [] for ms, v in cases}
    for repeat in range(args.repeats):
        for ms, variant in cases:
            run = run_once(ms, variant, args.plugin_from, args.sweep)
            runs[f"{ms}ms/{variant}"].append(run)
            flags = run.get("flagged")
            more = (f" flagged={','.join(flags) if isinstance(flags, list) else ''} "
                    f"bound={run.get('bound')}" if args.sweep else "")
            print(f"  repeat {repeat + 1}/{args.repeats} {ms:>4} ms {variant:<6} "
                  f"{run['verdict']} calls={run['calls']} {float(str(run['seconds'])):.1f} s"
                  f"{more}", flush=True)
    print(f"\n{'step':>6} {'variant':<7} {'verdicts':<9} {'calls (median)':>14} "
          f"{'seconds (median)':>16} {'target':>8}")
    for ms, variant in cases:
        found = runs[f"{ms}ms/{variant}"]
        calls = statistics.median(float(str(r["calls"])) for r in found)
        seconds = statistics.median(float(str(r["seconds"])) for r in found)
        target = None if args.sweep else TARGETS.get((ms, variant))
        wanted = "F" if variant in ("4k", "64k") else "."
        verdicts = "".join(str(r["verdict"]) for r in found)
        met = ("-" if target is None else
               "met" if seconds <= target and set(verdicts) == {wanted} else "MISSED")
        shown = f"{target:.0f} s {met}" if target is not None else "-"
        print(f"{ms:>4}ms {variant:<7} {verdicts:<9} {calls:>14.0f} {seconds:>16.1f} {shown:>8}")
    if args.json:
        Path(args.json).write_text(json.dumps(runs, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

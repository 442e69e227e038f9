"""The JAX probes' targets, printed (never asserted in tests):

* a leak of one 1 KiB array per call fails within the default run, and its clean twin passes;
* a jit that compiles again on every call fails within 15 s of a 10 ms step, and its twin,
  the same step on one shape, passes;
* examples/jax_replay comes out as declared (fixed pass, broken caught) in N of N runs,
  serially and under ``pytest -n 2``.

    python bench/jax_targets.py [--repeats 5] [--example-runs 10] [--skip-example]

Each run is a fresh pytest process on the plugin's defaults (auto iterations, 5 warm-up);
the figures are the plugin's own (its JSON report): the verdict, the iterations measured,
and the seconds of the run (the measuring loop, its evidence included) and of the process.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORKLOADS = '''
import time
import jax
import jax.numpy as jnp
import numpy as np
import pytest

KEEP = []


def busy(seconds):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


@pytest.mark.membudget(jax_arrays=0, jax_array_bytes=0)
def test_leak_one_kib_array(membudget):
    membudget.run(lambda: KEEP.append(jnp.ones((256,), jnp.float32) + 1.0))


@pytest.mark.membudget(jax_arrays=0, jax_array_bytes=0)
def test_clean_one_kib_array(membudget):
    membudget.run(lambda: (jnp.ones((256,), jnp.float32) + 1.0).block_until_ready())


@jax.jit
def step(x):
    return (x * 2.0).sum()


@pytest.mark.membudget(jax_compiles=0)
def test_recompile_per_call_10ms(membudget):
    n = [16]

    def grow():
        n[0] += 1
        busy(0.010)
        step(np.ones(n[0], np.float32)).block_until_ready()

    membudget.run(grow)


@pytest.mark.membudget(jax_compiles=0)
def test_same_shape_10ms(membudget):
    x = np.ones(16, np.float32)

    def same():
        busy(0.010)
        step(x).block_until_ready()

    membudget.run(same)
'''
EXPECTED = {"test_leak_one_kib_array": "failed", "test_clean_one_kib_array": "passed",
            "test_recompile_per_call_10ms": "failed", "test_same_shape_10ms": "passed"}


def run_workloads(directory: Path, repeats: int) -> None:
    (directory / "test_targets.py").write_text(WORKLOADS)
    (directory / "pytest.ini").write_text("[pytest]\n")
    print(f"{'test':<32}{'run':>4}{'outcome':>9}{'iters':>7}{'run s':>8}{'process s':>11}")
    for repeat in range(repeats):
        for name, expected in EXPECTED.items():
            report = directory / "report.json"
            began = time.perf_counter()
            subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider",
                            "-p", "no:randomly", "-q", f"test_targets.py::{name}",
                            f"--membudget-json={report}"], cwd=directory,
                           capture_output=True, check=False)
            process = time.perf_counter() - began
            test = next(iter(json.loads(report.read_text())["tests"].values()))
            mark = "" if test["outcome"] == expected else "  <- expected " + expected
            print(f"{name:<32}{repeat + 1:>4}{test['outcome']:>9}{test['iterations']:>7}"
                  f"{test['seconds']:>8.1f}{process:>11.1f}{mark}", flush=True)


def run_example(runs: int, xdist: bool) -> None:
    """The example suite ``runs`` times: how often every test comes out as declared."""
    args = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q",
            "examples/jax_replay", *(["-n", "2"] if xdist else [])]
    right = 0
    for run in range(runs):
        began = time.perf_counter()
        done = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, check=False)
        last = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else "?"
        ok = done.returncode == 0 and "2 passed, 2 xfailed" in last
        right += ok
        print(f"  {'-n 2' if xdist else 'serial'} run {run + 1}: {last}  "
              f"({time.perf_counter() - began:.0f} s){'' if ok else '  <- WRONG'}", flush=True)
    print(f"examples/jax_replay {'under -n 2' if xdist else 'serially'}: pairs right in "
          f"{right} of {runs} runs", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--example-runs", type=int, default=10)
    parser.add_argument("--skip-example", action="store_true")
    parser.add_argument("--only-example", action="store_true")
    args = parser.parse_args()
    if not args.only_example:
        with tempfile.TemporaryDirectory(prefix="membudget-jax-targets-") as tmp:
            run_workloads(Path(tmp), args.repeats)
    if not args.skip_example:
        for xdist in (False, True):
            run_example(args.example_runs, xdist)


if __name__ == "__main__":
    main()

"""A shape's calls measured as the ground truth measures them, but inside a pytest process
with the plugin off: the process a test runs in, without the instrument.

    python bench/footprint/under_pytest.py [--corpus libraries] --shapes a,b [--repeats 3]
        [--run results/run_libraries_<date>_<tag>.json]

The ground truth (ground_truth.py) runs each shape in a bare interpreter. A call whose rise
depends on what the process did before it (memory the allocators kept from earlier work,
which a call then reuses) rises differently in a pytest process, plugin or not; this
measures that process, so that what the plugin reports can be set beside the same call
without the plugin. Prints, per shape and call (cold, warm), the rise in MiB of each repeat
under pytest, the bare interpreter's median, and the plugin's from ``--run`` where given.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import ground_truth  # noqa: E402 - the folder above is not a package

MiB = ground_truth.MiB
CALL_OF_VARIANT = {"warmup0": "cold", "warmup1": "warm", "default": "cold",
                   "default_iter1": "cold"}

TEST = '''\
import json
import sys

sys.path.insert(0, {here!r})

import ground_truth
import protocol


def test_calls():
    chosen = protocol.load({corpus!r})[{name!r}]
    print("UNDER_PYTEST " + json.dumps(ground_truth.measure_plain(chosen)))
'''


def measure(corpus: str, name: str) -> dict[str, Any]:
    """One fresh pytest process (plugin off) running the shape's cold and warm call."""
    with tempfile.TemporaryDirectory(prefix="membudget-under-pytest-") as directory:
        test = Path(directory) / "test_under_pytest.py"
        test.write_text(TEST.format(here=str(HERE), corpus=corpus, name=name))
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider",
             "-p", "no:membudget", "-p", "no:randomly", str(test)],
            capture_output=True, text=True, timeout=900, cwd=directory)
    for line in done.stdout.splitlines():
        if line.startswith("UNDER_PYTEST "):
            found: dict[str, Any] = json.loads(line.split(" ", 1)[1])
            return found
    raise RuntimeError(f"{name}: pytest exited {done.returncode}:\n{done.stdout[-3000:]}")


def bare_rises(corpus: str) -> dict[tuple[str, str], float]:
    """The bare interpreter's median rise per (shape, call), from the ground truth."""
    path = ground_truth.RESULTS / f"{ground_truth.output_stem(corpus)}.json"
    found = {}
    for shape in json.loads(path.read_text())["shapes"]:
        found[(shape["name"], "cold")] = shape["median"]["rise"]
        if shape.get("warm"):
            found[(shape["name"], "warm")] = shape["warm"]["rise"]
    return found


def plugin_rises(path: Path | None) -> dict[tuple[str, str], list[float]]:
    """The plugin's rises per (shape, call) from a run.py record, by the variant's call."""
    if path is None:
        return {}
    found: dict[tuple[str, str], list[float]] = {}
    for entry in json.loads(path.read_text())["shapes"]:
        call = CALL_OF_VARIANT.get(entry["variant"])
        if call is None:
            continue
        rises = [run["rise"] for run in entry["runs"] if run.get("rise") is not None]
        found.setdefault((entry["name"], call), []).extend(rises)
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", default="libraries", choices=("synthetic", "libraries"))
    parser.add_argument("--shapes", required=True, help="comma-separated names")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--run", type=Path, help="a run.py record (JSON) to set beside")
    args = parser.parse_args(argv)
    bare, plugin = bare_rises(args.corpus), plugin_rises(args.run)
    print("shape                 call  under pytest, plugin off (MiB)  bare (MiB)  plugin (MiB)")
    for name in [n for n in args.shapes.split(",") if n]:
        found = [measure(args.corpus, name) for _ in range(args.repeats)]
        for call in ground_truth.CALLS:
            # The ground truth's rise: the highest of VmHWM and the sampler's, less the start.
            rises = [(max(run[call]["hwm"], run[call]["sampled_rss"])
                      - run[call]["start"]["rss"]) / MiB for run in found]
            theirs = plugin.get((name, call), [])
            shown = (f"{statistics.median(theirs) / MiB:.1f} (n={len(theirs)})" if theirs
                     else "-")
            print(f"{name:21s} {call:5s} {' '.join(f'{r:.1f}' for r in rises):31s} "
                  f"{bare.get((name, call), float('nan')) / MiB:10.1f}  {shown}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

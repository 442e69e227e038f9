"""The summary of bench/device_check.sh: each workload's outcome against its expectation
(test_device_workloads.EXPECTED), and whether the evidence names the lines it must.

    python bench/device_check/summary.py OUT_DIR
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from test_device_workloads import EXPECTED  # noqa: E402

#: Text each failure must hold (the line's marker comment, what the evidence names).
MUST_SAY = {
    "test_jax_device_leak": ["jax_device_used still grows"],
    "test_jax_device_spike_inside_a_call": ["jax_device_used rose", "high-water mark"],
    "test_jax_arrays_leak_on_the_gpu": ["# ARRAY LEAK", "float32[256]"],
    "test_jax_recompiles_on_the_gpu": ["jit(<lambda>)", "# GROW", "remedy: pad or bucket"],
    "test_cupy_leak": ["# CUPY LEAK"],
}


def main(out: Path) -> int:
    report = json.loads((out / "02_workloads.json").read_text())
    log = (out / "02_workloads.log").read_text()
    outcomes = {nodeid.split("::")[-1]: test for nodeid, test in report.get("tests", {}).items()}
    bad = 0
    for name, expected in EXPECTED.items():
        found = outcomes.get(name, {}).get("outcome") or "not run (skipped?)"
        say = [part for part in MUST_SAY.get(name, []) if part not in log]
        ok = found == expected and not say
        bad += not ok
        print(f"{'OK ' if ok else 'BAD'} {name}: {found} (expected {expected})"
              + (f"; the log lacks {say}" if say else ""))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))

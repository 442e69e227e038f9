"""The backward-leak case of bench/gpu_run.sh in one line of its summary: whether the GPU
suite's check of that case's evidence passed (in 01_cuda_suite.xml), and what the evidence
reported (from the inner sessions' JSON reports under 01_inner/), written in full to
01_backward_leak.json.

    python bench/gpu_backward_summary.py OUT_DIR

The case (tests/gpu/workloads.py): gradients, with their graph, kept per step; they are
allocated in backward, on the autograd engine's thread, where torch records no Python frame.
Exits 0 when the check passed in every inner session it ran in, 1 when it did not, 2 when
there is nothing to read.
"""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path
from typing import Any

WORKLOAD = "test_backward_leak_grows_in_backward"
CHECK = "test_backward_growth_is_named_in_the_evidence"


def check_outcomes(junit: Path) -> dict[str, str]:
    """The outer check's outcome per inner session (``serial``, ``n2``)."""
    if not junit.exists():
        return {}
    found = {}
    for case in ElementTree.parse(junit).iter("testcase"):
        name = case.get("name", "")
        if not name.startswith(CHECK):
            continue
        session = name[len(CHECK):].strip("[]") or "serial"
        outcome = "passed"
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                outcome = {"failure": "failed"}.get(child.tag, child.tag)
        found[session] = outcome
    return found


def workload_entries(inner: Path) -> dict[str, dict[str, Any]]:
    """The workload's entry in each inner session's JSON report, by session directory."""
    found = {}
    for report in sorted(inner.glob("*/report.json")):
        tests = json.loads(report.read_text()).get("tests", {})
        entry = next((e for nodeid, e in tests.items() if nodeid.endswith(f"::{WORKLOAD}")),
                     None)
        if entry is not None:
            found[report.parent.name] = entry
    return found


def described(entry: dict[str, Any]) -> str:
    rows = (entry.get("evidence") or {}).get("cuda_blocks") or []
    bare = [r for r in rows if not r.get("file")]
    named = [r for r in rows if r.get("file")]
    mib = 1024**2
    return (f"{entry.get('outcome')}, {sum(r['bytes'] for r in bare) / mib:.2f} MiB in "
            f"{sum(r['blocks'] for r in bare)} blocks without a Python frame, "
            f"{sum(r['bytes'] for r in named) / mib:.2f} MiB at {len(named)} line(s)")


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__.split("\n\n")[1].strip(), file=sys.stderr)
        return 2
    out = Path(argv[0])
    checks = check_outcomes(out / "01_cuda_suite.xml")
    entries = workload_entries(out / "01_inner")
    (out / "01_backward_leak.json").write_text(json.dumps(
        {"check": checks, "workload": entries}, indent=1))
    said = "; ".join(f"{name}: {described(e)}" for name, e in entries.items()) or "no report"
    checked = ", ".join(f"{k}={v}" for k, v in sorted(checks.items())) or "not run"
    print(f"01_backward_leak: check {checked}; evidence {said}")
    if not checks:
        return 2
    return 0 if set(checks.values()) == {"passed"} else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

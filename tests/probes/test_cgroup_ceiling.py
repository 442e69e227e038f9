"""The machine's guard in a real cgroup with a memory limit (a CI job's container): a test
that would take all of it is stopped before the kernel's OOM killer acts, the process lives
and the next test passes. Needs the right to make a cgroup (root on cgroup v1 or v2)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="cgroups are Linux's"),
]

MIB = 1024**2
LIMIT = 700 * MIB

SUITE = """
import numpy as np, pytest

def grow():
    keep = []
    for _ in range(200):
        keep.append(np.ones(2_000_000))  # 16 MB each: 3.2 GB, far past the cgroup's limit

@pytest.mark.membudget(rss_rise="40 MiB")
def test_runaway(membudget):
    membudget.run(grow)

@pytest.mark.membudget(rss_rise="40 MiB")
def test_next(membudget):
    membudget.run(lambda: np.ones(1000).sum())
"""


def limited_cgroup() -> Path | None:
    """A new cgroup limited to LIMIT bytes (v2, else v1), or None where none can be made."""
    name = f"membudget-test-{uuid.uuid4().hex[:8]}"
    for root, limit in (("/sys/fs/cgroup", "memory.max"),
                        ("/sys/fs/cgroup/unified", "memory.max"),
                        ("/sys/fs/cgroup/memory", "memory.limit_in_bytes")):
        folder = Path(root) / name
        # A cgroup file system makes its files itself (a plain folder would take any).
        if not (Path(root) / "cgroup.procs").exists():
            continue
        try:
            folder.mkdir()
        except OSError:
            continue
        try:
            (folder / limit).write_text(str(LIMIT))
            return folder
        except OSError:
            folder.rmdir()
    return None


def test_a_runaway_in_a_limited_cgroup_is_stopped_and_the_process_lives(
        tmp_path: Path) -> None:
    cgroup = limited_cgroup()
    if cgroup is None:
        pytest.skip("no cgroup with a memory limit can be made here (needs root on cgroup "
                    "v1 or v2); tests/plugin/test_footprint_stop.py covers the guard on a "
                    "small machine made up")
    (tmp_path / "test_runaway.py").write_text(SUITE)
    report = tmp_path / "membudget.json"
    command = (f'echo $$ > {cgroup / "cgroup.procs"} && exec "{sys.executable}" -m pytest '
               f"-p no:cacheprovider -p no:randomly -q --membudget-json={report} "
               "test_runaway.py")
    try:
        done = subprocess.run(["sh", "-c", command], cwd=tmp_path, capture_output=True,
                              text=True, timeout=300, env={**os.environ, "COLUMNS": "200"})
    finally:
        cgroup.rmdir()
    output = done.stdout + done.stderr
    # Exit 1 (a failed test), not -9 (the OOM killer).
    assert done.returncode == 1, output
    assert "was stopped before its cgroup" in output, output
    tests = json.loads(report.read_text())["tests"]
    runaway, after = (tests[f"test_runaway.py::{name}"] for name in ("test_runaway", "test_next"))
    assert runaway["stopped"] == "ceiling" and runaway["runaway"]["by"] == "machine"
    assert after["passed"]
    assert after["probes"]["rss"]["run_start"] - runaway["probes"]["rss"]["run_start"] < 32 * MIB

"""Inner pytest sessions of the GPU suite: workloads.py run on the device, in a subprocess
(a fresh CUDA context, and pytest-xdist workers where asked), read back from its JSON report."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).parent
ROOT = HERE.parents[1]
#: Seconds an inner session may take (it runs in well under a minute on an H100).
INNER_TIMEOUT = 300


def missing_device() -> str | None:
    """Why the GPU suite cannot run here, or None."""
    if importlib.util.find_spec("torch") is None:
        return "needs torch with a CUDA device: torch is not installed"
    import torch

    if not torch.cuda.is_available():
        return ("needs a CUDA device: torch.cuda.is_available() is False (no device, or a CPU "
                "build of torch)")
    return None


def plugin_args() -> list[str]:
    """Load the plugin by name only where its entry point will not (twice is an error)."""
    autoload = not os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD")
    entry = any(ep.name == "membudget"
                for ep in importlib.metadata.entry_points(group="pytest11"))
    return [] if autoload and entry else ["-p", "pytest_membudget.plugin"]


@dataclass
class InnerRun:
    returncode: int
    output: str
    #: Test name (the node id after "::") -> its entry in the JSON report.
    tests: dict[str, dict[str, Any]]
    #: The copy of workloads.py that ran: the file the evidence names.
    path: Path

    def test(self, name: str) -> dict[str, Any]:
        if name not in self.tests:
            pytest.fail(f"the inner session reported nothing for {name} (exit status "
                        f"{self.returncode}); the end of its output:\n{self.output[-4000:]}")
        return self.tests[name]

    def cuda_blocks(self, name: str) -> list[dict[str, Any]]:
        """The evidence's live CUDA blocks of one test, as the JSON report has them."""
        evidence = self.test(name).get("evidence") or {}
        assert "cuda_blocks" in evidence, f"no allocator history in {name}'s evidence: {evidence}"
        rows: list[dict[str, Any]] = evidence["cuda_blocks"]
        return rows

    def cuda_rows(self, name: str) -> list[tuple[str | None, int | None, str]]:
        """The evidence's live CUDA blocks of one test: (file name, line, pool); file and line
        are None for blocks without a Python frame (allocated in backward)."""
        return [(Path(r["file"]).name if r.get("file") else None, r["line"], r["pool"])
                for r in self.cuda_blocks(name)]


def run_inner(directory: Path, *args: str) -> InnerRun:
    target = directory / "test_gpu_workloads.py"
    shutil.copy(HERE / "workloads.py", target)
    shutil.copy(HERE / "gpu_expected.py", directory / "gpu_expected.py")
    ini = directory / "pytest.ini"
    ini.write_text("[pytest]\n")
    report = directory / "report.json"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    xdist = ["-p", "xdist"] if "-n" in args and os.environ.get(
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD") else []
    command = [sys.executable, "-m", "pytest", str(target), "-c", str(ini), "--rootdir",
               str(directory), "-p", "no:cacheprovider", "-rA", "--membudget-json",
               str(report), *plugin_args(), *xdist, *args]
    done = subprocess.run(command, cwd=directory, env=env, capture_output=True, text=True,
                          timeout=INNER_TIMEOUT, check=False)
    (directory / "output.txt").write_text(done.stdout + done.stderr)
    tests = {}
    if report.exists():
        document = json.loads(report.read_text())
        tests = {nodeid.split("::", 1)[-1]: entry for nodeid, entry in document["tests"].items()}
    return InnerRun(done.returncode, done.stdout + done.stderr, tests, target)

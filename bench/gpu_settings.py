"""The allocator settings that bench/gpu_run.sh does not set, checked on a CUDA device.

    python bench/gpu_settings.py --out DIR

For each setting (none, ``backend:cudaMallocAsync``, ``expandable_segments:True``,
``PYTORCH_NO_CUDA_MEMORY_CACHING=1``), in a fresh process with that environment:

- what torch and the plugin read of the allocator (backend, caching on, expandable segments,
  the snapshot's ``allocator_settings``);
- whether ``memory_stats()`` books an allocation queued behind work still running on the
  device, read without a synchronize;
- an inner pytest session of five marked tests (a kept tensor under ``cuda_allocated``, under
  ``cuda_small_pool``, with ``cuda_history``, a flat loop under ``cuda_segments`` and under
  ``cuda_reserved``): each outcome and skip reason, in ``DIR/<setting>.log`` and ``.json``.

``DIR/settings.json`` holds every setting's facts and outcomes. Nothing is asserted: the
figures are what docs/cuda.md's list of points only a device can confirm asks for.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

SETTINGS = {
    "default": {},
    "async": {"PYTORCH_ALLOC_CONF": "backend:cudaMallocAsync",
              "PYTORCH_CUDA_ALLOC_CONF": "backend:cudaMallocAsync"},
    "expandable": {"PYTORCH_ALLOC_CONF": "expandable_segments:True",
                   "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"},
    "no_caching": {"PYTORCH_NO_CUDA_MEMORY_CACHING": "1"},
}

FACTS = textwrap.dedent("""
    import json, time, torch
    from pytest_membudget.probes.cuda import allocator
    out = {"torch": torch.__version__}
    out["backend"] = torch.cuda.memory.get_allocator_backend()
    query = getattr(torch._C, "_cuda_cudaCachingAllocator_is_enabled", None)
    out["caching_enabled"] = query() if query else "no query"
    out["caching_names"] = sorted(
        [f"torch._C.{n}" for n in dir(torch._C) if "caching" in n.lower()]
        + [f"torch.cuda.memory.{n}" for n in dir(torch.cuda.memory) if "caching" in n.lower()])
    out["plugin_caching_off"] = allocator.caching_off(torch)
    out["plugin_expandable_on"] = allocator.expandable_segments_on(torch)
    a = torch.randn(8192, 8192, device="cuda")
    torch.cuda.synchronize()
    key = "allocated_bytes.all.current"
    before = torch.cuda.memory_stats().get(key)
    for _ in range(8):
        b = a @ a
    c = torch.empty(2**20, dtype=torch.uint8, device="cuda")
    after = torch.cuda.memory_stats().get(key)
    out["queued"] = {"device_busy_at_read": not torch.cuda.current_stream().query(),
                     "allocated_before": before, "allocated_after_no_sync": after}
    torch.cuda.synchronize()
    out["queued"]["allocated_after_sync"] = torch.cuda.memory_stats().get(key)
    try:
        torch.cuda.memory._record_memory_history(enabled="all")
        snap = torch.cuda.memory._snapshot()
        torch.cuda.memory._record_memory_history(enabled=None)
        out["snapshot_allocator_settings"] = snap.get("allocator_settings", "absent")
        out["snapshot_segments"] = len(snap.get("segments", []))
    except Exception as exc:
        out["snapshot_error"] = repr(exc)
    print(json.dumps(out, default=str))
""")

#: The inner session's tests: (name, the marker's budgets, the step it runs).
CASES = [
    ("kept_tensor_allocated", "cuda_allocated=0", "keep"),
    ("kept_tensor_small_pool", "cuda_small_pool=0", "keep"),
    ("kept_tensor_history", "cuda_allocated=0, cuda_history=True", "keep"),
    ("flat_segments", "cuda_segments=0", "flat"),
    ("flat_reserved", "cuda_reserved=0", "flat"),
]

TESTS = textwrap.dedent("""
    import pytest, torch

    KEEP = []

    def keep():
        KEEP.append(torch.empty(4096, device="cuda"))

    def flat():
        (torch.randn(256, 256, device="cuda") * 2).sum().item()
""") + "".join(f"""
@pytest.mark.membudget({budgets}, iterations=40, warmup=5)
def test_{name}(membudget):
    membudget.run({step})
""" for name, budgets, step in CASES)


def plugin_args(env: dict[str, str]) -> list[str]:
    """``-p pytest_membudget.plugin`` where the package is not installed (no entry point)."""
    probe = ("import importlib.metadata as m, sys; sys.exit(0 if any(e.name == 'membudget' "
             "for e in m.entry_points(group='pytest11')) else 1)")
    found = subprocess.run([sys.executable, "-c", probe], env=env).returncode == 0
    return [] if found else ["-p", "pytest_membudget.plugin"]


def run_setting(name: str, extra: dict[str, str], out: Path) -> dict[str, object]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTORCH_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF",
                                "PYTORCH_NO_CUDA_MEMORY_CACHING"))}
    env.update(extra)
    env["PYTHONPATH"] = f"{ROOT}{os.pathsep}{env.get('PYTHONPATH', '')}"
    row: dict[str, object] = {"env": extra}
    facts = subprocess.run([sys.executable, "-c", FACTS], env=env, capture_output=True,
                           text=True, timeout=120)
    try:
        row["facts"] = json.loads(facts.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        row["facts_error"] = (facts.stdout + facts.stderr)[-3000:]
    work = out / f"{name}_inner"
    work.mkdir(parents=True, exist_ok=True)
    (work / "test_settings.py").write_text(TESTS)
    report = out / f"{name}.json"
    inner = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *plugin_args(env), "-rA",
         "-v",
         str(work / "test_settings.py"), "--membudget-json", str(report)],
        env=env, capture_output=True, text=True, timeout=180, cwd=work)
    (out / f"{name}.log").write_text(inner.stdout + inner.stderr)
    row["pytest_rc"] = inner.returncode
    row["outcomes"] = [line for line in inner.stdout.splitlines()
                       if line.startswith(("PASSED", "FAILED", "SKIPPED", "ERROR", "XFAIL"))]
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    rows = {}
    for name, extra in SETTINGS.items():
        try:
            rows[name] = run_setting(name, extra, args.out)
        except subprocess.TimeoutExpired as exc:
            rows[name] = {"env": extra, "timeout": str(exc)}
        print(name, json.dumps(rows[name], indent=1, default=str), flush=True)
    (args.out / "settings.json").write_text(json.dumps(rows, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())

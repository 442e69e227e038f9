"""Capture a real ``torch.cuda.memory_stats()`` and a real allocator snapshot, as test data for
the parsing tests (tests/unit/probes/test_cuda_captured.py). Needs a CUDA device:

    python bench/cuda_capture.py --out DIR

Writes DIR/memory_stats.json (after CUDA init and a known workload), DIR/snapshot.json (a
snapshot under the plugin's own recording, ``enabled="state", context="state"``, of a workload
that keeps a small and a large tensor per step at tagged lines), DIR/capture.json (versions,
the device, the tagged lines) and DIR/CAPTURED.md. Commit the four files under
tests/support/data/cuda/ to have the parsing tested against them.
"""

from __future__ import annotations

import argparse
import datetime
import inspect
import json
import sys
from pathlib import Path
from typing import Any

KEEP: list[Any] = []


def leak_step(lin: Any, x: Any) -> Any:
    import torch

    y = lin(x)  # a transient output and the cuBLAS workspace
    KEEP.append(torch.empty(4096, device="cuda"))  # LEAK_SMALL: 16 KiB
    KEEP.append(torch.empty(3 * 2**20, dtype=torch.uint8, device="cuda"))  # LEAK_LARGE: 3 MiB
    return y.sum()


def tagged(tag: str) -> int:
    lines, first = inspect.getsourcelines(leak_step)
    return next(first + i for i, text in enumerate(lines) if tag in text)


def jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    import torch

    if not torch.cuda.is_available():
        print("bench/cuda_capture.py needs a CUDA device", file=sys.stderr)
        return 2
    from pytest_membudget.probes.cuda.device import DeviceStats

    args.out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    lin = torch.nn.Linear(64, 256).cuda()
    x = torch.randn(16, 64, device="cuda")
    with torch.no_grad():
        for _ in range(3):
            leak_step(lin, x)
    KEEP.clear()
    source = DeviceStats(None)  # the plugin's own recording and workspace release
    source.init_context()
    source.start_history()
    with torch.no_grad():
        for _ in range(10):
            leak_step(lin, x)
    source.release_workspaces()
    stats = dict(torch.cuda.memory_stats())
    snapshot = torch.cuda.memory._snapshot()
    source.stop_history()
    (args.out / "memory_stats.json").write_text(json.dumps(jsonable(stats), indent=1))
    (args.out / "snapshot.json").write_text(json.dumps(jsonable(snapshot), indent=1))
    facts = {
        "captured_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(),
        "torch": torch.__version__, "cuda": torch.version.cuda,
        "device": torch.cuda.get_device_name(0),
        "allocator_backend": torch.cuda.memory.get_allocator_backend(),
        "file": inspect.getsourcefile(leak_step), "function": "leak_step", "steps": 10,
        "lines": {"small": tagged("LEAK_SMALL"), "large": tagged("LEAK_LARGE")},
    }
    (args.out / "capture.json").write_text(json.dumps(facts, indent=1))
    (args.out / "CAPTURED.md").write_text(
        f"Captured by bench/cuda_capture.py on {facts['device']}, torch {facts['torch']} "
        f"(CUDA {facts['cuda']}), {facts['captured_utc']}.\n\n"
        "- memory_stats.json: torch.cuda.memory_stats() after 10 calls of leak_step under the "
        "plugin's recording, cuBLAS workspaces released.\n"
        "- snapshot.json: torch.cuda.memory._snapshot() at the same moment.\n\n"
        "```python\n" + inspect.getsource(leak_step) + "```\n")
    print(f"wrote {args.out}: {len(stats)} memory_stats keys, "
          f"{sum(len(s['blocks']) for s in snapshot['segments'])} blocks")
    return 0


if __name__ == "__main__":
    sys.exit(main())

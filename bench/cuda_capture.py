"""Capture a real ``torch.cuda.memory_stats()`` and a real allocator snapshot, as test data for
the parsing tests (tests/unit/probes/test_cuda_captured.py). Needs a CUDA device:

    python bench/cuda_capture.py --out DIR

Writes DIR/memory_stats.json (after CUDA init and a known workload), DIR/snapshot.json (a
snapshot under the plugin's own recording, ``enabled="state", context="state"``, of a workload
that keeps a small and a large tensor per step at tagged lines, and a gradient with its graph,
allocated in backward, where torch records no Python frame), DIR/snapshot_start.json (the
snapshot when the recording started: the blocks live before), DIR/capture.json (versions, the
device, the tagged lines, the gradient's size) and DIR/CAPTURED.md. Commit the five files
under tests/support/data/cuda/ to have the parsing tested against them.
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


def backward_step(w: Any, x: Any) -> None:
    import torch

    loss = (x @ w).tanh().sum()  # FORWARD: its output is kept by the gradient's graph
    (g,) = torch.autograd.grad(loss, w, create_graph=True)  # allocated in backward
    KEEP.append(g)  # LEAK_BACKWARD: the gradient and its graph


def tagged(tag: str, function: Any = leak_step) -> int:
    lines, first = inspect.getsourcelines(function)
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
    w = torch.randn(128, 128, device="cuda", requires_grad=True)
    xb = torch.randn(64, 128, device="cuda")
    for _ in range(3):
        with torch.no_grad():
            leak_step(lin, x)
        backward_step(w, xb)
    KEEP.clear()
    source = DeviceStats(None)  # the plugin's own recording and workspace release
    source.init_context()
    source.release_workspaces()
    start = torch.cuda.memory._snapshot()
    source.start_history()
    for _ in range(10):
        with torch.no_grad():
            leak_step(lin, x)
        backward_step(w, xb)
    source.release_workspaces()
    stats = dict(torch.cuda.memory_stats())
    snapshot = torch.cuda.memory._snapshot()
    source.stop_history()
    (args.out / "memory_stats.json").write_text(json.dumps(jsonable(stats), indent=1))
    (args.out / "snapshot.json").write_text(json.dumps(jsonable(snapshot), indent=1))
    (args.out / "snapshot_start.json").write_text(json.dumps(jsonable(start), indent=1))
    facts = {
        "captured_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(),
        "torch": torch.__version__, "cuda": torch.version.cuda,
        "device": torch.cuda.get_device_name(0),
        "allocator_backend": torch.cuda.memory.get_allocator_backend(),
        "file": inspect.getsourcefile(leak_step), "function": "leak_step", "steps": 10,
        "lines": {"small": tagged("LEAK_SMALL"), "large": tagged("LEAK_LARGE")},
        "forward_line": tagged("FORWARD", backward_step),
        "backward_line": tagged("allocated in backward", backward_step),
        "gradient_bytes": 128 * 128 * 4,
    }
    (args.out / "capture.json").write_text(json.dumps(facts, indent=1))
    (args.out / "CAPTURED.md").write_text(
        f"Captured by bench/cuda_capture.py on {facts['device']}, torch {facts['torch']} "
        f"(CUDA {facts['cuda']}), {facts['captured_utc']}.\n\n"
        "- memory_stats.json: torch.cuda.memory_stats() after 10 calls each of leak_step and "
        "backward_step under the plugin's recording, cuBLAS workspaces released.\n"
        "- snapshot.json: torch.cuda.memory._snapshot() at the same moment.\n"
        "- snapshot_start.json: the snapshot right before the recording started.\n\n"
        "```python\n" + inspect.getsource(leak_step) + "\n\n"
        + inspect.getsource(backward_step) + "```\n")
    print(f"wrote {args.out}: {len(stats)} memory_stats keys, "
          f"{sum(len(s['blocks']) for s in snapshot['segments'])} blocks")
    return 0


if __name__ == "__main__":
    sys.exit(main())

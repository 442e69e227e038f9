"""What the CUDA probes cost on a device, for docs/cuda.md. Needs a CUDA device:

    python bench/cuda_costs.py --out DIR [--seconds 150]

1. Allocator history (``cuda_history``): time per iteration and host RSS growth of an
   RSSM-like step (many small allocations, flat) with history off, with the plugin's
   recording (``enabled="state", context="state"``: the frames of live blocks only) and with
   a full trace (``enabled="all", context="alloc"``: what the plugin recorded before), at
   500 and 2000 iterations under a 40-frame-deeper Python stack (a test's depth under pytest);
   the snapshot's time and size after each. Then the same step measured by the plugin itself,
   history off and on: its seconds per iteration and the slope of its own ``rss`` probe.
2. A synchronize per sample: a GPU-bound loop (matmuls) and a mixed loop (matmuls queued,
   then host work of about the same length), per iteration with no synchronize, with one
   after every iteration, and with a ``memory_stats()`` read after every iteration; then the
   plugin with ``cuda_allocated`` alone (no synchronize) against ``cuda_allocated`` +
   ``cuda_device_used`` (a synchronize before each sample): seconds per iteration, the
   sampling stride and the cost of a sample.

Writes DIR/cuda_costs.json after every measurement (a run cut short keeps what it had) and
prints a table. Asserts nothing: figures only.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil

from pytest_membudget.judge.spec import build_spec
from pytest_membudget.measure.loop import capacity_for, measure
from pytest_membudget.measure.results import build_result
from pytest_membudget.measure.samples import Measurement
from pytest_membudget.probes import create
from pytest_membudget.settings import default_run

MiB = 1024**2
HISTORY_MODES: dict[str, dict[str, Any] | None] = {
    "off": None,
    "plugin (state, state, python)": {"enabled": "state", "context": "state",
                                      "stacks": "python"},
    "full trace (all, alloc, python)": {"enabled": "all", "context": "alloc",
                                        "stacks": "python"},
}


class Report:
    """The results so far, written out after each measurement."""

    def __init__(self, out: Path, deadline: float) -> None:
        import torch

        self.path = out / "cuda_costs.json"
        self.deadline = deadline
        self.data: dict[str, Any] = {
            "torch": torch.__version__, "cuda": torch.version.cuda,
            "device": torch.cuda.get_device_name(0),
            "allocator_backend": torch.cuda.memory.get_allocator_backend(),
            "history": [], "history_plugin": [], "sync": [], "sync_plugin": [],
        }

    def add(self, part: str, row: dict[str, Any]) -> None:
        self.data[part].append(row)
        print(part, json.dumps(row))
        self.path.write_text(json.dumps(self.data, indent=1))

    def out_of_time(self, part: str, what: str) -> bool:
        if time.perf_counter() < self.deadline:
            return False
        self.add(part, {"case": what, "skipped": "time budget spent"})
        return True


def rss() -> int:
    return int(psutil.Process().memory_info().rss)


def deep(depth: int, fn: Callable[[], object]) -> object:
    """Call ``fn`` ``depth`` Python frames further down."""
    return deep(depth - 1, fn) if depth else fn()


def rssm_step() -> Callable[[], object]:
    """Encoder, GRU cell and head with autograd on and the state detached: about a dozen
    small allocations per step, nothing kept."""
    import torch

    torch.manual_seed(0)
    enc = torch.nn.Linear(64, 256).cuda()
    cell = torch.nn.GRUCell(256, 256).cuda()
    head = torch.nn.Linear(256, 32).cuda()
    obs = torch.randn(16, 64, device="cuda")
    state = {"h": torch.zeros(16, 256, device="cuda")}

    def step() -> object:
        h = cell(torch.relu(enc(obs)), state["h"])
        state["h"] = h.detach()
        return head(h).softmax(-1)

    return step


def history_costs(report: Report, depth: int = 40) -> None:
    import torch

    memory = torch.cuda.memory
    step = rssm_step()
    for _ in range(50):
        deep(depth, step)
    torch.cuda.synchronize()
    for iterations in (500, 2000):
        for mode, settings in HISTORY_MODES.items():
            if report.out_of_time("history", f"{mode}, {iterations} iterations"):
                return
            gc.collect()
            if settings is not None:
                memory._record_memory_history(**settings)
            before = rss()
            begin = time.perf_counter()
            for _ in range(iterations):
                deep(depth, step)
            torch.cuda.synchronize()
            seconds = time.perf_counter() - begin
            grown = rss() - before
            row: dict[str, Any] = {
                "mode": mode, "iterations": iterations,
                "ms_per_iteration": round(1e3 * seconds / iterations, 4),
                "host_rss_growth_bytes": grown,
                "host_rss_growth_per_iteration": round(grown / iterations, 1)}
            if settings is not None:
                begin = time.perf_counter()
                snapshot = memory._snapshot()
                row["snapshot_seconds"] = round(time.perf_counter() - begin, 4)
                row["trace_entries"] = sum(len(t) for t in snapshot.get("device_traces", []))
                row["blocks_with_frames"] = sum(
                    1 for s in snapshot["segments"] for b in s["blocks"] if b.get("frames"))
                del snapshot
                memory._record_memory_history(enabled=None)
            report.add("history", row)


def plugin_run(budgets: dict[str, Any], workload: Callable[[], object],
               iterations: int, warmup: int = 20) -> dict[str, Any]:
    """One run of the plugin's own loop over ``workload``."""
    import torch

    spec = build_spec(default_run(iterations=iterations, warmup=warmup, evidence=False), (),
                      budgets, "in bench")
    options = {"device": spec.run.device, "cuda_history": spec.run.cuda_history}
    probes = {name: create(name, options) for name in spec.probes}
    m = Measurement(spec, probes, capacity_for(spec))
    begin = time.perf_counter()
    for _ in measure(spec, probes, m):
        workload()
    torch.cuda.synchronize()
    seconds = time.perf_counter() - begin
    result = build_result(m)
    stride = m.stride
    row: dict[str, Any] = {
        "budgets": ", ".join(budgets), "iterations": result.iterations, "warmup": result.warmup,
        "ms_per_iteration": round(1e3 * seconds / (result.iterations + result.warmup), 4),
        "passed": result.passed}
    if stride is not None and stride.samples:
        row["stride"] = stride.every
        row["sample_us"] = round(1e6 * stride.costs / stride.samples, 1)
    if "rss" in result.probes:
        row["rss_slope_bytes_per_iteration"] = round(result["rss"].slope, 1)
    return row


def history_plugin_costs(report: Report) -> None:
    step = rssm_step()
    for history in (False, True):
        if report.out_of_time("history_plugin", f"cuda_history={history}"):
            return
        budgets = {"cuda_small_pool": 0, "rss": "1 GiB/iter", "cuda_history": history}
        row = plugin_run(budgets, step, iterations=2000)
        row["cuda_history"] = history
        report.add("history_plugin", row)


def gpu_bound(size: int = 4096, matmuls: int = 4) -> Callable[[], object]:
    import torch

    torch.manual_seed(0)
    a = torch.randn(size, size, device="cuda")

    def step() -> object:
        y = a
        for _ in range(matmuls):
            y = (y @ a).tanh_()
        return y

    return step


def host_work(seconds: float) -> Callable[[], None]:
    def work() -> None:
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            pass

    return work


def device_seconds(step: Callable[[], object], iterations: int = 20) -> float:
    import torch

    step()
    torch.cuda.synchronize()
    begin = time.perf_counter()
    for _ in range(iterations):
        step()
    torch.cuda.synchronize()
    return (time.perf_counter() - begin) / iterations


def sync_costs(report: Report, iterations: int = 200) -> None:
    import torch

    compute = gpu_bound()
    alone = device_seconds(compute)
    host = host_work(alone)

    def mixed() -> object:
        out = compute()
        host()
        return out

    loops = {"gpu-bound (4 matmuls of 4096x4096)": compute,
             "mixed (matmuls, then equal host work)": mixed}
    after_each: dict[str, Callable[[], object]] = {
        "nothing": lambda: None,
        "torch.cuda.synchronize()": torch.cuda.synchronize,
        "torch.cuda.memory_stats()": torch.cuda.memory_stats,
    }
    for loop, step in loops.items():
        for label, then in after_each.items():
            if report.out_of_time("sync", f"{loop}, {label}"):
                return
            step()
            torch.cuda.synchronize()
            begin = time.perf_counter()
            for _ in range(iterations):
                step()
                then()
            torch.cuda.synchronize()
            seconds = time.perf_counter() - begin
            report.add("sync", {"loop": loop, "after each iteration": label,
                                "device_ms_per_step": round(1e3 * alone, 3),
                                "ms_per_iteration": round(1e3 * seconds / iterations, 3)})
        for budgets in ({"cuda_allocated": 0}, {"cuda_allocated": 0, "cuda_device_used": 0}):
            if report.out_of_time("sync_plugin", f"{loop}, {budgets}"):
                return
            row = plugin_run(budgets, step, iterations=iterations)
            row["loop"] = loop
            report.add("sync_plugin", row)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="directory for cuda_costs.json")
    parser.add_argument("--seconds", type=float, default=150.0,
                        help="time budget; measurements not begun by then are skipped")
    args = parser.parse_args()
    import torch

    if not torch.cuda.is_available():
        print("bench/cuda_costs.py needs a CUDA device: torch.cuda.is_available() is False",
              file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    report = Report(args.out, time.perf_counter() + args.seconds)
    history_costs(report)
    history_plugin_costs(report)
    sync_costs(report)
    print(f"wrote {report.path}")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())

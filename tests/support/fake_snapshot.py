"""What torch writes about the stand-in allocator of fake_torch.py: frames (Python, C++ on the
autograd engine's thread, and ``forward_frames`` as formatted strings) and the snapshot, in
torch 2.1 and later's shape (blocks with ``address`` and ``frames``, newer keys such as
``segment_pool_id``, ``is_expandable`` and ``forward_frames``; ``allocator_settings`` from
2.5) and torch 2.0's (blocks with ``history``, newest first, and no address)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from support.fake_allocator import Block, FakeAllocator

ENGINE_FRAMES = [  # what a stacks="all" recording symbolises on the autograd engine's thread
    {"name": "c10::cuda::CUDACachingAllocator::Native::malloc", "filename": "??", "line": 0},
    {"name": "torch::autograd::Engine::evaluate_function", "filename":
     "/pytorch/torch/csrc/autograd/engine.cpp", "line": 1206},
    {"name": "torch::autograd::Engine::thread_main", "filename":
     "/pytorch/torch/csrc/autograd/engine.cpp", "line": 354},
    {"name": "??", "filename": "??", "line": 0},
]
OUTER_FRAMES = [  # beneath every workload line: pytest's own frames
    {"filename": "/venv/lib/python3.11/site-packages/_pytest/python.py", "line": 157,
     "name": "pytest_pyfunc_call"},
]


def formatted_stack(frames: list[dict[str, Any]]) -> list[str]:
    """``frames`` (innermost first) as ``traceback.format_list`` gives them, outermost first:
    how torch keeps a forward's stack."""
    return [f'  File "{f["filename"]}", line {f["line"]}, in {f["name"]}\n'
            for f in reversed(frames)]


def snapshot_of(allocator: FakeAllocator, settings: bool = True) -> dict[str, Any]:
    """``torch.cuda.memory._snapshot()``: every device at once, whatever ``device`` says."""
    if allocator.backend != "native":
        raise RuntimeError("cudaMallocAsync does not yet support snapshot.")
    allocator.snapshots += 1
    groups: dict[tuple[int, str, int], list[Block]] = {}
    for b in sorted(allocator.blocks.values(), key=lambda b: b.address):
        groups.setdefault((b.device, b.pool, b.stream), []).append(b)
    if allocator.legacy:  # torch 2.0: a segment per block, its history instead of frames
        segments = [{"device": b.device, "address": b.address, "total_size": b.size,
                     "stream": b.stream, "segment_type": b.pool,
                     "blocks": [{"size": b.size, "state": "active_allocated",
                                 **({"history": [{"addr": b.address, "real_size": b.size,
                                                  "frames": list(b.frames)}]}
                                    if b.frames else {})}]}
                    for blocks in groups.values() for b in blocks]
        return {"segments": segments, "device_traces": [list(allocator.trace)]}
    segments = [{"device": device, "address": blocks[0].address,
                 "total_size": sum(b.size for b in blocks), "stream": stream,
                 "segment_type": pool, "segment_pool_id": (0, 0),
                 "is_expandable": allocator.expandable,
                 "blocks": [{"address": b.address, "size": b.size, "requested_size": b.size,
                             "state": "active_allocated", "frames": [dict(f) for f in b.frames],
                             **({"forward_frames": list(b.forward_frames)}
                                if b.forward_frames else {})}
                            for b in blocks]}
                for (device, pool, stream), blocks in groups.items()]
    found: dict[str, Any] = {"segments": segments, "device_traces": [list(allocator.trace)]}
    if settings:
        found["allocator_settings"] = {
            "PYTORCH_CUDA_ALLOC_CONF": allocator.settings, "max_split_size": -1,
            "garbage_collection_threshold": 0.0, "expandable_segments": allocator.expandable,
            "roundup_power2_divisions": {str(1 << i): 0 for i in range(16)}}
    return found

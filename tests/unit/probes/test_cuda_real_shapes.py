"""The CUDA evidence and allocator checks against the shapes real GPUs produce: what torch 2.0
to 2.13 write into ``_snapshot()`` and how its allocator settings behave, as seen in snapshots
and ``memory_stats()`` that real devices produced and in torch's source. The fixtures are
written by hand after those shapes (addresses, sizes, frames, keys), not copied from them.

1. growth allocated in backward: blocks with ``frames: []`` or C++ frames only;
2. stacks through libraries: the user's line beneath a library's;
3. the caching allocator off (PYTORCH_NO_CUDA_MEMORY_CACHING, or switched off at run time);
4. expandable segments from the allocator's configuration, not from a settings string;
5. old and odd shapes: torch 2.0's ``history``, C++ frames (``??``, line 0), newer keys.
"""

from __future__ import annotations

import traceback
import types
from typing import Any

import pytest
from support import fake_torch
from support.cuda_runs import RUN, install, run

from pytest_membudget.probes.cuda.allocator import (
    STAT_KEYS,
    expandable_segments,
    unavailable_reason,
)
from pytest_membudget.probes.cuda.history import History
from pytest_membudget.probes.cuda.snapshot import live_window_blocks
from pytest_membudget.render.failure import evidence_lines

MiB = 1024**2
SITE = "/opt/conda/lib/python3.11/site-packages"
PYTEST_FRAME = {"filename": f"{SITE}/_pytest/python.py", "line": 159, "name": "pytest_pyfunc_call"}
TORCH_LINEAR = {"filename": f"{SITE}/torch/nn/modules/linear.py", "line": 125, "name": "forward"}
TORCH_CALL = {"filename": f"{SITE}/torch/nn/modules/module.py", "line": 1762,
              "name": "_call_impl"}
USER_STEP = {"filename": "/home/me/project/train.py", "line": 57, "name": "step"}
#: What a stacks="all" recording symbolises on the autograd engine's thread: C++ only.
ENGINE = [{"name": "??", "filename": "??", "line": 0},
          {"name": "c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc",
           "filename": "/pytorch/c10/cuda/CUDACachingAllocator.cpp", "line": 1188},
          {"name": "torch::autograd::Engine::thread_main(std::shared_ptr<GraphTask> const&)",
           "filename": "/pytorch/torch/csrc/autograd/engine.cpp", "line": 354},
          {"name": "??", "filename": "??", "line": 0}]
SETTINGS = {"PYTORCH_CUDA_ALLOC_CONF": "", "max_split_size": -1,
            "garbage_collection_threshold": 0.0, "expandable_segments": False,
            "roundup_power2_divisions": {str(1 << i): 0 for i in range(16)}}


def block(address: int, size: int, frames: list[dict[str, Any]] | None = None,
          state: str = "active_allocated", **extra: Any) -> dict[str, Any]:
    """A block as torch 2.1+ writes it: ``frames`` is ``[]`` when nothing was recorded."""
    return {"address": address, "size": size, "requested_size": size, "state": state,
            "frames": frames or [], **extra}


def segment(blocks: list[dict[str, Any]], device: int = 0, pool: str = "small",
            stream: int = 0, expandable: bool = False) -> dict[str, Any]:
    active = sum(b["size"] for b in blocks if b["state"] != "inactive")
    return {"device": device, "address": blocks[0]["address"],
            "total_size": sum(b["size"] for b in blocks), "allocated_size": active,
            "active_size": active, "requested_size": active, "stream": stream,
            "segment_type": pool, "segment_pool_id": (0, 0), "is_expandable": expandable,
            "frames": [], "blocks": blocks}


def snapshot(*segments: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"segments": list(segments), "device_traces": [[]], "allocator_settings": SETTINGS,
            "external_annotations": [], **extra}


def packed(base: int, sizes: list[int], frames: list[dict[str, Any]] | None = None,
           segment_size: int = 2 * MiB) -> list[dict[str, Any]]:
    """Blocks packed from ``base`` up, the rest of the segment an inactive block."""
    blocks, address = [], base
    for size in sizes:
        blocks.append(block(address, size, frames))
        address += size
    if address - base < segment_size:
        blocks.append(block(address, segment_size - (address - base), state="inactive"))
    return blocks


#: The model's weights: live before the window, unrecorded.
WEIGHTS = packed(0x7F5A_0000_0000, [512] * 8 + [4096] * 4)


def replay(*snapshots: dict[str, Any], recording: bool = False) -> Any:
    """A torch whose ``_snapshot()`` gives ``snapshots`` in turn: the window's start, then its
    end (``recording``: a recording of the user's is on)."""
    shots = iter(snapshots)
    memory = types.SimpleNamespace(
        _snapshot=lambda device=None: next(shots),
        _record_memory_history=lambda *args, **kwargs: None,
        get_allocator_backend=lambda: "native")
    return types.SimpleNamespace(
        cuda=types.SimpleNamespace(memory=memory),
        _C=types.SimpleNamespace(_cuda_isHistoryEnabled=lambda: recording,
                                 _cuda_cudaCachingAllocator_is_enabled=lambda: True))


def window(start: dict[str, Any], end: dict[str, Any], device: int = 0) -> dict[str, Any]:
    """The evidence of a window that opened on ``start`` and ended on ``end``."""
    history = History(replay(start, end), device)
    history.start()
    found = history.evidence()
    assert "cuda_blocks" in found, found
    return found


# -- 1. growth allocated in backward -------------------------------------------------------

#: A backward step's growth, as in a real trace: 70 blocks of about 100 KiB (6.9 MiB) with
#: no Python frame, beside a forward's 12 blocks that carry the user's line.
GRAD = 103424
FORWARD = [USER_STEP, TORCH_CALL, PYTEST_FRAME]
FORWARD_LINE = [TORCH_LINEAR, TORCH_CALL, USER_STEP, PYTEST_FRAME]


def backward_window(frames: list[dict[str, Any]] | None = None,
                    **extra: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    start = snapshot(segment(WEIGHTS))
    grads = [segment([block(0x7F5A_0020_0000 + n * 0x20_0000 + i * GRAD, GRAD, frames,
                            **extra) for i in range(count)])
             for n, count in enumerate((20, 20, 20, 10))]
    kept = segment(packed(0x7F5A_0100_0000, [8192] * 12, FORWARD_LINE))
    return start, snapshot(segment(WEIGHTS), kept, *grads)


def test_growth_in_backward_is_reported_without_frames() -> None:
    rows = window(*backward_window())["cuda_blocks"]
    unframed = [r for r in rows if r["file"] is None]
    assert [(r["origin"], r["pool"], r["stream"], r["blocks"], r["bytes"]) for r in unframed] == [
        ("unframed", "small", 0, 70, 70 * GRAD)]
    assert {(r["file"], r["line"], r["blocks"]) for r in rows if r["file"]} == {
        (USER_STEP["filename"], USER_STEP["line"], 12)}


def test_the_report_says_what_grew_without_frames() -> None:
    text = "\n".join(evidence_lines(window(*backward_window())))
    assert "no block allocated in the window is still live" not in text
    assert "no Python frame: +6.9 MiB in 70 blocks (small pool, stream 0)" in text
    assert "torch records no Python frame for an allocation made in backward" in text


def test_cpp_frames_of_the_autograd_engine_say_backward() -> None:
    rows = window(*backward_window(ENGINE))["cuda_blocks"]
    assert [(r["origin"], r["file"], r["blocks"]) for r in rows if r["file"] is None] == [
        ("backward", None, 70)]
    assert "in backward (the autograd engine's thread), no Python frame: +6.9 MiB" in "\n".join(
        evidence_lines(window(*backward_window(ENGINE))))


def test_forward_frames_name_the_forward_whose_backward_allocated() -> None:
    forward = [f'  File "{PYTEST_FRAME["filename"]}", line 159, in pytest_pyfunc_call\n    '
               "result = testfunction(**testargs)\n",
               f'  File "{USER_STEP["filename"]}", line 57, in step\n    loss = model(x).sum()\n',
               f'  File "{TORCH_CALL["filename"]}", line 1762, in _call_impl\n    '
               "return forward_call(*args, **kwargs)\n"]
    rows = window(*backward_window(forward_frames=forward))["cuda_blocks"]
    assert {(r.get("origin"), r["line"], r["blocks"]) for r in rows} == {
        ("backward", 57, 70), ("python", 57, 12)}
    assert "train.py:57 in step, in its backward (forward_frames): +6.9 MiB" in "\n".join(
        evidence_lines(window(*backward_window(forward_frames=forward))))


def test_forward_frames_are_read_as_python_formats_a_stack() -> None:
    # torch keeps the forward's stack as torch.fx.traceback.format_stack() gives it:
    # traceback.format_list(traceback.extract_stack()), outermost first.
    from pytest_membudget.probes.cuda.stacks import forward_frames

    def forward() -> list[str]:
        return traceback.format_list(traceback.extract_stack())

    frames = forward_frames({"forward_frames": forward()})
    assert (frames[0]["name"], frames[1]["name"]) == (
        "forward", "test_forward_frames_are_read_as_python_formats_a_stack")
    assert frames[0]["filename"] == __file__


def test_a_backward_leak_fails_with_its_blocks_in_the_evidence(
        monkeypatch: pytest.MonkeyPatch) -> None:
    def keep_a_gradient(allocator: fake_torch.FakeAllocator) -> None:
        allocator.free(allocator.alloc(8192, fake_torch.LEAK_SITE))  # the forward, freed
        allocator.kept.append(allocator.backward(GRAD))  # its gradient, kept

    result, _ = run(monkeypatch, {}, keep_a_gradient, cuda_small_pool=0, cuda_history=True)
    assert result["cuda_small_pool"].verdict == "fail"
    rows = result.evidence_data["cuda_blocks"]
    assert [(r["origin"], r["pool"], r["bytes"]) for r in rows] == [
        ("unframed", "small", RUN.iterations * GRAD)]  # one gradient kept per iteration


# -- 2. stacks through libraries -----------------------------------------------------------

def diffusers_stack(site: str, user: str, sep: str = "/") -> list[dict[str, Any]]:
    def lib(path: str, line: int, name: str) -> dict[str, Any]:
        return {"filename": (site + "/" + path).replace("/", sep), "line": line, "name": name}

    return [lib("torch/nn/modules/linear.py", 125, "forward"),
            lib("torch/nn/modules/module.py", 1762, "_call_impl"),
            lib("diffusers/models/attention_processor.py", 2767, "__call__"),
            lib("diffusers/models/attention.py", 1213, "forward"),
            lib("torch/nn/modules/module.py", 1762, "_call_impl"),
            lib("diffusers/pipelines/stable_diffusion/pipeline_stable_diffusion.py", 1036,
                "__call__"),
            {"filename": user.replace("/", sep), "line": 31, "name": "render"},
            lib("_pytest/python.py", 159, "pytest_pyfunc_call")]


@pytest.mark.parametrize("sep, site, user", [
    ("/", SITE, "/home/me/project/generate.py"),
    ("\\", "C:/Users/me/venv/Lib/site-packages", "C:/Users/me/project/generate.py"),
], ids=["posix", "windows"])
def test_a_library_line_shows_the_users_line_beneath_it(sep: str, site: str, user: str) -> None:
    stack = diffusers_stack(site, user, sep)
    big = [block(0x7F10_0000_0000 + i * 64 * MiB, 64 * MiB, stack) for i in range(127)]
    own = [block(0x7F90_0000_0000, 7 * MiB, [stack[-2], stack[-1]])]
    end = snapshot(segment(WEIGHTS), segment(big, pool="large"), segment(own, pool="large"))
    rows = window(snapshot(segment(WEIGHTS)), end)["cuda_blocks"]
    library = rows[0]
    assert library["file"].replace("\\", "/").endswith("diffusers/models/attention_processor.py")
    assert (library.get("via_file"), library.get("via_line"), library.get("via_function")) == (
        user.replace("/", sep), 31, "render")
    assert library["bytes"] == 127 * 64 * MiB
    assert (rows[1]["file"], rows[1]["line"], "via_file" in rows[1]) == (
        user.replace("/", sep), 31, False)


def test_the_users_line_appears_in_the_report() -> None:
    stack = diffusers_stack(SITE, "/home/me/project/generate.py")
    end = snapshot(segment(WEIGHTS), segment([block(0x7F10_0000_0000, 64 * MiB, stack)],
                                             pool="large"))
    text = "\n".join(evidence_lines(window(snapshot(segment(WEIGHTS)), end)))
    assert "attention_processor.py:2767 in __call__: +64 MiB in 1 blocks (large pool)" in text
    assert "called from /home/me/project/generate.py:31 in render" in text


def test_a_stack_without_a_user_line_names_the_innermost_library_line() -> None:
    stack = [TORCH_LINEAR, {"filename": f"{SITE}/accelerate/hooks.py", "line": 175,
                            "name": "new_forward"}, TORCH_CALL, PYTEST_FRAME]
    end = snapshot(segment(WEIGHTS), segment([block(0x7F10_0000_0000, 4096, stack)]))
    [row] = window(snapshot(segment(WEIGHTS)), end)["cuda_blocks"]
    assert (row["file"], row["line"], row.get("via_file")) == (
        f"{SITE}/accelerate/hooks.py", 175, None)


# -- 3. the caching allocator off ----------------------------------------------------------

@pytest.mark.parametrize("value", ["1", "0", ""])
def test_no_memory_caching_set_to_any_value_is_named(monkeypatch: pytest.MonkeyPatch,
                                                     value: str) -> None:
    monkeypatch.setenv("PYTORCH_NO_CUDA_MEMORY_CACHING", value)
    install(monkeypatch, caching_query=False)  # a torch without the query: the variable
    for probe in STAT_KEYS:
        reason = str(unavailable_reason(None, probe))
        assert "the CUDA caching allocator is off (PYTORCH_NO_CUDA_MEMORY_CACHING=" in reason
        assert "memory_stats stays at 0" in reason
    assert unavailable_reason(None, "cuda_device_used") is None


def test_caching_switched_off_at_run_time_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PYTORCH_NO_CUDA_MEMORY_CACHING", raising=False)
    torch, _ = install(monkeypatch)
    assert unavailable_reason(None, "cuda_allocated") is None
    torch.cuda.init()
    torch.cuda.memory.caching_allocator_enable(False)
    assert "caching allocator is off" in str(unavailable_reason(None, "cuda_allocated"))


def test_uncached_allocations_leave_every_figure_flat(monkeypatch: pytest.MonkeyPatch) -> None:
    # What the skip prevents: a leak that no stats budget can see.
    monkeypatch.delenv("PYTORCH_NO_CUDA_MEMORY_CACHING", raising=False)
    result, _ = run(monkeypatch, {"leak": MiB, "caching": False}, cuda_allocated=0,
                    cuda_reserved=0, cuda_device_used=0, cuda_history=True)
    assert result["cuda_allocated"].verdict == result["cuda_reserved"].verdict == "pass"
    assert result["cuda_device_used"].verdict == "fail"
    assert "caching allocator is off" in result.evidence_data.get("cuda_history", "")


# -- 4. expandable segments ----------------------------------------------------------------

def test_expandable_segments_are_read_from_the_configuration_in_force(
        monkeypatch: pytest.MonkeyPatch) -> None:
    torch, allocator = install(monkeypatch, expandable=True)
    torch._C._accelerator_setAllocatorSettings("garbage_collection_threshold:0.6")
    assert "expandable_segments" not in torch._C._accelerator_getAllocatorSettings()
    assert allocator.expandable  # the later setting left them on
    assert "expandable segments are on" in str(unavailable_reason(None, "cuda_segments"))


def test_without_settings_in_the_snapshot_the_variable_torch_read_decides(
        monkeypatch: pytest.MonkeyPatch) -> None:
    install(monkeypatch, snapshot_settings=False, settings_query=False)
    monkeypatch.setenv("PYTORCH_ALLOC_CONF", "expandable_segments:True")  # not read before 2.5
    monkeypatch.setenv("PYTORCH_CUDA_ALLOC_CONF", "max_split_size_mb:128")
    assert unavailable_reason(None, "cuda_segments") is None


@pytest.mark.parametrize("settings, on", [
    ("expandable_segments:True,expandable_segments:False", False),
    ("expandable_segments:False,max_split_size_mb:128,expandable_segments:True", True),
])
def test_the_last_of_repeated_keys_is_in_force(settings: str, on: bool) -> None:
    assert expandable_segments(settings) is on


# -- 5. old and odd shapes -----------------------------------------------------------------

def test_torch_2_0_blocks_are_read_from_their_history() -> None:
    def old(size: int, frames: list[dict[str, Any]] | None) -> dict[str, Any]:
        history = [{"addr": 0, "real_size": size, "frames": frames}] if frames else []
        return {"size": size, "state": "active_allocated",
                **({"history": history} if history else {})}

    earlier = [{"addr": 0, "real_size": 4096, "frames": [TORCH_LINEAR]}]
    end = {"segments": [{"device": 0, "address": 0x7F00_0000_0000, "total_size": 2 * MiB,
                         "allocated_size": 3 * 4096, "active_size": 3 * 4096, "stream": 0,
                         "segment_type": "small",
                         "blocks": [old(4096, FORWARD_LINE), old(4096, FORWARD_LINE),
                                    old(4096, None),
                                    {"size": 2 * MiB - 3 * 4096, "state": "inactive",
                                     "history": earlier}]}],
           "device_traces": [[]]}
    rows = live_window_blocks(end, device=0)
    assert [(r["file"], r["line"], r["blocks"]) for r in rows if r["file"]] == [
        (USER_STEP["filename"], USER_STEP["line"], 2)]


def test_history_on_torch_2_0_says_it_needs_2_1(monkeypatch: pytest.MonkeyPatch) -> None:
    result, allocator = run(monkeypatch, {"leak": 4096, "legacy": True}, cuda_small_pool=0,
                            cuda_history=True)
    assert result["cuda_small_pool"].verdict == "fail"
    assert "needs torch 2.1 or later" in result.evidence_data["cuda_history"]
    assert allocator.recording is None


def test_cpp_frames_are_passed_over_for_the_python_line() -> None:
    stack = [ENGINE[0], ENGINE[1], {"name": "at::native::empty_cuda", "filename":
                                    "/pytorch/aten/src/ATen/native/cuda/EmptyTensor.cpp",
                                    "line": 0}, TORCH_LINEAR, USER_STEP, PYTEST_FRAME]
    end = snapshot(segment(WEIGHTS), segment([block(0x7F10_0000_0000, 4096, stack)]))
    [row] = window(snapshot(segment(WEIGHTS)), end)["cuda_blocks"]
    assert (row["file"], row["line"]) == (USER_STEP["filename"], 57)


def test_no_row_names_a_cpp_frame() -> None:
    # C++ frames only (stacks="all" on the autograd engine's thread): "??", line 0.
    end = snapshot(segment(WEIGHTS), segment([block(0x7F10_0000_0000, 4096, ENGINE)]))
    [row] = window(snapshot(segment(WEIGHTS)), end)["cuda_blocks"]
    assert (row["file"], row["line"]) == (None, None)


def test_newer_keys_are_read_past() -> None:
    trace = [{"action": "alloc", "addr": 0x7F10_0000_0000, "size": 4096, "stream": 0,
              "frames": FORWARD_LINE, "time_us": 1_712_000_000_000_000,
              "compile_context": "N/A", "user_metadata": "", "pool_id": (0, 0)}]
    grown = block(0x7F10_0000_0000, 4096, FORWARD_LINE)
    end = snapshot(segment(WEIGHTS), segment([grown], expandable=True),
                   device_traces=[trace])
    [row] = window(snapshot(segment(WEIGHTS)), end)["cuda_blocks"]
    assert (row["file"], row["line"], row["bytes"]) == (USER_STEP["filename"], 57, 4096)


# -- 6. the stand-in allocator models these shapes -------------------------------------------

def test_expandable_segments_on_two_devices(monkeypatch: pytest.MonkeyPatch) -> None:
    def both(allocator: fake_torch.FakeAllocator) -> None:
        allocator.kept.append(allocator.alloc(3 * MiB, fake_torch.LEAK_SITE, device=1))
        allocator.kept.append(allocator.backward(GRAD, device=0))

    def second(torch: Any, allocator: fake_torch.FakeAllocator) -> None:
        allocator.current = 1

    result, allocator = run(monkeypatch, {"devices": 2, "expandable": True}, both,
                            prepare=second, cuda_large_pool=0, cuda_reserved=0,
                            cuda_history=True)
    assert result["cuda_large_pool"].verdict == "fail"
    assert result.evidence_data["cuda_blocks"][0]["line"] == fake_torch.LEAK_SITE[1]
    assert all(r["pool"] == "large" for r in result.evidence_data["cuda_blocks"])
    shot = fake_torch.snapshot_of(allocator)
    assert shot["allocator_settings"]["expandable_segments"] is True
    assert {s["device"] for s in shot["segments"] if s["is_expandable"]} == {0, 1}
    assert allocator.segments[1] == 2  # grown in place: the count stays put


def test_stacks_all_records_cpp_frames_in_backward() -> None:
    torch, allocator = fake_torch.make()
    torch.cuda.memory._record_memory_history("state", context="state", stacks="all")
    allocator.backward(GRAD, fake_torch.LEAK_SITE, forward_frames=True)
    [grad] = [b for s in torch.cuda.memory._snapshot()["segments"] for b in s["blocks"]
              if b["frames"]]
    assert all(not f["filename"].endswith(".py") for f in grad["frames"])
    assert f'File "{fake_torch.LEAK_SITE[0]}", line 42' in "".join(grad["forward_frames"])

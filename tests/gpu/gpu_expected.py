"""What the GPU suite's workloads (workloads.py) must give, and where their tagged lines are.

Imports no torch: the outer tests read it on every machine. The inner session imports it
beside its copy of workloads.py.
"""

from __future__ import annotations

#: The backward-leak workload: steps in its window, and the bytes of the gradient that each
#: step keeps (128 x 128 float32), allocated in backward on the autograd engine's thread.
BACKWARD_STEPS = 40
GRADIENT_BYTES = 128 * 128 * 4

#: test name -> (outcome, {probe: verdict})
EXPECTED: dict[str, tuple[str, dict[str, str]]] = {
    "test_retained_graph_leaks_in_the_small_pool": ("failed", {"cuda_small_pool": "fail"}),
    "test_no_grad_detach_fix_is_flat": ("passed", {"cuda_small_pool": "pass",
                                                   "cuda_large_pool": "pass",
                                                   "cuda_allocated": "pass"}),
    "test_large_tensor_kept_per_step": ("failed", {"cuda_large_pool": "fail",
                                                   "cuda_small_pool": "pass"}),
    **{f"test_cublas_trap[{kind}]": ("passed", {name: "pass" for name in (
        "cuda_allocated", "cuda_large_pool", "cuda_large_blocks", "cuda_small_pool")})
       for kind in ("linear", "matmul", "grucell")},
    "test_churn_with_varying_shapes": ("passed", {"cuda_allocated": "pass",
                                                  "cuda_small_pool": "pass",
                                                  "cuda_large_pool": "pass"}),
    "test_history_small_leak_beside_cublas": ("failed", {"cuda_small_pool": "fail"}),
    "test_history_after_an_earlier_recorded_test": ("failed", {"cuda_large_pool": "fail"}),
    "test_users_recording_is_left_on": ("passed", {"cuda_small_pool": "fail"}),
    "test_backward_leak_grows_in_backward": ("failed", {"cuda_small_pool": "fail"}),
    "test_transient_activation_rises_above_the_budget": ("failed", {"cuda_allocated": "fail"}),
}


def line_of(path: str, tag: str) -> int:
    """The line of ``path`` that carries ``tag`` (a comment such as ``# LEAK_GRAPH``)."""
    with open(path) as source:
        found = [n for n, text in enumerate(source, 1)
                 if text.rstrip().endswith(tag) or f"{tag}:" in text]
    if len(found) != 1:
        raise LookupError(f"{tag!r} tags {len(found)} lines of {path}, not one")
    return found[0]

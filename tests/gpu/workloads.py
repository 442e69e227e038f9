"""The GPU suite's workloads: an inner pytest session runs this file on a CUDA device (see
conftest.py); the outer tests read its JSON report. gpu_expected.py holds each test's outcome
and the verdicts of the probes that matter. Lines tagged ``# LEAK_...``, ``# CUBLAS`` or
``# BEFORE_WINDOW`` are found by their tag (:func:`line_of`), so that the outer tests know
which line the evidence must, or must not, name.

Not collected by the outer session (the name does not start with ``test_``).
"""

from __future__ import annotations

from typing import Any

import pytest
import torch
from gpu_expected import BACKWARD_STEPS, line_of

import pytest_membudget

DEV = "cuda"
#: Tensors kept across tests on purpose: a later recorded window must not report them.
KEEP: list[torch.Tensor] = []

#: Every allocator probe's slope, and the growth budgets a cuBLAS workspace would break.
TRAP_BUDGETS: dict[str, Any] = {
    "cuda_allocated": 0, "cuda_reserved": 0, "cuda_small_pool": 0, "cuda_large_pool": 0,
    "cuda_small_blocks": 0, "cuda_large_blocks": 0, "cuda_segments": 0,
    "cuda_alloc_retries": 0, "cuda_allocated_growth": "1 MiB",
    "cuda_large_pool_growth": "1 MiB", "cuda_large_blocks_growth": 0,
}
#: Shapes cycled through by the churn workload: small and large pool, 8 in a cycle.
SHAPES = [(1, 7), (33, 129), (512, 512), (1024, 700), (3, 5000), (2048, 1024), (64, 64),
          (900, 1100)]

class Rnn:
    """A recurrent cell with its encoder: seed 001's online collection in small."""

    def __init__(self) -> None:
        torch.manual_seed(0)
        self.enc = torch.nn.Linear(32, 64).to(DEV)
        self.cell = torch.nn.GRUCell(64, 128).to(DEV)
        self.h = torch.zeros(4, 128, device=DEV)


@pytest.mark.membudget(cuda_small_pool=0, cuda_history=True, iterations=60, warmup=10)
def test_retained_graph_leaks_in_the_small_pool(membudget):
    m = Rnn()

    def step() -> None:
        m.h = m.cell(m.enc(torch.randn(4, 32, device=DEV)), m.h)  # LEAK_GRAPH

    membudget.run(step)


@pytest.mark.membudget(cuda_small_pool=0, cuda_large_pool=0, cuda_allocated=0,
                       cuda_small_blocks=0, iterations=60, warmup=10)
def test_no_grad_detach_fix_is_flat(membudget):
    m = Rnn()

    def step() -> None:
        with torch.no_grad():
            m.h = m.cell(m.enc(torch.randn(4, 32, device=DEV)), m.h).detach()

    membudget.run(step)


@pytest.mark.membudget(cuda_large_pool=0, cuda_small_pool=0, iterations=40, warmup=5)
def test_large_tensor_kept_per_step(membudget):
    kept = []

    def step() -> None:
        kept.append(torch.empty(2 * 2**20, dtype=torch.uint8, device=DEV))  # 2 MiB: large

    membudget.run(step)


@pytest.mark.parametrize("kind", ["linear", "matmul", "grucell"])
@pytest.mark.membudget(**TRAP_BUDGETS, iterations=60, warmup=5)
def test_cublas_trap(membudget, kind):
    torch.manual_seed(0)
    lin = torch.nn.Linear(256, 256).to(DEV)
    cell = torch.nn.GRUCell(256, 256).to(DEV)
    x = torch.randn(64, 256, device=DEV)
    h = torch.zeros(64, 256, device=DEV)
    a = torch.randn(256, 256, device=DEV)
    work = {"linear": lambda: lin(x), "matmul": lambda: a @ a,
            "grucell": lambda: cell(x, h)}[kind]
    membudget.run(work)


@pytest.mark.membudget(cuda_allocated=0, cuda_small_pool=0, cuda_large_pool=0,
                       cuda_small_blocks=0, cuda_large_blocks=0, cuda_reserved=0,
                       iterations=80, warmup=16)
def test_churn_with_varying_shapes(membudget):
    turn = [0]

    def step() -> None:
        shape = SHAPES[turn[0] % len(SHAPES)]
        turn[0] += 1
        a = torch.randn(*shape, device=DEV)
        b = (a * 2).relu().sum(0)
        del a, b

    membudget.run(step)


@pytest.mark.membudget(cuda_small_pool=0, cuda_small_blocks=0, cuda_history=True,
                       iterations=40, warmup=5)
def test_history_small_leak_beside_cublas(membudget):
    torch.manual_seed(0)
    lin = torch.nn.Linear(256, 256).to(DEV)
    x = torch.randn(64, 256, device=DEV)

    def step() -> None:
        with torch.no_grad():
            y = lin(x)  # CUBLAS: a transient output and the cuBLAS workspace
            KEEP.append(y.sum(0))  # LEAK_SMALL: 1 KiB kept per step

    membudget.run(step)


@pytest.mark.membudget(cuda_large_pool=0, cuda_history=True, iterations=40, warmup=5)
def test_history_after_an_earlier_recorded_test(membudget):
    def step() -> None:
        KEEP.append(torch.empty(3 * 2**20, dtype=torch.uint8, device=DEV))  # LEAK_LARGE

    membudget.run(step)


@pytest.mark.membudget(cuda_small_pool=0, cuda_history=True, iterations=40, warmup=5)
def test_users_recording_is_left_on(membudget):
    memory = torch.cuda.memory
    memory._record_memory_history(enabled="all", context="alloc", stacks="python")
    try:
        KEEP.append(torch.empty(1024, device=DEV))  # BEFORE_WINDOW: the user's recording
        before = sum(len(t) for t in memory._snapshot()["device_traces"])

        def step() -> None:
            KEEP.append(torch.empty(256, device=DEV))  # LEAK_USER

        with pytest.raises(pytest_membudget.BudgetExceeded) as caught:
            membudget.run(step)
        assert torch._C._cuda_isHistoryEnabled(), "the user's recording was switched off"
        after = sum(len(t) for t in memory._snapshot()["device_traces"])
        assert after > before, f"the user's trace was cleared ({before} -> {after} entries)"
        rows = caught.value.result.evidence_data["cuda_blocks"]
        assert [r["line"] for r in rows] == [line_of(__file__, "# LEAK_USER")], rows
    finally:
        memory._record_memory_history(enabled=None)


@pytest.mark.membudget(cuda_small_pool=0, cuda_history=True, iterations=BACKWARD_STEPS,
                       warmup=5)
def test_backward_leak_grows_in_backward(membudget):
    torch.manual_seed(0)
    w = torch.randn(128, 128, device=DEV, requires_grad=True)
    x = torch.randn(64, 128, device=DEV)
    grads = []

    def step() -> None:
        loss = (x @ w).tanh().sum()
        # The gradient and its graph (create_graph) are allocated in backward, on the autograd
        # engine's thread, where torch records no Python frame; each step keeps them.
        (g,) = torch.autograd.grad(loss, w, create_graph=True)
        grads.append(g)

    membudget.run(step)


@pytest.mark.membudget(cuda_allocated_rise="32 MiB", cuda_history=True)
def test_transient_activation_rises_above_the_budget(membudget):
    """One call that holds 64 MiB on the device for a moment and frees it: a rise no sample
    between calls sees, which the allocator's own peak and its trace do."""

    def step() -> None:
        big = torch.empty(64 * 2**20, dtype=torch.uint8, device=DEV)  # PEAK_TRANSIENT
        big.fill_(1)
        del big

    membudget.run(step)

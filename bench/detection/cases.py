"""The detection corpus: small workloads with a known ground truth.

Each case builds a fresh step function (``case.make()``) whose state lives in the closure or in
this module's registries, so one process runs one case. The step is called once per iteration.
``truth`` is ``"leak"`` or ``"clean"``; ``probe`` names the probe expected to catch a leak
(``rss``, ``threads``, ``fds``). ``rate`` is the nominal growth per iteration in the probe's
unit, used for the ladder of smallest reliably caught rates.

Every step also does a fixed amount of ordinary Python work (``_work``), about 0.3 ms, so that
the per-iteration cost resembles a real inner loop and the allocator sees transient churn.
"""

from __future__ import annotations

import collections
import functools
import itertools
import os
import random
import socket
import threading
from collections.abc import Callable
from typing import Any

from bench.detection.registry import (
    CASES,
    HELDOUT,
    REGISTRY,
    WORK_N,
    Case,
    Step,
    close_step,
    missing_requirements,
)
from bench.detection.registry import add as _add
from bench.detection.registry import libc_handle as _libc_handle
from bench.detection.registry import work as _work

# The corpus's users import the registry's names from here, where the cases are registered.
__all__ = ["CASES", "Case", "Step", "close_step", "missing_requirements", "select"]

# --------------------------------------------------------------------------------------------
# leaks: Python objects kept in a global registry (rss ladder, python)


def _python_leak(nbytes: int) -> Callable[[], Step]:
    def make() -> Step:
        def step() -> None:
            _work()
            # b"\x01" * n fills the buffer, so the pages are touched (bytes(n) would calloc).
            REGISTRY.append(b"\x01" * nbytes)

        return step

    return make


for _n, _label in [
    (64, "64b"),
    (128, "128b"),
    (256, "256b"),
    (512, "512b"),
    (1024, "1k"),
    (4096, "4k"),
    (65536, "64k"),
    (1 << 20, "1m"),
]:
    _add(
        Case(
            name=f"leak_py_{_label}",
            truth="leak",
            family="python registry",
            make=_python_leak(_n),
            probe="rss",
            rate=float(_n),
            ladder="python",
            note=f"bytes object of {_n} B appended to a global list each step",
        )
    )


# --------------------------------------------------------------------------------------------
# leaks: native malloc, never freed (rss ladder, native)


def _native_leak(nbytes: int) -> Callable[[], Step]:
    def make() -> Step:
        libc = _libc_handle()

        def step() -> None:
            _work()
            pointer = libc.malloc(nbytes)
            libc.memset(pointer, 1, nbytes)

        return step

    return make


for _n, _label in [
    (64, "64b"),
    (128, "128b"),
    (256, "256b"),
    (512, "512b"),
    (4096, "4k"),
    (65536, "64k"),
]:
    _add(
        Case(
            name=f"leak_native_{_label}",
            truth="leak",
            family="native malloc",
            make=_native_leak(_n),
            probe="rss",
            rate=float(_n),
            ladder="native",
            note=f"libc malloc({_n}) + memset, never freed",
        )
    )


# --------------------------------------------------------------------------------------------
# leaks: torch (CPU)


def _torch() -> Any:
    import torch

    # One intra-op thread: on a small shared runner the OpenMP pool's spin-waits made steps
    # 10-50x slower and erratic, which says nothing about memory.
    torch.set_num_threads(1)
    return torch


def _torch_tensor_list() -> Step:
    torch = _torch()

    kept: list[Any] = []

    def step() -> None:
        _work()
        kept.append(torch.randn(64, 64))  # 16 KiB of float32

    return step


def _torch_rnn(detach: bool) -> Step:
    """A recurrent cell stepped on its own state. Without detach each step's graph keeps the
    previous one alive through h (the leak); with detach the graph ends at each step (the fix)."""
    torch = _torch()

    torch.manual_seed(0)
    cell = torch.nn.GRUCell(32, 64)
    x = torch.randn(8, 32)
    state = {"h": torch.zeros(8, 64)}

    def step() -> None:
        _work(WORK_N // 2)
        h = state["h"]
        state["h"] = cell(x, h.detach() if detach else h)

    return step


def _torch_rnn_graph() -> Step:
    return _torch_rnn(detach=False)


def _torch_loss_accumulate() -> Step:
    torch = _torch()

    torch.manual_seed(0)
    model = torch.nn.Linear(32, 32)
    x = torch.randn(16, 32)
    totals = {"loss": torch.zeros(())}

    def step() -> None:
        _work(WORK_N // 2)
        loss = model(x).pow(2).mean()
        # The classic: summing the tensor (not loss.item()) chains every step's graph.
        totals["loss"] = totals["loss"] + loss

    return step


_add(Case("leak_torch_tensor_list", "leak", "torch", _torch_tensor_list, "rss", 16384.0,
          needs=("torch",), note="16 KiB CPU tensor appended to a list each step"))
_add(Case("leak_torch_rnn_graph", "leak", "torch", _torch_rnn_graph, "rss",
          needs=("torch",), note="h = GRUCell(x, h) without detach: autograd graph grows"))
_add(Case("leak_torch_loss_sum", "leak", "torch", _torch_loss_accumulate, "rss",
          needs=("torch",), note="total = total + loss (tensor, not .item()): graph chain"))


# --------------------------------------------------------------------------------------------
# leaks: closures, memoisation


def _closure_hooks() -> Step:
    import numpy as np

    hooks: list[Callable[[], float]] = []

    def step() -> None:
        _work()
        array = np.ones(256)  # 2 KiB

        def hook(array: Any = array) -> float:
            return float(array.sum())

        hooks.append(hook)

    return step


def _lru_unbounded() -> Step:
    counter = itertools.count()

    @functools.cache
    def expensive(key: int) -> tuple[int, ...]:
        return tuple(range(key % 7, key % 7 + 48))

    def step() -> None:
        _work()
        expensive(next(counter))

    return step


def _memo_fresh_key() -> Step:
    import numpy as np

    memo: dict[tuple[int, int], Any] = {}
    counter = itertools.count()

    def step() -> None:
        _work()
        key = (next(counter), os.getpid())
        if key not in memo:
            memo[key] = np.full(128, float(key[0]))  # 1 KiB
        _ = memo[key]

    return step


_add(Case("leak_closure_hooks", "leak", "closure", _closure_hooks, "rss", 2048.0,
          note="closure capturing a 2 KiB numpy array appended to a hook list"))
_add(Case("leak_lru_unbounded", "leak", "memoisation", _lru_unbounded, "rss",
          note="lru_cache(maxsize=None) called with a fresh key each step (48-tuple)"))
_add(Case("leak_memo_fresh_key", "leak", "memoisation", _memo_fresh_key, "rss", 1024.0,
          note="dict memo keyed by a fresh key, 1 KiB numpy value"))


# --------------------------------------------------------------------------------------------
# leaks: bursty and late-onset


def _bursty(every: int, nbytes: int) -> Callable[[], Step]:
    def make() -> Step:
        counter = itertools.count(1)

        def step() -> None:
            _work()
            if next(counter) % every == 0:
                REGISTRY.append(b"\x01" * nbytes)

        return step

    return make


for _every, _nbytes in [(10, 32768), (40, 131072), (150, 524288)]:
    _add(
        Case(
            name=f"leak_bursty_every{_every}",
            truth="leak",
            family="bursty",
            make=_bursty(_every, _nbytes),
            probe="rss",
            rate=_nbytes / _every,
            note=f"{_nbytes // 1024} KiB kept every {_every}th step",
        )
    )


def _late_onset(onset: int, nbytes: int) -> Callable[[], Step]:
    def make() -> Step:
        counter = itertools.count(1)

        def step() -> None:
            _work()
            if next(counter) > onset:
                REGISTRY.append(b"\x01" * nbytes)

        return step

    return make


for _onset in (50, 150, 400):
    _add(
        Case(
            name=f"leak_late_after{_onset}",
            truth="leak",
            family="late onset",
            make=_late_onset(_onset, 4096),
            probe="rss",
            rate=4096.0,
            note=f"4 KiB/step kept, starting after step {_onset}",
        )
    )


# --------------------------------------------------------------------------------------------
# leaks: threads and file descriptors


def _thread_leak(every: int) -> Callable[[], Step]:
    def make() -> Step:
        never = threading.Event()
        counter = itertools.count(1)

        def step() -> None:
            _work()
            if next(counter) % every == 0:
                threading.Thread(target=never.wait, daemon=True).start()

        return step

    return make


def _fd_leak_open() -> Step:
    kept: list[int] = []
    counter = itertools.count(1)

    def step() -> None:
        _work()
        if next(counter) % 2 == 0:
            kept.append(os.open(os.devnull, os.O_RDONLY))

    return step


def _fd_leak_socket() -> Step:
    kept: list[socket.socket] = []
    counter = itertools.count(1)

    def step() -> None:
        _work()
        if next(counter) % 5 == 0:
            kept.append(socket.socket(socket.AF_INET, socket.SOCK_DGRAM))

    return step


_add(Case("leak_thread_every_step", "leak", "threads", _thread_leak(1), "threads", 1.0,
          note="daemon thread blocked on an Event that is never set, every step"))
_add(Case("leak_thread_every10", "leak", "threads", _thread_leak(10), "threads", 0.1,
          note="blocked daemon thread every 10th step"))
_add(Case("leak_fd_os_open", "leak", "fds", _fd_leak_open, "fds", 0.5,
          note="os.open(/dev/null) kept every 2nd step"))
_add(Case("leak_fd_socket", "leak", "fds", _fd_leak_socket, "fds", 0.2,
          note="UDP socket kept every 5th step"))


# ============================================================================================
# clean traps


def _clean_alloc_free() -> Step:
    def step() -> None:
        _work()
        buffer = b"\x01" * (1 << 20)
        del buffer

    return step


def _clean_native_alloc_free() -> Step:
    libc = _libc_handle()

    def step() -> None:
        _work()
        pointers = [libc.malloc(512) for _ in range(32)]
        for pointer in pointers:
            libc.memset(pointer, 1, 512)
        for pointer in pointers:
            libc.free(pointer)

    return step


def _clean_numpy_temporaries() -> Step:
    import numpy as np

    rng = np.random.default_rng(0)

    def step() -> None:
        _work(WORK_N // 2)
        a = rng.standard_normal(4096)
        b = a * 2.0 + 1.0
        c = np.sqrt(np.abs(b)) - a.mean()
        d = np.outer(c[:64], b[:64])
        e = d @ d.T
        float(e.trace() + c.sum())

    return step


def _ring_buffer(maxlen: int) -> Callable[[], Step]:
    def make() -> Step:
        ring: collections.deque[bytes] = collections.deque(maxlen=maxlen)

        def step() -> None:
            _work()
            ring.append(b"\x01" * 8192)

        return step

    return make


def _lru_bounded(maxsize: int) -> Callable[[], Step]:
    def make() -> Step:
        counter = itertools.count()

        @functools.lru_cache(maxsize=maxsize)
        def expensive(key: int) -> bytes:
            return b"\x01" * 2048

        def step() -> None:
            _work()
            expensive(next(counter))

        return step

    return make


def _lazy_init(at_call: int, nbytes: int) -> Callable[[], Step]:
    def make() -> Step:
        state: dict[str, Any] = {"calls": 0, "table": None}

        def step() -> None:
            _work()
            state["calls"] += 1
            if state["table"] is None and state["calls"] >= at_call:
                state["table"] = b"\x01" * nbytes

        return step

    return make


def _sawtooth(period: int) -> Callable[[], Step]:
    def make() -> Step:
        buffer: list[bytes] = []

        def step() -> None:
            _work()
            buffer.append(b"\x01" * 4096)
            if len(buffer) >= period:
                buffer.clear()

        return step

    return make


def _spike(every: int, nbytes: int) -> Callable[[], Step]:
    def make() -> Step:
        counter = itertools.count(1)

        def step() -> None:
            _work()
            if next(counter) % every == 0:
                spike = b"\x01" * nbytes
                del spike

        return step

    return make


def _reference_cycles() -> Step:
    def step() -> None:
        _work()
        for _ in range(20):
            node: dict[str, Any] = {"payload": b"\x01" * 256}
            node["self"] = node

    return step


def _background_thread() -> Step:
    stop = threading.Event()
    state: dict[str, Any] = {"thread": None}

    def churn() -> None:
        rng = random.Random(0)
        held: list[bytes] = []
        while not stop.is_set():
            held.append(b"\x01" * rng.randint(1, 128 * 1024))
            if len(held) > 8:
                held.pop(rng.randrange(len(held)))
            stop.wait(rng.random() * 0.002)

    def step() -> None:
        if state["thread"] is None:
            state["thread"] = threading.Thread(target=churn, daemon=True)
            state["thread"].start()
        _work()

    def close() -> None:
        stop.set()
        if state["thread"] is not None:
            state["thread"].join()

    step.close = close  # type: ignore[attr-defined]
    return step


def _thread_churn() -> Step:
    def step() -> None:
        _work()
        worker = threading.Thread(target=_work, args=(200,))
        worker.start()
        worker.join()

    return step


def _fd_churn() -> Step:
    def step() -> None:
        _work()
        descriptor = os.open(os.devnull, os.O_RDONLY)
        os.close(descriptor)
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM):
            pass

    return step


def _torch_no_grad_rollout() -> Step:
    torch = _torch()

    torch.manual_seed(0)
    policy = torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.Tanh(), torch.nn.Linear(64, 4))
    capacity = 256
    observations = torch.zeros(capacity, 16)
    actions = torch.zeros(capacity, 4)
    counter = itertools.count()

    def step() -> None:
        _work(WORK_N // 2)
        index = next(counter) % capacity
        obs = torch.randn(16)
        with torch.no_grad():
            action = policy(obs)
        observations[index].copy_(obs)
        actions[index].copy_(action)

    return step


def _torch_rnn_detach() -> Step:
    return _torch_rnn(detach=True)


def _torch_loss_item() -> Step:
    torch = _torch()

    torch.manual_seed(0)
    model = torch.nn.Linear(32, 32)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(16, 32)
    totals = {"loss": 0.0}

    def step() -> None:
        _work(WORK_N // 2)
        optimizer.zero_grad()
        loss = model(x).pow(2).mean()
        loss.backward()
        optimizer.step()
        totals["loss"] += loss.item()

    return step


_add(Case("clean_alloc_free_1m", "clean", "alloc/free", _clean_alloc_free,
          note="1 MiB bytes allocated and dropped each step"))
_add(Case("clean_native_alloc_free", "clean", "alloc/free", _clean_native_alloc_free,
          note="32 x libc malloc(512) + memset + free each step"))
_add(Case("clean_numpy_temporaries", "clean", "alloc/free", _clean_numpy_temporaries,
          note="many numpy temporaries (4096-vectors, 64x64 outer products) each step"))
for _maxlen in (20, 100, 300):
    _add(Case(f"clean_ring_fill{_maxlen}", "clean", "bounded fill", _ring_buffer(_maxlen),
              note=f"deque(maxlen={_maxlen}) of 8 KiB items: fills for {_maxlen} steps, then flat"))
for _maxsize in (64, 256):
    _add(Case(f"clean_lru_bounded{_maxsize}", "clean", "bounded fill", _lru_bounded(_maxsize),
              note=f"lru_cache(maxsize={_maxsize}), fresh keys, 2 KiB values: fills then evicts"))
_add(Case("clean_lazy_init_first", "clean", "lazy init", _lazy_init(1, 20 << 20),
          note="20 MiB table built on the first call"))
_add(Case("clean_lazy_init_late", "clean", "lazy init", _lazy_init(40, 8 << 20),
          note="8 MiB table built on call 40 (after warm-up): one step, then flat"))
for _period in (10, 50, 200):
    _add(Case(f"clean_sawtooth{_period}", "clean", "sawtooth", _sawtooth(_period),
              note=f"4 KiB/step into a list cleared every {_period} steps"))
_add(Case("clean_spike_50m_every20", "clean", "spike", _spike(20, 50_000_000),
          note="50 MB allocated and freed every 20th step"))
_add(Case("clean_spike_8m_every7", "clean", "spike", _spike(7, 8_000_000),
          note="8 MB allocated and freed every 7th step (below the mmap ceiling)"))
_add(Case("clean_reference_cycles", "clean", "gc", _reference_cycles,
          note="20 self-referencing dicts with 256 B payload per step, left to the gc"))
_add(Case("clean_background_thread", "clean", "threads", _background_thread,
          note="one background thread allocating at random (up to 9 x 128 KiB held), started at "
               "the first call, stopped after the run"))
_add(Case("clean_thread_churn", "clean", "threads", _thread_churn,
          note="a thread started and joined each step"))
_add(Case("clean_fd_churn", "clean", "fds", _fd_churn,
          note="os.open/os.close and a socket opened and closed each step"))
_add(Case("clean_torch_no_grad_rollout", "clean", "torch", _torch_no_grad_rollout,
          needs=("torch",), note="policy under no_grad writing into preallocated buffers"))
_add(Case("clean_torch_rnn_detach", "clean", "torch", _torch_rnn_detach, needs=("torch",),
          note="h = GRUCell(x, h.detach()): graph freed each step"))
_add(Case("clean_torch_loss_item", "clean", "torch", _torch_loss_item, needs=("torch",),
          note="SGD step, total += loss.item()"))


def select(patterns: str | None, *, heldout: bool = False) -> list[Case]:
    """Cases whose name matches any comma-separated fnmatch pattern (or substring): of the
    corpus, or of the held-out cases (``heldout``)."""
    import fnmatch

    pool = [c for c in CASES.values() if (HELDOUT in c.tags) == heldout]
    if not patterns:
        return pool
    wanted = [p.strip() for p in patterns.split(",") if p.strip()]
    chosen = []
    for case in pool:
        for pattern in wanted:
            if fnmatch.fnmatchcase(case.name, pattern) or (
                not any(ch in pattern for ch in "*?[") and pattern in case.name
            ):
                chosen.append(case)
                break
    return chosen


# The held-out cases register themselves in CASES (tagged "heldout"), so that the generated
# tests and the bare loops find them by name; select() keeps them apart from the corpus.
import bench.detection.heldout  # noqa: E402  (cases -> heldout -> registry)
import bench.detection.native_shapes  # noqa: E402, F401  (cases -> native_shapes -> registry)

"""The runs shown in docs/footprint.md: ``pytest docs/_scripts/footprint_runs.py -p no:randomly``
(each test fails on purpose, to show its evidence; the docs quote the output)."""

from __future__ import annotations

import threading

import numpy as np
import pytest

CACHE: dict[int, dict[int, np.ndarray]] = {}


def fill_cache(states: int = 20_000, actions: int = 10) -> None:
    """A cache of small arrays, keyed per state and action: dict overhead and one small
    numpy array per entry, as in the 25 GB backward induction."""
    CACHE.clear()
    for state in range(states):
        CACHE[state] = {a: np.zeros(2, dtype=np.int8) for a in range(actions)}


@pytest.mark.membudget(rss_rise="32 MiB")
def test_cache_of_small_arrays(membudget):
    membudget.run(fill_cache)


def collect(dtype: type) -> np.ndarray:
    """A rollout buffer: 256 steps x 16 envs of graph features (450 nodes x 16)."""
    buffer = np.zeros((256, 16, 450, 16), dtype=dtype)
    for step in range(256):
        buffer[step] = np.random.default_rng(step).standard_normal((16, 450, 16))
    return buffer


def test_float32_and_float16_buffers(membudget):
    with membudget.phase("float32", rss_rise="64 MiB"):
        collect(np.float32)
    with membudget.phase("float16", rss_rise="64 MiB"):
        collect(np.float16)


@pytest.mark.membudget(rss_rise="64 MiB")
def test_torch_cpu_step(membudget):
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(512, 2048), torch.nn.ReLU(),
                                torch.nn.Linear(2048, 512))
    batch = torch.randn(4096, 512)

    def step() -> None:
        loss = model(batch).square().mean()
        loss.backward()
        model.zero_grad(set_to_none=True)

    membudget.run(step)


def fragment() -> None:
    objects = [{"i": i} for i in range(600_000)]  # ~140 MB of small dicts
    del objects[::4], objects[::3], objects[::2]  # three of four freed, spread over the heap
    np.ones(1_000_000)  # 8 MB more


@pytest.mark.membudget(rss_rise="64 MiB")
def test_fragmented_heap(membudget):
    membudget.run(fragment)


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("data") / "table.npy"
    np.save(path, np.ones((20_000, 1_000)))  # 160 MB on disk
    return str(path)


@pytest.mark.membudget(rss_rise="64 MiB")
def test_mapped_file(membudget, table):
    membudget.run(lambda: float(np.load(table, mmap_mode="r").sum()))


def idle_threads(count: int = 50) -> None:
    stop = threading.Event()
    threads = [threading.Thread(target=stop.wait) for _ in range(count)]
    for thread in threads:
        thread.start()
    stop.set()
    for thread in threads:
        thread.join()


@pytest.mark.membudget(rss_rise="256 KiB")
def test_idle_threads(membudget):
    membudget.run(idle_threads)

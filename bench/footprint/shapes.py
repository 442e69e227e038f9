"""The footprint corpus: one expensive phase per shape, each a plain function called once.

Every shape rises about 150 MB of RSS above where its call starts (except the idle threads,
whose point is that they hold little, and the clean case), and declares what kind of memory
dominates its peak and whether that memory outlives the call. The line(s) that allocated most
of what is alive at the peak carry a trailing ``# PEAK LINE`` comment: where a library
allocates, the shape's own line that called it. ``ground_truth.py`` checks every declaration
against the kernel's and the allocators' own figures, measured without the plugin.

Shapes that need something prepared (a file, a string, a model) have a ``setup`` that runs
before the measured call and returns its arguments; it also runs the work once on a tiny
input, so that lazy imports and first-call initialisation (torch's thread pool, pandas'
parsers) do not land in the measured rise.

Kinds, as the plugin's composition names them:

- ``python``: Python objects and numpy arrays (what tracemalloc traces);
- ``native``: native heap in use that tracemalloc does not trace (torch CPU tensors, ctypes
  ``malloc``, C extensions' own buffers);
- ``allocator_free``: free memory the allocators keep (pymalloc's free blocks, glibc's
  free bytes);
- ``file``: file-backed pages; ``stacks``: thread stacks.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import json
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
from protocol import DATA_DIR, HELD, MiB, Shape, corpus_names, data_file, registrar

__all__ = ["DATA_DIR", "HELD", "SHAPES", "TARGET", "MiB", "Shape", "corpus"]

#: The rise each sizeable shape aims at.
TARGET = 150 * MiB

SHAPES: dict[str, Shape] = {}
shape = registrar(SHAPES)


def corpus() -> list[str]:
    """The shapes measured by default, in order."""
    return corpus_names(SHAPES)


# --- Python objects -------------------------------------------------------------------------

@shape("python", "transient")
def numpy_temporary() -> float:
    """A 150 MiB numpy temporary, freed before the call returns, beside a small cache (2 MiB)
    that stays: the peak is the temporary, not the cache."""
    HELD.pop("numpy_temporary", None)
    HELD["numpy_temporary"] = [np.zeros(1024) for _ in range(256)]
    grid = np.ones(TARGET // 8)  # PEAK LINE
    total = float(grid.sum())
    del grid
    return total


@shape("python", "retained")
def small_array_cache() -> int:
    """A nested dict cache of 200,000 tiny numpy arrays (64 floats each) that stays: small
    objects whose headers and dicts weigh as much as their data."""
    HELD.pop("small_array_cache", None)
    cache: dict[int, dict[int, np.ndarray]] = {}
    for key in range(200_000):
        cache.setdefault(key % 1000, {})[key] = np.full(64, key, dtype=np.float64)  # PEAK LINE
    HELD["small_array_cache"] = cache
    return len(cache)


@shape("python", "retained")
def million_dicts() -> int:
    """A million small dicts (a record each) kept in a list."""
    HELD.pop("million_dicts", None)
    rows = [{"id": i, "ok": True} for i in range(1_000_000)]  # PEAK LINE
    HELD["million_dicts"] = rows
    return len(rows)


@shape("python", "transient")
def quadratic_concat() -> int:
    """Bytes concatenated one MiB at a time to 75 MiB: each step copies the whole, so the
    peak (the last copy beside its source) sits inside one statement."""
    piece = b"x" * MiB
    blob = b""
    for _ in range(75):
        blob = blob + piece  # PEAK LINE
    return len(blob)


@shape("python", "transient")
def list_of_generator() -> int:
    """``list()`` of a generator of 4 million floats, dropped before the call returns."""
    values = list(float(i) for i in range(4_000_000))  # PEAK LINE
    return len(values)


def _json_text() -> tuple[str]:
    rows = [{"id": i, "score": i * 0.5, "tag": f"k{i % 100}"} for i in range(480_000)]
    text = json.dumps(rows)
    json.loads(text[:1000].rsplit("}", 1)[0] + "}]")  # the decoder's first call, unmeasured
    return (text,)


@shape("python", "retained", setup=_json_text)
def json_loads(text: str) -> int:
    """``json.loads`` of a 34 MB document (built before the call) into records that stay."""
    HELD.pop("json_loads", None)
    records = json.loads(text)  # PEAK LINE
    HELD["json_loads"] = records
    return len(records)


def _csv_file() -> tuple[Path]:
    import pandas as pd  # type: ignore[import-untyped, unused-ignore]

    rows, columns = 360_000, 19

    def write(path: Path) -> None:
        rng = np.random.default_rng(0)
        values = rng.integers(0, 1000, size=(rows, columns + 1))
        frame = pd.DataFrame(values / 4, columns=[f"c{j}" for j in range(columns + 1)])
        frame.insert(0, "key", values[:, 0] % 1000)
        frame.drop(columns="c0").to_csv(path, index=False)

    path = data_file(f"table_{rows}x{columns}.csv", write)
    pd.read_csv(path, nrows=100).groupby("key").mean()  # pandas' first call, unmeasured
    return (path,)


@shape("python", "transient", setup=_csv_file, needs="pandas")
def pandas_groupby(path: Path) -> int:
    """pandas ``read_csv`` of a 360,000 x 20 numeric table (41 MB of text, 55 MiB as
    numbers), then a mean per key; only the 1,000-row result leaves the call."""
    import pandas as pd  # type: ignore[import-untyped, unused-ignore]

    frame = pd.read_csv(path)  # PEAK LINE
    means = frame.groupby("key").mean()
    return len(means)


# --- Native heap ----------------------------------------------------------------------------

def _torch_model() -> tuple[Any, Any]:
    import torch

    torch.manual_seed(0)
    width = 1024
    model = torch.nn.Sequential(torch.nn.Linear(width, width), torch.nn.ReLU(),
                                torch.nn.Linear(width, width), torch.nn.ReLU(),
                                torch.nn.Linear(width, width))
    # 8192 x 1024 float32: every activation is 32 MiB, glibc's largest mmap threshold, so
    # each is mapped and unmapped. Smaller ones (22 MiB at a batch of 5400) come from the
    # heap once the first is freed (glibc raises its threshold to the size freed) and stay
    # resident as free memory after the call: the peak is then glibc's free bytes.
    batch = torch.randn(8192, width)
    # One small step first: the thread pool, autograd's engine and the parameters' .grad
    # tensors exist before the measured call.
    model(batch[:64]).mean().backward()
    return model, batch


@shape("native", "transient", setup=_torch_model)
def torch_step(model: Any, batch: Any) -> float:
    """A torch CPU forward and backward pass of a 3-layer MLP on a batch of 8192 x 1024:
    the activations saved for backward and their gradients (32 MiB each), all freed before
    it returns."""
    loss = model(batch).mean()  # PEAK LINE
    loss.backward()  # PEAK LINE
    return float(loss)


@shape("native", "transient")
def ctypes_malloc_default() -> int:
    """150 MiB ``malloc``'d through ``ctypes.CDLL(None)``, written so that its pages are
    resident, and freed before the call returns: invisible to tracemalloc."""
    libc = ctypes.CDLL(None)
    libc.malloc.restype = ctypes.c_void_p
    libc.malloc.argtypes = [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]
    block = libc.malloc(TARGET)  # PEAK LINE
    ctypes.memset(block, 1, TARGET)  # PEAK LINE
    first = ctypes.c_char.from_address(block).value[0]
    libc.free(block)
    return first


@shape("native", "transient")
def ctypes_malloc_libc() -> int:
    """The same through ``ctypes.CDLL(ctypes.util.find_library("c"))``: libc loaded by name,
    a handle that tools hooking the process's own symbols can miss."""
    libc = ctypes.CDLL(ctypes.util.find_library("c"))
    libc.malloc.restype = ctypes.c_void_p
    libc.malloc.argtypes = [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]
    block = libc.malloc(TARGET)  # PEAK LINE
    ctypes.memset(block, 1, TARGET)  # PEAK LINE
    first = ctypes.c_char.from_address(block).value[0]
    libc.free(block)
    return first


# --- Allocators' free memory ----------------------------------------------------------------

@shape("allocator_free", "retained")
def fragmented_heap() -> int:
    """128,000 objects of 1 KiB (malloc'd by glibc), three of every four freed, then a new
    16 MiB array: the freed chunks sit between live ones, so glibc keeps them, resident and
    free, and the array cannot use them. The quarter kept and the array stay."""
    HELD.pop("fragmented_heap", None)
    blocks = [bytes(1000) for _ in range(128_000)]  # PEAK LINE
    kept = blocks[::4]
    del blocks
    fresh = np.ones(16 * MiB // 8)
    HELD["fragmented_heap"] = (kept, fresh)
    return len(kept)


# --- File-backed pages ----------------------------------------------------------------------

def _npy_file() -> tuple[Path]:
    path = data_file(f"array_{TARGET}.npy",
                      lambda p: np.save(p.open("wb"), np.ones(TARGET // 8)))
    np.load(path, mmap_mode="r")  # the loader's first call: header parsing, no pages read
    return (path,)


@shape("file", "transient", setup=_npy_file)
def mapped_file(path: Path) -> float:
    """``np.load(path, mmap_mode="r")`` of a 150 MiB file, every page read: the rise is
    page cache mapped into the process, unmapped before the call returns."""
    data = np.load(path, mmap_mode="r")  # PEAK LINE
    total = float(data.sum())  # PEAK LINE
    del data
    return total


# --- Thread stacks --------------------------------------------------------------------------

#: How deep the document each worker parses is nested: the parser recurses in C, a few
#: hundred bytes of stack a level.
NESTING = 400


@shape("stacks", "transient")
def idle_threads() -> int:
    """50 worker threads, each having parsed a nested document (56 KiB of C stack touched),
    idle on an event for 200 ms, then joined: 8 MiB of stack reserved each (400 MiB), a
    few MiB of it resident."""
    release = threading.Event()
    document = "[" * NESTING + "]" * NESTING

    def worker() -> None:
        json.loads(document)
        release.wait()

    workers = [threading.Thread(target=worker, daemon=True) for _ in range(50)]
    for each in workers:
        each.start()  # PEAK LINE
    time.sleep(0.2)
    release.set()
    for each in workers:
        each.join()
    return len(workers)


@shape("stacks", "transient", in_corpus=False)
def idle_threads_bare() -> int:
    """50 threads that only wait on an event (nothing else run on their stacks), for 200 ms,
    then joined. Outside the corpus: their stacks are not most of the rise (Python's frame
    chunk per thread, glibc's arena per thread and the threads' objects weigh about as
    much), so no composition can be graded on it; idle_threads is the corpus's case."""
    release = threading.Event()
    workers = [threading.Thread(target=release.wait, daemon=True) for _ in range(50)]
    for each in workers:
        each.start()  # PEAK LINE
    time.sleep(0.2)
    release.set()
    for each in workers:
        each.join()
    return len(workers)


# --- Clean ----------------------------------------------------------------------------------

@shape(None, None, fails=False)
def clean() -> int:
    """Arithmetic on small integers: allocates and frees almost nothing."""
    total = 0
    for i in range(200_000):
        total += i * i % 7
    return total

"""A stand-in for JAX on a GPU, so that the jax_device_* probes' code runs on CPU machines.

It follows what jaxlib's ``Device.memory_stats()`` returns for a device whose PjRt client
keeps allocator statistics (jaxlib/py_device.cc: the dict built from tsl::AllocatorStats) and
what XLA's BFC allocator books there (xla/tsl/framework/bfc_allocator.cc):

- keys ``num_allocs``, ``bytes_in_use``, ``peak_bytes_in_use``, ``largest_alloc_size``,
  ``bytes_limit``, ``bytes_reserved``, ``peak_bytes_reserved``, ``largest_free_block_bytes``,
  and, for the BFC allocator, ``pool_bytes`` and ``peak_pool_bytes``;
- ``pool_bytes`` is what the allocator took from the device in regions: with preallocation
  (``preallocate=True``, JAX's default on a GPU) one region of the whole budget from the
  start; without it, regions of 2 MiB doubling as they are needed;
- ``peak_bytes_in_use`` is the high-water mark since the client started; nothing resets it;
- a CPU device's ``memory_stats()`` is None (``platform="cpu"``).

Arrays carry ``aval`` (shape, dtype with itemsize, ``str_short()``) and ``traceback`` (frames
innermost first, with ``file_name``, ``function_name``, ``line_num``), as jax.Array does;
``live_arrays()`` lists those not freed.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field

MiB = 1024**2


@dataclass(frozen=True)
class Frame:
    file_name: str
    function_name: str
    line_num: int


@dataclass(frozen=True)
class Traceback:
    frames: tuple[Frame, ...]


@dataclass(frozen=True)
class DType:
    name: str = "float32"
    itemsize: int = 4


@dataclass(frozen=True)
class Aval:
    shape: tuple[int, ...]
    dtype: DType = DType()

    def str_short(self) -> str:
        return f"{self.dtype.name}[{','.join(map(str, self.shape))}]"


class Array:
    def __init__(self, aval: Aval, traceback: Traceback) -> None:
        self.aval, self.traceback = aval, traceback

    @property
    def nbytes(self) -> int:
        return int(math.prod(self.aval.shape)) * self.aval.dtype.itemsize


@dataclass
class Device:
    platform: str = "gpu"
    limit: int = 1024 * MiB
    preallocate: bool = True
    in_use: int = 0
    peak: int = 0
    pool: int = 0
    allocs: int = 0

    def __post_init__(self) -> None:
        if self.preallocate:
            self.pool = int(0.75 * self.limit)

    def take(self, size: int) -> None:
        self.in_use += size
        self.allocs += 1
        self.peak = max(self.peak, self.in_use)
        region = 2 * MiB
        while not self.preallocate and self.pool < self.in_use:
            self.pool += region
            region *= 2

    def give(self, size: int) -> None:
        self.in_use -= size

    def memory_stats(self) -> dict[str, int] | None:
        if self.platform == "cpu":
            return None
        return {"num_allocs": self.allocs, "bytes_in_use": self.in_use,
                "peak_bytes_in_use": self.peak, "largest_alloc_size": 0,
                "bytes_limit": self.limit, "bytes_reserved": 0, "peak_bytes_reserved": 0,
                "largest_free_block_bytes": self.pool - self.in_use,
                "pool_bytes": self.pool, "peak_pool_bytes": self.pool}


@dataclass
class FakeJax:
    """The module: ``local_devices()``, ``live_arrays()``; ``array(shape)`` makes an array
    on the first device with the caller's line as its creation stack, ``free(array)`` drops
    it, ``temporary(size)`` is a buffer inside a computation (no array)."""

    devices: list[Device] = field(default_factory=lambda: [Device()])
    arrays: list[Array] = field(default_factory=list)
    __version__: str = "0.10.2-fake"

    def local_devices(self) -> list[Device]:
        return self.devices

    def live_arrays(self) -> list[Array]:
        return list(self.arrays)

    def array(self, shape: tuple[int, ...], depth: int = 1) -> Array:
        caller = sys._getframe(depth)
        stack = Traceback((Frame("/site-packages/jax/_src/array.py", "_new", 10),
                           Frame(caller.f_code.co_filename, caller.f_code.co_name,
                                 caller.f_lineno)))
        made = Array(Aval(shape), stack)
        self.devices[0].take(made.nbytes)
        self.arrays.append(made)
        return made

    def free(self, array: Array) -> None:
        self.arrays.remove(array)
        self.devices[0].give(array.nbytes)

    def temporary(self, size: int) -> None:
        self.devices[0].take(size)
        self.devices[0].give(size)

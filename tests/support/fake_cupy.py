"""A stand-in for CuPy's memory pools and hooks, so that the cupy_* probes run on CPU
machines. It follows CuPy's API as its sources define it (cupy/cuda/memory.pyx,
cupy/cuda/memory_hook.pyx):

- ``cupy.get_default_memory_pool()`` is a ``MemoryPool`` with ``malloc(size)``,
  ``used_bytes()``, ``free_bytes()``, ``total_bytes()`` and ``n_free_blocks()``; sizes are
  rounded up to 512 bytes; a freed block stays cached in the pool (``total_bytes`` keeps it)
  and serves the next request of its size; ``free_all_blocks()`` empties the cache;
- ``cupy.get_default_pinned_memory_pool()`` has ``n_free_blocks()``;
- ``cupy.cuda.get_allocator()`` is the pool's bound ``malloc`` unless ``set_allocator`` was
  called;
- ``cupy.cuda.MemoryHook``: entered with ``with`` (or ``__enter__``) into a thread-local
  registry by its ``name``, a second hook of the same name raising KeyError; the pool calls
  ``malloc_preprocess``/``malloc_postprocess`` (keywords ``device_id``, ``size``,
  ``mem_size``, ``mem_ptr``, ``pmem_id``) around every malloc and ``free_preprocess``/
  ``free_postprocess`` (``device_id``, ``mem_size``, ``mem_ptr``, ``pmem_id``) around every
  free, on the thread that allocates;
- ``cupy.cuda.is_available()``.
"""

from __future__ import annotations

import threading
import types
from collections import OrderedDict
from typing import Any

ROUND = 512
_hooks = threading.local()


def _registry() -> OrderedDict[str, Any]:
    found = getattr(_hooks, "memory_hooks", None)
    if found is None:
        found = _hooks.memory_hooks = OrderedDict()
    return found


class MemoryHook:
    name = "MemoryHook"

    def __enter__(self) -> MemoryHook:
        hooks = _registry()
        if self.name in hooks:
            raise KeyError(f"memory hook {self.name} already exists")
        hooks[self.name] = self
        return self

    def __exit__(self, *_: object) -> None:
        del _registry()[self.name]

    def malloc_preprocess(self, **kwargs: Any) -> None: ...
    def malloc_postprocess(self, **kwargs: Any) -> None: ...
    def free_preprocess(self, **kwargs: Any) -> None: ...
    def free_postprocess(self, **kwargs: Any) -> None: ...


class Pointer:
    def __init__(self, pool: MemoryPool, ptr: int, size: int) -> None:
        self.pool, self.ptr, self.size = pool, ptr, size

    def free(self) -> None:
        self.pool.free(self)


class MemoryPool:
    def __init__(self) -> None:
        self.in_use: dict[int, int] = {}
        self.cached: list[tuple[int, int]] = []
        self.next_ptr = 0x1000

    def malloc(self, size: int) -> Pointer:
        rounded = -(-size // ROUND) * ROUND
        for hook in list(_registry().values()):
            hook.malloc_preprocess(device_id=0, size=size, mem_size=rounded)
        cached = next((c for c in self.cached if c[1] == rounded), None)
        if cached is not None:
            self.cached.remove(cached)
            ptr = cached[0]
        else:
            ptr, self.next_ptr = self.next_ptr, self.next_ptr + rounded
        self.in_use[ptr] = rounded
        for hook in list(_registry().values()):
            hook.malloc_postprocess(device_id=0, size=size, mem_size=rounded, mem_ptr=ptr,
                                    pmem_id=id(self))
        return Pointer(self, ptr, rounded)

    def free(self, pointer: Pointer) -> None:
        for hook in list(_registry().values()):
            hook.free_preprocess(device_id=0, mem_size=pointer.size, mem_ptr=pointer.ptr,
                                 pmem_id=id(self))
        del self.in_use[pointer.ptr]
        self.cached.append((pointer.ptr, pointer.size))
        for hook in list(_registry().values()):
            hook.free_postprocess(device_id=0, mem_size=pointer.size, mem_ptr=pointer.ptr,
                                  pmem_id=id(self))

    def used_bytes(self) -> int:
        return sum(self.in_use.values())

    def free_bytes(self) -> int:
        return sum(size for _, size in self.cached)

    def total_bytes(self) -> int:
        return self.used_bytes() + self.free_bytes()

    def n_free_blocks(self) -> int:
        return len(self.cached)

    def free_all_blocks(self) -> None:
        self.cached.clear()


class PinnedMemoryPool:
    def __init__(self) -> None:
        self.free_blocks = 0

    def n_free_blocks(self) -> int:
        return self.free_blocks


def make(available: bool = True) -> types.SimpleNamespace:
    """A ``cupy`` module with its own pools."""
    pool, pinned = MemoryPool(), PinnedMemoryPool()
    state = {"allocator": pool.malloc}
    cuda = types.SimpleNamespace(
        MemoryHook=MemoryHook, is_available=lambda: available,
        get_allocator=lambda: state["allocator"],
        set_allocator=lambda allocator=None: state.__setitem__("allocator", allocator))
    # Its file stands for CuPy's package: the frames of its pools are CuPy's machinery, as
    # the real pools' (compiled, without Python frames) are none of the user's.
    return types.SimpleNamespace(cuda=cuda, get_default_memory_pool=lambda: pool,
                                 get_default_pinned_memory_pool=lambda: pinned,
                                 __version__="13.6.0-fake", __file__=__file__)

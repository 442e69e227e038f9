"""Shapes of growth that RSS alone judges or explains badly, built after leaks in released
extension modules: a leak served from free chunks of a fragmented heap (RSS flat for
thousands of calls while glibc's bytes in use grow), its twin that frees, a binding whose
parser keeps an arena per call (more malloc'd than touched), memory that RSS holds outside
malloc's bytes in use, and a bounded cache still filling on a slow step."""

from __future__ import annotations

import ctypes
import functools
import itertools
import mmap
import time

from bench.detection.registry import Case, Step, add, libc_handle, work

#: Native blocks kept alive by the fragmented cases (every other one of FRAGMENT_BLOCKS).
_KEPT: list[int] = []
#: 64,000 blocks of 80 B, every other one freed: about 3 MiB of free 96-byte chunks inside
#: memory the process already has resident, which a leak of 80 B a call uses up first.
FRAGMENT_BLOCKS = 64_000
#: A microsecond step: the target of the malloc witness.
SHORT_WORK = 50


def _fragment(libc: ctypes.CDLL) -> None:
    pointers = [libc.malloc(80) for _ in range(FRAGMENT_BLOCKS)]
    for pointer in pointers[1::2]:
        libc.free(pointer)
    _KEPT.extend(pointers[::2])


def _fragmented_native_leak() -> Step:
    libc = libc_handle()
    _fragment(libc)

    def step() -> None:
        work(SHORT_WORK)
        libc.malloc(80)  # the pointer is dropped

    return step


def _fragmented_native_twin() -> Step:
    libc = libc_handle()
    _fragment(libc)

    def step() -> None:
        work(SHORT_WORK)
        libc.free(libc.malloc(80))

    return step


def _parser_arena_leak() -> Step:
    """109 KiB malloc'd a call and never freed, of which 32 KiB is written: a parser's
    arena, sized for the worst case and filled as far as the document goes."""
    libc = libc_handle()

    def step() -> None:
        work()
        arena = libc.malloc(109 * 1024)
        libc.memset(arena, 1, 32 * 1024)

    return step


add(Case("leak_native_fragmented_80b", "leak", "native malloc", _fragmented_native_leak,
         probe="rss", rate=80.0,
         note="libc malloc(80) per microsecond call, never freed, in a heap fragmented "
              "beforehand (3 MiB of free 96 B chunks): RSS flat for ~32,000 calls"))
add(Case("clean_native_fragmented_twin", "clean", "alloc/free", _fragmented_native_twin,
         note="the same heap, libc malloc(80) + free per microsecond call"))
add(Case("leak_native_parser_arena", "leak", "native malloc", _parser_arena_leak,
         probe="rss", rate=32 * 1024.0,
         note="libc malloc(109 KiB) per call, 32 KiB of it written, never freed"))


#: Mappings kept by the outside-malloc case.
_MAPS: list[mmap.mmap] = []


def _mapped_outside_malloc() -> Step:
    """64 KiB mapped anonymously, written and kept per call: RSS grows while glibc's bytes in
    use stay flat, the shape of a fragmenting allocator (whose free chunks RSS holds) and of
    another allocator's mappings. The evidence must say the traced share is small and the
    rest lies outside malloc's bytes in use."""

    def step() -> None:
        work()
        block = mmap.mmap(-1, 64 * 1024)
        block.write(b"\x01" * (64 * 1024))
        _MAPS.append(block)

    return step


#: The slow step of the cache case: a text-metrics cache on a plotting call of ~25 ms.
SLOW_STEP_SECONDS = 0.025


def _lru_filling_slow_step() -> Step:
    """lru_cache(maxsize=4096) gaining 8 entries a call of a 25 ms step: full after 512
    calls (about 13 s), then flat. A run that ends before it is full must not call it a
    leak."""
    labels = itertools.count()

    @functools.lru_cache(maxsize=4096)
    def text_metrics(label: str, size: int) -> tuple[int, list[int]]:
        return len(label) * size, [size] * 8

    def step() -> None:
        began = time.perf_counter()
        while time.perf_counter() - began < SLOW_STEP_SECONDS:
            work(1000)
        for _ in range(8):
            text_metrics(f"tick {next(labels)}", 12)

    return step


add(Case("leak_mapped_outside_malloc", "leak", "native mmap", _mapped_outside_malloc,
         probe="rss", rate=64 * 1024.0,
         note="64 KiB anonymous mmap written and kept per call: RSS grows, malloc's bytes in "
              "use do not"))
add(Case("clean_lru_filling_slow_step", "clean", "bounded fill", _lru_filling_slow_step,
         note="lru_cache(maxsize=4096), 8 entries per 25 ms call: fills for 512 calls "
              "(~13 s), then flat"))

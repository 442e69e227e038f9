"""A failure's evidence says what share of the failing slope the traced allocations account
for, and what the rest is: native memory held in use, or memory outside malloc's bytes in
use (kept free, or mapped outside malloc)."""

from __future__ import annotations

import sys

import pytest

from pytest_membudget.probes.malloc import MallocProbe

glibc = pytest.mark.skipif(MallocProbe().unavailable() is not None,
                           reason="needs glibc's mallinfo2")


@glibc
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="libc.so.6")
def test_each_rest_is_named_with_its_share(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_rest="""
        import ctypes, mmap
        import pytest

        libc = ctypes.CDLL("libc.so.6")
        libc.malloc.restype = ctypes.c_void_p
        libc.malloc.argtypes = [ctypes.c_size_t]
        KEPT, MAPS, BUFFERS = [], [], []

        def native():
            pointer = libc.malloc(8192)
            ctypes.memset(pointer, 1, 8192)
            KEPT.append(pointer)

        def mapped():
            block = mmap.mmap(-1, 65536)
            block.write(b"x" * 65536)
            MAPS.append(block)

        @pytest.mark.membudget(rss=0)
        def test_native(membudget):
            membudget.run(native)

        @pytest.mark.membudget(rss=0)
        def test_mapped(membudget):
            membudget.run(mapped)

        @pytest.mark.membudget(rss=0)
        def test_python(membudget):
            membudget.run(lambda: BUFFERS.append(bytearray(8192)))

        @pytest.mark.membudget(rss=0)
        def test_numpy(membudget):
            import numpy
            # numpy reports its buffers to tracemalloc: traced, though malloc'd
            membudget.run(lambda: BUFFERS.append(numpy.ones(1024)))
    """)
    # A process of its own: RSS read in a worker that ran other tests first is served from
    # the free memory they left.
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:randomly")
    result.assert_outcomes(failed=4)
    result.stdout.fnmatch_lines([
        # "8 KiB/iter" where the slope is exactly 8,192 B, "8.02 KiB/iter" where not.
        "*explained: traced Python allocations account for * of rss's 8* KiB/iter (*%); "
        "the rest is native memory held in use: malloc's bytes in use grow 8* KiB/iter*",
    ])
    result.stdout.fnmatch_lines([
        "*explained: traced Python allocations account for * of rss's 64* KiB/iter (*%); "
        "malloc's bytes in use grow only *: the rest is memory outside malloc's bytes in use, "
        "either free memory the allocator keeps (fragmentation: try MALLOC_ARENA_MAX=2*",
    ])
    result.stdout.fnmatch_lines([
        "*explained: traced Python allocations account for 8.* KiB/iter of rss's * "
        "(*)",
    ])
    result.stdout.fnmatch_lines([
        "*explained: traced Python allocations account for 8.* KiB/iter of rss's * "
        "(*)",
    ])

"""Held-out cases: leaks and clean traps by mechanisms the corpus does not have, written after
the verdict's rules were frozen and never used to tune them. ``python -m bench.detection
--heldout`` runs them; their figures are reported apart from the corpus's (in-sample) ones.

Each step does the corpus's ordinary work (``_work``, about 0.3 ms) plus its leak or trap.
"""

from __future__ import annotations

import atexit
import ctypes
import io
import logging
import mmap
import re
import sqlite3
import struct
import sys
import tempfile
import warnings
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from bench.detection.registry import HELDOUT, REGISTRY, Case, Step
from bench.detection.registry import add as _add
from bench.detection.registry import work as _work


def _case(name: str, truth: str, family: str, make: Callable[[], Step], note: str,
          probe: str | None = None, rate: float | None = None,
          needs: tuple[str, ...] = ()) -> None:
    _add(Case(name=name, truth=truth, family=family, make=make, probe=probe, rate=rate,
              needs=needs, note=note, tags=(HELDOUT,)))


# ---------------------------------------------------------------------------------- leaks


def _logging_handler() -> Step:
    logger = logging.getLogger("membudget.heldout.handlers")
    logger.propagate = False

    def step() -> None:
        _work()
        logger.addHandler(logging.StreamHandler(io.StringIO()))

    def close() -> None:
        for handler in list(logger.handlers):
            logger.removeHandler(handler)

    step.close = close  # type: ignore[attr-defined]
    return step


_case("leak_logging_handler", "leak", "logging", _logging_handler, probe="rss",
      note="a StreamHandler (with its StringIO and lock) added to a logger each call")


def _numpy_view_base() -> Step:
    import numpy as np

    def step() -> None:
        _work()
        frame = np.ones(8192)  # 64 KiB
        REGISTRY.append(frame[:4])  # a 4-element view keeps the whole frame alive

    return step


_case("leak_numpy_view_base", "leak", "numpy views", _numpy_view_base, probe="rss",
      rate=65536.0, needs=("numpy",),
      note="a 4-element view of a fresh 64 KiB array kept each call: the view keeps its base")


def _sqlite_connections() -> Step:
    def step() -> None:
        _work()
        connection = sqlite3.connect(":memory:")
        connection.execute("create table t (x)")
        REGISTRY.append(connection)

    return step


_case("leak_sqlite_connections", "leak", "sqlite", _sqlite_connections, probe="rss",
      note="an in-memory sqlite connection with a table, kept open each call")


def _ctypes_buffers() -> Step:
    def step() -> None:
        _work()
        REGISTRY.append(ctypes.create_string_buffer(2048))

    return step


_case("leak_ctypes_buffers", "leak", "ctypes", _ctypes_buffers, probe="rss", rate=2048.0,
      note="a 2 KiB ctypes string buffer kept each call")


def _generator_closure() -> Step:
    def step() -> None:
        _work()

        def produce() -> Any:
            payload = [0] * 128  # ~1 KiB held by the suspended frame
            yield len(payload)

        generator = produce()
        next(generator)  # suspended: its frame and locals stay alive
        REGISTRY.append(lambda: generator)

    return step


_case("leak_generator_closure", "leak", "generators", _generator_closure, probe="rss",
      note="a suspended generator (its frame holds a 128-element list) kept by a closure")


def _exception_tracebacks() -> Step:
    def fail(data: list[int]) -> None:
        raise ValueError(len(data))

    def step() -> None:
        _work()
        try:
            fail([1] * 256)
        except ValueError as exc:
            REGISTRY.append(exc)  # its traceback keeps the frame, and the list, alive

    return step


_case("leak_exception_tracebacks", "leak", "exceptions", _exception_tracebacks, probe="rss",
      note="a caught exception kept each call: its traceback holds the frame's 256-item list")


def _atexit_callbacks() -> Step:
    callbacks: list[Callable[[], None]] = []

    def step() -> None:
        _work()
        state = bytearray(1024)

        def cleanup() -> None:
            state.clear()

        atexit.register(cleanup)
        callbacks.append(cleanup)

    def close() -> None:
        for callback in callbacks:
            atexit.unregister(callback)

    step.close = close  # type: ignore[attr-defined]
    return step


_case("leak_atexit_callbacks", "leak", "callbacks", _atexit_callbacks, probe="rss",
      note="an atexit callback registered each call, closing over a 1 KiB bytearray")


def _bytearray_extend() -> Step:
    buffer = bytearray()

    def step() -> None:
        _work()
        buffer.extend(b"\x01" * 1024)

    return step


_case("leak_bytearray_extend", "leak", "growing buffer", _bytearray_extend, probe="rss",
      rate=1024.0, note="one bytearray extended by 1 KiB each call (reallocated as it grows)")


def _warnings_registry() -> Step:
    counter = [0]

    def step() -> None:
        _work()
        counter[0] += 1
        warnings.warn(f"step {counter[0]}: {'x' * 200}", UserWarning, stacklevel=1)

    return step


_case("leak_warnings_registry", "leak", "warnings", _warnings_registry, probe="rss",
      note="a distinct warning each call: the warnings machinery keeps one entry per message "
           "(the module's __warningregistry__, or pytest's list of recorded warnings)")


def _mmap_kept() -> Step:
    def step() -> None:
        _work()
        region = mmap.mmap(-1, 65536)
        region.write(b"\x01" * 65536)
        REGISTRY.append(region)

    return step


_case("leak_mmap_kept", "leak", "mmap", _mmap_kept, probe="rss", rate=65536.0,
      note="an anonymous 64 KiB mmap, written, kept each call")


# ----------------------------------------------------------------------------- clean traps


def _struct_cache() -> Step:
    counter = [0]

    def step() -> None:
        _work()
        counter[0] += 1
        struct.calcsize(f"{counter[0] % 400}s")  # struct's cache is cleared at 100 formats

    return step


_case("clean_struct_cache", "clean", "stdlib caches", _struct_cache,
      note="struct formats from a set of 400: its 100-entry cache fills and is cleared")


def _re_cache() -> Step:
    counter = [0]

    def step() -> None:
        _work()
        counter[0] += 1
        re.compile(f"step{counter[0]}[a-z]+")  # re's cache evicts beyond its size

    return step


_case("clean_re_cache", "clean", "stdlib caches", _re_cache,
      note=f"a new regular expression each call: re's cache holds the last "
           f"{getattr(re, '_MAXCACHE', 512)} and evicts the oldest")


def _dict_bounded_keys() -> Step:
    table: dict[int, bytes] = {}
    counter = [0]

    def step() -> None:
        _work()
        counter[0] += 1
        table.setdefault(counter[0] % 200, b"\x01" * 2048)

    return step


_case("clean_dict_bounded_keys", "clean", "bounded fills", _dict_bounded_keys,
      note="a dict of 2 KiB values keyed by one of 200 keys: fills for 200 calls, then stops")


def _logging_handler_removed() -> Step:
    logger = logging.getLogger("membudget.heldout.removed")
    logger.propagate = False

    def step() -> None:
        _work()
        handler = logging.StreamHandler(io.StringIO())
        logger.addHandler(handler)
        logger.warning("step")
        logger.removeHandler(handler)
        handler.close()

    return step


_case("clean_logging_handler_removed", "clean", "logging", _logging_handler_removed,
      note="a handler added, used, removed and closed each call")


def _sqlite_closed() -> Step:
    def step() -> None:
        _work()
        connection = sqlite3.connect(":memory:")
        connection.execute("create table t (x)")
        connection.close()

    return step


_case("clean_sqlite_closed", "clean", "sqlite", _sqlite_closed,
      note="an in-memory sqlite connection opened, used and closed each call")


def _generator_exhausted() -> Step:
    def step() -> None:
        _work()

        def produce() -> Any:
            payload = [0] * 128
            yield from payload

        sum(produce())

    return step


_case("clean_generator_exhausted", "clean", "generators", _generator_exhausted,
      note="a generator run to its end each call")


def _mmap_closed() -> Step:
    def step() -> None:
        _work()
        region = mmap.mmap(-1, 65536)
        region.write(b"\x01" * 65536)
        region.close()

    return step


_case("clean_mmap_closed", "clean", "mmap", _mmap_closed,
      note="an anonymous 64 KiB mmap written and closed each call")


def _thread_pool_reused() -> Step:
    pool = ThreadPoolExecutor(max_workers=4)

    def step() -> None:
        _work()
        for future in [pool.submit(sum, range(100)) for _ in range(4)]:
            future.result()

    step.close = lambda: pool.shutdown(wait=True)  # type: ignore[attr-defined]
    return step


_case("clean_thread_pool_reused", "clean", "threads", _thread_pool_reused,
      note="one ThreadPoolExecutor(4) reused: its threads start on demand, then stay four")


def _tempfile_closed() -> Step:
    def step() -> None:
        _work()
        with tempfile.TemporaryFile() as handle:
            handle.write(b"\x01" * 4096)

    return step


_case("clean_tempfile_closed", "clean", "files", _tempfile_closed,
      note="a temporary file written and closed each call")


def _intern_bounded() -> Step:
    counter = [0]

    def step() -> None:
        _work()
        counter[0] += 1
        sys.intern(f"membudget-name-{counter[0] % 150}")

    return step


_case("clean_intern_bounded", "clean", "interning", _intern_bounded,
      note="strings interned from a set of 150 names")

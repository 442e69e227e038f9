"""What every detection case is made of, shared by the corpus (cases.py) and the held-out set
(heldout.py): the Case record, the registry of cases by name, the global list that leaking
cases keep their objects in, and the ordinary work each step does."""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

#: The tag of the held-out cases, written after the rules were frozen.
HELDOUT = "heldout"

Step = Callable[[], None]

#: Objects that leaking cases keep alive on purpose: the "global registry" of a real program.
REGISTRY: list[Any] = []

WORK_N = 7000


def work(n: int = WORK_N) -> int:
    values = [i * 3 for i in range(n)]
    return sum(values)


@dataclass(frozen=True)
class Case:
    name: str
    truth: str  # "leak" | "clean"
    family: str
    make: Callable[[], Step]
    probe: str | None = None  # probe expected to catch a leak
    rate: float | None = None  # nominal units per iteration (bytes, threads, fds)
    ladder: str | None = None  # "python" | "native" for the rate ladder
    needs: tuple[str, ...] = ()
    note: str = ""
    tags: tuple[str, ...] = field(default_factory=tuple)


CASES: dict[str, Case] = {}


def add(case: Case) -> None:
    if case.name in CASES:
        raise ValueError(f"duplicate case name {case.name!r}")
    if case.truth not in ("leak", "clean"):
        raise ValueError(f"case {case.name!r}: truth must be 'leak' or 'clean'")
    CASES[case.name] = case


def close_step(step: Step) -> None:
    """Stop what a step started (background threads); a no-op for most cases."""
    closer = getattr(step, "close", None)
    if closer is not None:
        closer()


def missing_requirements(case: Case) -> list[str]:
    """Modules a case needs that cannot be imported here."""
    import importlib.util

    return [module for module in case.needs if importlib.util.find_spec(module) is None]


_libc: ctypes.CDLL | None = None


def libc_handle() -> ctypes.CDLL:
    """libc through ctypes, with the signatures the cases call."""
    global _libc
    if _libc is None:
        libc = ctypes.CDLL(None)
        libc.malloc.restype = ctypes.c_void_p
        libc.malloc.argtypes = [ctypes.c_size_t]
        libc.free.restype = None
        libc.free.argtypes = [ctypes.c_void_p]
        libc.memset.restype = ctypes.c_void_p
        libc.memset.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t]
        _libc = libc
    return _libc

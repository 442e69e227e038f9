"""What a shape of a footprint corpus is, shared by both corpora (``shapes.py``, synthetic;
``libraries.py``, real libraries) and by the scripts that measure them.

A shape is a plain function called once per measured call. It declares the dominant kind of
memory at its peak (in the plugin's words: ``python``, ``native``, ``allocator_free``,
``file``, ``stacks``, ``other``) and whether that memory outlives the call (``retained``) or
not (``transient``). The line(s) of the shape that allocated most of what is alive at the
peak carry a trailing ``# PEAK LINE`` comment (where a library allocates, the shape's own
line that called it; where worker threads allocate, the workers' line). A retained shape
keeps its result in :data:`HELD` and drops its own previous entry first, so that a second
call (a warm-up's measured call, the plugin's traced rerun) replaces the first call's result
rather than adding to it.
"""

from __future__ import annotations

import importlib
import inspect
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MiB = 1 << 20
#: Files the setups make once and reuse (their names carry their sizes).
DATA_DIR = Path(tempfile.gettempdir()) / "membudget-footprint-bench"
PEAK_MARK = "# PEAK LINE"
#: The corpora by name, and the module that registers each one's shapes in ``SHAPES``.
CORPORA = {"synthetic": "shapes", "libraries": "libraries"}

#: Where retained shapes keep what they build (see the module's docstring).
HELD: dict[str, Any] = {}

Setup = Callable[[], tuple[Any, ...]]
#: An allocator's own figures, read beside glibc's (bytes, by name: ``in_use``, ...).
AllocatorStats = Callable[[], dict[str, int]]


@dataclass(frozen=True)
class Shape:
    """One shape of a corpus and what it declares about its peak."""

    name: str
    func: Callable[..., Any]
    #: The dominant kind of memory at the peak (None for a clean case).
    kind: str | None
    #: "transient" (freed before the call returns) or "retained" (None for a clean case).
    state: str | None
    setup: Setup | None = None
    #: Whether ``rss_rise`` at half the shape's rise must fail it (a clean case passes).
    fails: bool = True
    #: A module the shape needs that may be missing (the bench skips the shape without it).
    needs: str | None = None
    #: Measured by default (a shape outside the corpus runs only when named).
    in_corpus: bool = True
    #: The allocator that holds the shape's native memory where it is not glibc's malloc
    #: (its name as the measuring process reads it: which one a library uses can depend on
    #: how it was built and on the environment).
    allocator: Callable[[], str] | None = None
    #: Its own figures (``in_use``: bytes it has handed out), read by the ground truth.
    allocator_stats: AllocatorStats | None = None

    @property
    def doc(self) -> str:
        return inspect.cleandoc(self.func.__doc__ or "").split("\n\n")[0].replace("\n", " ")

    def arguments(self) -> tuple[Any, ...]:
        return self.setup() if self.setup is not None else ()

    def peak_lines(self) -> tuple[str, list[int]]:
        """The shape's source file and the numbers of its ``# PEAK LINE`` lines (nested
        functions included: a worker thread's line is the function's own)."""
        lines, first = inspect.getsourcelines(self.func)
        marked = [first + offset for offset, text in enumerate(lines)
                  if text.rstrip().endswith(PEAK_MARK)]
        return os.path.realpath(inspect.getsourcefile(self.func) or ""), marked

    def available(self) -> str | None:
        """Why the shape cannot run here, or None."""
        if self.needs is None:
            return None
        try:
            importlib.import_module(self.needs)
        except ImportError:
            return (f"{self.needs} is not installed "
                    f"(pip install -r bench/footprint/requirements.txt)")
        return None


Register = Callable[[Callable[..., Any]], Callable[..., Any]]


def registrar(into: dict[str, Shape]) -> Callable[..., Register]:
    """A ``@shape(kind, state, ...)`` decorator that registers functions in ``into``."""

    def shape(kind: str | None, state: str | None, *, setup: Setup | None = None,
              fails: bool = True, needs: str | None = None, in_corpus: bool = True,
              allocator: Callable[[], str] | None = None,
              allocator_stats: AllocatorStats | None = None) -> Register:
        def register(func: Callable[..., Any]) -> Callable[..., Any]:
            into[func.__name__] = Shape(func.__name__, func, kind, state, setup, fails, needs,
                                        in_corpus, allocator, allocator_stats)
            return func
        return register
    return shape


def load(corpus: str) -> dict[str, Shape]:
    """The shapes of a corpus by name (``synthetic`` or ``libraries``)."""
    if corpus not in CORPORA:
        raise SystemExit(f"unknown corpus {corpus!r}; known: {', '.join(CORPORA)}")
    shapes: dict[str, Shape] = importlib.import_module(CORPORA[corpus]).SHAPES
    return shapes


def corpus_names(shapes: dict[str, Shape]) -> list[str]:
    """The shapes measured by default, in order."""
    return [name for name, each in shapes.items() if each.in_corpus]


def data_file(name: str, write: Callable[[Path], None]) -> Path:
    """``DATA_DIR / name``, written once: to a private name first and renamed, so a run
    beside this one never reads half a file."""
    path = DATA_DIR / name
    if not path.exists():
        DATA_DIR.mkdir(parents=True, exist_ok=True)
        partial = DATA_DIR / f".{name}.{os.getpid()}"
        write(partial)
        partial.replace(path)
    return path

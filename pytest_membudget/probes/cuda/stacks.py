"""Whose line allocated a CUDA block, from the frames torch recorded with it.

The rule is the host evidence's (:mod:`pytest_membudget.frames`): a library line
shows the user's own line beneath it. Two things are CUDA's own:

- torch's Python frames are the allocation's machinery, passed over like pytest's, so that the
  line named is the first one outside torch (``torch/nn/modules/linear.py`` says nothing about
  whose ``Linear`` grew);
- torch records no Python frame for an allocation made on the autograd engine's thread, that
  is in backward: its ``frames`` are empty (``stacks="python"``) or C++ only (``"all"``, under
  ``torch::autograd::Engine::thread_main``). Newer torch may add ``forward_frames``, the
  forward's stack as ``traceback.format_stack`` strings, outermost first; their line is named
  as the forward whose backward allocated.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_membudget.frames import first_user, is_library, is_own

#: What a row of the evidence says about where its blocks came from.
PYTHON = "python"  # the Python stack of the allocation
BACKWARD = "backward"  # allocated in backward (forward_frames, or the autograd engine's C++)
UNFRAMED = "unframed"  # no Python frame, nothing saying where: backward or a thread of C++
#: torch's own Python code, in site-packages or a source checkout, on any platform.
_TORCH_DIRS = ("/torch/", "\\torch\\")
#: C++ frames of the autograd engine's threads (symbolised names, ``stacks="all"``).
_AUTOGRAD_ENGINE = "autograd::Engine"
_FORMATTED_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<name>[^\n]+)')

Frame = Mapping[str, Any]


@dataclass(frozen=True)
class Origin:
    """Where a block came from: its kind, the line named (``site``) and, where that line is a
    library's, the user's line beneath it (``via``)."""

    kind: str
    site: Frame | None = None
    via: Frame | None = None


def _filename(frame: Frame) -> str:
    return str(frame.get("filename", ""))


def is_python(frame: Frame) -> bool:
    """A Python frame, not a C++ one (C++ frames name ``.cpp``/``.h`` files, a shared
    library, or ``??`` with line 0 where the symboliser found nothing)."""
    return _filename(frame).endswith(".py")


def is_torch(filename: str) -> bool:
    return any(part in filename for part in _TORCH_DIRS)


def site_and_caller(frames: Sequence[Frame]) -> tuple[Frame | None, Frame | None]:
    """The line to name among Python ``frames`` (innermost first), and the user's line beneath
    it when it is a library's: the innermost frame outside torch and the framework, else the
    innermost outside the framework, else the innermost of all."""
    python = [f for f in frames if is_python(f)]
    outside = [f for f in python if not is_own(_filename(f))] or python
    if not outside:
        return None, None
    beyond_torch = [f for f in outside if not is_torch(_filename(f))]
    site = beyond_torch[0] if beyond_torch else outside[0]
    via = first_user(beyond_torch, _filename) if is_library(_filename(site)) else None
    return site, via


def forward_frames(block: Mapping[str, Any]) -> list[Frame]:
    """``forward_frames`` as frames, innermost first (torch keeps them as formatted strings,
    outermost first)."""
    texts = [t for t in block.get("forward_frames") or () if isinstance(t, str)]
    found: list[Frame] = [
        {"filename": m["file"], "line": int(m["line"]), "name": m["name"].strip()}
        for text in texts for m in _FORMATTED_FRAME.finditer(text)]
    return found[::-1]


def origin(block: Mapping[str, Any], frames: Sequence[Frame]) -> Origin:
    """Where ``block`` (with its allocation's ``frames``) came from."""
    site, via = site_and_caller(frames)
    if site is not None:
        return Origin(PYTHON, site, via)
    site, via = site_and_caller(forward_frames(block))
    if site is not None:
        return Origin(BACKWARD, site, via)
    if any(_AUTOGRAD_ENGINE in str(f.get("name", "")) for f in frames):
        return Origin(BACKWARD)
    return Origin(UNFRAMED)

"""Which lines allocated the CUDA blocks that grew: parsing of torch's allocator snapshot.

Pure: works on the dict that ``torch.cuda.memory._snapshot()`` returns, so it is tested on
CPU machines. A block carries frames when it was allocated while allocator history was
recorded, by this window or by an earlier recording that is still alive (an earlier test's,
the user's): the blocks that carried frames when the window opened are set aside, and the
live rest is the window's growth.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from pytest_membudget.evidence.frames import FRAMEWORK_PARTS

_INTERNAL = (
    os.sep + "torch" + os.sep,
    os.sep + "pytest_membudget" + os.sep,
    "??",
    *FRAMEWORK_PARTS,
)
#: Block states of allocated memory (torch's C++ names; its Python docstring says
#: "active_awaiting_free" for the second).
LIVE_STATES = ("active_allocated", "active_pending_free")


def user_frame(frames: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The innermost frame outside torch, pytest and this plugin (frames are innermost
    first); the innermost frame of all when every one is internal."""
    python = [(name, f) for f in frames if (name := str(f.get("filename", ""))).endswith(".py")]
    for name, frame in python:
        if not any(part in name for part in _INTERNAL):
            return frame
    return python[0][1] if python else (frames[0] if frames else None)


def block_key(block: Mapping[str, Any]) -> tuple[Any, ...]:
    """A block's identity across two snapshots: its address, size and allocating frames (a
    block freed and allocated again at the same address in the window has new frames)."""
    frames = tuple((f.get("filename"), f.get("line")) for f in block.get("frames") or ())
    return (block.get("address"), block.get("size"), frames)


def _live_framed(snapshot: Mapping[str, Any],
                 device: int | None) -> list[tuple[str, Mapping[str, Any]]]:
    found = []
    for segment in snapshot.get("segments", ()):
        if device is not None and segment.get("device", device) != device:
            continue
        pool = str(segment.get("segment_type", "?"))
        for block in segment.get("blocks", ()):
            if block.get("state") in LIVE_STATES and block.get("frames"):
                found.append((pool, block))
    return found


def framed_blocks(snapshot: Mapping[str, Any],
                  device: int | None = None) -> frozenset[tuple[Any, ...]]:
    """The keys of the live blocks that carry frames: taken when a window opens."""
    return frozenset(block_key(block) for _, block in _live_framed(snapshot, device))


def live_window_blocks(snapshot: Mapping[str, Any], top: int = 10, device: int | None = None,
                       exclude: Collection[tuple[Any, ...]] = ()) -> list[dict[str, Any]]:
    """Live blocks with frames, less those in ``exclude`` (live when the window opened),
    grouped by allocating line and pool, largest first."""
    groups: dict[tuple[str, int, str, str], list[int]] = {}
    for pool, block in _live_framed(snapshot, device):
        if exclude and block_key(block) in exclude:
            continue
        frame = user_frame(block["frames"])
        if frame is None:
            continue
        key = (str(frame.get("filename", "?")), int(frame.get("line", 0)),
               str(frame.get("name", "")), pool)
        entry = groups.setdefault(key, [0, 0])
        entry[0] += int(block.get("size", 0))
        entry[1] += 1
    rows: list[dict[str, Any]] = [
        {"file": f, "line": line, "function": name, "pool": pool, "bytes": size, "blocks": n}
        for (f, line, name, pool), (size, n) in groups.items()
    ]
    rows.sort(key=lambda r: int(r["bytes"]), reverse=True)
    return rows[:top]

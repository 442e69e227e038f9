"""Which lines allocated the CUDA blocks that grew: parsing of torch's allocator snapshot.

Pure: works on the dict that ``torch.cuda.memory._snapshot()`` returns, so it is tested on
CPU machines. With allocator history recorded from the start of the measured window, a block
that carries frames was allocated inside the window; if it is still active at the end, it is
part of the growth.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from pytest_membudget.attribution import FRAMEWORK_PARTS

_INTERNAL = (
    os.sep + "torch" + os.sep,
    os.sep + "pytest_membudget" + os.sep,
    "??",
    *FRAMEWORK_PARTS,
)
LIVE_STATES = ("active_allocated", "active_pending_free")


def user_frame(frames: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The innermost frame outside torch, pytest and this plugin (frames are innermost
    first); the innermost frame of all when every one is internal."""
    python = [(name, f) for f in frames if (name := str(f.get("filename", ""))).endswith(".py")]
    for name, frame in python:
        if not any(part in name for part in _INTERNAL):
            return frame
    return python[0][1] if python else (frames[0] if frames else None)


def live_window_blocks(snapshot: Mapping[str, Any], top: int = 10,
                       device: int | None = None) -> list[dict[str, Any]]:
    """Live blocks allocated while history was recorded, grouped by allocating line."""
    groups: dict[tuple[str, int, str, str], list[int]] = {}
    for segment in snapshot.get("segments", ()):
        if device is not None and segment.get("device", device) != device:
            continue
        pool = str(segment.get("segment_type", "?"))
        for block in segment.get("blocks", ()):
            frames = block.get("frames") or ()
            if block.get("state") not in LIVE_STATES or not frames:
                continue
            frame = user_frame(frames)
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

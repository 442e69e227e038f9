"""Which lines allocated the CUDA blocks that grew: parsing of torch's allocator snapshot.

Pure: works on the dict that ``torch.cuda.memory._snapshot()`` returns, so it is tested on
CPU machines. The window's growth is the blocks live at its end that were not live at its
start, compared by address, size and frames with the snapshot taken when the window opened:
a block allocated before (unrecorded, or under an earlier recording that is still alive) is
set aside whether or not it carries frames, and a block of the window is reported whether or
not torch recorded a Python frame for it (it records none in backward: see
:mod:`pytest_membudget.probes.cuda.stacks`).

Shapes read, as torch 2.0 to 2.13 write them: segments with ``device``, ``address``,
``stream``, ``segment_type`` and ``blocks``; blocks with ``address``, ``size``, ``state`` and
``frames`` (torch 2.1 and later), or with only ``size``, ``state`` and ``history``, the newest
allocation first (torch 2.0: a block's address is then its segment's plus the sizes before
it). Keys not read, on purpose: the trace (``device_traces``, with ``time_us``,
``compile_context``, ``user_metadata`` and ``pool_id``), ``segment_pool_id`` and
``is_expandable`` (an expandable segment's blocks are read like any other's), and
``requested_size`` (the evidence counts the bytes a block holds).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Mapping
from typing import Any, TypedDict

from pytest_membudget.probes.cuda.stacks import Frame, Origin, origin

#: Block states of allocated memory (torch's C++ names; its Python docstring says
#: "active_awaiting_free" for the second).
LIVE_STATES = ("active_allocated", "active_pending_free")
Key = tuple[Any, ...]


class _BlockPlace(TypedDict):
    origin: str
    file: str | None
    line: int | None
    function: str | None
    pool: str


class BlockPlace(_BlockPlace, total=False):
    """Where blocks came from (``origin``: stacks.PYTHON, BACKWARD or UNFRAMED) and their
    pool: a line (``file``, ``line``, ``function``, and ``via_*`` for the user's line beneath
    a library's), or, for blocks without a Python frame, none (``file`` None) and the
    ``stream`` they were allocated on."""

    stream: int | None
    via_file: str
    via_line: int
    via_function: str


class BlockRow(BlockPlace):
    """The blocks of one place, with their bytes and count: a row of the evidence."""

    bytes: int
    blocks: int


def block_frames(block: Mapping[str, Any]) -> list[Frame]:
    """The frames of the allocation that made ``block``, innermost first."""
    if "frames" in block:
        return list(block["frames"] or ())
    history = block.get("history") or ()  # torch 2.0: the newest allocation first
    return list(history[0].get("frames") or ()) if history else []


def live_blocks(snapshot: Mapping[str, Any],
                device: int | None) -> Iterator[tuple[Mapping[str, Any], Mapping[str, Any], Any]]:
    """(segment, block, address) of each live block, of ``device`` only where it is given."""
    for segment in snapshot.get("segments", ()):
        if device is not None and segment.get("device", device) != device:
            continue
        address = segment.get("address")
        for block in segment.get("blocks", ()):
            here = block.get("address", address)
            if block.get("state") in LIVE_STATES:
                yield segment, block, here
            if address is not None:
                address += int(block.get("size", 0))


def block_key(block: Mapping[str, Any], address: Any) -> Key:
    """A block's identity across two snapshots: its address, size and allocating frames (a
    block freed and allocated again at the same address in the window has new frames)."""
    frames = tuple((f.get("filename"), f.get("line")) for f in block_frames(block))
    return (address, block.get("size"), frames)


def live_keys(snapshot: Mapping[str, Any], device: int | None = None) -> frozenset[Key]:
    """The keys of every live block: taken when a window opens."""
    return frozenset(block_key(block, address)
                     for _, block, address in live_blocks(snapshot, device))


def block_row(found: Origin, segment: Mapping[str, Any]) -> BlockPlace:
    """The place a block is grouped under: where it came from, and its pool."""
    row: BlockPlace = {"origin": found.kind, "file": None, "line": None, "function": None,
                       "pool": str(segment.get("segment_type", "?"))}
    if found.site is not None:
        row["file"] = str(found.site.get("filename", "?"))
        row["line"] = int(found.site.get("line", 0))
        row["function"] = str(found.site.get("name", ""))
    else:  # unframed blocks are told apart by the stream they were allocated on
        row["stream"] = segment.get("stream")
    if found.via is not None:
        row["via_file"] = str(found.via.get("filename", "?"))
        row["via_line"] = int(found.via.get("line", 0))
        row["via_function"] = str(found.via.get("name", ""))
    return row


def live_window_blocks(snapshot: Mapping[str, Any], top: int = 10, device: int | None = None,
                       exclude: Collection[Key] = ()) -> list[BlockRow]:
    """Live blocks less those in ``exclude`` (live when the window opened), grouped by where
    they came from and their pool, largest first. A row names a line (``file``, ``line``,
    ``function``, and ``via_*`` for the user's line beneath a library's), or, for blocks without
    a Python frame, none (``file`` None, and the ``stream``); ``origin`` says which."""
    return grouped(((block, segment) for segment, block, address in live_blocks(snapshot, device)
                    if not (exclude and block_key(block, address) in exclude)), top)


def grouped(blocks: Iterable[tuple[Mapping[str, Any], Mapping[str, Any]]],
            top: int = 10) -> list[BlockRow]:
    """(block, its segment) pairs grouped by where the block came from and its pool, with
    their bytes and count, largest first."""
    groups: dict[tuple[tuple[str, object], ...], tuple[BlockPlace, list[int]]] = {}
    for block, segment in blocks:
        place = block_row(origin(block, block_frames(block)), segment)
        _, entry = groups.setdefault(tuple(place.items()), (place, [0, 0]))
        entry[0] += int(block.get("size", 0))
        entry[1] += 1
    rows: list[BlockRow] = [{**place, "bytes": size, "blocks": n}
                            for place, (size, n) in groups.values()]
    rows.sort(key=lambda r: r["bytes"], reverse=True)
    return rows[:top]

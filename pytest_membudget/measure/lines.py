"""The lines a peak watch names: how much of a rise (or how many threads started) went to
each line of the user's code while it ran, and how they are listed."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pytest_membudget.catalog import PAGE_SLACK
from pytest_membudget.evidence.peakrecords import WatchedLine
from pytest_membudget.evidence.records import FEW
from pytest_membudget.frames import is_own, source_line
from pytest_membudget.measure.stacks import Where

#: Where a rise is seen: the frames of the line at work (see frames_of) and, where that line
#: is another thread's the measured thread waited for, the measured thread's waiting line.
Seen = tuple[Where | None, Where | None, bool, Where | None]


@dataclass
class _Line:
    bytes: float = 0.0
    frames: tuple[Any, ...] = ()
    #: Whether the thread was waiting for others (a lock, a future) when the rise was seen.
    waiting: bool = False
    #: Where the measured thread waited while other threads ran this line (a pool's).
    waited_at: Where | None = None


@dataclass
class Lines:
    """What went to each line: bytes of a rise, or threads started."""

    by_key: dict[tuple[Any, ...], _Line] = field(default_factory=dict)

    def add(self, where: Seen, amount: float, threads: bool = False) -> None:
        """Add ``amount`` (bytes of rise, or, with ``threads``, threads started) to the
        line running now."""
        inner, user, waiting, waited_at = where
        if inner is None:
            return  # the thread's stack could not be read: no line to name
        if is_own(inner[0]):
            if threads or user is None or amount < PAGE_SLACK:
                return  # the plugin's own work between calls (a sample), not the workload's
            # A rise read in this plugin's code, between calls, is the workload's from
            # PAGE_SLACK on (the plugin's own work touches far less): the call's that just
            # returned, C code that held the GIL from its start to its end (one json.loads),
            # first read here. It goes to the user's line that made the call.
            inner = user
        key = (user, inner)
        line = self.by_key.get(key)
        if line is None:
            line = self.by_key[key] = _Line(frames=key)
        line.bytes += amount
        line.waiting = line.waiting or waiting
        line.waited_at = line.waited_at or waited_at

    def merge(self, other: Lines) -> None:
        """Add ``other``'s counts to these (threads the measured thread announced)."""
        for key, line in other.by_key.items():
            self.by_key.setdefault(key, _Line(frames=key)).bytes += line.bytes

    def threads(self) -> list[WatchedLine]:
        """The lines that started threads, most first."""
        return [{**_describe(line), "threads": round(line.bytes)} for line in sorted(
            self.by_key.values(), key=lambda line: line.bytes, reverse=True)]

    def rose(self) -> list[WatchedLine]:
        """The rise by function of the user's code, largest first: each at its line that
        rose most, with the function's other lines beside it. Sampling sees the line that
        runs, which in a loop moves between the lines of its body."""
        functions: dict[tuple[Any, ...], list[_Line]] = {}
        for line in self.by_key.values():
            user, inner = line.frames
            shown = user or inner
            key = (shown[0], shown[2]) if shown is not None else ()
            functions.setdefault(key, []).append(line)
        found = []
        for lines in functions.values():
            # One line ran with different libraries beneath it: its bytes are one figure.
            by_line: dict[int, float] = {}
            for line in lines:
                shown = line.frames[0] or line.frames[1]
                number = shown[1] if shown is not None else 0
                by_line[number] = by_line.get(number, 0.0) + line.bytes
            lines.sort(key=lambda line: line.bytes, reverse=True)
            entry = _describe(lines[0])
            entry["bytes"] = round(sum(by_line.values()))
            others = sorted(((number, size) for number, size in by_line.items()
                             if number != entry.get("line")), key=lambda item: -item[1])
            if others:
                entry["other_lines"] = [{"line": number, "bytes": round(size)}
                                        for number, size in others[:FEW]]
            found.append(entry)
        return sorted(found, key=lambda entry: entry["bytes"], reverse=True)


def _describe(line: _Line) -> WatchedLine:
    user, inner = line.frames
    found: WatchedLine = {"bytes": round(line.bytes)}
    shown = user or inner
    if shown is not None:
        found.update({"file": shown[0], "line": shown[1], "function": shown[2],
                      "code": source_line(shown[0], shown[1])})
    if inner is not None and user is not None and inner[:2] != user[:2]:
        found.update({"inner_file": inner[0], "inner_line": inner[1],
                      "inner_function": inner[2]})
    if line.waiting:
        found["waiting"] = True
    if line.waited_at is not None:
        found.update({"waited_file": line.waited_at[0], "waited_line": line.waited_at[1]})
    return found

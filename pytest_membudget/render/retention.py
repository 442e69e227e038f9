"""Text for what keeps the growth alive (retaining paths) and for the native stacks that
allocated it, from the evidence's data."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pytest_membudget.render.session import cache_text
from pytest_membudget.render.units import fmt, short_path
from pytest_membudget.vocabulary import RootKind

#: Native frames shown per stack, innermost first.
NATIVE_FRAMES = 6


def _where(root: Mapping[str, Any]) -> str:
    file = root.get("file")
    if not file:
        return ""
    return f" ({short_path(str(file))}:{root['line']})" if root.get("line") else ""


def root_text(root: Mapping[str, Any]) -> str:
    """The start of a path: ``module tests/test_x.py``, ``closure of make.<locals>.step``..."""
    kind, name = root.get("kind"), str(root.get("name", ""))
    if kind == RootKind.MODULE.value:
        file = root.get("file")
        return f"module {short_path(str(file)) if file else name}"
    if kind == RootKind.CLASS.value:
        return f"class {name}"
    if kind == RootKind.CLOSURE.value:
        return f"closure of {name}{_where(root)}"
    if kind == RootKind.FRAME.value:
        return f"local of {name}{_where(root)}"
    return "held by C code only"


def path_text(path: Mapping[str, Any]) -> str:
    """``module tests/test_x.py: KEEP (list) -> [3] (dict) -> ['rows'] (list)``."""
    steps = [f"{s['step']} ({s['type']})" if s.get("step") else f"({s['type']})"
             for s in path.get("steps", ())]
    return f"{root_text(path.get('root', {}))}: " + " -> ".join(steps)


def path_lines(paths: Sequence[Mapping[str, Any]]) -> list[str]:
    """A path (or why there is none) for each type that grew most."""
    if not paths:
        return []
    lines = ["  why they are still alive (a shortest reference path from a root):"]
    for entry in paths:
        head = f"    {entry['type']} (+{entry['count']}): "
        if entry.get("path"):
            path = entry["path"]
            lines.append(head + path_text(path) + f"  [{path['root']['kind']}]")
            if path.get("cache"):
                lines.append(f"      through a bounded cache: {cache_text(path['cache'])}")
        else:
            lines.append(head + f"no path: {entry.get('reason', 'none found')}")
    return lines


def frame_text(frame: Mapping[str, Any]) -> str:
    file = frame.get("file") or "?"
    line = f":{frame['line']}" if frame.get("line") else ""
    return f"{frame.get('function', '?')} ({short_path(str(file))}{line})"


def native_lines(native: Mapping[str, Any]) -> list[str]:
    """The native stacks of the memory still allocated after the native rerun, or why there
    are none."""
    if native.get("missing"):
        return [f"  native stacks: {native['missing']}"]
    stacks = native.get("stacks") or []
    if not stacks:
        return [f"  native stacks (memray, {native.get('iterations', 0)} more iterations): "
                f"{native.get('reason', 'no allocation made in them is still live')}"]
    lines = [f"  native stacks of memory still allocated after {native['iterations']} more "
             "iterations (memray):"]
    for stack in stacks:
        lines.append(f"    +{fmt('heap', stack['bytes'])} in {stack['allocations']} "
                     f"allocations ({stack['allocator']})")
        lines += [f"        {frame_text(f)}" for f in stack["frames"][:NATIVE_FRAMES]]
        if stack.get("python"):
            lines.append(f"      called from {frame_text(stack['python'])}")
    return lines


def native_top_text(native: Mapping[str, Any]) -> str:
    """The top native stack in one line: its innermost frames and the Python line below."""
    stacks = native.get("stacks") or []
    if not stacks:
        return ""
    top = stacks[0]
    frames = " <- ".join(str(f.get("function", "?")) for f in top["frames"][:3])
    python = f" from {frame_text(top['python'])}" if top.get("python") else ""
    return f"native +{fmt('heap', top['bytes'])}: {frames}{python}"

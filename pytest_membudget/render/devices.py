"""Text for the evidence of the device stacks beside CUDA: JAX's arrays by the line that
created them and the jitted functions that compiled again with what changed, JAX's device
allocator at its peak, and CuPy's live allocations by line. Reads data; decides nothing."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from pytest_membudget.render.retention import path_lines
from pytest_membudget.render.units import fmt, short_path
from pytest_membudget.vocabulary import Recompile

#: What to do about each kind of change that made a jitted function compile again.
REMEDIES: dict[str, str] = {
    Recompile.SHAPE.value: "pad or bucket the shapes (round the size up to one of a few "
    "buckets, e.g. powers of two, and mask the padding) so that the calls share a few "
    "shapes",
    Recompile.DTYPE.value: "pass the argument with one dtype on every call (cast it before "
    "the call)",
    Recompile.WEAK_TYPE.value: "pass the same kind of value on every call: a Python scalar is "
    "weakly typed and a jnp array is not (jnp.asarray(x, dtype) on every call)",
    Recompile.STATIC.value: "this static argument takes a new value on each call: make it a "
    "traced argument (drop it from static_argnums / static_argnames), or give it a few values",
    Recompile.PYTREE.value: "the arguments' structure changes between calls (a list's length, "
    "a dict's keys): keep one structure, padded to a fixed length",
    Recompile.REDEFINED.value: "the jitted function is a new object on each call (jax.jit, a "
    "lambda or functools.partial made inside the loop): create it once, outside the loop",
    Recompile.NEW_FUNCTION.value: "each call compiles a function JAX has not seen: create the "
    "jitted function once, outside the loop",
    Recompile.CONTEXT.value: "JAX's configuration or a context manager differs between the "
    "calls: set it once, outside the loop",
    Recompile.OTHER.value: "JAX gave no explanation (a library's function, or an operation run "
    "eagerly on a new shape): look at the shapes the calling line passes, and pad or bucket "
    "them",
}
_SITE_PACKAGES = ("site-packages/", "dist-packages/")
#: What a change is of, by its kind.
CHANGED = {Recompile.SHAPE.value: "shape", Recompile.DTYPE.value: "dtype",
           Recompile.WEAK_TYPE.value: "weak type", Recompile.STATIC.value: "value",
           Recompile.PYTREE.value: "structure", Recompile.CONTEXT.value: "setting"}
#: JAX's path to a leaf of (args, kwargs): ``[0][1]`` is the second positional argument.
_POSITIONAL = re.compile(r"\[0\]\[(?P<index>\d+)\](?P<rest>.*)")
_KEYWORD = re.compile(r"\[1\]\['(?P<name>[^']+)'\](?P<rest>.*)")


def argument(path: str) -> str:
    """An argument as JAX names it (its name, or its path in the call's arguments), for a
    person: ``x``, ``argument 1``, ``argument n``."""
    match = _POSITIONAL.fullmatch(path)
    if match:
        return f"argument {match['index']}{match['rest']}"
    match = _KEYWORD.fullmatch(path)
    if match:
        return f"argument {match['name']}{match['rest']}"
    return path


def where(file: object, line: object, function: object = None) -> str:
    """``test_x.py:12 in step``; a library's file from its package on."""
    text = str(file)
    for part in _SITE_PACKAGES:
        if part in text:
            text = text.split(part, 1)[1]
            break
    else:
        text = short_path(text)
    return f"{text}:{line}" + (f" in {function}" if function else "")


def jax_lines(evidence: Mapping[str, Any]) -> list[str]:
    """The JAX evidence of a failing growth budget (the ``jax`` entry)."""
    found = evidence.get("jax") or {}
    lines: list[str] = []
    if "arrays" in found:
        lines += array_lines(found["arrays"])
    if "compiles" in found:
        lines += compile_lines(found["compiles"])
    return lines


def array_lines(arrays: Mapping[str, Any]) -> list[str]:
    rows = arrays.get("rows") or []
    if not rows:
        return ["  live JAX arrays: none made in the window is still alive"]
    lines = [f"  live JAX arrays made in the window and still alive ({arrays['count']}), by the "
             "line that created them (jax.Array.traceback):"]
    for row in rows:
        head = (where(row["file"], row["line"], row.get("function")) if row.get("file")
                else "no creation stack (JAX recorded none)")
        lines.append(f"    {head}: {row['count']} arrays, {fmt('jax_array_bytes', row['bytes'])}")
        if row.get("code"):
            lines.append(f"        {row['code']}")
        if row.get("library_file"):
            lines.append("      made in " + where(row["library_file"], row["library_line"],
                                                  row.get("library_function")))
        shapes = ", ".join(f"{s['count']} x {s['aval']} ({fmt('jax_array_bytes', s['bytes'])})"
                           for s in row.get("shapes", ()))
        more = f", and {row['more_shapes']} more shapes" if row.get("more_shapes") else ""
        lines.append(f"      {shapes}{more}")
    lines += path_lines(arrays.get("paths") or [])
    return lines


def compile_lines(compiles: Mapping[str, Any]) -> list[str]:
    rows = compiles.get("functions") or []
    if not rows:
        return ["  JAX compilations: none in the window"]
    lines = [f"  JAX compilations in the window ({compiles['total']}), by function:"]
    for row in rows:
        call = (f", called at {where(row['call_file'], row['call_line'])}"
                if row.get("call_file") else "")
        defined = (f", defined at {where(row['defined_file'], row['defined_line'])}"
                   if row.get("defined_file") else "")
        lines.append(f"    {row['function']}: {row['compiles']} compilations{call}{defined}")
        if row.get("call_code"):
            lines.append(f"        {row['call_code']}")
        for change in row.get("changes", ())[:4]:
            lines.append(f"      {CHANGED.get(change['kind'], 'type')} of "
                         f"{argument(change['arg'])} changed: now {change['now']}, before "
                         f"{change['before']}")
        kind = row.get("kind", Recompile.OTHER.value)
        lines.append(f"      remedy: {REMEDIES.get(kind, REMEDIES[Recompile.OTHER.value])}")
    if not compiles.get("explanations", True):
        lines.append("    (this JAX has no jax_explain_cache_misses option: no explanation of "
                     "what changed)")
    return lines


def jax_peak_lines(evidence: Mapping[str, Any]) -> list[str]:
    """JAX's device allocator at its peak (a failing jax_device_* peak or rise)."""
    device = evidence.get("jax_device")
    if not device:
        return []
    before, after = device.get("mark_before"), device.get("mark_after")
    lines = [f"  JAX's device allocator: high-water mark {fmt('jax_device_used', before)} "
             f"before the run, {fmt('jax_device_used', after)} after it"]
    if before is not None and after is not None and after <= before:
        lines.append("    the mark did not move: an earlier test or JAX's start-up went higher, "
                     "so the run's highest point is its highest sample (between calls)")
    rows = device.get("arrays")
    if rows:
        lines.append(f"  arrays alive at the highest sample "
                     f"({fmt('jax_device_used', device.get('highest_sample'))} in use), by "
                     "line (what compiled computations hold inside a call is not an array):")
        for row in rows:
            head = (where(row["file"], row["line"], row.get("function")) if row.get("file")
                    else "no creation stack")
            lines.append(f"    {head}: {row['count']} arrays, "
                         f"{fmt('jax_array_bytes', row['bytes'])}")
            if row.get("library_file"):
                lines.append("      made in " + where(row["library_file"], row["library_line"]))
    return lines


def cupy_lines(evidence: Mapping[str, Any]) -> list[str]:
    """CuPy's live allocations of the window by line (a failing cupy_* budget)."""
    found = evidence.get("cupy")
    if not found:
        return []
    if found.get("problem"):
        return [f"  no CuPy allocation lines: {found['problem']}"]
    rows = found.get("rows") or []
    if not rows:
        return ["  CuPy allocations: none made in the window is still alive"]
    lines = ["  CuPy allocations made in the window and still alive, by line (memory hook):"]
    for row in rows:
        head = where(row["file"], row["line"], row.get("function")) if row.get("file") else (
            "no Python frame")
        lines.append(f"    {head}: {row['count']} blocks, {fmt('cupy_used', row['bytes'])}")
        if row.get("library_file"):
            lines.append("      made in " + where(row["library_file"], row["library_line"]))
    return lines

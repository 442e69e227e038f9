"""What made a jitted function trace and compile again: JAX's own explanation of a tracing
cache miss (the ``jax_explain_cache_misses`` log), read into data.

Pure: works on the text JAX logs, so it is tested on CPU machines. The text names the call
site, the function and where it is defined, and for the closest key seen before, what differs:
argument types (``* at x, now f32[4] and before f32[3]``), the pytree (a static argument's new
value is a new ``Static(val=...)``), or the tracing context. A function JAX never saw, made
again on the same line, is a function created anew on each call (a jit inside the loop).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from pytest_membudget.probes.records import Change, Explanation
from pytest_membudget.vocabulary import Recompile

HEADER = "TRACING CACHE MISS"
_CALLSITE = re.compile(r"TRACING CACHE MISS at (?P<site>.+?)(?: \((?P<caller>[^()]*)\))?:\s*$")
_FOR = re.compile(r"^\s*for (?P<name>\S+)(?: defined at (?P<defined>\S+))?\s*$")
_NEVER = re.compile(r"^\s*(?P<name>\S+) id=\d+(?: defined at (?P<defined>\S+))?\s*$")
_TYPE = re.compile(r"^\s*\* at (?P<arg>.+?), now (?P<now>\S+) and before (?P<before>\S+?)"
                   r"(?:https?://\S*)?\s*$")
_TREE = re.compile(r"^\s*\* at input path (?P<arg>\S+), now (?P<now>.+?) and before "
                   r"(?P<before>.+?), so (?P<why>.+)$")
_CONTEXT = re.compile(r"^\s*\* (?P<arg>.+?) differs: now (?P<now>.+) and before (?P<before>.+)$")
_STATIC = re.compile(r"Static\(val=(?P<value>.*)\)$")
_SHORT = re.compile(r"^(?P<dtype>[A-Za-z]+\d*(?:<[^>]*>)?)\[(?P<shape>[^\]]*)\]"
                    r"(?:\{weak_type=(?P<weak>True|False)\})?")
REDEFINED = "being re-defined repeatedly"


def _site(text: str) -> tuple[str | None, int | None]:
    """'file.py:12' or 'file.py:12:19' -> ('file.py', 12)."""
    match = re.match(r"^(?P<file>.+?):(?P<line>\d+)(?::\d+)?$", text.strip())
    return (match["file"], int(match["line"])) if match else (text.strip() or None, None)


def parse(text: str) -> Explanation | None:
    """One explanation as data (None for a text that is not one): the call site, the
    function and where it is defined, the kind of change and each change."""
    lines = text.splitlines()
    if not lines or not lines[0].startswith(HEADER):
        return None
    found: Explanation = {"function": None, "kind": Recompile.OTHER.value, "changes": []}
    head = _CALLSITE.match(lines[0])
    if head:
        found["call_file"], found["call_line"] = _site(head["site"])
    for line in lines[1:]:
        _read_line(line, found)
    if found["changes"] or found["kind"] != Recompile.OTHER.value:
        return found
    if "Tracing context" in text:
        found["kind"] = Recompile.CONTEXT.value
    return found


def _read_line(line: str, found: Explanation) -> None:
    for pattern in (_FOR, _NEVER):
        match = pattern.match(line)
        if match and found["function"] is None:
            found["function"] = match["name"]
            if match["defined"]:
                found["defined_file"], found["defined_line"] = _site(match["defined"])
            if pattern is _NEVER:
                found["kind"] = Recompile.NEW_FUNCTION.value
            return
    if REDEFINED in line:
        found["kind"] = Recompile.REDEFINED.value
        return
    readers: tuple[tuple[re.Pattern[str], Callable[[re.Match[str]], Change]], ...] = (
        (_TREE, _tree_change), (_TYPE, _type_change), (_CONTEXT, _context_change))
    for pattern, read in readers:
        match = pattern.match(line)
        if match:
            change = read(match)
            found["changes"].append(change)
            found["kind"] = strongest(found["kind"], change["kind"])
            return


def _type_change(match: re.Match[str]) -> Change:
    now, before = _SHORT.match(match["now"]), _SHORT.match(match["before"])
    change: Change = {"arg": match["arg"], "now": match["now"], "before": match["before"],
                      "kind": Recompile.OTHER.value}
    if now and before:
        if now["dtype"] != before["dtype"]:
            change["kind"] = Recompile.DTYPE.value
        elif now["shape"] != before["shape"]:
            change["kind"] = Recompile.SHAPE.value
        elif now["weak"] != before["weak"]:
            change["kind"] = Recompile.WEAK_TYPE.value
    return change


def _tree_change(match: re.Match[str]) -> Change:
    now, before = _STATIC.search(match["now"]), _STATIC.search(match["before"])
    if now and before:
        return {"arg": match["arg"], "now": now["value"], "before": before["value"],
                "kind": Recompile.STATIC.value}
    return {"arg": match["arg"], "now": match["now"], "before": match["before"],
            "kind": Recompile.PYTREE.value, "why": match["why"]}


def _context_change(match: re.Match[str]) -> Change:
    return {"arg": match["arg"], "now": match["now"], "before": match["before"],
            "kind": Recompile.CONTEXT.value}


#: When one call changes several things, the one the remedy must address first.
_ORDER = [Recompile.REDEFINED, Recompile.NEW_FUNCTION, Recompile.STATIC, Recompile.SHAPE,
          Recompile.DTYPE, Recompile.WEAK_TYPE, Recompile.PYTREE, Recompile.CONTEXT,
          Recompile.OTHER]


def strongest(first: str, second: str) -> str:
    rank = {kind.value: index for index, kind in enumerate(_ORDER)}
    return first if rank.get(first, len(_ORDER)) <= rank.get(second, len(_ORDER)) else second

"""How a retaining path reads: the root that holds it, and each step from one object to the
next (a key, an index, an attribute, a variable), in the words the object's own code uses."""

from __future__ import annotations

import sys
import types
from collections import deque
from dataclasses import dataclass
from typing import Any

from pytest_membudget.evidence.caches import is_lru_cache
from pytest_membudget.evidence.records import RootInfo
from pytest_membudget.vocabulary import RootKind

#: Longest name quoted in a line of the evidence (a key in a retaining path's step, a command
#: in a process table); a longer one is cut.
NAME_WIDTH = 60


@dataclass(frozen=True, slots=True)
class Root:
    """Where a path starts. ``name``: the module, class or function, the local variable, or
    the type of the object held by C code; ``holder``: the object itself (a module, a class,
    a function, a frame), read for the first step's name."""

    kind: RootKind
    name: str
    holder: object = None
    variable: str = ""
    file: str = ""
    line: int = 0

    def describe(self) -> RootInfo:
        found: RootInfo = {"kind": self.kind.value, "name": self.name}
        file, line = self.file, self.line
        if isinstance(self.holder, types.ModuleType):
            file = getattr(self.holder, "__file__", None) or ""
        elif isinstance(self.holder, type):
            file = getattr(sys.modules.get(self.holder.__module__), "__file__", None) or ""
        elif isinstance(self.holder, types.FunctionType):
            code = self.holder.__code__
            file, line = code.co_filename, code.co_firstlineno
        if file:
            found["file"] = file
        if line:
            found["line"] = line
        return found

    def first_step(self, prefix: list[object]) -> str:
        """The name by which the root holds ``prefix[-1]``: a global's, a class attribute's,
        a closure variable's (through its tuple and cell), a local's."""
        holder = self.holder
        if self.kind is RootKind.FRAME:
            return self.variable
        if self.kind is RootKind.NATIVE:
            return ""
        if isinstance(holder, types.ModuleType):
            return _key_of(vars(holder), prefix[0]) or "?"
        if isinstance(holder, type):
            if len(prefix) < 2:
                return "__dict__"
            return _key_of(prefix[0], prefix[1]) or "?"
        if isinstance(holder, types.FunctionType):
            if len(prefix) < 3:
                return "__closure__"
            cells = holder.__closure__ or ()
            index = next((i for i, c in enumerate(cells) if c is prefix[1]), None)
            names = holder.__code__.co_freevars
            return names[index] if index is not None and index < len(names) else "?"
        return "?"


def root_of_frame(frame: types.FrameType, variable: str) -> Root:
    code = frame.f_code
    return Root(RootKind.FRAME, code.co_qualname if hasattr(code, "co_qualname")
                else code.co_name, frame, variable, code.co_filename, frame.f_lineno)


def object_type(obj: object) -> str:
    cls = type(obj)
    module = cls.__module__
    return cls.__qualname__ if module == "builtins" else f"{module}.{cls.__qualname__}"


def _key_of(mapping: Any, value: object) -> str | None:
    """The key under which ``mapping`` holds ``value``, as a person would write it."""
    try:
        for key, item in list(mapping.items()):
            if item is value:
                return key if isinstance(key, str) else None
    except Exception:  # a mapping that cannot be read while it is walked: no name
        return None
    return None


def clip(text: str, width: int = NAME_WIDTH) -> str:
    """``text``, cut to ``width`` characters (ending in ``...``) where it is longer."""
    return text if len(text) <= width else text[: width - 3] + "..."


def label(above: object, obj: object) -> str:
    """How ``above`` refers to ``obj``: ``['key']``, ``[3]``, ``.name``, ``__defaults__``..."""
    if isinstance(above, dict):
        return _dict_label(above, obj)
    if isinstance(above, (list, tuple, deque)):
        index = next((i for i, item in enumerate(above) if item is obj), None)
        return f"[{index}]" if index is not None else "(item)"
    if isinstance(above, (set, frozenset)):
        return "(member)"
    if isinstance(above, types.CellType):
        return "(cell contents)"
    if is_lru_cache(above):
        return "(cache entry)"
    if isinstance(above, (types.GeneratorType, types.CoroutineType)):
        frame = getattr(above, "gi_frame", None) or getattr(above, "cr_frame", None)
        name = _key_of(frame.f_locals, obj) if frame is not None else None
        return f"(local {name})" if name else "(frame)"
    return _attribute_label(above, obj)


def _dict_label(above: dict[Any, Any], obj: object) -> str:
    try:
        for key, value in list(above.items()):
            if value is obj:
                return f"[{clip(repr(key))}]"
            if key is obj:
                return "(key)"
    except Exception:  # changed while read (another thread): no name
        pass
    return "(item)"


_ATTRIBUTES = ("__dict__", "__defaults__", "__kwdefaults__", "__closure__", "__globals__",
               "__self__", "__func__", "__wrapped__", "__code__", "__class__")


def _attribute_label(above: object, obj: object) -> str:
    for name in _ATTRIBUTES:
        try:
            if getattr(above, name, None) is obj:
                return name
        except Exception:  # a property that raises: not the step
            continue
    try:
        attributes = vars(above)
    except TypeError:
        attributes = {}
    found = _key_of(attributes, obj)
    if found is None:
        for cls in type(above).__mro__:
            for slot in getattr(cls, "__slots__", ()):
                if isinstance(slot, str) and getattr(above, slot, None) is obj:
                    return "." + slot
        return "(referent)"
    return "." + found

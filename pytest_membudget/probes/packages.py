"""Which package a frame's file belongs to: a device stack's own code (JAX's, CuPy's) is its
machinery, never the line a person looks for, wherever the package is installed."""

from __future__ import annotations

import os
import sys


def package_dirs(names: tuple[str, ...]) -> tuple[str, ...]:
    """The directories of the packages ``names``, as imported here and as any installation
    lays them out (``site-packages/jax/``)."""
    found: list[str] = []
    for name in names:
        module = sys.modules.get(name)
        where = getattr(module, "__file__", None)
        if where:
            found.append(os.path.dirname(where) + os.sep)
    return tuple(found)


def in_packages(filename: str, names: tuple[str, ...]) -> bool:
    """Whether ``filename`` is in one of the packages ``names`` (imported, or installed
    under site-packages or dist-packages)."""
    if filename.startswith(package_dirs(names)):
        return True
    return any(f"{root}{os.sep}{name}{os.sep}" in filename or f"{root}/{name}/" in filename
               for root in ("site-packages", "dist-packages") for name in names)

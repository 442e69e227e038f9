"""Whose code a frame is: moved to :mod:`pytest_membudget.frames`, a layer below the probes
that use it too. These names are re-exported for the modules still to move their imports."""

from __future__ import annotations

from pytest_membudget.frames import is_library, is_own, is_user_frame, is_wait, source_line

__all__ = ["is_library", "is_own", "is_user_frame", "is_wait", "source_line"]

"""The garbage collector around the window: freeze what came before, collect before samples."""

from __future__ import annotations

import gc

from pytest_membudget.interpreter import gc_facts, session_froze
from pytest_membudget.vocabulary import GcPolicy


class GarbageCollection:
    """The window's gc policy. ``collect``: everything alive before the window is frozen out
    of the collector's reach, and each window sample is preceded by a collection that only
    walks what the window made. Evidence must see every object again, so the freeze is lifted
    before it, and always at the end. Where this interpreter's freeze does not do what the
    plugin assumes of it (see :mod:`pytest_membudget.interpreter`), nothing is frozen: each
    collection then walks the whole heap."""

    def __init__(self, policy: GcPolicy, freezes: bool | None = None) -> None:
        self.collect = policy is GcPolicy.COLLECT
        self.freezes = gc_facts().freezes if freezes is None else freezes
        self.frozen = False

    def open_window(self) -> None:
        # Objects the session froze itself (gc.freeze() in a conftest, before forking
        # workers) would be unfrozen with the window's: then nothing is frozen, and each
        # collection walks the whole heap instead.
        if self.collect and self.freezes and not session_froze():
            # Garbage from before the window is frozen too: it stays as it is, a constant
            # that no slope sees, and a full collection here (tens of ms on a large heap,
            # on every test) is saved.
            gc.freeze()
            self.frozen = True

    def release(self) -> None:
        if self.frozen:
            # Not refrozen here (interpreter.refreeze_own): a full collection per window.
            gc.unfreeze()
            self.frozen = False

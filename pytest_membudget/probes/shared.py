"""A source read once per sample for every probe of a run that uses it (one device's allocator
statistics, the process tree), kept while any probe holds it. Each holder says which of the
source's work it needs, so that the source does only the work someone reads."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any, ClassVar, TypeVar

Source = TypeVar("Source", bound="SharedSource")


class SharedSource:
    """Reference-counted by its holders. ``uses`` name integer attributes of the source
    (``stat_users``, ``root_users``, ...) that count the holders needing that work."""

    #: The live sources by key; every subclass has its own.
    _shared: ClassVar[dict[Hashable, Any]]

    def __init_subclass__(cls) -> None:
        super().__init_subclass__()
        cls._shared = {}

    def __init__(self, key: Hashable) -> None:
        self.key = key
        self.users = 0

    @classmethod
    def acquire(cls: type[Source], key: Hashable, make: Callable[[], Source],
                **uses: bool) -> Source:
        source: Source | None = cls._shared.get(key)
        if source is None or not source.current():
            source = cls._shared[key] = make()
        source.users += 1
        for use, needed in uses.items():
            setattr(source, use, getattr(source, use) + needed)
        return source

    def release(self, **uses: bool) -> None:
        self.users -= 1
        for use, needed in uses.items():
            setattr(self, use, getattr(self, use) - needed)
        if self.users <= 0:
            self.close()
            if self._shared.get(self.key) is self:
                del self._shared[self.key]

    def current(self) -> bool:
        """Whether this source still measures what its key names (e.g. after a fork)."""
        return True

    def close(self) -> None:
        """When the last holder lets go."""

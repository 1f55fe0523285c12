"""In-process caches of a :class:`~app.kernel.db.Database`: a typed registry and a small LRU.

A service declares its cache once, at module level, as a :class:`Slot` (a name and how to
build the value for a database); ``SLOT.of(db)`` returns the value, typed, built on first
use. The values live in ``db.caches``, so two databases in one process (tests) never see
each other's entries; a cache must stay correct with other processes writing.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from app.kernel.db import Database

T = TypeVar("T")


class Slot(Generic[T]):
    """One cache of every :class:`Database`: ``build(db)`` makes its value on first use."""

    __slots__ = ("build", "name")

    def __init__(self, name: str, build: Callable[[Database], T]) -> None:
        self.name = name
        self.build = build

    def __repr__(self) -> str:
        return f"Slot({self.name!r})"

    def of(self, db: Database) -> T:
        """The value of this cache for ``db`` (built on first use; two threads may both build
        it, and one result wins)."""
        found: T | None = db.caches.get(self)
        if found is None:
            found = db.caches.setdefault(self, self.build(db))
        return found

    def clear(self, db: Database) -> None:
        """Forget ``db``'s value (the next :meth:`of` builds a new one)."""
        db.caches.pop(self, None)


class LRU:
    """A small thread-safe LRU map (at most ``size`` entries)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._data: OrderedDict[Any, Any] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Any) -> Any:
        with self._lock:
            value = self._data.get(key)
            if value is not None:
                self._data.move_to_end(key)
            return value

    def take(self, key: Any) -> Any:
        """Remove and return the entry (None if absent): the caller owns it exclusively."""
        with self._lock:
            return self._data.pop(key, None)

    def put(self, key: Any, value: Any) -> None:
        with self._lock:
            self._data[key] = value
            self._data.move_to_end(key)
            while len(self._data) > self.size:
                self._data.popitem(last=False)

    def __contains__(self, key: Any) -> bool:
        with self._lock:
            return key in self._data

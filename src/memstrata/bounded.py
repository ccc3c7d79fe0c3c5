"""A map for per-process facts about users (a vector count, "has an index") that a
long-running server must not keep for every user it ever served: the least recently
written entries are dropped past ``maxsize``. Only for facts that can be read again: a
dropped entry costs one more read, never a wrong answer."""

from __future__ import annotations

from collections import OrderedDict
from typing import TypeVar

__all__ = ["RecentDict"]

K = TypeVar("K")
V = TypeVar("V")


class RecentDict(OrderedDict[K, V]):
    """An ``OrderedDict`` holding at most ``maxsize`` entries, the most recently set."""

    def __init__(self, maxsize: int) -> None:
        if maxsize < 1:
            raise ValueError(f"maxsize must be at least 1, got {maxsize}")
        super().__init__()
        self.maxsize = maxsize

    def __setitem__(self, key: K, value: V) -> None:
        super().__setitem__(key, value)
        self.move_to_end(key)
        while len(self) > self.maxsize:
            self.popitem(last=False)

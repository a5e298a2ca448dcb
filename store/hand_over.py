"""Rows this process has just written, kept for its own first read of them.

When the API runs the turns (make run's default), a Responses turn's first model call reads back the
settings and the input its create request wrote a moment before: a round trip to the store, on the way
to the model, for rows this process holds. A hand-over keeps what was written, as it was written, and
gives it to the first read here, once; every other read (a later one, another process's) goes to the
store. Whoever changes a kept row drops it first, so a hand-over never answers with less than the store.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")

HANDED_OVER = 1_000
"""How many written rows nobody here has read yet are kept: a separate worker runs the turns, say."""


class HandOver(Generic[K, V]):
    def __init__(self, most: int = HANDED_OVER) -> None:
        self._kept: OrderedDict[K, V] = OrderedDict()
        self._most = most

    def keep(self, key: K, value: V) -> None:
        self._kept[key] = value
        if len(self._kept) > self._most:
            self._kept.popitem(last=False)

    def take(self, key: K) -> V | None:
        """The kept value, once."""
        return self._kept.pop(key, None)

    def drop(self, key: K) -> None:
        self._kept.pop(key, None)

    def drop_if(self, unwanted: Callable[[V], bool]) -> None:
        for key in [key for key, value in self._kept.items() if unwanted(value)]:
            del self._kept[key]

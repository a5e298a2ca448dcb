"""Rows this process has just written, kept for its own first read of them.

When the API runs the turns (make run's default), a Responses turn's first model call reads back the
settings and the input its create request wrote a moment before: a round trip to the store, on the way
to the model, for rows this process holds. A hand-over keeps what was written, as it was written, and
gives it to the first read here, once; every other read (a later one, another process's) goes to the
store. Whoever changes a kept row drops it first, so a hand-over never answers with less than the store.

What is kept is bounded by count and by size, the oldest going first: rows nobody here reads (a separate
worker runs the turns) must not pile up, and one begun turn can carry a megabyte of input.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")

HANDED_OVER = 1_000
"""How many written rows nobody here has read yet are kept: a separate worker runs the turns, say."""
HANDED_OVER_BYTES = 32 * 1024 * 1024
"""About how many bytes of them are kept. A hand-over saves one store round trip per turn: it needs to hold only
what is written between a create and its first model call (a burst of creates), which is a few MB even at
1,000 turns of ordinary input; a few turns of the largest inputs fit too. Beyond it the oldest go to the store."""


def json_size(value: Any) -> int:
    """About how many bytes `value` (JSON-ready data: what a row is written with) takes: its text counted, a
    fixed small cost for everything else. Cheap next to the write it follows."""
    if isinstance(value, str):
        return len(value) + 2
    if isinstance(value, dict):
        return 2 + sum(json_size(key) + json_size(item) for key, item in value.items())
    if isinstance(value, list | tuple):
        return 2 + sum(json_size(item) for item in value)
    return 8


class HandOver(Generic[K, V]):
    def __init__(self, size: Callable[[V], int], most: int = HANDED_OVER, most_bytes: int = HANDED_OVER_BYTES) -> None:
        self._kept: OrderedDict[K, tuple[V, int]] = OrderedDict()
        self._size = size
        self._most = most
        self._most_bytes = most_bytes
        self.kept_bytes = 0
        """What the kept values take, by `size`."""

    def keep(self, key: K, value: V) -> None:
        """Keep `value` for the first read of `key`; not at all if it alone is bigger than the whole budget."""
        self.drop(key)
        size = self._size(value)
        if size > self._most_bytes:
            return
        self._kept[key] = (value, size)
        self.kept_bytes += size
        while len(self._kept) > self._most or self.kept_bytes > self._most_bytes:
            self.kept_bytes -= self._kept.popitem(last=False)[1][1]

    def take(self, key: K) -> V | None:
        """The kept value, once."""
        kept = self._kept.pop(key, None)
        if kept is None:
            return None
        self.kept_bytes -= kept[1]
        return kept[0]

    def drop(self, key: K) -> None:
        self.take(key)

    def drop_if(self, unwanted: Callable[[V], bool]) -> None:
        for key in [key for key, (value, _) in self._kept.items() if unwanted(value)]:
            self.drop(key)

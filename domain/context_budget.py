"""Keeping a turn's prior context within DA_MAX_HISTORY_BYTES: the oldest messages go first, and a tool result
never stays without the call it answers."""

from __future__ import annotations

from domain.content import ToolResponseMessage
from domain.turn_settings import ContextMessage


def context_bytes(context: list[ContextMessage]) -> int:
    return sum(_size(message) for message in context)


def _size(message: ContextMessage) -> int:
    return len(message.model_dump_json())


def oldest_dropped(context: list[ContextMessage], budget: int) -> list[ContextMessage]:
    """The context within `budget` bytes, its oldest messages dropped first (the context itself when it fits)."""
    total = context_bytes(context)
    if total <= budget:
        return context
    kept = list(context)
    while kept and total > budget:
        total -= _size(kept.pop(0))
    while kept and isinstance(kept[0], ToolResponseMessage):
        kept.pop(0)
    return kept

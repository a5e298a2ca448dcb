"""The conversation a model (or a guard model) sees: instructions, the session's earlier turns in
chronological order, then this turn so far — in the chat-completions format.

Read from the store, not passed in: a turn's inputs stay small however long its history grows.
"""

from __future__ import annotations

from typing import Any

from providers import openai_format
from store.repository import Store


async def conversation(store: Store, session_id: str, turn_id: str, instructions: str) -> list[dict[str, Any]]:
    found = await store.turn_with_history(session_id, turn_id)
    if found is None:
        raise LookupError(f"Turn {turn_id} not found in the store (was its session deleted?)")
    current, history = found
    messages = openai_format.system_message(instructions)
    for turn in history:
        messages += openai_format.turn_messages(turn.input_messages, turn.steps)
    return messages + openai_format.turn_messages(current.input_messages, current.steps)

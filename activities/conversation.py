"""The conversation a model (or a guard model) sees: instructions, the session's earlier turns in
chronological order, then this turn so far — in the chat-completions format.

Read from the store, not passed in: a turn's inputs stay small however long its history grows.
"""

from __future__ import annotations

from typing import Any

from providers import openai_format
from store.repository import Store


async def conversation(store: Store, session_id: str, turn_id: str, instructions: str) -> list[dict[str, Any]]:
    current = await store.get_turn(session_id, turn_id)
    if current is None:
        raise LookupError(f"Turn {turn_id} not found in the store (was its session deleted?)")
    messages = openai_format.system_message(instructions)
    for turn in await store.completed_turns(session_id, before=current.started_at):
        messages += openai_format.turn_messages(turn.input_messages, turn.steps)
    return messages + openai_format.turn_messages(current.input_messages, current.steps)

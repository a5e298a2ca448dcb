"""The conversation a model (or a guard model) sees: instructions, the session's earlier turns in
chronological order, then this turn so far — in the chat-completions format."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from domain.content import InputMessage
from domain.turns import Step
from providers import openai_format
from store.repository import Store


async def conversation(
    store: Store,
    session_id: str,
    turn_started_at: datetime,
    instructions: str,
    input_messages: Sequence[InputMessage],
    steps: Sequence[Step],
) -> list[dict[str, Any]]:
    messages = openai_format.system_message(instructions)
    for turn in await store.completed_turns(session_id, before=turn_started_at):
        messages += openai_format.turn_messages(turn.input_messages, turn.steps)
    return messages + openai_format.turn_messages(input_messages, steps)

"""The conversation a model (or a guard model) sees: instructions, a window of the session's earlier
turns in chronological order, then this turn so far — in the chat-completions format.

Read from the store, not passed in: a turn's inputs stay small however long its history grows.
Earlier turns are kept from the newest back while they fit in `max_history_bytes` (of stored
JSON), so neither the read nor the model's context grows with the session; this turn is always
whole (its tool calls and results must stay paired).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from compaction.summary import summary_message
from domain.agents import AgentConfig
from domain.turn_settings import TurnSettings
from providers import openai_format
from store.repository import Store


@dataclass(frozen=True)
class Conversation:
    messages: list[dict[str, Any]]
    agent_config: AgentConfig
    """The config of the turn's agent, as stored (or as the request carried it)."""
    earlier: list[dict[str, Any]]
    """The part of `messages` from the session's earlier turns (a summary of the older ones first, if any)."""


async def conversation(
    store: Store,
    session_id: str | None,
    turn_id: str,
    max_history_bytes: int,
    agent_config: AgentConfig | None = None,
    compaction: bool = False,
) -> Conversation:
    """`agent_config`: the config a request from an earlier release carried; otherwise the stored one.
    `compaction`: sessions may have been compacted (DA_SESSION_COMPACT_THRESHOLD): the latest summary stands
    for the turns before the turn that made it."""
    found = await store.turns.conversation_window(session_id, turn_id, max_history_bytes) if session_id else None
    if found is None:
        raise LookupError(f"Turn {turn_id} not found in the store (was its session deleted?)")
    current, history, stored_config = found
    config = agent_config or stored_config
    if config is None:
        raise LookupError(f"Turn {turn_id}'s agent is not in the store (was it deleted?)")
    earlier: list[dict[str, Any]] = []
    compacted = None
    if compaction and session_id:  # a query per model call, made only where sessions compact
        compacted = await store.compactions.session_compaction(session_id, current.started_at)
    if compacted is not None:
        since = compacted.started_at
        history = [turn for turn in history if turn.started_at >= since and turn.turn_id != current.turn_id]
        earlier += openai_format.context_messages([summary_message(compacted.summary)])
    for turn in history:
        earlier += openai_format.turn_messages(turn.input_messages, turn.steps)
    messages = openai_format.system_message(config.instructions) + earlier
    messages += openai_format.turn_messages(current.input_messages, current.steps)
    return Conversation(messages, config, earlier)


async def detached_conversation(
    store: Store, turn_id: str, settings: TurnSettings, compaction: bool = False, first_model_call: bool = False
) -> list[dict[str, Any]]:
    """A detached turn's conversation: the settings' instructions, the prior context the API built
    (a response chain, a conversation, replayed input), then this turn so far. `compaction`: the turn may
    have compacted (workflows/compaction.py), and then the summary stands for the prior context.
    `first_model_call`: no step of the turn is written yet (Store.detached_context)."""
    found = await store.turns.detached_context(turn_id, first_model_call)
    if found is None:
        raise LookupError(f"Turn {turn_id} not found in the store (was it deleted?)")
    current, context = found
    compacted = await store.compactions.turn_compaction(turn_id) if compaction else None
    if compacted is not None:  # the turn's compaction step summarised the prior context: the summary stands for it
        context = [summary_message(compacted["summary"])]
    messages = openai_format.system_message(settings.instructions)
    messages += openai_format.context_messages(context)
    messages += openai_format.turn_messages(current.input_messages, current.steps)
    return messages

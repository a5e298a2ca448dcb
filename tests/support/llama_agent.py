"""llama-stack-client 0.2.12's `Agent` called as its users call it, with types that say so.

Its `create_turn` is annotated to take the client's pydantic message models, though it sends them as JSON and
its documentation passes plain dicts; and to return `Iterator[chunk] | Turn` whichever `stream` is given.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from llama_stack_client.types.agents.agent_turn_response_stream_chunk import AgentTurnResponseStreamChunk
from llama_stack_client.types.agents.turn import Turn


def user_messages(content: str) -> list[Any]:
    """A turn's input as the client's documentation writes it: one user message, a plain dict."""
    return [{"role": "user", "content": content}]


def streamed(turn: Iterator[AgentTurnResponseStreamChunk] | Turn) -> Iterator[AgentTurnResponseStreamChunk]:
    """The chunks of a turn created with `stream=True` (the default)."""
    assert not isinstance(turn, Turn)
    return turn

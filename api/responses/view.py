"""What the router needs of the renderer (items.py, stream.py) and of conversations, in one place.

A response is rendered from its row and its turn's stored events, so every API process renders it the same.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from api.runtime import Runtime
from store.responses import ResponseRecord


async def response_object(runtime: Runtime, record: ResponseRecord) -> dict[str, Any]:
    """The Response object as it stands (status, output, usage), rendered from the stored events."""
    raise NotImplementedError


async def output_items(runtime: Runtime, record: ResponseRecord) -> list[dict[str, Any]] | None:
    """The response's output items once its segment has ended; None while it runs."""
    raise NotImplementedError


async def segment_after(runtime: Runtime, record: ResponseRecord) -> int:
    """The id of the turn's last event before this response's segment (0 for the turn's first segment)."""
    raise NotImplementedError


def sse(runtime: Runtime, record: ResponseRecord, starting_after: int | None) -> AsyncIterator[bytes]:
    """The response's stream events after sequence number `starting_after` (all without it), live to its end."""
    raise NotImplementedError


async def conversation_items(runtime: Runtime, tenant: str, conversation_id: str) -> list[dict[str, Any]] | None:
    """The conversation's items oldest first, finished responses settled into it first; None if unknown."""
    raise NotImplementedError

"""What every request handler needs, created once per process by the app's lifespan."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Request

from activities.early_inference import EarlyInference
from api.streams.event_hub import EventHub
from api.streams.stream_slots import StreamSlots
from api.turn_gateway import TurnGateway
from configuration.settings import Settings
from store.repository import Store
from tool_runtime.catalog import ToolCatalog


async def _nothing_to_settle(services: Services, tenant: str, conversation_id: str) -> None:
    """Without the Responses routes no response writes into a conversation, so there is nothing to append."""


@dataclass(frozen=True)
class Services:
    settings: Settings
    store: Store
    turns: TurnGateway
    tools: ToolCatalog
    events: EventHub
    streams: StreamSlots
    settle_conversation: Callable[[Services, str, str], Awaitable[None]] = _nothing_to_settle
    """Called with (services, tenant, conversation_id) before a conversation's items are read or added: appends
    the items of the conversation's finished responses that are not in it yet (docs/design.md,
    "Conversations"), so every reader sees them in order."""
    early_inference: EarlyInference | None = None
    """With the worker in this process: the first model calls it begins while their workflows start."""


async def get_services(request: Request) -> Services:
    """`async` like every dependency that does not block: FastAPI runs a plain function on its thread
    pool, a thread hop on the request's path (0.7 ms of a turn create's latency over four of them)."""
    services: Services = request.app.state.services
    return services


ServicesDep = Annotated[Services, Depends(get_services)]

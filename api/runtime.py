"""What every request handler needs, created once per process by the app's lifespan."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Request

from api.event_hub import EventHub
from api.stream_slots import StreamSlots
from api.turn_gateway import TurnGateway
from settings import Settings
from store.repository import Store
from tool_runtime.catalog import ToolCatalog


@dataclass(frozen=True)
class Runtime:
    settings: Settings
    store: Store
    turns: TurnGateway
    tools: ToolCatalog
    events: EventHub
    streams: StreamSlots


def get_runtime(request: Request) -> Runtime:
    return request.app.state.runtime


RuntimeDep = Annotated[Runtime, Depends(get_runtime)]

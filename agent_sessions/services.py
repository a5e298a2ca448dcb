"""What the session service needs from its caller: the API process's `Services`, or the worker's own."""

from __future__ import annotations

from typing import Protocol

from configuration.settings import Settings
from store.repository import Store
from tool_runtime.catalog import ToolCatalog
from turn_client.starter import TurnStarter


class SessionServices(Protocol):
    @property
    def settings(self) -> Settings: ...

    @property
    def store(self) -> Store: ...

    @property
    def turns(self) -> TurnStarter: ...

    @property
    def tools(self) -> ToolCatalog:
        """Its outbound policy judges an agent's MCP servers."""
        ...

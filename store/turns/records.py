"""What the store's operations return and raise: pages, stored events, a turn's own tools, conflicts and limits."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, TypeVar

from domain.agents import AgentToolGroup, ToolConfig
from domain.turns import Turn, TurnStatus

FINAL_STATUSES = [status.value for status in TurnStatus if status.is_final]


class TurnConflict(Exception):
    """The session already has a turn that is running or awaiting input."""

    def __init__(self, session_id: str, turn_id: str, status: str) -> None:
        super().__init__(
            f"Session {session_id} already has turn {turn_id} ({status}); "
            "resume it (if awaiting input) or wait for it to finish before starting a new turn."
        )
        self.turn_id = turn_id
        self.status = status


class LimitReached(Exception):
    """A configured cap (sessions per agent, turns per session, toolgroups per tenant) is reached."""


@dataclass(frozen=True)
class TurnTools:
    """A turn's own toolgroups and tool configuration; None where the turn uses the agent's."""

    toolgroups: list[AgentToolGroup] | None = None
    tool_config: ToolConfig | None = None


@dataclass(frozen=True)
class UnstartedTurn:
    """A turn recorded as running that may never have had a workflow (see `Store.unstarted_turns`)."""

    agent_id: str | None
    """None for a detached turn, which the sweep cannot start (its plan is not stored): it fails it."""
    tenant: str
    turn: Turn
    tools: TurnTools


@dataclass(frozen=True)
class StoredEvent:
    event_id: int
    body: dict[str, Any]


@dataclass(frozen=True)
class EventsWritten:
    """One commit's new events of a turn, with the turn's last event id before them: a reader that has
    seen exactly up to `after` can take `events` as they are, without reading them back."""

    turn_id: str
    after: int
    events: list[StoredEvent]


T = TypeVar("T")


@dataclass(frozen=True)
class Page(Generic[T]):
    items: list[T]
    has_more: bool


@dataclass(frozen=True)
class BegunTurn:
    """A detached turn as Store.begin_detached_turn wrote it (its rows' JSON), for the first read of it here
    (store/hand_over.py)."""

    input_messages: list[Any]
    context_messages: list[Any]
    started_at: datetime

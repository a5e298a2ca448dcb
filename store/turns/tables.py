"""Rows of agents, sessions, turns and what hangs off a turn: steps, events, settings, pending calls and sealed
credentials, and toolgroups. Every dialect's turn is a row here (a Responses turn or an Agents API session
turn too), so streams, resumes and retention serve them all."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column

from store.schema import DEFAULT_TENANT, Base, EventId


class AgentRow(Base):
    """An agent; its sessions, turns, steps and events belong to its tenant through it."""

    __tablename__ = "agents"
    __table_args__ = (Index("ix_agents_tenant_order", "tenant_id", "created_at"),)

    agent_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(String(64), server_default=DEFAULT_TENANT)
    config: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_at: Mapped[datetime]


class SessionRow(Base):
    __tablename__ = "sessions"

    session_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    agent_id: Mapped[str] = mapped_column(ForeignKey("agents.agent_id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(Text)
    started_at: Mapped[datetime]
    active_turn_id: Mapped[str | None] = mapped_column(String(64))
    """The turn that is running or awaiting input; a session runs one turn at a time."""


class TurnRow(Base):
    __tablename__ = "turns"
    __table_args__ = (
        Index("ix_turns_session_order", "session_id", "started_at"),
        Index("ix_turns_status_started", "status", "started_at"),  # the sweep of unstarted turns
    )

    turn_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    session_id: Mapped[str | None] = mapped_column(ForeignKey("sessions.session_id", ondelete="CASCADE"))
    agent_id: Mapped[str | None] = mapped_column(String(64))
    """Both NULL for a detached turn (a Responses turn), which belongs to no agent or session."""
    tenant_id: Mapped[str | None] = mapped_column(String(64))
    """A detached turn's tenant; NULL for llama-stack turns, whose tenant is their agent's."""
    status: Mapped[str] = mapped_column(String(32))
    input_messages: Mapped[list[Any]] = mapped_column(JSON)
    output_message: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    started_at: Mapped[datetime]
    completed_at: Mapped[datetime | None]
    error: Mapped[str | None] = mapped_column(Text)
    toolgroups: Mapped[list[Any] | None] = mapped_column(JSON)
    """The turn's own toolgroups, replacing the agent's; kept so a reopened turn has them again."""
    tool_config: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    """The turn's own tool configuration, replacing the agent's; kept for the same reason."""
    context_messages: Mapped[list[Any] | None] = mapped_column(JSON)
    """A detached turn's prior context (domain/turn_settings.py ContextMessage), read before its input."""


class StepRow(Base):
    __tablename__ = "steps"

    turn_id: Mapped[str] = mapped_column(ForeignKey("turns.turn_id", ondelete="CASCADE"), primary_key=True)
    position: Mapped[int] = mapped_column(Integer, primary_key=True)
    step_id: Mapped[str] = mapped_column(String(64))
    body: Mapped[dict[str, Any]] = mapped_column(JSON)


class EventRow(Base):
    """One event of a turn's stream. `event_id` orders a turn's events and is the SSE `id:`.

    Writers of one turn hold that turn's row lock while inserting, so ids are allocated in
    commit order per turn and a reader tailing `event_id > last_seen` never skips one.
    `key` makes writes idempotent across activity retries.
    """

    __tablename__ = "turn_events"
    __table_args__ = (
        UniqueConstraint("turn_id", "key", name="uq_turn_events_key"),
        Index("ix_turn_events_tail", "turn_id", "event_id"),
    )

    event_id: Mapped[int] = mapped_column(EventId, primary_key=True, autoincrement=True)
    turn_id: Mapped[str] = mapped_column(ForeignKey("turns.turn_id", ondelete="CASCADE"))
    key: Mapped[str] = mapped_column(String(200))
    body: Mapped[dict[str, Any]] = mapped_column(JSON)


class ToolGroupRow(Base):
    """A toolgroup (an MCP server) a tenant registered; built-in groups live in code, not here.

    The same id may be registered by two tenants: each sees and calls only its own.
    """

    __tablename__ = "toolgroups"

    tenant_id: Mapped[str] = mapped_column(String(64), primary_key=True, server_default=DEFAULT_TENANT)
    toolgroup_id: Mapped[str] = mapped_column(String(200), primary_key=True)
    provider_id: Mapped[str] = mapped_column(String(100))
    mcp_uri: Mapped[str | None] = mapped_column(Text)
    args: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    created_at: Mapped[datetime]


class TurnCredentialsRow(Base):
    """The MCP headers a running or paused turn's request brought, encrypted (tool_runtime/credential_seal.py);
    deleted when the turn ends."""

    __tablename__ = "turn_credentials"

    turn_id: Mapped[str] = mapped_column(ForeignKey("turns.turn_id", ondelete="CASCADE"), primary_key=True)
    ciphertext: Mapped[str] = mapped_column(Text)


class TurnSettingsRow(Base):
    """What a detached turn's inferences read (domain/turn_settings.py TurnSettings), one row per segment
    that brought new settings; the workflow carries only the id."""

    __tablename__ = "turn_settings"

    settings_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    turn_id: Mapped[str] = mapped_column(ForeignKey("turns.turn_id", ondelete="CASCADE"), index=True)
    body: Mapped[dict[str, Any]] = mapped_column(JSON)


class PendingCallRow(Base):
    """A client call id (or approval request id) a paused detached turn waits for: written with the
    pause, deleted when the turn goes on or ends, so continuing requests find their turn by call id."""

    __tablename__ = "turn_pending_calls"
    __table_args__ = (Index("ix_turn_pending_calls_tenant_call", "tenant_id", "call_id"),)

    turn_id: Mapped[str] = mapped_column(ForeignKey("turns.turn_id", ondelete="CASCADE"), primary_key=True)
    call_id: Mapped[str] = mapped_column(String(200), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(String(64))

"""Rows of the OpenAI Agents API (beta): saved agents, sessions, which turns are a session's, and the caller's
tool results a paused turn has received so far.

A session turn is an ordinary detached turn (`turns`, `events`, `steps`): these rows only say which session
it belongs to and in what order, so every other dialect's machinery (streams, retention, resumes) serves it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Boolean, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from store.schema import Base, UtcDateTime


class BetaAgentRow(Base):
    """A saved agent (`client.beta.agents`): its wire fields in `body`, which an update replaces."""

    __tablename__ = "beta_agents"
    __table_args__ = (Index("ix_beta_agents_tenant_order", "tenant_id", "created_at"),)

    agent_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(String(64))
    body: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime)
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime)


class BetaSessionRow(Base):
    """A session: the agent it runs (a snapshot, so later agent updates do not change it), its environment,
    metadata and spend control in `body`; `current_turn_id` is its latest turn, whose status is the session's."""

    __tablename__ = "beta_sessions"
    __table_args__ = (
        Index("ix_beta_sessions_tenant_order", "tenant_id", "created_at"),
        Index("ix_beta_sessions_agent", "tenant_id", "agent_id"),
    )

    session_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(String(64))
    agent_id: Mapped[str | None] = mapped_column(String(64))
    body: Mapped[dict[str, Any]] = mapped_column(JSON)
    current_turn_id: Mapped[str | None] = mapped_column(String(64))
    turn_count: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime)
    last_active_at: Mapped[datetime] = mapped_column(UtcDateTime)


class BetaSessionTurnRow(Base):
    """A session's turn, numbered from 0 in the order they started."""

    __tablename__ = "beta_session_turns"
    __table_args__ = (UniqueConstraint("session_id", "ordinal", name="uq_beta_session_turns_ordinal"),)

    turn_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    session_id: Mapped[str] = mapped_column(String(64))
    tenant_id: Mapped[str] = mapped_column(String(64))
    ordinal: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime)


class BetaToolResultRow(Base):
    """One caller-run call's result, kept until every call the turn waits for has one: the turn takes them
    together (the workflow resumes once per pause), while the SDK posts them one event at a time."""

    __tablename__ = "beta_tool_results"

    turn_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    call_id: Mapped[str] = mapped_column(String(200), primary_key=True)
    content: Mapped[Any] = mapped_column(JSON, nullable=True)
    is_error: Mapped[bool] = mapped_column(Boolean, default=False)


class BetaInputKeyRow(Base):
    """An Idempotency-Key of an accepted input event post: a retry of it is accepted again and does nothing."""

    __tablename__ = "beta_input_keys"

    tenant_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    session_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    idempotency_key: Mapped[str] = mapped_column(String(200), primary_key=True)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime)
    note: Mapped[str | None] = mapped_column(Text)

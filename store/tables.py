"""Storage rows. Wire models (domain/) are kept in JSON columns, never exposed as rows."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, ClassVar

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    Dialect,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column
from sqlalchemy.sql.expression import false, text
from sqlalchemy.types import TypeDecorator

# SQLite only auto-increments a column declared exactly INTEGER PRIMARY KEY.
EventId = BigInteger().with_variant(Integer(), "sqlite")

DEFAULT_TENANT = "default"
"""Owner of rows written before tenancy existed, and the one tenant of no-auth mode (api/guards/tenancy.py)."""


class UtcDateTime(TypeDecorator[datetime]):
    """Aware UTC datetimes in and out; SQLite would otherwise hand back naive ones."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        return value.astimezone(UTC) if value is not None else None

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


class Base(DeclarativeBase):
    type_annotation_map: ClassVar[dict[Any, Any]] = {datetime: UtcDateTime(), dict: JSON, list: JSON}


class AgentRow(Base):
    """An agent; its sessions, turns, steps and events belong to its tenant through it."""

    __tablename__ = "agents"
    __table_args__ = (Index("ix_agents_tenant_order", "tenant_id", "created_at"),)

    agent_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(String(64), server_default=DEFAULT_TENANT)
    config: Mapped[dict] = mapped_column(JSON)
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
    input_messages: Mapped[list] = mapped_column(JSON)
    output_message: Mapped[dict | None] = mapped_column(JSON)
    started_at: Mapped[datetime]
    completed_at: Mapped[datetime | None]
    error: Mapped[str | None] = mapped_column(Text)
    toolgroups: Mapped[list | None] = mapped_column(JSON)
    """The turn's own toolgroups, replacing the agent's; kept so a reopened turn has them again."""
    tool_config: Mapped[dict | None] = mapped_column(JSON)
    """The turn's own tool configuration, replacing the agent's; kept for the same reason."""
    context_messages: Mapped[list | None] = mapped_column(JSON)
    """A detached turn's prior context (domain/turn_settings.py ContextMessage), read before its input."""


class StepRow(Base):
    __tablename__ = "steps"

    turn_id: Mapped[str] = mapped_column(ForeignKey("turns.turn_id", ondelete="CASCADE"), primary_key=True)
    position: Mapped[int] = mapped_column(Integer, primary_key=True)
    step_id: Mapped[str] = mapped_column(String(64))
    body: Mapped[dict] = mapped_column(JSON)


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
    body: Mapped[dict] = mapped_column(JSON)


class ToolGroupRow(Base):
    """A toolgroup (an MCP server) a tenant registered; built-in groups live in code, not here.

    The same id may be registered by two tenants: each sees and calls only its own.
    """

    __tablename__ = "toolgroups"

    tenant_id: Mapped[str] = mapped_column(String(64), primary_key=True, server_default=DEFAULT_TENANT)
    toolgroup_id: Mapped[str] = mapped_column(String(200), primary_key=True)
    provider_id: Mapped[str] = mapped_column(String(100))
    mcp_uri: Mapped[str | None] = mapped_column(Text)
    args: Mapped[dict | None] = mapped_column(JSON)
    created_at: Mapped[datetime]


class TurnCredentialsRow(Base):
    """The MCP headers a running or paused turn's request brought, encrypted (tool_runtime/credential_seal.py);
    deleted when the turn ends."""

    __tablename__ = "turn_credentials"

    turn_id: Mapped[str] = mapped_column(ForeignKey("turns.turn_id", ondelete="CASCADE"), primary_key=True)
    ciphertext: Mapped[str] = mapped_column(Text)


class ResponseRow(Base):
    """A Responses-API response: one segment of a turn (api/responses/). What it says (status, output) is
    rendered from its turn's stored events; this row holds what the request asked for, without MCP
    credentials, and how it links to its chain and conversation."""

    __tablename__ = "responses"
    __table_args__ = (
        Index("ix_responses_tenant_order", "tenant_id", "created_at"),
        Index("ix_responses_conversation_order", "conversation_id", "created_at"),
        Index("ix_responses_request_hash", "tenant_id", "request_hash"),
        # The sweep that deletes ended `store: false` responses reads only these few rows.
        Index(
            "ix_responses_unstored",
            "turn_id",
            sqlite_where=text("store = 0"),
            postgresql_where=text("store = false"),
        ),
    )

    response_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(String(64))
    turn_id: Mapped[str] = mapped_column(ForeignKey("turns.turn_id", ondelete="CASCADE"), index=True)
    segment_index: Mapped[int] = mapped_column(Integer)
    """0 for the response that started the turn, n for its n-th resumption."""
    conversation_id: Mapped[str | None] = mapped_column(String(64))
    previous_response_id: Mapped[str | None] = mapped_column(String(64))
    model: Mapped[str] = mapped_column(String(200))
    request: Mapped[dict] = mapped_column(JSON)
    """The request as echoed (its input items with their ids); never MCP headers or authorization."""
    background: Mapped[bool] = mapped_column(Boolean)
    store: Mapped[bool] = mapped_column(Boolean)
    created_at: Mapped[datetime]
    appended_to_conversation: Mapped[bool] = mapped_column(Boolean, server_default=false())
    request_hash: Mapped[str | None] = mapped_column(String(64))
    """Set for a create without an Idempotency-Key: the SDK's automatic retries of it find it by this."""


class ConversationRow(Base):
    """A Responses-dialect conversation: an ordered list of items (conversation_items) that a tenant owns."""

    __tablename__ = "conversations"

    conversation_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(String(64))
    meta: Mapped[dict | None] = mapped_column("metadata", JSON)
    """Named `meta` here because `metadata` is the declarative base's own attribute."""
    created_at: Mapped[datetime]


class ConversationItemRow(Base):
    """One item of a conversation, as the Responses item (message, function_call, ...) it was written as.

    `position` orders a conversation's items (and pages through them); an item id is unique in its conversation.
    """

    __tablename__ = "conversation_items"
    __table_args__ = (
        UniqueConstraint("conversation_id", "item_id", name="uq_conversation_items_item"),
        Index("ix_conversation_items_order", "conversation_id", "position"),
    )

    position: Mapped[int] = mapped_column(EventId, primary_key=True, autoincrement=True)
    conversation_id: Mapped[str] = mapped_column(ForeignKey("conversations.conversation_id", ondelete="CASCADE"))
    item_id: Mapped[str] = mapped_column(String(128))
    body: Mapped[dict] = mapped_column(JSON)
    created_at: Mapped[datetime]


class TurnSettingsRow(Base):
    """What a detached turn's inferences read (domain/turn_settings.py TurnSettings), one row per segment
    that brought new settings; the workflow carries only the id."""

    __tablename__ = "turn_settings"

    settings_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    turn_id: Mapped[str] = mapped_column(ForeignKey("turns.turn_id", ondelete="CASCADE"), index=True)
    body: Mapped[dict] = mapped_column(JSON)


class PendingCallRow(Base):
    """A client call id (or approval request id) a paused detached turn waits for: written with the
    pause, deleted when the turn goes on or ends, so continuing requests find their turn by call id."""

    __tablename__ = "turn_pending_calls"
    __table_args__ = (Index("ix_turn_pending_calls_tenant_call", "tenant_id", "call_id"),)

    turn_id: Mapped[str] = mapped_column(ForeignKey("turns.turn_id", ondelete="CASCADE"), primary_key=True)
    call_id: Mapped[str] = mapped_column(String(200), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(String(64))


class RateBucketRow(Base):
    """An API key's request budget (a token bucket, api/guards/rate_limit.py), shared by every API process of
    a PostgreSQL store. One row per key that has made a request."""

    __tablename__ = "rate_buckets"

    key_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    tokens: Mapped[float] = mapped_column(Float)
    updated_at: Mapped[float] = mapped_column(Float)
    """When `tokens` was last counted: seconds since the epoch, by the database's clock."""

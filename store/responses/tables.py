"""Rows of the Responses dialect: responses, conversations and their items, and compactions."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column
from sqlalchemy.sql.expression import false, text

from store.schema import Base, EventId


class ResponseRow(Base):
    """A Responses-API response: one segment of a turn (api/openai/responses/). What it says (status, output) is
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
    request: Mapped[dict[str, Any]] = mapped_column(JSON)
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
    meta: Mapped[dict[str, Any] | None] = mapped_column("metadata", JSON)
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
    body: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_at: Mapped[datetime]


class CompactionRow(Base):
    """A `/responses/compact` request's summary being written (compaction/): the messages to summarise
    until its workflow has written the summary, then the summary and its token counts."""

    __tablename__ = "compactions"
    __table_args__ = (Index("ix_compactions_tenant_order", "tenant_id", "created_at"),)

    compaction_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(String(64))
    model: Mapped[str] = mapped_column(String(200))
    source: Mapped[list[Any]] = mapped_column(JSON)
    """The chat messages to summarise; emptied once the summary is written."""
    summary: Mapped[str | None] = mapped_column(Text)
    input_tokens: Mapped[int | None] = mapped_column(Integer)
    output_tokens: Mapped[int | None] = mapped_column(Integer)
    created_at: Mapped[datetime]
    completed_at: Mapped[datetime | None]

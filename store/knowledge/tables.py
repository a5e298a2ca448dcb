"""Rows of knowledge: uploaded files, vector stores, the files attached to them and their chunks.

The vector and keyword indexes of the chunks are not tables here: each engine keeps its own beside these
(knowledge/sqlite_index.py, knowledge/pg_index.py), keyed by `knowledge_chunks.chunk_id`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, BigInteger, Index, Integer, LargeBinary, String, Text, UniqueConstraint, text
from sqlalchemy.orm import Mapped, mapped_column

from store.schema import Base, EventId


class FileRow(Base):
    """An uploaded file (Files API). Its bytes are in the blob store (knowledge/blobs.py), never in a row
    read with it."""

    __tablename__ = "files"
    __table_args__ = (
        Index("ix_files_tenant_order", "tenant_id", "created_at"),
        Index("ix_files_vector_store", "vector_store_id"),
    )

    file_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(String(64))
    filename: Mapped[str] = mapped_column(Text)
    purpose: Mapped[str] = mapped_column(String(32))
    bytes: Mapped[int] = mapped_column(BigInteger)
    created_at: Mapped[datetime]
    expires_at: Mapped[datetime | None]
    vector_store_id: Mapped[str | None] = mapped_column(String(64))
    """The vector DB a llama-stack `rag-tool/insert` made this file of a document for: it is deleted with it."""


class FileBlobPartRow(Base):
    """A file's bytes on a PostgreSQL store, in parts of at most 1 MiB, so neither an upload nor a read
    ever holds a whole file (a SQLite store keeps them as files in a directory beside it instead)."""

    __tablename__ = "file_blob_parts"

    file_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    part: Mapped[int] = mapped_column(Integer, primary_key=True)
    data: Mapped[bytes] = mapped_column(LargeBinary)
    created_at: Mapped[datetime | None]
    """When the part was written: parts no file row owns an hour on are an upload a crash cut short, and the
    sweep (knowledge/blob_sweep.py) removes them. None for parts written before it was kept: the sweep dates
    those when it first finds them unowned."""


class VectorStoreRow(Base):
    """A vector store (OpenAI) — also a vector DB of the llama-stack dialect, which is the same object."""

    __tablename__ = "vector_stores"
    __table_args__ = (Index("ix_vector_stores_tenant_order", "tenant_id", "created_at"),)

    vector_store_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(String(64))
    name: Mapped[str | None] = mapped_column(Text)
    metadata_: Mapped[dict[str, Any]] = mapped_column("metadata", JSON)
    embedding_model: Mapped[str] = mapped_column(Text)
    embedding_dimension: Mapped[int] = mapped_column(Integer)
    expires_after: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    created_at: Mapped[datetime]
    last_active_at: Mapped[datetime]
    provider_vector_db_id: Mapped[str | None] = mapped_column(Text)
    """The llama-stack dialect's `provider_vector_db_id`, when it was registered there."""


class VectorStoreFileBatchRow(Base):
    __tablename__ = "vector_store_file_batches"

    batch_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    vector_store_id: Mapped[str] = mapped_column(String(64), index=True)
    created_at: Mapped[datetime]
    cancelled: Mapped[bool] = mapped_column(default=False)


class VectorStoreFileRow(Base):
    """A file attached to a vector store, and where its ingestion stands."""

    __tablename__ = "vector_store_files"
    __table_args__ = (
        Index("ix_vector_store_files_order", "vector_store_id", "created_at"),
        # The sweep of ingestions a crash left unstarted reads only the few files still in progress.
        Index(
            "ix_vector_store_files_in_progress",
            "created_at",
            sqlite_where=text("status = 'in_progress'"),
            postgresql_where=text("status = 'in_progress'"),
        ),
    )

    vector_store_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    file_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    status: Mapped[str] = mapped_column(String(16))
    """in_progress, completed, failed or cancelled."""
    attributes: Mapped[dict[str, Any]] = mapped_column(JSON)
    chunking_strategy: Mapped[dict[str, Any]] = mapped_column(JSON)
    last_error: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    usage_bytes: Mapped[int] = mapped_column(BigInteger, default=0)
    chunk_count: Mapped[int] = mapped_column(Integer, default=0)
    batch_id: Mapped[str | None] = mapped_column(String(64), index=True)
    created_at: Mapped[datetime]
    ingestion_id: Mapped[str | None] = mapped_column(String(32))
    """This attachment's own: its ingestion workflow's id ends with it (workflows/ingestion.py). None for files
    attached before attachments had one."""


class ChunkRow(Base):
    """One chunk of a file's text; `embedded` once its vector and keyword entries are written."""

    __tablename__ = "knowledge_chunks"
    __table_args__ = (UniqueConstraint("vector_store_id", "file_id", "seq", name="uq_knowledge_chunks_position"),)

    chunk_id: Mapped[int] = mapped_column(EventId, primary_key=True, autoincrement=True)
    vector_store_id: Mapped[str] = mapped_column(String(64))
    file_id: Mapped[str] = mapped_column(String(64))
    seq: Mapped[int] = mapped_column(Integer)
    text: Mapped[str] = mapped_column(Text)
    tokens: Mapped[int] = mapped_column(Integer)
    embedded: Mapped[bool] = mapped_column(default=False)
    metadata_: Mapped[dict[str, Any] | None] = mapped_column("metadata", JSON)
    """A llama-stack chunk's own metadata (document_id and the like), as inserted."""

"""What the store's vector-store operations hand out and take: vector stores, their files and batches, the
chunks ingested, and the refusal when a configured cap would be passed."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Literal

Order = Literal["asc", "desc"]
FINAL = ("completed", "failed", "cancelled")


class LimitReached(Exception):
    """A configured cap (files or chunks per vector store) would be passed; the message names it."""


@dataclass(frozen=True)
class FileCounts:
    in_progress: int = 0
    completed: int = 0
    failed: int = 0
    cancelled: int = 0

    @property
    def total(self) -> int:
        return self.in_progress + self.completed + self.failed + self.cancelled


@dataclass(frozen=True)
class VectorStore:
    vector_store_id: str
    name: str | None
    metadata: dict[str, Any]
    embedding_model: str
    embedding_dimension: int
    expires_after: dict[str, Any] | None
    created_at: datetime
    last_active_at: datetime
    provider_vector_db_id: str | None = None
    file_counts: FileCounts = field(default_factory=FileCounts)
    usage_bytes: int = 0

    @property
    def expires_at(self) -> datetime | None:
        """When its own `expires_after` ({"anchor": "last_active_at", "days": N}) ends it, counted from its last
        use (a create, update, attach, insert or search)."""
        days = (self.expires_after or {}).get("days")
        return self.last_active_at + timedelta(days=days) if isinstance(days, int) else None

    def expired(self, now: datetime) -> bool:
        """Expired stores answer no search: retention deletes them at its next run."""
        expires_at = self.expires_at
        return expires_at is not None and expires_at <= now


@dataclass(frozen=True)
class VectorStoreFile:
    vector_store_id: str
    file_id: str
    status: str
    attributes: dict[str, Any]
    chunking_strategy: dict[str, Any]
    last_error: dict[str, Any] | None
    usage_bytes: int
    chunk_count: int
    batch_id: str | None
    created_at: datetime
    ingestion_id: str | None = None


@dataclass(frozen=True)
class FileBatch:
    batch_id: str
    vector_store_id: str
    created_at: datetime
    cancelled: bool
    file_counts: FileCounts


@dataclass(frozen=True)
class Attachment:
    file_id: str
    attributes: dict[str, Any]
    chunking_strategy: dict[str, Any]


@dataclass(frozen=True)
class IngestionTarget:
    """What ingesting one attached file needs to know, read by its activities."""

    status: str
    filename: str
    chunking_strategy: dict[str, Any]
    embedding_model: str
    embedding_dimension: int
    ingestion_id: str | None = None


class FileGone(LookupError):
    """A file to attach was deleted meanwhile; its id is the argument."""


class Detached(Exception):
    """The attachment an ingestion run was started for is gone: the file was detached or attached anew."""


@dataclass(frozen=True)
class PendingIngestion:
    """A file still `in_progress`, for the sweep of ingestions a crash left unstarted."""

    vector_store_id: str
    file_id: str
    batch_cancelled: bool
    ingestion_id: str | None = None
    store_gone: bool = False
    """Its vector store was deleted (an attachment a release without the store lock could leave)."""


@dataclass(frozen=True)
class StoredChunk:
    chunk_id: int
    file_id: str
    seq: int
    text: str
    metadata: dict[str, Any] | None

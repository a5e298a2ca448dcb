"""The wire shapes of vector stores, their files and file batches (the openai SDK's `types/` are the spec), and
what requests share: chunking strategies, attributes, the tenant's store looked up or a 404."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from api.knowledge import Knowledge
from api.openai.errors import invalid, not_found
from api.openai.pages import cursors
from knowledge.chunking import DEFAULT_MAX_TOKENS, DEFAULT_OVERLAP_TOKENS
from store.knowledge.records import FileBatch, FileCounts, VectorStore, VectorStoreFile

MAX_ATTRIBUTES = 16
MAX_ATTRIBUTE_KEY = 64
MAX_ATTRIBUTE_TEXT = 512
AttributeValue = str | float | bool
DEFAULT_CHUNKING = {
    "type": "static",
    "static": {"max_chunk_size_tokens": DEFAULT_MAX_TOKENS, "chunk_overlap_tokens": DEFAULT_OVERLAP_TOKENS},
}


class ExpiresAfter(BaseModel):
    anchor: Literal["last_active_at"]
    days: int = Field(ge=1, le=365)


class FileCountsOut(BaseModel):
    in_progress: int
    completed: int
    failed: int
    cancelled: int
    total: int


class VectorStoreObject(BaseModel):
    id: str
    object: Literal["vector_store"] = "vector_store"
    created_at: int
    name: str
    usage_bytes: int
    file_counts: FileCountsOut
    status: Literal["expired", "in_progress", "completed"]
    expires_after: ExpiresAfter | None = None
    expires_at: int | None = None
    last_active_at: int | None = None
    metadata: dict[str, str] | None = None


class LastError(BaseModel):
    code: Literal["server_error", "unsupported_file", "invalid_file"]
    message: str


class VectorStoreFileObject(BaseModel):
    id: str
    object: Literal["vector_store.file"] = "vector_store.file"
    created_at: int
    usage_bytes: int
    vector_store_id: str
    status: Literal["in_progress", "completed", "cancelled", "failed"]
    last_error: LastError | None = None
    attributes: dict[str, AttributeValue] | None = None
    chunking_strategy: dict[str, Any] | None = None


class FileBatchObject(BaseModel):
    id: str
    object: Literal["vector_store.files_batch"] = "vector_store.files_batch"
    created_at: int
    vector_store_id: str
    status: Literal["in_progress", "completed", "cancelled", "failed"]
    file_counts: FileCountsOut


class CursorList(BaseModel):
    object: Literal["list"] = "list"
    data: list[Any]
    first_id: str
    last_id: str
    has_more: bool


def cursor_list(data: list[Any], has_more: bool) -> CursorList:
    return CursorList(data=data, **cursors(data), has_more=has_more)


def counts(file_counts: FileCounts) -> FileCountsOut:
    return FileCountsOut(
        in_progress=file_counts.in_progress,
        completed=file_counts.completed,
        failed=file_counts.failed,
        cancelled=file_counts.cancelled,
        total=file_counts.total,
    )


def store_object(store: VectorStore) -> VectorStoreObject:
    expires = ExpiresAfter(**store.expires_after) if store.expires_after else None
    expires_at = store.expires_at
    status: Literal["expired", "in_progress", "completed"] = "completed"
    if store.file_counts.in_progress:
        status = "in_progress"
    if store.expired(datetime.now(UTC)):
        status = "expired"
    return VectorStoreObject(
        id=store.vector_store_id,
        created_at=int(store.created_at.timestamp()),
        name=store.name or "",
        usage_bytes=store.usage_bytes,
        file_counts=counts(store.file_counts),
        status=status,
        expires_after=expires,
        expires_at=int(expires_at.timestamp()) if expires_at else None,
        last_active_at=int(store.last_active_at.timestamp()),
        metadata=store.metadata,
    )


def file_object(file: VectorStoreFile) -> VectorStoreFileObject:
    return VectorStoreFileObject(
        id=file.file_id,
        created_at=int(file.created_at.timestamp()),
        usage_bytes=file.usage_bytes,
        vector_store_id=file.vector_store_id,
        status=file.status,
        last_error=LastError(**file.last_error) if file.last_error else None,
        attributes=file.attributes,
        chunking_strategy=file.chunking_strategy,
    )


def batch_object(batch: FileBatch) -> FileBatchObject:
    file_counts = batch.file_counts
    status: Literal["in_progress", "completed", "cancelled", "failed"] = "completed"
    if batch.cancelled:
        status = "cancelled" if not file_counts.in_progress else "in_progress"
    elif file_counts.in_progress:
        status = "in_progress"
    elif file_counts.total and file_counts.failed == file_counts.total:
        status = "failed"
    return FileBatchObject(
        id=batch.batch_id,
        created_at=int(batch.created_at.timestamp()),
        vector_store_id=batch.vector_store_id,
        status=status,
        file_counts=counts(file_counts),
    )


def chunking(given: dict[str, Any] | None, param: str = "chunking_strategy") -> dict[str, Any]:
    """A static strategy, `auto` and absence meaning 800 tokens with 400 overlap; anything else is a 400."""
    if given is None or given.get("type") == "auto":
        return DEFAULT_CHUNKING
    static = given.get("static") if given.get("type") == "static" else None
    if not isinstance(static, dict):
        raise invalid("chunking_strategy is {'type': 'auto'} or {'type': 'static', 'static': {...}}.", param)
    size, overlap = static.get("max_chunk_size_tokens"), static.get("chunk_overlap_tokens")
    if not isinstance(size, int) or not 100 <= size <= 4096:
        raise invalid("static.max_chunk_size_tokens must be a whole number from 100 to 4096.", param)
    if not isinstance(overlap, int) or not 0 <= overlap <= size // 2:
        raise invalid("static.chunk_overlap_tokens must be from 0 to half of max_chunk_size_tokens.", param)
    return {"type": "static", "static": {"max_chunk_size_tokens": size, "chunk_overlap_tokens": overlap}}


def attributes(given: dict[str, Any] | None, param: str = "attributes") -> dict[str, AttributeValue]:
    if given is None:
        return {}
    if len(given) > MAX_ATTRIBUTES:
        raise invalid(f"At most {MAX_ATTRIBUTES} attributes per file, got {len(given)}.", param)
    for key, value in given.items():
        if len(key) > MAX_ATTRIBUTE_KEY:
            raise invalid(f"Attribute keys have at most {MAX_ATTRIBUTE_KEY} characters: {key[:80]!r}.", param)
        if not isinstance(value, str | int | float | bool):
            raise invalid(f"Attribute {key!r} must be a string, number or boolean.", param)
        if isinstance(value, str) and len(value) > MAX_ATTRIBUTE_TEXT:
            raise invalid(f"Attribute {key!r} has more than {MAX_ATTRIBUTE_TEXT} characters.", param)
    return given


async def owned_store(knowledge: Knowledge, tenant: str, vector_store_id: str) -> VectorStore:
    store = await knowledge.stores.get(tenant, vector_store_id)
    if store is None:
        raise not_found("Vector store", vector_store_id)
    return store

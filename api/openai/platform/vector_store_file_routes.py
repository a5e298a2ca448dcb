"""Files of a vector store (attach, list, retrieve, update attributes, detach, content) and file batches
(create, retrieve, cancel, list files). Attaching starts one ingestion workflow per file."""

from __future__ import annotations

import secrets
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query
from pydantic import BaseModel, Field

from api.guards.tenancy import TenantDep
from api.knowledge import KnowledgeDep, attach_files
from api.openai.errors import ERROR_RESPONSES, OpenAIError, invalid, not_found
from api.openai.platform.vector_store_shapes import (
    CursorList,
    FileBatchObject,
    VectorStoreFileObject,
    attributes,
    batch_object,
    chunking,
    cursor_list,
    file_object,
)
from store.knowledge.files import UnknownCursor
from store.knowledge.records import Attachment

router = APIRouter(tags=["Vector store files"], responses=ERROR_RESPONSES)

MAX_BATCH_FILES = 2000
Status = Literal["in_progress", "completed", "failed", "cancelled"]


class AttachFile(BaseModel):
    file_id: str
    attributes: dict[str, Any] | None = None
    chunking_strategy: dict[str, Any] | None = None


class UpdateFile(BaseModel):
    attributes: dict[str, Any] | None


class CreateBatch(BaseModel):
    file_ids: list[str] | None = Field(default=None, max_length=MAX_BATCH_FILES)
    files: list[AttachFile] | None = Field(default=None, max_length=MAX_BATCH_FILES)
    attributes: dict[str, Any] | None = None
    chunking_strategy: dict[str, Any] | None = None


class VectorStoreFileDeleted(BaseModel):
    id: str
    object: Literal["vector_store.file.deleted"] = "vector_store.file.deleted"
    deleted: bool = True


class ContentPart(BaseModel):
    type: Literal["text"] = "text"
    text: str


class ContentPage(BaseModel):
    object: Literal["vector_store.file_content.page"] = "vector_store.file_content.page"
    data: list[ContentPart]
    has_more: bool = False
    next_page: str | None = None


MAX_CONTENT_CHUNKS = 10_000


@router.post("/vector_stores/{vector_store_id}/files", response_model=VectorStoreFileObject)
async def attach_file(
    vector_store_id: str, body: AttachFile, tenant: TenantDep, knowledge: KnowledgeDep
) -> VectorStoreFileObject:
    attachment = Attachment(body.file_id, attributes(body.attributes), chunking(body.chunking_strategy))
    attached = await attach_files(knowledge, tenant, vector_store_id, [attachment])
    return file_object(attached[0])


@router.get("/vector_stores/{vector_store_id}/files", response_model=CursorList)
async def list_files(
    vector_store_id: str,
    tenant: TenantDep,
    knowledge: KnowledgeDep,
    after: Annotated[str | None, Query(min_length=1)] = None,
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
    order: Literal["asc", "desc"] = "desc",
    filter: Status | None = None,
) -> CursorList:
    try:
        page = await knowledge.stores.list_files(tenant, vector_store_id, filter, order, after, limit)
    except UnknownCursor:
        raise OpenAIError(404, f"'after' names no file of this vector store: {after!r}.", "after") from None
    if page is None:
        raise not_found("Vector store", vector_store_id)
    files, has_more = page
    return cursor_list([file_object(file) for file in files], has_more)


@router.get("/vector_stores/{vector_store_id}/files/{file_id}", response_model=VectorStoreFileObject)
async def retrieve_file(
    vector_store_id: str, file_id: str, tenant: TenantDep, knowledge: KnowledgeDep
) -> VectorStoreFileObject:
    file = await knowledge.stores.get_file(tenant, vector_store_id, file_id)
    if file is None:
        raise not_found("Vector store file", file_id)
    return file_object(file)


@router.post("/vector_stores/{vector_store_id}/files/{file_id}", response_model=VectorStoreFileObject)
async def update_file(
    vector_store_id: str, file_id: str, body: UpdateFile, tenant: TenantDep, knowledge: KnowledgeDep
) -> VectorStoreFileObject:
    file = await knowledge.stores.update_attributes(tenant, vector_store_id, file_id, attributes(body.attributes))
    if file is None:
        raise not_found("Vector store file", file_id)
    return file_object(file)


@router.delete("/vector_stores/{vector_store_id}/files/{file_id}", response_model=VectorStoreFileDeleted)
async def detach_file(
    vector_store_id: str, file_id: str, tenant: TenantDep, knowledge: KnowledgeDep
) -> VectorStoreFileDeleted:
    """The file leaves the store with its chunks and vectors; the file itself stays (Files API)."""
    if not await knowledge.stores.detach(tenant, vector_store_id, file_id):
        raise not_found("Vector store file", file_id)
    return VectorStoreFileDeleted(id=file_id)


@router.get("/vector_stores/{vector_store_id}/files/{file_id}/content", response_model=ContentPage)
async def file_content(vector_store_id: str, file_id: str, tenant: TenantDep, knowledge: KnowledgeDep) -> ContentPage:
    """The file's chunks, in order, as the store indexed them."""
    file = await knowledge.stores.get_file(tenant, vector_store_id, file_id)
    if file is None:
        raise not_found("Vector store file", file_id)
    chunks = await knowledge.stores.file_chunks(vector_store_id, file_id, MAX_CONTENT_CHUNKS + 1)
    return ContentPage(
        data=[ContentPart(text=chunk.text) for chunk in chunks[:MAX_CONTENT_CHUNKS]],
        has_more=len(chunks) > MAX_CONTENT_CHUNKS,
    )


@router.post("/vector_stores/{vector_store_id}/file_batches", response_model=FileBatchObject)
async def create_batch(
    vector_store_id: str, body: CreateBatch, tenant: TenantDep, knowledge: KnowledgeDep
) -> FileBatchObject:
    if (body.file_ids is None) == (body.files is None):
        raise invalid("Give either 'file_ids' or 'files', not both or neither.", "file_ids")
    shared_attributes = attributes(body.attributes)
    shared_chunking = chunking(body.chunking_strategy)
    if body.files is not None:
        attachments = [
            Attachment(
                item.file_id,
                attributes(item.attributes) if item.attributes is not None else shared_attributes,
                chunking(item.chunking_strategy) if item.chunking_strategy is not None else shared_chunking,
            )
            for item in body.files
        ]
    else:
        attachments = [Attachment(file_id, shared_attributes, shared_chunking) for file_id in body.file_ids or []]
    if not attachments or len({item.file_id for item in attachments}) != len(attachments):
        raise invalid("A batch names at least one file, each once.", "file_ids")
    batch_id = "vsfb_" + secrets.token_hex(12)
    await attach_files(knowledge, tenant, vector_store_id, attachments, batch_id)
    batch = await knowledge.stores.get_batch(tenant, vector_store_id, batch_id)
    assert batch is not None
    return batch_object(batch)


@router.get("/vector_stores/{vector_store_id}/file_batches/{batch_id}", response_model=FileBatchObject)
async def retrieve_batch(
    vector_store_id: str, batch_id: str, tenant: TenantDep, knowledge: KnowledgeDep
) -> FileBatchObject:
    batch = await knowledge.stores.get_batch(tenant, vector_store_id, batch_id)
    if batch is None:
        raise not_found("File batch", batch_id)
    return batch_object(batch)


@router.post("/vector_stores/{vector_store_id}/file_batches/{batch_id}/cancel", response_model=FileBatchObject)
async def cancel_batch(
    vector_store_id: str, batch_id: str, tenant: TenantDep, knowledge: KnowledgeDep
) -> FileBatchObject:
    """Files still being ingested stop between two batches of chunks and end `cancelled`; finished ones stay."""
    pending = await knowledge.stores.cancel_batch(tenant, vector_store_id, batch_id)
    if pending is None:
        raise not_found("File batch", batch_id)
    await knowledge.ingestion.cancel(vector_store_id, pending)
    batch = await knowledge.stores.get_batch(tenant, vector_store_id, batch_id)
    assert batch is not None
    return batch_object(batch)


@router.get("/vector_stores/{vector_store_id}/file_batches/{batch_id}/files", response_model=CursorList)
async def list_batch_files(
    vector_store_id: str,
    batch_id: str,
    tenant: TenantDep,
    knowledge: KnowledgeDep,
    after: Annotated[str | None, Query(min_length=1)] = None,
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
    order: Literal["asc", "desc"] = "desc",
    filter: Status | None = None,
) -> CursorList:
    if await knowledge.stores.get_batch(tenant, vector_store_id, batch_id) is None:
        raise not_found("File batch", batch_id)
    try:
        page = await knowledge.stores.list_files(tenant, vector_store_id, filter, order, after, limit, batch_id)
    except UnknownCursor:
        raise OpenAIError(404, f"'after' names no file of this batch: {after!r}.", "after") from None
    assert page is not None
    files, has_more = page
    return cursor_list([file_object(file) for file in files], has_more)

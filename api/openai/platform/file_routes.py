"""The Files API: upload (multipart, streamed to the blob store), list, retrieve, content, delete."""

from __future__ import annotations

import secrets
from datetime import UTC, datetime, timedelta
from typing import Annotated, Literal

from fastapi import APIRouter, Query, Request
from fastapi.responses import StreamingResponse
from pydantic import BaseModel

from api.guards.tenancy import TenantDep
from api.knowledge import KnowledgeDep, file_quota, owned_file
from api.openai.errors import ERROR_RESPONSES, OpenAIError, invalid
from api.openai.pages import cursors
from api.openai.platform.uploads import receive_upload
from knowledge import deletion
from store.knowledge.files import StoredFile, UnknownCursor
from store.knowledge.records import LimitReached

router = APIRouter(tags=["Files"], responses=ERROR_RESPONSES)

PURPOSES = ("assistants", "batch", "fine-tune", "vision", "user_data", "evals")
MAX_EXPIRY_SECONDS = 30 * 24 * 3600
MIN_EXPIRY_SECONDS = 3600


class FileObject(BaseModel):
    id: str
    object: Literal["file"] = "file"
    bytes: int
    created_at: int
    filename: str
    purpose: str
    status: Literal["uploaded", "processed", "error"] = "processed"
    expires_at: int | None = None
    status_details: str | None = None


class FileList(BaseModel):
    object: Literal["list"] = "list"
    data: list[FileObject]
    first_id: str
    last_id: str
    has_more: bool


class FileDeleted(BaseModel):
    id: str
    object: Literal["file"] = "file"
    deleted: bool = True


def file_object(file: StoredFile) -> FileObject:
    return FileObject(
        id=file.file_id,
        bytes=file.bytes,
        created_at=int(file.created_at.timestamp()),
        filename=file.filename,
        purpose=file.purpose,
        expires_at=int(file.expires_at.timestamp()) if file.expires_at else None,
    )


def _expiry(fields: dict[str, str], created_at: datetime) -> datetime | None:
    anchor, seconds = fields.get("expires_after[anchor]"), fields.get("expires_after[seconds]")
    if anchor is None and seconds is None:
        return None
    if anchor != "created_at" or seconds is None or not seconds.isdigit():
        raise invalid("expires_after needs anchor 'created_at' and a whole number of seconds.", "expires_after")
    if not MIN_EXPIRY_SECONDS <= int(seconds) <= MAX_EXPIRY_SECONDS:
        raise invalid(
            f"expires_after.seconds must be from {MIN_EXPIRY_SECONDS} to {MAX_EXPIRY_SECONDS}.", "expires_after"
        )
    return created_at + timedelta(seconds=int(seconds))


@router.post("/files", response_model=FileObject)
async def upload_file(request: Request, tenant: TenantDep, knowledge: KnowledgeDep) -> FileObject:
    file_id = "file-" + secrets.token_hex(12)
    writer = knowledge.blobs.writer(file_id)
    try:
        upload = await receive_upload(request, writer, knowledge.settings.max_file_bytes)
        purpose = upload.fields.get("purpose")
        if purpose not in PURPOSES:
            raise invalid(f"'purpose' must be one of {list(PURPOSES)}, got {purpose!r}.", "purpose")
        created_at = datetime.now(UTC)
        expires_at = _expiry(upload.fields, created_at)
        await writer.commit()
    except BaseException:
        await writer.abort()
        raise
    stored = StoredFile(file_id, upload.filename or "upload", purpose, upload.size, created_at, expires_at)
    try:
        await knowledge.files.add(tenant, stored, file_quota(knowledge))
    except BaseException as failed:
        await knowledge.blobs.delete(file_id)
        if isinstance(failed, LimitReached):
            raise OpenAIError(400, str(failed), None, "quota_exceeded") from None
        raise
    return file_object(stored)


@router.get("/files", response_model=FileList)
async def list_files(
    tenant: TenantDep,
    knowledge: KnowledgeDep,
    after: Annotated[str | None, Query(min_length=1)] = None,
    limit: Annotated[int, Query(ge=1, le=10000)] = 10000,
    order: Literal["asc", "desc"] = "desc",
    purpose: str | None = None,
) -> FileList:
    try:
        files, has_more = await knowledge.files.page(tenant, purpose, order, after, limit)
    except UnknownCursor:
        raise OpenAIError(404, f"'after' names no file of yours: {after!r}.", "after") from None
    data = [file_object(file) for file in files]
    return FileList(
        data=data,
        **cursors(data),
        has_more=has_more,
    )


@router.get("/files/{file_id}", response_model=FileObject)
async def retrieve_file(file_id: str, tenant: TenantDep, knowledge: KnowledgeDep) -> FileObject:
    return file_object(await owned_file(knowledge, tenant, file_id))


@router.get("/files/{file_id}/content", response_class=StreamingResponse)
async def file_content(file_id: str, tenant: TenantDep, knowledge: KnowledgeDep) -> StreamingResponse:
    file = await owned_file(knowledge, tenant, file_id)
    return StreamingResponse(
        knowledge.blobs.read(file.file_id),
        media_type="application/octet-stream",
        headers={"content-length": str(file.bytes)},
    )


@router.delete("/files/{file_id}", response_model=FileDeleted)
async def delete_file(file_id: str, tenant: TenantDep, knowledge: KnowledgeDep) -> FileDeleted:
    """The file leaves every vector store it is attached to, then its bytes go, then its row
    (knowledge/deletion.py)."""
    await owned_file(knowledge, tenant, file_id)
    await deletion.delete_file(knowledge.stores, knowledge.files, knowledge.blobs, tenant, file_id)
    return FileDeleted(id=file_id)

"""A container's files: add one (a `file_id` of the Files API, or a multipart upload), list, retrieve, read its
content, delete. Files the container's code wrote are listed too (the tools record them after each call).
The content is read without following any link the code made: a symlink is not a file of the container."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from typing import Annotated, Literal

from fastapi import APIRouter, Query, Request
from fastapi.responses import StreamingResponse
from pydantic import BaseModel
from python_multipart.multipart import parse_options_header

from api.containers import ContainersDep
from api.guards.tenancy import TenantDep
from api.openai.errors import ERROR_RESPONSES, OpenAIError, invalid
from api.openai.pages import cursors
from code_sandbox.workspace_files import NotAWorkspaceFile, open_regular, read_chunks, remove_file
from store.containers.containers import ContainerFile, UnknownCursor

router = APIRouter(tags=["Containers"], responses=ERROR_RESPONSES)


class ContainerFileObject(BaseModel):
    id: str
    object: Literal["container.file"] = "container.file"
    bytes: int
    container_id: str
    created_at: int
    path: str
    source: str


class ContainerFileList(BaseModel):
    object: Literal["list"] = "list"
    data: list[ContainerFileObject]
    first_id: str | None
    last_id: str | None
    has_more: bool


class ContainerFileDeleted(BaseModel):
    id: str
    object: Literal["container.file.deleted"] = "container.file.deleted"
    deleted: bool = True


def container_file_object(file: ContainerFile) -> ContainerFileObject:
    return ContainerFileObject(
        id=file.file_id,
        bytes=file.bytes,
        container_id=file.container_id,
        created_at=int(file.created_at.timestamp()),
        path=file.path,
        source=file.source,
    )


@router.post("/containers/{container_id}/files", response_model=ContainerFileObject)
async def add_container_file(
    container_id: str, request: Request, tenant: TenantDep, containers: ContainersDep
) -> ContainerFileObject:
    """JSON `{"file_id": ...}` copies a file of the Files API in; a multipart `file` part is uploaded."""
    container = await containers.owned(tenant, container_id)
    content_type, _ = parse_options_header(request.headers.get("content-type", ""))
    if content_type == b"multipart/form-data":
        form = await request.form(max_files=1, max_fields=4)
        upload = form.get("file")
        if upload is None or isinstance(upload, str):
            raise invalid("A multipart request needs a 'file' part.", "file")
        if (upload.size or 0) > containers.settings.max_file_bytes:
            raise invalid(f"The file is larger than {containers.settings.max_file_bytes} bytes.", "file")

        async def chunks() -> AsyncIterator[bytes]:
            while chunk := await upload.read(64 * 1024):
                yield chunk

        added = await containers.add_upload(tenant, container, upload.filename or "upload", chunks())
        return container_file_object(added)
    try:
        body = json.loads(await request.body() or b"{}")
    except ValueError:
        raise invalid("The body must be JSON with a 'file_id', or multipart with a 'file'.") from None
    if not isinstance(body, dict) or not isinstance(body.get("file_id"), str):
        raise invalid("Send a 'file_id' (JSON) or a 'file' (multipart).", "file_id")
    unknown = sorted(set(body) - {"file_id"})
    if unknown:
        raise invalid(f"Unknown parameter: {unknown[0]!r}.", unknown[0])
    return container_file_object(await containers.copy_file(tenant, container, body["file_id"]))


@router.get("/containers/{container_id}/files", response_model=ContainerFileList)
async def list_container_files(
    container_id: str,
    tenant: TenantDep,
    containers: ContainersDep,
    after: Annotated[str | None, Query(min_length=1)] = None,
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
    order: Literal["asc", "desc"] = "desc",
) -> ContainerFileList:
    await containers.owned(tenant, container_id)
    try:
        files, has_more = await containers.store.file_page(tenant, container_id, order, after, limit)
    except UnknownCursor:
        raise OpenAIError(404, f"'after' names no file of this container: {after!r}.", "after") from None
    data = [container_file_object(file) for file in files]
    return ContainerFileList(data=data, **cursors(data), has_more=has_more)


async def _owned_file(containers: ContainersDep, tenant: str, container_id: str, file_id: str) -> ContainerFile:
    await containers.owned(tenant, container_id)
    file = await containers.store.get_file(tenant, container_id, file_id)
    if file is None:
        raise OpenAIError(404, f"Container file with id '{file_id}' not found.")
    return file


@router.get("/containers/{container_id}/files/{file_id}", response_model=ContainerFileObject)
async def retrieve_container_file(
    container_id: str, file_id: str, tenant: TenantDep, containers: ContainersDep
) -> ContainerFileObject:
    return container_file_object(await _owned_file(containers, tenant, container_id, file_id))


@router.get("/containers/{container_id}/files/{file_id}/content", response_class=StreamingResponse)
async def container_file_content(
    container_id: str, file_id: str, tenant: TenantDep, containers: ContainersDep
) -> StreamingResponse:
    file = await _owned_file(containers, tenant, container_id, file_id)
    try:
        descriptor, size = await asyncio.to_thread(open_regular, containers.workspace(container_id), file.path)
    except NotAWorkspaceFile:
        raise OpenAIError(404, f"Container file '{file_id}' is no longer a regular file at {file.path}.") from None
    chunks: Iterator[bytes] = read_chunks(descriptor)
    return StreamingResponse(chunks, media_type="application/octet-stream", headers={"content-length": str(size)})


@router.delete("/containers/{container_id}/files/{file_id}", response_model=ContainerFileDeleted)
async def delete_container_file(
    container_id: str, file_id: str, tenant: TenantDep, containers: ContainersDep
) -> ContainerFileDeleted:
    file = await _owned_file(containers, tenant, container_id, file_id)
    await asyncio.to_thread(remove_file, containers.workspace(container_id), file.path)
    await containers.store.delete_file(tenant, container_id, file_id)
    return ContainerFileDeleted(id=file_id)

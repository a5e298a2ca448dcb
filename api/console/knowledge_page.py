"""The console's knowledge pages: the tenant's vector stores with their files and ingestion progress, an upload
(drag and drop, or a plain file input) that adds a file and attaches it to a store, and a search box showing the
ranked chunks with their scores.

Everything goes through the API as the visitor (api_calls.py): the upload is `POST /v1/files` then
`POST /v1/vector_stores/{id}/files`, the search `POST /v1/vector_stores/{id}/search`, so the quotas, the file
limits, tenancy and ingestion are the API's own. While a store ingests, the page's script polls
`/console/knowledge/{id}/progress` (the same store and files, as JSON) and moves its bars.
"""

from __future__ import annotations

import asyncio
import re
from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import JSONResponse, RedirectResponse
from starlette.datastructures import UploadFile
from starlette.responses import Response

from api.console import guard as guard
from api.console.api_calls import ApiRefused, call_api
from api.console.routes import page
from api.guards.body_limit import CONSOLE_UPLOAD_PATH
from api.services import ServicesDep

router = APIRouter(prefix="/console/knowledge", include_in_schema=False)

SHOWN_FILES = 100
"""Files listed on a store's page, newest first (the API's page size)."""
SEARCH_RESULTS = 10
UPLOAD_PURPOSE = "assistants"
"""What a file attached to a vector store is uploaded as, as the openai SDK's `upload_and_poll` does."""
ID_PATTERN = r"^[A-Za-z0-9_-]{1,64}$"
"""What an id the console puts in an API path may be: nothing that could change the path."""
StoreId = Annotated[str, Path(pattern=ID_PATTERN)]


def _keys_required(services: Any) -> bool:
    return bool(services.settings.key_entries())


async def _filenames(request: Request, services: Any, file_ids: list[str]) -> dict[str, str]:
    """Each listed file's name (`GET /v1/files/{id}`); a file deleted since it was attached shows by id."""

    async def name(file_id: str) -> tuple[str, str]:
        try:
            return file_id, str((await call_api(request, services, "GET", f"/v1/files/{file_id}"))["filename"])
        except ApiRefused:
            return file_id, ""

    return dict(await asyncio.gather(*(name(file_id) for file_id in file_ids)))


async def _store_and_files(request: Request, services: Any, store_id: str) -> tuple[dict[str, Any], list[Any]]:
    store = await call_api(request, services, "GET", f"/v1/vector_stores/{store_id}")
    files = await call_api(
        request, services, "GET", f"/v1/vector_stores/{store_id}/files", params={"limit": SHOWN_FILES}
    )
    return store, files["data"]


@router.get("")
async def knowledge(request: Request, services: ServicesDep) -> Response:
    principal = guard.signed_in(request)
    stores = await call_api(request, services, "GET", "/v1/vector_stores", params={"limit": 100})
    return page(
        request,
        "knowledge.html",
        stores=stores["data"],
        more=stores["has_more"],
        tenant=principal.tenant,
        signed_in=_keys_required(services),
    )


async def _store_page(
    request: Request,
    services: Any,
    store_id: str,
    status_code: int = 200,
    query: str = "",
    notice: str | None = None,
    error: str | None = None,
) -> Response:
    principal = guard.signed_in(request)
    try:
        store, files = await _store_and_files(request, services, store_id)
    except ApiRefused as refused:
        return page(request, "refused.html", refused.status, message=refused.message)
    results: list[Any] | None = None
    if query.strip():
        try:
            body = {"query": query, "max_num_results": SEARCH_RESULTS}
            found = await call_api(request, services, "POST", f"/v1/vector_stores/{store_id}/search", json=body)
            results = found["data"]
        except ApiRefused as refused:
            status_code, error = refused.status, f"Search refused: {refused.message}"
    names = await _filenames(request, services, [file["id"] for file in files])
    return page(
        request,
        "knowledge_store.html",
        status_code,
        store=store,
        files=files,
        names=names,
        query=query,
        results=results,
        notice=notice,
        error=error,
        upload_path=CONSOLE_UPLOAD_PATH,
        tenant=principal.tenant,
        signed_in=_keys_required(services),
    )


@router.get("/{store_id}")
async def store_page(
    request: Request,
    services: ServicesDep,
    store_id: StoreId,
    q: Annotated[str, Query(max_length=2000)] = "",
    uploaded: Annotated[str, Query(max_length=64)] = "",
) -> Response:
    notice = f"Uploaded {uploaded}: it is being ingested." if uploaded else None
    return await _store_page(request, services, store_id, query=q, notice=notice)


@router.get("/{store_id}/progress")
async def progress(request: Request, services: ServicesDep, store_id: StoreId) -> Response:
    """What the page's bars show, for its script to poll while files ingest."""
    guard.signed_in(request)
    try:
        store, files = await _store_and_files(request, services, store_id)
    except ApiRefused as refused:
        return guard.secured(request, JSONResponse({"error": refused.message}, status_code=refused.status))
    shown = {
        "status": store["status"],
        "file_counts": store["file_counts"],
        "files": [
            {"id": file["id"], "status": file["status"], "last_error": (file.get("last_error") or {}).get("message")}
            for file in files
        ],
    }
    return guard.secured(request, JSONResponse(shown))


async def _upload(request: Request, services: Any, store_id: str, file: UploadFile) -> str:
    """Upload the file as `POST /v1/files` and attach it; a refused attachment takes the upload back."""
    sent = {"file": (file.filename or "upload", file.file, file.content_type or "application/octet-stream")}
    uploaded = await call_api(request, services, "POST", "/v1/files", files=sent, data={"purpose": UPLOAD_PURPOSE})
    try:
        await call_api(
            request, services, "POST", f"/v1/vector_stores/{store_id}/files", json={"file_id": uploaded["id"]}
        )
    except ApiRefused:
        await call_api(request, services, "DELETE", f"/v1/files/{uploaded['id']}")
        raise
    return str(uploaded["id"])


@router.post("/upload")
async def upload(request: Request, services: ServicesDep) -> Response:
    """The upload form's target (the drop zone fills the same form): the file, and the store to attach it to."""
    guard.signed_in(request)
    form = await request.form()
    guard.check_csrf(request, form)
    store_id = str(form.get("vector_store_id") or "")
    file = form.get("file")
    if not re.fullmatch(ID_PATTERN, store_id):
        return page(request, "refused.html", 400, message="The upload names no vector store (vector_store_id).")
    if not isinstance(file, UploadFile) or not file.filename:
        return await _store_page(request, services, store_id, 400, error="Choose a file to upload first.")
    try:
        file_id = await _upload(request, services, store_id, file)
    except ApiRefused as refused:
        return await _store_page(request, services, store_id, refused.status, error=f"Not uploaded: {refused.message}")
    finally:
        await file.close()
    response = RedirectResponse(f"/console/knowledge/{store_id}?uploaded={file_id}", status_code=303)
    return guard.secured(request, response)

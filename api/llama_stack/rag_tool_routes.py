"""The llama-stack 0.2.x RAG tool runtime: `rag-tool/insert` (documents by content or URL) and `rag-tool/query`.

An inserted document becomes a file in the blob store — a URL's bytes fetched through the outbound policy and
streamed there — attached to the vector DB and ingested by the same durable workflow as an OpenAI upload; the
insert answers once every document is indexed (or says which could not be and why). A query searches every
vector DB named and answers with the chunks in the text the 0.2.x client and agents read.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from datetime import UTC, datetime
from pathlib import PurePosixPath
from typing import Any

from fastapi import APIRouter, HTTPException
from pydantic import BaseModel, ConfigDict, Field

from api.guards.tenancy import TenantDep
from api.knowledge import Knowledge, KnowledgeDep, attach_files, file_quota
from api.llama_stack.vector_db_routes import owned_vector_db
from api.llama_stack.vector_io_routes import content_text, query_store
from knowledge import rag_config
from knowledge.deletion import delete_file
from knowledge.rag_results import DEFAULT_TEMPLATE, rag_answer
from knowledge.search import SearchResult
from outbound.http import ReplyTooLarge, outbound_from
from outbound.policy import OutboundRefused
from store.knowledge.files import StoredFile
from store.knowledge.records import Attachment, LimitReached

router = APIRouter(tags=["ToolRuntime"])

MAX_DOCUMENTS = 100
INGESTION_WAIT_SECONDS = 600.0
_SUFFIXES = {"application/pdf": ".pdf", "text/html": ".html", "text/markdown": ".md", "application/json": ".json"}


class URL(BaseModel):
    uri: str


class RAGDocument(BaseModel):
    document_id: str = Field(min_length=1, max_length=256)
    content: str | URL | dict[str, Any] | list[Any]
    mime_type: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)


class InsertDocuments(BaseModel):
    documents: list[RAGDocument] = Field(max_length=MAX_DOCUMENTS)
    vector_db_id: str
    chunk_size_in_tokens: int = Field(default=512, ge=16, le=4096)


class QueryConfig(BaseModel):
    model_config = ConfigDict(extra="ignore")

    query_generator_config: dict[str, Any] | None = None
    max_tokens_in_context: int = Field(default=4096, ge=1)
    max_chunks: int = Field(default=5, ge=1, le=50)
    chunk_template: str = DEFAULT_TEMPLATE
    mode: str | None = None
    ranker: dict[str, Any] | None = None


class RAGQuery(BaseModel):
    content: str | dict[str, Any] | list[Any]
    vector_db_ids: list[str] = Field(min_length=1, max_length=20)
    query_config: QueryConfig | None = None


class TextItem(BaseModel):
    type: str = "text"
    text: str


class RAGQueryResult(BaseModel):
    content: list[TextItem] | None
    metadata: dict[str, Any]


def _filename(document: RAGDocument, uri: str | None) -> str:
    suffix = _SUFFIXES.get((document.mime_type or "").split(";")[0].strip(), "")
    if uri is not None:
        name = PurePosixPath(uri.split("?")[0].rstrip("/")).name
        if PurePosixPath(name).suffix:
            return name
    return document.document_id + suffix if not PurePosixPath(document.document_id).suffix else document.document_id


async def _store_document(knowledge: Knowledge, tenant: str, vector_store_id: str, document: RAGDocument) -> StoredFile:
    """The document's bytes written to the blob store as a new file of the tenant's, made for the vector DB."""
    file_id = "file-" + secrets.token_hex(12)
    writer = knowledge.blobs.writer(file_id)
    size = 0
    uri = document.content.uri if isinstance(document.content, URL) else None
    if isinstance(document.content, dict) and isinstance(document.content.get("uri"), str):
        uri = document.content["uri"]
    try:
        if uri is None:
            data = content_text(document.content, f"document {document.document_id!r} content").encode()  # type: ignore[arg-type]
            await writer.write(data)
            size = len(data)
        else:
            size = await _download(knowledge, uri, writer, document.document_id)
        await writer.commit()
    except BaseException:
        await writer.abort()
        raise
    stored = StoredFile(file_id, _filename(document, uri), "assistants", size, datetime.now(UTC), None, vector_store_id)
    try:
        await knowledge.files.add(tenant, stored, file_quota(knowledge))
    except BaseException as failed:
        await knowledge.blobs.delete(file_id)
        if isinstance(failed, LimitReached):
            raise HTTPException(400, f"Document {document.document_id!r}: {failed}") from None
        raise
    return stored


async def _download(knowledge: Knowledge, uri: str, writer: Any, document_id: str) -> int:
    outbound = outbound_from(knowledge.settings)
    limit = knowledge.settings.max_file_bytes
    size = 0
    try:
        async with outbound.client(limit) as client, outbound.get_following_redirects(client, uri) as response:
            if response.status_code >= 400:
                raise HTTPException(400, f"Document {document_id!r}: {uri} answered HTTP {response.status_code}")
            async for data in response.aiter_bytes():
                size += len(data)
                await writer.write(data)
    except OutboundRefused as refused:
        raise HTTPException(400, f"Document {document_id!r}: {refused}") from None
    except ReplyTooLarge:
        raise HTTPException(413, f"Document {document_id!r} is larger than {limit} bytes (DA_MAX_FILE_BYTES)") from None
    except OSError as unreachable:
        raise HTTPException(400, f"Document {document_id!r}: {uri} could not be fetched ({unreachable})") from None
    return size


async def _wait_until_ingested(knowledge: Knowledge, tenant: str, vector_store_id: str, files: dict[str, str]) -> None:
    """Block until every file (id → document id) is ingested; a 400 names the documents that failed and why."""
    deadline = time.monotonic() + INGESTION_WAIT_SECONDS
    pending = dict(files)
    failures = []
    while pending:
        for file_id, document_id in list(pending.items()):
            attached = await knowledge.stores.get_file(tenant, vector_store_id, file_id)
            if attached is None or attached.status != "in_progress":
                del pending[file_id]
                if attached is None or attached.status != "completed":
                    reason = (attached.last_error or {}).get("message") if attached else "it was detached"
                    failures.append(f"{document_id!r}: {reason or attached.status}")  # type: ignore[union-attr]
        if pending:
            if time.monotonic() > deadline:
                raise HTTPException(504, f"Documents still being indexed after {INGESTION_WAIT_SECONDS:.0f} s")
            await asyncio.sleep(0.1)
    if failures:
        raise HTTPException(400, "Some documents could not be indexed: " + "; ".join(failures))


@router.post("/tool-runtime/rag-tool/insert")
async def insert_documents(body: InsertDocuments, tenant: TenantDep, knowledge: KnowledgeDep) -> None:
    """Answers once every document is indexed; if any is not, or anything fails on the way, none of the files
    this insert made is left behind."""
    store = await owned_vector_db(knowledge, tenant, body.vector_db_id)
    stored: dict[str, RAGDocument] = {}
    try:
        for document in body.documents:
            file = await _store_document(knowledge, tenant, store.vector_store_id, document)
            stored[file.file_id] = document
        await _attach_and_wait(knowledge, tenant, store.vector_store_id, body.chunk_size_in_tokens, stored)
    except BaseException:
        for file_id in stored:
            await delete_file(knowledge.stores, knowledge.files, knowledge.blobs, tenant, file_id)
        raise


async def _attach_and_wait(
    knowledge: Knowledge, tenant: str, vector_store_id: str, size: int, stored: dict[str, RAGDocument]
) -> None:
    strategy = {"type": "static", "static": {"max_chunk_size_tokens": size, "chunk_overlap_tokens": size // 4}}
    attachments = [
        Attachment(
            file_id,
            {
                "document_id": document.document_id,
                **{k: v for k, v in document.metadata.items() if isinstance(v, str | int | float | bool)},
            },
            strategy,
        )
        for file_id, document in stored.items()
    ]
    await attach_files(knowledge, tenant, vector_store_id, attachments)
    await _wait_until_ingested(
        knowledge, tenant, vector_store_id, {file_id: doc.document_id for file_id, doc in stored.items()}
    )


@router.post("/tool-runtime/rag-tool/query", response_model=RAGQueryResult)
async def query_documents(body: RAGQuery, tenant: TenantDep, knowledge: KnowledgeDep) -> RAGQueryResult:
    config = body.query_config or QueryConfig()
    if (refused := rag_config.unsupported(config.model_dump(exclude_unset=True))) is not None:
        raise HTTPException(400, refused)
    separator = (config.query_generator_config or {}).get("separator", " ")
    items = body.content if isinstance(body.content, list) else [body.content]
    query = str(separator).join(content_text(item, "content") for item in items)
    if not query.strip():
        raise HTTPException(400, "content has no text to search for")
    mode = config.mode
    if config.ranker is not None and mode is None:
        mode = "hybrid"
    results: list[SearchResult] = []
    for vector_db_id in body.vector_db_ids:
        store = await owned_vector_db(knowledge, tenant, vector_db_id)
        results += await query_store(knowledge, tenant, store, query, config.max_chunks, 0.0, mode)
    results = sorted(results, key=lambda result: -result.score)[: config.max_chunks]
    texts, metadata = rag_answer(results, query, config.max_tokens_in_context, config.chunk_template)
    content = None if texts is None else [TextItem(text=text) for text in texts]
    return RAGQueryResult(content=content, metadata=metadata)

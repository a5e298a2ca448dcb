"""The llama-stack 0.2.x `vector-io` routes: insert chunks (with or without their vectors) and query them."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Literal

import numpy as np
from fastapi import APIRouter, HTTPException
from pydantic import BaseModel, Field

from api.guards.tenancy import TenantDep
from api.knowledge import Knowledge, KnowledgeDep
from api.llama_stack.vector_db_routes import owned_vector_db
from knowledge.chunking import count_tokens
from knowledge.embeddings import EmbeddingUnavailable, unit_rows
from knowledge.rag_results import chunk_metadata
from knowledge.search import Hybrid, SearchResult, Unsearchable, search, searchable_model
from store.knowledge.records import LimitReached, VectorStore

router = APIRouter(tags=["VectorIO"])

MAX_INSERT_CHUNKS = 4096
MAX_QUERY_CHUNKS = 50
DEFAULT_DOCUMENT = "chunks"
"""The document of inserted chunks whose metadata names none."""


class ChunkIn(BaseModel):
    content: str | dict[str, Any] | list[Any]
    metadata: dict[str, Any] = Field(default_factory=dict)
    embedding: list[float] | None = None


class InsertChunks(BaseModel):
    vector_db_id: str
    chunks: list[ChunkIn] = Field(max_length=MAX_INSERT_CHUNKS)
    ttl_seconds: int | None = None


class QueryChunks(BaseModel):
    vector_db_id: str
    query: str | dict[str, Any] | list[Any]
    params: dict[str, Any] | None = None


class ChunkOut(BaseModel):
    content: str
    metadata: dict[str, Any]


class QueryChunksResponse(BaseModel):
    chunks: list[ChunkOut]
    scores: list[float]


def content_text(content: str | dict[str, Any] | list[Any], what: str) -> str:
    """The text of interleaved content: a string, a text item, or a list of them; images are refused."""
    items = content if isinstance(content, list) else [content]
    texts = []
    for item in items:
        if isinstance(item, str):
            texts.append(item)
        elif isinstance(item, dict) and item.get("type") == "text" and isinstance(item.get("text"), str):
            texts.append(item["text"])
        else:
            raise HTTPException(400, f"{what} must be text (a string or text items); images are not indexed")
    return "\n".join(texts)


def search_mode(mode: Literal["vector", "keyword", "hybrid"] | None) -> Hybrid | None:
    if mode == "keyword":
        return Hybrid(embedding_weight=0.0, text_weight=1.0)
    if mode == "hybrid":
        return Hybrid()
    return None


async def query_store(
    knowledge: Knowledge, tenant: str, store: VectorStore, query: str, max_chunks: int, threshold: float, mode: Any
) -> list[SearchResult]:
    if mode not in (None, "vector", "keyword", "hybrid"):
        raise HTTPException(400, f"mode is vector, keyword or hybrid, not {mode!r}")
    try:
        model = searchable_model(knowledge.embeddings, store, datetime.now(UTC))
    except Unsearchable as unsearchable:
        raise HTTPException(409, str(unsearchable)) from None
    try:
        return await search(
            knowledge.stores,
            model,
            tenant,
            store,
            [query],
            max_chunks,
            None,
            threshold,
            search_mode(mode),
        )
    except EmbeddingUnavailable as unavailable:
        raise HTTPException(502, str(unavailable)) from None


@router.post("/vector-io/insert")
async def insert_chunks(body: InsertChunks, tenant: TenantDep, knowledge: KnowledgeDep) -> None:
    if body.ttl_seconds is not None:
        raise HTTPException(
            400,
            "ttl_seconds is not supported: inserted chunks live as long as their vector DB; give the vector "
            "store an expires_after, or delete the chunks' document, to end them",
        )
    store = await owned_vector_db(knowledge, tenant, body.vector_db_id)
    texts = [content_text(chunk.content, f"chunks[{index}].content") for index, chunk in enumerate(body.chunks)]
    missing = [index for index, chunk in enumerate(body.chunks) if chunk.embedding is None]
    if missing:
        try:
            model = searchable_model(knowledge.embeddings, store, datetime.now(UTC))
        except Unsearchable as unsearchable:
            raise HTTPException(409, str(unsearchable)) from None
        try:
            embedded = (await model.embed([texts[index] for index in missing])).vectors
        except EmbeddingUnavailable as unavailable:
            raise HTTPException(502, str(unavailable)) from None
    vectors: list[Any] = []
    for index, chunk in enumerate(body.chunks):
        if chunk.embedding is None:
            vectors.append(embedded[missing.index(index)])
        elif len(chunk.embedding) != store.embedding_dimension:
            raise HTTPException(
                400,
                f"chunks[{index}].embedding has {len(chunk.embedding)} values; this vector DB's have "
                f"{store.embedding_dimension}",
            )
        else:
            vectors.append(unit_rows(np.asarray([chunk.embedding], dtype=np.float32))[0])
    by_document: dict[str, list[tuple[str, int, dict[str, Any], Any]]] = {}
    for text, chunk, vector in zip(texts, body.chunks, vectors, strict=True):
        document_id = str(chunk.metadata.get("document_id") or DEFAULT_DOCUMENT)[:64]
        tokens = chunk.metadata.get("token_count") or count_tokens(text)
        by_document.setdefault(document_id, []).append((text, int(tokens), chunk.metadata, vector))
    for document_id, chunks in by_document.items():
        try:
            await knowledge.stores.insert_chunks(
                tenant,
                store.vector_store_id,
                document_id,
                chunks,
                datetime.now(UTC),
                knowledge.settings.max_chunks_per_vector_store,
                knowledge.settings.max_files_per_vector_store,
            )
        except LimitReached as limit:
            raise HTTPException(400, str(limit)) from None


@router.post("/vector-io/query", response_model=QueryChunksResponse)
async def query_chunks(body: QueryChunks, tenant: TenantDep, knowledge: KnowledgeDep) -> QueryChunksResponse:
    store = await owned_vector_db(knowledge, tenant, body.vector_db_id)
    params = body.params or {}
    max_chunks = params.get("max_chunks", 3)
    if not isinstance(max_chunks, int) or not 1 <= max_chunks <= MAX_QUERY_CHUNKS:
        raise HTTPException(400, f"params.max_chunks is a whole number from 1 to {MAX_QUERY_CHUNKS}")
    threshold = params.get("score_threshold", 0.0)
    if not isinstance(threshold, int | float):
        raise HTTPException(400, "params.score_threshold is a number")
    query = content_text(body.query, "query")
    results = await query_store(knowledge, tenant, store, query, max_chunks, float(threshold), params.get("mode"))
    return QueryChunksResponse(
        chunks=[ChunkOut(content=result.text, metadata=chunk_metadata(result)) for result in results],
        scores=[result.score for result in results],
    )

"""The Vector Stores API: create (with files), list, retrieve, update, delete, and search."""

from __future__ import annotations

import secrets
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query
from pydantic import BaseModel, Field

from api.guards.tenancy import TenantDep
from api.knowledge import KnowledgeDep, attach_files, embedding_model, owned_file
from api.openai.errors import ERROR_RESPONSES, OpenAIError, invalid, not_found
from api.openai.platform.vector_store_shapes import (
    CursorList,
    ExpiresAfter,
    VectorStoreObject,
    chunking,
    cursor_list,
    owned_store,
    store_object,
)
from knowledge import deletion
from knowledge import filters as attribute_filters
from knowledge.embeddings import EmbeddingUnavailable
from knowledge.query_rewrite import rewrite
from knowledge.search import Hybrid, UnknownFilterKey, Unsearchable, search, searchable_model
from store.knowledge.files import UnknownCursor
from store.knowledge.records import Attachment, LimitReached, VectorStore

router = APIRouter(tags=["Vector stores"], responses=ERROR_RESPONSES)


class CreateVectorStore(BaseModel):
    name: str | None = Field(default=None, max_length=256)
    description: str | None = None
    file_ids: list[str] = Field(default_factory=list, max_length=500)
    chunking_strategy: dict[str, Any] | None = None
    metadata: dict[str, str] | None = Field(default=None, max_length=16)
    expires_after: ExpiresAfter | None = None
    embedding_model: str | None = None
    """Not OpenAI's: which embedding model indexes the store (default: DA_DEFAULT_EMBEDDING_MODEL)."""


class UpdateVectorStore(BaseModel):
    name: str | None = Field(default=None, max_length=256)
    metadata: dict[str, str] | None = Field(default=None, max_length=16)
    expires_after: ExpiresAfter | None = None


class VectorStoreDeleted(BaseModel):
    id: str
    object: Literal["vector_store.deleted"] = "vector_store.deleted"
    deleted: bool = True


class HybridSearch(BaseModel):
    embedding_weight: float = Field(default=1.0, ge=0)
    text_weight: float = Field(default=1.0, ge=0)


class RankingOptions(BaseModel):
    ranker: Literal["none", "auto", "default-2024-11-15", "default_2024_08_21"] | None = None
    score_threshold: float = Field(default=0.0, ge=0.0, le=1.0)
    hybrid_search: HybridSearch | None = None
    """{"embedding_weight", "text_weight"}: fuse vector and keyword rankings (as the Responses file_search tool)."""


class SearchRequest(BaseModel):
    query: str | list[str]
    filters: dict[str, Any] | None = None
    max_num_results: int = Field(default=10, ge=1)
    ranking_options: RankingOptions | None = None
    rewrite_query: bool = False
    """Search the query's words without its function words (knowledge/query_rewrite.py); the page's
    `search_query` shows what was searched."""


class SearchContent(BaseModel):
    type: Literal["text"] = "text"
    text: str


class SearchResultObject(BaseModel):
    file_id: str
    filename: str
    score: float
    attributes: dict[str, str | float | bool] | None
    content: list[SearchContent]


class SearchPage(BaseModel):
    object: Literal["vector_store.search_results.page"] = "vector_store.search_results.page"
    search_query: list[str]
    data: list[SearchResultObject]
    has_more: bool = False
    next_page: str | None = None


@router.post("/vector_stores", response_model=VectorStoreObject)
async def create_vector_store(body: CreateVectorStore, tenant: TenantDep, knowledge: KnowledgeDep) -> VectorStoreObject:
    if body.description is not None:
        raise invalid(
            "'description' is not kept by this server: put it in 'metadata' (e.g. {\"description\": \"...\"}).",
            "description",
        )
    model = embedding_model(knowledge, body.embedding_model or knowledge.settings.default_embedding_model)
    strategy = chunking(body.chunking_strategy)
    if len(set(body.file_ids)) != len(body.file_ids):
        raise invalid("file_ids names a file twice.", "file_ids")
    for file_id in body.file_ids:
        await owned_file(knowledge, tenant, file_id)
    now = datetime.now(UTC)
    store = VectorStore(
        vector_store_id="vs_" + secrets.token_hex(12),
        name=body.name,
        metadata=body.metadata or {},
        embedding_model=model.model_id,
        embedding_dimension=model.dimension,
        expires_after=body.expires_after.model_dump() if body.expires_after else None,
        created_at=now,
        last_active_at=now,
    )
    try:
        await knowledge.stores.create(tenant, store, knowledge.settings.max_vector_stores_per_tenant)
    except LimitReached as quota:
        raise OpenAIError(400, str(quota), None, "quota_exceeded") from None
    if body.file_ids:
        attachments = [Attachment(file_id, {}, strategy) for file_id in body.file_ids]
        await attach_files(knowledge, tenant, store.vector_store_id, attachments)
    return store_object(await owned_store(knowledge, tenant, store.vector_store_id))


@router.get("/vector_stores", response_model=CursorList)
async def list_vector_stores(
    tenant: TenantDep,
    knowledge: KnowledgeDep,
    after: Annotated[str | None, Query(min_length=1)] = None,
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
    order: Literal["asc", "desc"] = "desc",
) -> CursorList:
    try:
        stores, has_more = await knowledge.stores.page(tenant, order, after, limit)
    except UnknownCursor:
        raise OpenAIError(404, f"'after' names no vector store of yours: {after!r}.", "after") from None
    return cursor_list([store_object(store) for store in stores], has_more)


@router.get("/vector_stores/{vector_store_id}", response_model=VectorStoreObject)
async def retrieve_vector_store(vector_store_id: str, tenant: TenantDep, knowledge: KnowledgeDep) -> VectorStoreObject:
    return store_object(await owned_store(knowledge, tenant, vector_store_id))


@router.post("/vector_stores/{vector_store_id}", response_model=VectorStoreObject)
async def update_vector_store(
    vector_store_id: str, body: UpdateVectorStore, tenant: TenantDep, knowledge: KnowledgeDep
) -> VectorStoreObject:
    changes: dict[str, Any] = {}
    given = body.model_fields_set
    if "name" in given:
        changes["name"] = body.name
    if "metadata" in given:
        changes["metadata"] = body.metadata or {}
    if "expires_after" in given:
        changes["expires_after"] = body.expires_after.model_dump() if body.expires_after else None
    changes["last_active_at"] = datetime.now(UTC)
    store = await knowledge.stores.update(tenant, vector_store_id, changes)
    if store is None:
        raise not_found("Vector store", vector_store_id)
    return store_object(store)


@router.delete("/vector_stores/{vector_store_id}", response_model=VectorStoreDeleted)
async def delete_vector_store(vector_store_id: str, tenant: TenantDep, knowledge: KnowledgeDep) -> VectorStoreDeleted:
    """The store goes with its chunks and vectors; the files themselves stay (delete them with the Files API)."""
    if not await deletion.delete_vector_store(
        knowledge.stores, knowledge.files, knowledge.blobs, tenant, vector_store_id
    ):
        raise not_found("Vector store", vector_store_id)
    return VectorStoreDeleted(id=vector_store_id)


@router.post("/vector_stores/{vector_store_id}/search", response_model=SearchPage)
async def search_vector_store(
    vector_store_id: str, body: SearchRequest, tenant: TenantDep, knowledge: KnowledgeDep
) -> SearchPage:
    store = await owned_store(knowledge, tenant, vector_store_id)
    largest = knowledge.settings.max_search_results
    if body.max_num_results > largest:
        raise invalid(f"max_num_results is at most {largest} here (DA_MAX_SEARCH_RESULTS).", "max_num_results")
    queries = [body.query] if isinstance(body.query, str) else body.query
    if not queries or not all(query.strip() for query in queries) or len(queries) > 10:
        raise invalid("'query' is a non-empty string or a list of 1 to 10 of them.", "query")
    if body.rewrite_query:
        queries = [rewrite(query) for query in queries]
    if body.filters is not None:
        try:
            attribute_filters.validate(body.filters)
        except attribute_filters.InvalidFilter as bad:
            raise invalid(f"Invalid filters: {bad}.", "filters") from None
    options = body.ranking_options or RankingOptions()
    if options.ranker not in (None, "auto", "none"):
        raise invalid(
            f"ranking_options.ranker {options.ranker!r} is OpenAI's own reranker, which this server does not have: "
            "use 'auto' or 'none' (results rank by similarity, or by hybrid_search's fusion).",
            "ranking_options.ranker",
        )
    weights = options.hybrid_search
    hybrid = Hybrid(weights.embedding_weight, weights.text_weight) if weights else None
    try:
        model = searchable_model(knowledge.embeddings, store, datetime.now(UTC))
    except Unsearchable as unsearchable:
        raise OpenAIError(409, str(unsearchable), None, "vector_store_unsearchable") from None
    try:
        results = await search(
            knowledge.stores,
            model,
            tenant,
            store,
            queries,
            body.max_num_results,
            body.filters,
            options.score_threshold,
            hybrid,
        )
    except UnknownFilterKey as unknown:
        raise invalid(str(unknown), "filters", "unknown_filter_key") from None
    except EmbeddingUnavailable as unavailable:
        raise OpenAIError(502, str(unavailable), None, "embedding_model_unavailable") from None
    data = [
        SearchResultObject(
            file_id=result.file_id,
            filename=result.filename,
            score=round(result.score, 6),
            attributes=result.attributes,
            content=[SearchContent(text=result.text)],
        )
        for result in results
    ]
    return SearchPage(search_query=queries, data=data)

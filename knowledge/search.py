"""A vector store search: the query embedded, nearest chunks found, ranked, filtered by file attributes.

By default chunks rank by cosine similarity to the query. With `hybrid_search` weights, the vector ranking and
the keyword (BM25) ranking are fused by reciprocal rank (each list gives `weight / (60 + rank)`), and the score
is that sum scaled so a chunk first in both lists scores 1. Several queries (a list) each search, and a chunk
keeps its best score. Only completed files are searched: a file still being ingested has some chunks indexed,
and a half-read file must not answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
from sqlalchemy import Connection

from knowledge import filters as attribute_filters
from knowledge.embeddings import EmbeddingCatalog, EmbeddingModel, InProcessEmbeddingModel, UnknownEmbeddingModel
from store.database import ThreadedSQLite
from store.knowledge.records import VectorStore
from store.knowledge.vector_index import Hit
from store.knowledge.vector_stores import VectorStores

RRF_K = 60
CANDIDATES = 4
"""Candidates per list, as a multiple of the results asked for, before fusion."""


@dataclass(frozen=True)
class Hybrid:
    embedding_weight: float = 1.0
    text_weight: float = 1.0


@dataclass(frozen=True)
class SearchResult:
    file_id: str
    filename: str
    score: float
    attributes: dict[str, Any]
    text: str
    chunk_id: int
    metadata: dict[str, Any] | None


class UnknownFilterKey(ValueError):
    pass


class Unsearchable(LookupError):
    """The store cannot answer a search: it expired, or the embedding model it was made with is gone. The
    message says which and what to do."""


def searchable_model(embeddings: EmbeddingCatalog, store: VectorStore, now: datetime) -> EmbeddingModel:
    """The model to embed a search of this store with; raises Unsearchable when there is no search to make."""
    if store.expired(now):
        raise Unsearchable(
            f"Vector store {store.vector_store_id} expired at {store.expires_at:%Y-%m-%dT%H:%M:%SZ} (its "
            "expires_after counts from its last use) and is deleted at retention's next run; create a new one."
        )
    try:
        return embeddings.get(store.embedding_model)
    except UnknownEmbeddingModel:
        raise Unsearchable(
            f"Vector store {store.vector_store_id} was made with the embedding model {store.embedding_model!r}, "
            "which this server no longer configures (DA_MODELS): configure it again to search this store, or make "
            "a new store with a configured model."
        ) from None


def _fused(vector: list[Hit], keyword: list[Hit], hybrid: Hybrid) -> list[Hit]:
    scores: dict[int, float] = {}
    for weight, hits in ((hybrid.embedding_weight, vector), (hybrid.text_weight, keyword)):
        if not weight:
            continue  # a list of weight 0 (keyword-only search) adds nothing, not even zero scores
        for rank, hit in enumerate(hits, start=1):
            scores[hit.chunk_id] = scores.get(hit.chunk_id, 0.0) + weight / (RRF_K + rank)
    best = (hybrid.embedding_weight + hybrid.text_weight) / (RRF_K + 1) or 1.0
    return [Hit(chunk_id, score / best) for chunk_id, score in scores.items()]


async def search(
    stores: VectorStores,
    model: EmbeddingModel,
    tenant: str,
    store: VectorStore,
    queries: Sequence[str],
    max_results: int,
    filters: dict[str, Any] | None,
    score_threshold: float,
    hybrid: Hybrid | None,
) -> list[SearchResult]:
    # On SQLite, whose reads run on threads of ours, a model in this process embeds the queries on the read's own
    # thread: one crossing from the event loop to a thread and back instead of two, and on a busy machine each
    # crossing is a wait for a CPU. (PostgreSQL's reads run on the event loop, which must not embed.)
    threaded = isinstance(stores.database, ThreadedSQLite)
    local = model if threaded and isinstance(model, InProcessEmbeddingModel) else None
    remote = None if local is not None else await model.embed(list(queries))
    wanted = max_results * CANDIDATES if hybrid else max_results

    def query_vectors() -> np.ndarray:
        if local is not None:
            return local.embed_now(list(queries)).vectors
        assert remote is not None
        return remote.vectors

    def ranked(tx: Connection, allowed_ids: list[str] | None) -> list[Hit]:
        vectors = query_vectors()
        best: dict[int, float] = {}
        for query, vector in zip(queries, vectors, strict=True):
            hits = stores.index.nearest(
                tx, store.vector_store_id, store.embedding_dimension, vector, wanted, allowed_ids
            )
            if hybrid is not None:
                keyword = stores.index.keyword(tx, store.vector_store_id, query, wanted, allowed_ids)
                hits = _fused(hits, keyword, hybrid)
            for hit in hits:
                best[hit.chunk_id] = max(best.get(hit.chunk_id, 0.0), hit.score)
        ordered = sorted(best.items(), key=lambda item: -item[1])
        return [Hit(chunk_id, score) for chunk_id, score in ordered if score >= score_threshold][:max_results]

    def read(tx: Connection) -> list[SearchResult]:
        # The files, the index and the chunks' text in one read (one connection, one trip to the store's thread
        # or server).
        files = stores.searchable_files(tx, tenant, store.vector_store_id) or {}
        if filters is not None:
            present = {key for _, attributes in files.values() for key in attributes}
            missing = sorted(set(attribute_filters.keys(filters)) - present)
            if missing and files:
                raise UnknownFilterKey(
                    f"No file in this vector store has the attribute(s) {missing}; "
                    f"attributes present: {sorted(present) or 'none'}."
                )
        allowed = [
            file_id
            for file_id, (_, attributes) in files.items()
            if filters is None or attribute_filters.matches(filters, attributes)
        ]
        if not allowed or not queries:
            return []
        counts = store.file_counts
        # Every file searchable: no file list in the index's query.
        hits = ranked(tx, None if filters is None and counts.completed == counts.total else allowed)
        chunks = stores.chunks(tx, [hit.chunk_id for hit in hits])
        results = []
        for hit in hits:
            chunk = chunks.get(hit.chunk_id)
            if chunk is None or chunk.file_id not in files:
                continue  # removed meanwhile: SQLite reads each statement's own snapshot
            filename, attributes = files[chunk.file_id]
            results.append(
                SearchResult(chunk.file_id, filename, hit.score, attributes, chunk.text, chunk.chunk_id, chunk.metadata)
            )
        return results

    found = await stores.search(read)
    await stores.touch(store.vector_store_id)
    return found

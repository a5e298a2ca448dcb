"""The vector engine of a store URL: sqlite-vec + FTS5 in a SQLite store, pgvector + tsvector in PostgreSQL."""

from __future__ import annotations

from sqlalchemy.engine import make_url

from store.knowledge.vector_index import VectorIndex


def vector_index(store_url: str, vector_cache_mb: int = 0) -> VectorIndex:
    if make_url(store_url).get_backend_name() == "postgresql":
        from knowledge.pg_index import PgVectorIndex

        return PgVectorIndex()
    from knowledge.sqlite_index import SQLiteIndex

    return SQLiteIndex(vector_cache_mb)

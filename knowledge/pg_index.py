"""The engine of a PostgreSQL store: pgvector (HNSW, cosine) and a `tsvector` keyword index.

As in SQLite, one vector table per dimension (`knowledge_vec_<n>`) and one keyword table, keyed by chunk id and
made on first use: the `vector` extension may be missing from a PostgreSQL that runs everything else, and only
vector stores need it. Then creating the first vector store fails with an error that says to install pgvector.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from sqlalchemy import ARRAY, BigInteger, Connection, Text, bindparam, text

from store.knowledge.vector_index import Hit, IndexedChunk, query_words

_FTS = "knowledge_fts"
EXACT_UP_TO = 50_000
"""A store with at most this many vectors is searched exactly, not through the HNSW index."""


class VectorExtensionMissing(RuntimeError):
    pass


def _vectors(dimension: int) -> str:
    return f"knowledge_vec_{int(dimension)}"


def hnsw_index(dimension: int) -> str:
    """The statement that makes a dimension's HNSW index; a bulk import (bench/knowledge_bench.py) drops the index
    and runs it once after loading, which builds the graph far faster than one insert at a time."""
    table = _vectors(dimension)
    return f"CREATE INDEX IF NOT EXISTS {table}_hnsw ON {table} USING hnsw (embedding vector_cosine_ops)"


def _literal(vector: np.ndarray) -> str:
    return "[" + ",".join(f"{value:.7g}" for value in np.asarray(vector, np.float32)) + "]"


def _exists(tx: Connection, table: str) -> bool:
    exists: bool = tx.execute(text("SELECT to_regclass(:name) IS NOT NULL"), {"name": table}).scalar_one()
    return exists


class PgVectorIndex:
    def _ensure(self, tx: Connection, dimension: int) -> None:
        if _exists(tx, _vectors(dimension)):
            return
        available = tx.execute(text("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")).first()
        if available is None:
            raise VectorExtensionMissing(
                "This PostgreSQL has no pgvector extension, which vector stores need: install pgvector "
                "(https://github.com/pgvector/pgvector) on the database server."
            )
        table = _vectors(dimension)
        tx.execute(text("CREATE EXTENSION IF NOT EXISTS vector"))
        tx.execute(
            text(
                f"CREATE TABLE IF NOT EXISTS {table} (chunk_id BIGINT PRIMARY KEY, vector_store_id TEXT NOT NULL, "
                f"file_id TEXT NOT NULL, embedding vector({int(dimension)}) NOT NULL)"
            )
        )
        tx.execute(text(hnsw_index(dimension)))
        tx.execute(text(f"CREATE INDEX IF NOT EXISTS {table}_store ON {table} (vector_store_id, file_id)"))
        tx.execute(
            text(
                f"CREATE TABLE IF NOT EXISTS {_FTS} (chunk_id BIGINT PRIMARY KEY, vector_store_id TEXT NOT NULL, "
                "file_id TEXT NOT NULL, words tsvector NOT NULL)"
            )
        )
        tx.execute(text(f"CREATE INDEX IF NOT EXISTS {_FTS}_words ON {_FTS} USING gin (words)"))

    def add(self, tx: Connection, vector_store_id: str, dimension: int, chunks: Sequence[IndexedChunk]) -> None:
        self._ensure(tx, dimension)
        tx.execute(
            text(
                f"INSERT INTO {_vectors(dimension)} (chunk_id, vector_store_id, file_id, embedding) "
                "VALUES (:chunk_id, :vector_store_id, :file_id, CAST(:embedding AS vector))"
            ),
            [
                {
                    "chunk_id": chunk.chunk_id,
                    "vector_store_id": vector_store_id,
                    "file_id": chunk.file_id,
                    "embedding": _literal(chunk.vector),
                }
                for chunk in chunks
            ],
        )
        tx.execute(
            text(
                f"INSERT INTO {_FTS} (chunk_id, vector_store_id, file_id, words) "
                "VALUES (:chunk_id, :vector_store_id, :file_id, to_tsvector('english', :text))"
            ),
            [
                {
                    "chunk_id": chunk.chunk_id,
                    "vector_store_id": vector_store_id,
                    "file_id": chunk.file_id,
                    "text": chunk.text.replace("\x00", ""),
                }
                for chunk in chunks
            ],
        )

    def remove(self, tx: Connection, dimension: int, chunk_ids: Sequence[int]) -> None:
        if not chunk_ids:
            return
        ids = bindparam("ids", list(chunk_ids), type_=ARRAY(BigInteger))
        for table in (_vectors(dimension), _FTS):
            if _exists(tx, table):
                tx.execute(text(f"DELETE FROM {table} WHERE chunk_id = ANY(:ids)").bindparams(ids))

    def nearest(
        self,
        tx: Connection,
        vector_store_id: str,
        dimension: int,
        query: np.ndarray,
        limit: int,
        file_ids: Sequence[str] | None,
    ) -> list[Hit]:
        if not _exists(tx, _vectors(dimension)) or file_ids == []:
            return []
        only = " AND file_id = ANY(:files)" if file_ids is not None else ""
        statement = text(
            f"SELECT chunk_id, embedding <=> CAST(:query AS vector) AS distance FROM {_vectors(dimension)} "
            f"WHERE vector_store_id = :store{only} ORDER BY distance LIMIT :limit"
        )
        if file_ids is not None:
            statement = statement.bindparams(bindparam("files", list(file_ids), type_=ARRAY(Text)))
        # The HNSW index spans every store: its scan yields at most ef_search rows before the store's filter,
        # which for a small store (or many equal vectors) can leave none. Below EXACT_UP_TO vectors the store is
        # scanned exactly (its rows by the (vector_store_id, file_id) index, then sorted); above, HNSW looks wide.
        # The store's size from its files' chunk counts (a few rows), not by counting its vectors (an index scan
        # of every one, which cost a 100k-chunk search more than the search).
        size = tx.execute(
            text("SELECT coalesce(sum(chunk_count), 0) FROM vector_store_files WHERE vector_store_id = :store"),
            {"store": vector_store_id},
        ).scalar_one()
        if size <= EXACT_UP_TO:
            tx.execute(text("SET LOCAL enable_indexscan = off"))
        else:
            tx.execute(text(f"SET LOCAL hnsw.ef_search = {max(100, min(1000, limit * 10))}"))
        rows = tx.execute(statement, {"query": _literal(query), "store": vector_store_id, "limit": limit}).all()
        return [Hit(chunk_id=row[0], score=max(0.0, 1.0 - float(row[1]))) for row in rows]

    def keyword(
        self, tx: Connection, vector_store_id: str, query: str, limit: int, file_ids: Sequence[str] | None
    ) -> list[Hit]:
        words = query_words(query)
        if not words or not _exists(tx, _FTS) or file_ids == []:
            return []
        only = " AND file_id = ANY(:files)" if file_ids is not None else ""
        statement = text(
            f"SELECT chunk_id, ts_rank_cd(words, q) AS rank FROM {_FTS}, to_tsquery('english', :terms) AS q "
            f"WHERE words @@ q AND vector_store_id = :store{only} ORDER BY rank DESC LIMIT :limit"
        )
        if file_ids is not None:
            statement = statement.bindparams(bindparam("files", list(file_ids), type_=ARRAY(Text)))
        rows = tx.execute(statement, {"terms": " | ".join(words), "store": vector_store_id, "limit": limit}).all()
        return [Hit(chunk_id=row[0], score=float(row[1])) for row in rows]

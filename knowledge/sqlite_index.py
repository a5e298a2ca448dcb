"""The embedded engine: sqlite-vec (vector KNN) and FTS5 (keywords) in the store's own SQLite database.

Vectors live in one `vec0` table per dimension (`knowledge_vec_<n>`), partitioned by vector store so a search
scans only its store's vectors, with the file id as a metadata column for filters. Every vector is unit length
(knowledge/embeddings.py), so the table's L2 distance ranks as cosine does.
Keywords live in one FTS5 table (`knowledge_fts`) ranked by BM25. Both are keyed by the chunk's id, so
removing a chunk is removing its rowid, and both are made on first use rather than by a migration: a `vec0`
table's width is fixed when it is made, and the dimensions in use are those of the embedding models vector
stores are created with (configuration, not schema). A store's KNN is answered from the process's in-memory copy
of its vectors when it has one (knowledge/vector_cache.py), with the same distances and order as the scan.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from sqlalchemy import Connection

from knowledge.vector_cache import CACHE, bump_versions
from store.knowledge.vector_index import CHUNK_TABLE, Hit, IndexedChunk, query_words

MAX_K = 4096
"""sqlite-vec's largest k."""
_FTS = "knowledge_fts"
_CHUNKS = CHUNK_TABLE


def _vectors(dimension: int) -> str:
    return f"knowledge_vec_{int(dimension)}"


def _ensure(tx: Connection, dimension: int) -> None:
    tx.exec_driver_sql(
        f"CREATE VIRTUAL TABLE IF NOT EXISTS {_vectors(dimension)} USING vec0("
        f"embedding float[{int(dimension)}], "
        "vector_store_id text partition key, file_id text)"
    )
    tx.exec_driver_sql(
        f"CREATE VIRTUAL TABLE IF NOT EXISTS {_FTS} USING fts5("
        "text, vector_store_id UNINDEXED, file_id UNINDEXED, tokenize='porter unicode61 remove_diacritics 2')"
    )


def _exists(tx: Connection, table: str) -> bool:
    found = tx.exec_driver_sql("SELECT 1 FROM sqlite_master WHERE name = ?", (table,)).first()
    return found is not None


def _in(values: Sequence[object]) -> str:
    return "(" + ",".join("?" * len(values)) + ")"


class SQLiteIndex:
    def __init__(self, cache_mb: int = 0) -> None:
        self.cache_bytes = cache_mb * 1024 * 1024

    def add(self, tx: Connection, vector_store_id: str, dimension: int, chunks: Sequence[IndexedChunk]) -> None:
        _ensure(tx, dimension)
        tx.exec_driver_sql(
            f"INSERT INTO {_vectors(dimension)}(rowid, embedding, vector_store_id, file_id) VALUES (?, ?, ?, ?)",
            [
                (chunk.chunk_id, np.asarray(chunk.vector, np.float32).tobytes(), vector_store_id, chunk.file_id)
                for chunk in chunks
            ],
        )
        tx.exec_driver_sql(
            f"INSERT INTO {_FTS}(rowid, text, vector_store_id, file_id) VALUES (?, ?, ?, ?)",
            [(chunk.chunk_id, chunk.text, vector_store_id, chunk.file_id) for chunk in chunks],
        )
        bump_versions(tx, [vector_store_id])

    def remove(self, tx: Connection, dimension: int, chunk_ids: Sequence[int]) -> None:
        if not chunk_ids or not _exists(tx, _FTS):
            return
        stores: set[str] = set()
        for start in range(0, len(chunk_ids), 500):
            ids = list(chunk_ids[start : start + 500])
            found = tx.exec_driver_sql(
                f"SELECT DISTINCT vector_store_id FROM {_CHUNKS} WHERE chunk_id IN {_in(ids)}", tuple(ids)
            )
            stores.update(row[0] for row in found)
            if _exists(tx, _vectors(dimension)):
                tx.exec_driver_sql(f"DELETE FROM {_vectors(dimension)} WHERE rowid IN {_in(ids)}", tuple(ids))
            tx.exec_driver_sql(f"DELETE FROM {_FTS} WHERE rowid IN {_in(ids)}", tuple(ids))
        bump_versions(tx, sorted(stores))

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
        k = min(limit, MAX_K)
        cached = CACHE.vectors(tx, _vectors(dimension), vector_store_id, dimension, self.cache_bytes)
        if cached is not None:
            return [Hit(chunk_id=i, score=max(0.0, 1.0 - d**2 / 2)) for i, d in cached.nearest(query, k, file_ids)]
        only = f" AND file_id IN {_in(file_ids)}" if file_ids is not None else ""
        rows = tx.exec_driver_sql(
            f"SELECT rowid, distance FROM {_vectors(dimension)} "
            f"WHERE embedding MATCH ? AND k = ? AND vector_store_id = ?{only} ORDER BY distance",
            (np.asarray(query, np.float32).tobytes(), k, vector_store_id, *(file_ids or ())),
        ).all()
        # L2 between unit vectors: cosine similarity is 1 - d²/2 (the same ranking as cosine distance, and the
        # scan is about an eighth quicker).
        return [Hit(chunk_id=row[0], score=max(0.0, 1.0 - float(row[1]) ** 2 / 2)) for row in rows]

    def keyword(
        self, tx: Connection, vector_store_id: str, query: str, limit: int, file_ids: Sequence[str] | None
    ) -> list[Hit]:
        words = query_words(query)
        if not words or not _exists(tx, _FTS) or file_ids == []:
            return []
        match = " OR ".join('"' + word.replace('"', "") + '"' for word in words)
        only = f" AND c.file_id IN {_in(file_ids)}" if file_ids is not None else ""
        # The store (and files) from each match's chunk row, by its primary key: the FTS table's own unindexed
        # columns are read through its content table, a statement per match, and with common words every chunk
        # of a large store matches (100,000 matches: about a third less CPU this way, the same rows).
        rows = tx.exec_driver_sql(
            f"SELECT {_FTS}.rowid, bm25({_FTS}) FROM {_FTS} CROSS JOIN {_CHUNKS} c ON c.chunk_id = {_FTS}.rowid "
            f"WHERE {_FTS} MATCH ? AND c.vector_store_id = ?{only} ORDER BY bm25({_FTS}) LIMIT ?",
            (match, vector_store_id, *(file_ids or ()), limit),
        ).all()
        return [Hit(chunk_id=row[0], score=-float(row[1])) for row in rows]

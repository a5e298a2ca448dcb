"""The one interface of the vector engines (knowledge/sqlite_index.py, knowledge/pg_index.py): each keeps a vector
index and a keyword index of the store's chunks.

Every method is a plain function of a store connection, so that the caller runs it inside the store
transaction that also writes or reads the chunks (store/knowledge/vector_stores.py).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
from sqlalchemy import Connection

from store.knowledge.tables import ChunkRow

CHUNK_TABLE = ChunkRow.__tablename__
"""The table whose `chunk_id` keys every engine's indexes, for an engine's own SQL."""


@dataclass(frozen=True)
class IndexedChunk:
    chunk_id: int
    file_id: str
    text: str
    vector: np.ndarray


@dataclass(frozen=True)
class Hit:
    chunk_id: int
    score: float
    """Vector hits: cosine similarity (1 is the same direction); keyword hits: the engine's own relevance."""


class VectorIndex(Protocol):
    def add(self, tx: Connection, vector_store_id: str, dimension: int, chunks: Sequence[IndexedChunk]) -> None: ...

    def remove(self, tx: Connection, dimension: int, chunk_ids: Sequence[int]) -> None: ...

    def nearest(
        self,
        tx: Connection,
        vector_store_id: str,
        dimension: int,
        query: np.ndarray,
        limit: int,
        file_ids: Sequence[str] | None,
    ) -> list[Hit]:
        """The `limit` chunks nearest to `query`, best first; only of `file_ids` unless None."""
        ...

    def keyword(
        self, tx: Connection, vector_store_id: str, query: str, limit: int, file_ids: Sequence[str] | None
    ) -> list[Hit]:
        """The `limit` chunks that match the query's words best, best first."""
        ...


def query_words(query: str, most: int = 32) -> list[str]:
    """The words of a search query, for a keyword index: each matched as a word, never as query syntax."""
    return re.findall(r"\w+", query.lower())[:most]

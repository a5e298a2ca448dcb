"""A process's copy of SQLite vector stores' vectors, so a search is one numpy product instead of a sqlite-vec scan.

The sqlite-vec wheel scans at about 300 ns per 256-dimension vector (no AVX); numpy's matrix-vector product over
the same vectors takes a few milliseconds. Copying a store's vectors out of SQLite costs about as much as one
scan, so they are copied once and kept, bounded by `vector_cache_mb` with the least recently searched store
leaving first.

Writers may be other processes (the worker ingesting), so a copy is used only while the store's version
(`knowledge_vec_versions`, bumped in the transaction that adds or removes its vectors) is the one it was read
at; one indexed row read per search checks it. A store whose version changed is scanned by sqlite-vec and
copied again only once a search sees the same version twice, so a store being ingested into is not copied on
every search.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from sqlalchemy import Connection
from sqlalchemy.exc import DBAPIError

logger = logging.getLogger(__name__)

Key = tuple[str, str, int]
"""The store database's URL, the vector store's id, the dimension."""


@dataclass(frozen=True)
class StoreVectors:
    version: int
    chunk_ids: np.ndarray
    """int64, one per row of `vectors`."""
    vectors: np.ndarray
    """float32, one row per chunk."""
    squared_norms: np.ndarray
    file_codes: np.ndarray
    """int32, each row's index in `files`."""
    files: dict[str, int]

    @property
    def nbytes(self) -> int:
        return self.chunk_ids.nbytes + self.vectors.nbytes + self.squared_norms.nbytes + self.file_codes.nbytes

    def nearest(self, query: np.ndarray, k: int, file_ids: Sequence[str] | None) -> list[tuple[int, float]]:
        """The `k` nearest chunks as (chunk id, L2 distance), nearest first, as sqlite-vec's KNN gives them."""
        q = np.asarray(query, np.float32)
        # Squared L2 through the dot product: one pass over the matrix. Ranks are then settled on the exact
        # difference, as sqlite-vec computes it, for the candidates only.
        squared = self.squared_norms - 2.0 * (self.vectors @ q)
        if file_ids is not None:
            codes = [self.files[f] for f in file_ids if f in self.files]
            squared[~np.isin(self.file_codes, np.asarray(codes, np.int32))] = np.inf
        candidates = min(k + 16, len(squared))
        if candidates == 0:
            return []
        top = (
            np.argpartition(squared, candidates - 1)[:candidates]
            if candidates < len(squared)
            else np.arange(candidates)
        )
        top = top[np.isfinite(squared[top])]
        distances = np.sqrt(np.sum((self.vectors[top] - q) ** 2, axis=1, dtype=np.float32))
        order = np.lexsort((self.chunk_ids[top], distances))[:k]
        return [(int(self.chunk_ids[top[i]]), float(distances[i])) for i in order]


VERSIONS = "knowledge_vec_versions"


def read_version(tx: Connection, vector_store_id: str) -> int:
    """The store's version; 0 until this release first adds or removes its vectors (which makes the table)."""
    if tx.exec_driver_sql("SELECT 1 FROM sqlite_master WHERE name = ?", (VERSIONS,)).first() is None:
        return 0
    row = tx.exec_driver_sql(f"SELECT version FROM {VERSIONS} WHERE vector_store_id = ?", (vector_store_id,)).first()
    return int(row[0]) if row is not None else 0


def bump_versions(tx: Connection, vector_store_ids: Sequence[str]) -> None:
    """In the transaction that changes these stores' vectors: every process's copy of them is stale."""
    tx.exec_driver_sql(f"CREATE TABLE IF NOT EXISTS {VERSIONS} (vector_store_id TEXT PRIMARY KEY, version INTEGER)")
    tx.exec_driver_sql(
        f"INSERT INTO {VERSIONS}(vector_store_id, version) VALUES (?, 1) "
        "ON CONFLICT(vector_store_id) DO UPDATE SET version = version + 1",
        [(vector_store_id,) for vector_store_id in vector_store_ids],
    )


def _load(tx: Connection, table: str, vector_store_id: str, dimension: int, version: int) -> StoreVectors:
    # Straight from vec0's own storage: its rows read one by one through the virtual table take about 14 µs
    # each (1.4 s at 100,000), its chunk tables a few hundredths of that. A chunk holds up to 1,024 vectors of one
    # partition, their rowids, and a bitmap of the slots in use (sqlite-vec 0.1's layout, which the tests pin).
    chunk_ids: list[np.ndarray] = []
    vectors: list[np.ndarray] = []
    for size, validity, rowids, blob in tx.exec_driver_sql(
        f"SELECT c.size, c.validity, c.rowids, v.vectors FROM {table}_chunks c "
        f"JOIN {table}_vector_chunks00 v ON v.rowid = c.chunk_id WHERE c.partition00 = ? ORDER BY c.chunk_id",
        (vector_store_id,),
    ):
        used = np.unpackbits(np.frombuffer(validity, np.uint8), bitorder="little")[:size].astype(bool)
        chunk_ids.append(np.frombuffer(rowids, np.int64)[:size][used])
        vectors.append(np.frombuffer(blob, np.float32).reshape(-1, dimension)[:size][used])
    ids = np.concatenate(chunk_ids) if chunk_ids else np.zeros(0, np.int64)
    matrix = np.concatenate(vectors) if vectors else np.zeros((0, dimension), np.float32)
    files: dict[str, int] = {}
    by_chunk = {
        chunk_id: files.setdefault(file_id, len(files))
        for chunk_id, file_id in tx.exec_driver_sql(
            "SELECT chunk_id, file_id FROM knowledge_chunks WHERE vector_store_id = ?", (vector_store_id,)
        )
    }
    codes = np.fromiter((by_chunk.get(int(chunk_id), -1) for chunk_id in ids), np.int32, len(ids))
    if len(ids) != len(by_chunk) or (codes < 0).any():
        # Not the layout this reader knows (another sqlite-vec release): the scan stays right where a copy would not.
        raise ValueError(f"{len(ids)} vectors read for {len(by_chunk)} chunks")
    norms = np.einsum("ij,ij->i", matrix, matrix)
    return StoreVectors(version, ids, matrix, norms, codes, files)


class VectorCache:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._stores: OrderedDict[Key, StoreVectors] = OrderedDict()
        self._seen: dict[Key, int] = {}
        """The version a search last saw of a store it did not find cached: copied if the next sees it again."""
        self._oversized: dict[Key, int] = {}
        """The version at which a store was found too large to keep: not read again until it changes."""

    def vectors(
        self, tx: Connection, table: str, vector_store_id: str, dimension: int, budget: int
    ) -> StoreVectors | None:
        """The store's vectors as of now, or None: the caller scans with sqlite-vec. `budget`: bytes kept at most."""
        if budget <= 0:
            return None
        key = (str(tx.engine.url), vector_store_id, dimension)
        version = read_version(tx, vector_store_id)
        with self._lock:
            cached = self._stores.get(key)
            if cached is not None and cached.version == version:
                self._stores.move_to_end(key)
                return cached
            if self._seen.get(key) != version or self._oversized.get(key) == version:
                self._seen[key] = version
                self._stores.pop(key, None)
                return None
        try:
            loaded = _load(tx, table, vector_store_id, dimension, version)
        except (DBAPIError, ValueError) as unreadable:
            loaded = None
            logger.warning("vector store %s is scanned, not copied: %s", vector_store_id, unreadable)
        if loaded is None or loaded.nbytes > budget:
            with self._lock:
                self._oversized[key] = version
            return None
        if read_version(tx, vector_store_id) != version:
            return None  # changed while it was read
        with self._lock:
            self._seen.pop(key, None)
            self._stores[key] = loaded
            self._stores.move_to_end(key)
            while sum(store.nbytes for store in self._stores.values()) > budget:
                self._stores.popitem(last=False)
        return loaded


CACHE = VectorCache()
"""One per process: the API's and an in-process worker's searches share it."""

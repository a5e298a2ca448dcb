"""The ingestion workflow's activities (workflows/ingestion.py): read and chunk a file, embed and index its
chunks batch by batch, record how it ended. Each reads what it needs from the store and the blob store itself,
so the workflow passes ids only."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import closing
from functools import partial
from itertools import islice
from typing import TypeVar

import numpy as np
from temporalio import activity
from temporalio.exceptions import ApplicationError

from configuration.settings import Settings
from knowledge.blobs import BlobStore
from knowledge.chunking import Chunk, StaticChunking, chunks, most_chunks
from knowledge.embeddings import EmbeddingCatalog, EmbeddingUnavailable, WordLlamaEmbeddings
from knowledge.extraction import ExtractedText, ExtractionLimits, Unreadable, extract
from store.knowledge.records import Detached, IngestionTarget, LimitReached
from store.knowledge.vector_index import IndexedChunk
from store.knowledge.vector_stores import VectorStores
from workflows.ingestion import (
    CHUNK_FILE_ACTIVITY,
    EMBED_CHUNKS_ACTIVITY,
    FILE_DETACHED,
    FINISH_FILE_ACTIVITY,
    FileOutcome,
    IngestFile,
)

T = TypeVar("T")

EMBED_CALL_SECONDS = 30.0
"""An `embed_chunks` call returns after about this long, so a long file is many short activities in the
workflow's history, each resumable, rather than one that runs for an hour."""
_BEAT_SECONDS = 5.0
CPU_JOBS = max(1, (os.cpu_count() or 2) // 2)


async def _beating(work: Awaitable[T]) -> T:
    """Await `work` (a thread's, or the wait for one), heartbeating meanwhile so Temporal knows this worker is
    alive."""
    task = asyncio.ensure_future(work)
    while True:
        done, _ = await asyncio.wait({task}, timeout=_BEAT_SECONDS)
        if done:
            return task.result()
        activity.heartbeat()


def _skip(pieces: Iterator[Chunk], count: int) -> None:
    for _ in islice(pieces, count):
        pass


def _cut_batch(
    pieces: Iterator[Chunk], size: int, model: WordLlamaEmbeddings | None
) -> tuple[list[Chunk], np.ndarray | None] | None:
    """The next `size` chunks (None: there are no more), with their vectors if the built-in `model` is given."""
    batch = list(islice(pieces, size))
    if not batch:
        return None
    return batch, model.embed_token_ids([chunk.token_ids for chunk in batch]).vectors if model else None


def _count(text: ExtractedText, strategy: StaticChunking) -> int:
    return sum(1 for _ in chunks(text.blocks(), strategy))


class IngestionActivities:
    def __init__(
        self, stores: VectorStores, blobs: BlobStore, embeddings: EmbeddingCatalog, settings: Settings
    ) -> None:
        self._stores = stores
        self._blobs = blobs
        self._embeddings = embeddings
        self._settings = settings
        self._cpu = asyncio.Semaphore(CPU_JOBS)
        """Extraction, chunking and the built-in model's embedding are CPU work on threads: more of them at once
        than a process has cores would only starve its event loop (heartbeats missed, workflow tasks late)."""

    async def _on_cpu(self, work: Callable[[], Awaitable[T]]) -> T:
        """Run `work` when a CPU slot is free, heartbeating all the while."""

        async def held() -> T:
            async with self._cpu:
                return await work()

        return await _beating(held())

    async def _target(self, file: IngestFile) -> IngestionTarget:
        target = await self._stores.ingestion_target(file.vector_store_id, file.file_id)
        if target is None or target.status != "in_progress" or target.ingestion_id != file.ingestion_id:
            raise ApplicationError("The file is no longer attached to the vector store", type=FILE_DETACHED)
        return target

    @activity.defn(name=CHUNK_FILE_ACTIVITY)
    async def chunk_file(self, file: IngestFile) -> int:
        target = await self._target(file)
        strategy = StaticChunking(**(target.chunking_strategy.get("static") or {}))
        limits = ExtractionLimits(self._settings.max_extracted_characters, self._settings.max_pdf_pages)
        try:
            async with self._blobs.local_copy(file.file_id) as path:
                text = await self._on_cpu(partial(asyncio.to_thread, extract, path, target.filename, limits))
                try:
                    return await self._write(file, target, text, strategy, most_chunks(text.characters, strategy))
                except LimitReached:
                    # The bound passes the store's limit; the file itself may not: count its chunks and see.
                    total = await self._on_cpu(partial(asyncio.to_thread, _count, text, strategy))
                    return await self._write(file, target, text, strategy, total)
        except FileNotFoundError:
            raise ApplicationError(
                f"The bytes of {target.filename} are missing from the file store; upload the file again.",
                type="invalid_file",
            ) from None
        except Unreadable as unreadable:
            raise ApplicationError(unreadable.message, type=unreadable.code) from None
        except LimitReached as limit:
            raise ApplicationError(str(limit), type="invalid_file") from None
        except Detached:
            raise ApplicationError("The file is no longer attached to the vector store", type=FILE_DETACHED) from None

    async def _write(
        self, file: IngestFile, target: IngestionTarget, text: ExtractedText, strategy: StaticChunking, total: int
    ) -> int:
        """Chunk the file and write its chunks batch by batch as they are cut, from the first batch an earlier
        attempt did not write (the ones before are cut again, not embedded nor written): only one batch of
        chunks is held at a time, whatever the file's size. The built-in model embeds each batch from the token
        ids the chunker cut, and it is written with its vectors in one transaction, so `embed_chunks` then finds
        nothing left; a remote model embeds text, so its batches are written without vectors for `embed_chunks`.
        `total` is the file's chunks or a bound on them, which the first batch checks against the store's
        limit. How many chunks the file has."""
        size = self._settings.ingestion_batch_size
        written = await self._stores.written_chunks(file.vector_store_id, file.file_id)
        model = self._embeddings.get(target.embedding_model)
        local = model if isinstance(model, WordLlamaEmbeddings) else None
        with closing(chunks(text.blocks(), strategy)) as pieces:
            await self._on_cpu(partial(asyncio.to_thread, _skip, pieces, written - written % size))
            first = written - written % size
            while batch := await self._on_cpu(partial(asyncio.to_thread, _cut_batch, pieces, size, local)):
                cut, vectors = batch
                if vectors is None:
                    await self._stores.write_chunks(
                        file.vector_store_id,
                        file.file_id,
                        file.ingestion_id,
                        first,
                        total,
                        [(chunk.text, chunk.tokens) for chunk in cut],
                        self._settings.max_chunks_per_vector_store,
                    )
                else:
                    await self._stores.write_embedded_chunks(
                        file.vector_store_id,
                        file.file_id,
                        file.ingestion_id,
                        target.embedding_dimension,
                        first,
                        total,
                        [(chunk.text, chunk.tokens, vector) for chunk, vector in zip(cut, vectors, strict=True)],
                        self._settings.max_chunks_per_vector_store,
                    )
                first += len(cut)
                activity.heartbeat(first)
        return first

    @activity.defn(name=EMBED_CHUNKS_ACTIVITY)
    async def embed_chunks(self, file: IngestFile) -> int:
        """Embed and index batches of the file's chunks for about EMBED_CALL_SECONDS; how many it indexed
        (0: none were left)."""
        target = await self._target(file)
        model = self._embeddings.get(target.embedding_model)
        deadline = time.monotonic() + EMBED_CALL_SECONDS
        done = 0
        while time.monotonic() < deadline:
            batch = await self._stores.unembedded(
                file.vector_store_id, file.file_id, self._settings.ingestion_batch_size
            )
            if not batch:
                break
            try:
                embedding = partial(model.embed, [chunk.text for chunk in batch])
                # The built-in model computes in this process; a remote one only waits, and needs no CPU slot.
                local = isinstance(model, WordLlamaEmbeddings)
                embedded = await (self._on_cpu(embedding) if local else embedding())
            except EmbeddingUnavailable as unavailable:
                raise ApplicationError(str(unavailable), type="embedding_unavailable") from None
            indexed = [
                IndexedChunk(chunk.chunk_id, chunk.file_id, chunk.text, vector)
                for chunk, vector in zip(batch, embedded.vectors, strict=True)
            ]
            await self._stores.write_vectors(file.vector_store_id, target.embedding_dimension, indexed)
            done += len(batch)
            activity.heartbeat(done)
        return done

    @activity.defn(name=FINISH_FILE_ACTIVITY)
    async def finish_file(self, outcome: FileOutcome) -> None:
        target = await self._stores.ingestion_target(outcome.vector_store_id, outcome.file_id)
        if target is None:
            return
        await self._stores.finish_file(
            outcome.vector_store_id,
            outcome.file_id,
            outcome.ingestion_id,
            outcome.status,
            outcome.last_error,
            target.embedding_dimension * 4,
        )

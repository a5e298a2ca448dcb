"""Ingesting a file holds a bounded amount of memory whatever the file's size: a text file is read, chunked and
written batch by batch, and the chunks are exactly the ones chunking the whole text at once makes."""

from __future__ import annotations

import random
import tracemalloc
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest
from sqlalchemy import Connection, select
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from activities.ingestion import IngestionActivities
from configuration.settings import Settings
from knowledge.blobs import DirectoryBlobs
from knowledge.chunking import _SEGMENT_CHARS, Chunk, StaticChunking, _tokenizer, chunks
from knowledge.embeddings import BUILTIN_DIMENSION, EmbeddingCatalog, WordLlamaEmbeddings
from knowledge.extraction import ExtractionLimits, extract
from store.knowledge.files import StoredFile
from store.knowledge.quotas import FileQuota
from store.knowledge.records import Attachment, VectorStore
from store.knowledge.tables import ChunkRow
from store.repository import Store
from tests.support.databases import opened_store
from workflows.ingestion import IngestFile

NOW = datetime(2026, 3, 1, tzinfo=UTC)
STRATEGY = {"type": "static", "static": {"max_chunk_size_tokens": 800, "chunk_overlap_tokens": 400}}
MB = 1 << 20
BUILTIN = (Settings().default_embedding_model, BUILTIN_DIMENSION)


def _whole_text_chunks(text: str, strategy: StaticChunking) -> Iterator[Chunk]:
    """How chunks were cut from a whole text before chunking streamed (verbatim): the reference."""
    tokenizer = _tokenizer()
    size, overlap = strategy.max_chunk_size_tokens, strategy.chunk_overlap_tokens
    step = size - overlap
    starts = ends = ids = np.empty(0, np.int64)
    emitted = False
    start = 0
    while start < len(text):
        end = min(len(text), start + _SEGMENT_CHARS)
        if end < len(text):
            cut = text.rfind(" ", start + _SEGMENT_CHARS // 2, end)
            end = cut if cut > start else end
        encoding = tokenizer.encode(text[start:end], add_special_tokens=False)
        offsets = np.asarray(encoding.offsets, np.int64).reshape(-1, 2)
        kept = offsets[:, 1] > offsets[:, 0]
        offsets = offsets[kept] + start
        segment = (offsets[:, 0], offsets[:, 1], np.asarray(encoding.ids, np.int64)[kept])
        start = end
        starts, ends, ids = (np.concatenate(pair) for pair in zip((starts, ends, ids), segment, strict=True))
        if len(starts) < size:
            continue
        windows = (len(starts) - size) // step + 1
        for first in range(0, windows * step, step):
            yield Chunk(text[starts[first] : ends[first + size - 1]], size, ids[first : first + size])
        starts, ends, ids = starts[windows * step :], ends[windows * step :], ids[windows * step :]
        emitted = True
    if len(starts) and (len(starts) > overlap or not emitted):
        yield Chunk(text[starts[0] : ends[-1]], len(starts), ids)


def _prose(characters: int, emoji: bool = True) -> str:
    words = ["puffin", "lifeboat", "drill", "héllo", "co-operative", "the", "a", "harbour", "\n\n"]
    words += ["😀"] if emoji else []
    picked = random.Random(7)
    parts: list[str] = []
    length = 0
    while length < characters:
        parts.append(picked.choice(words) + picked.choice([" ", " ", "", "\n", "  "]))
        length += len(parts[-1])
    return "".join(parts)[:characters]


TEXTS = {
    "empty": "",
    "one word": "puffin",
    "a paragraph": _prose(3_000),
    "long prose": _prose(150_000),  # three segments
    "no whitespace": "x" * 140_000,
    "only spaces": " " * 150_000,
    "no whitespace, emoji": "😀" * 70_000 + " tail",
    "spaces every segment's edge": ("y" * (_SEGMENT_CHARS // 2 - 1) + " ") * 9,
}


@pytest.mark.parametrize("name", list(TEXTS))
def test_chunks_fed_in_blocks_are_the_chunks_of_the_whole_text(name: str) -> None:
    text = TEXTS[name]
    for strategy in (StaticChunking(), StaticChunking(100, 0), StaticChunking(100, 50)):
        expected = [
            (chunk.text, chunk.tokens, chunk.token_ids.tolist()) for chunk in _whole_text_chunks(text, strategy)
        ]
        for block in (len(text) or 1, 1_000, 65_537):
            blocks = (text[start : start + block] for start in range(0, len(text), block))
            made = [(chunk.text, chunk.tokens, chunk.token_ids.tolist()) for chunk in chunks(blocks, strategy)]
            assert made == expected, (name, strategy, block)


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    async with opened_store("sqlite", tmp_path) as store:
        yield store


async def _ingest(
    store: Store, tmp_path: Path, text: str, settings: Settings, model: tuple[str, int] = BUILTIN, attempts: int = 1
) -> tuple[int, list[tuple[str, bool]], int]:
    """Run `chunk_file` (the real activity) `attempts` times on a text file attached to a store of `model`; how
    many chunks it wrote, their texts and whether they are embedded, and the most memory (bytes, as tracemalloc
    traces it) the activity held at once."""
    blobs = DirectoryBlobs(tmp_path / "blobs")
    blobs.root.mkdir()
    blobs.path("file-a").write_text(text, encoding="utf-8")
    info = VectorStore("vs_a", "docs", {}, *model, None, NOW, NOW, None)
    await store.vector_stores.create("t", info, 10)
    size = blobs.path("file-a").stat().st_size
    await store.files.add("t", StoredFile("file-a", "a.txt", "assistants", size, NOW, None), FileQuota(10, 1 << 40))
    attached = await store.vector_stores.attach("t", "vs_a", [Attachment("file-a", {}, STRATEGY)], NOW, 10)
    assert attached is not None
    embeddings = EmbeddingCatalog(settings)
    builtin = embeddings.get(BUILTIN[0])
    assert isinstance(builtin, WordLlamaEmbeddings)
    builtin.embed_now(["the model and its tokenizer loaded before tracing"])
    ingestion = IngestionActivities(store.vector_stores, blobs, embeddings, settings)
    del text
    tracemalloc.start()
    try:
        for _ in range(attempts):
            written = await ActivityEnvironment().run(
                ingestion.chunk_file, IngestFile("vs_a", "file-a", attached[0].ingestion_id)
            )
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    def texts(tx: Connection) -> list[tuple[str, bool]]:
        rows = tx.execute(select(ChunkRow.text, ChunkRow.embedded).order_by(ChunkRow.seq)).all()
        return [(row.text, row.embedded) for row in rows]

    return written, await store.database.read(texts), peak


def _peak_reading_and_chunking(tmp_path: Path, size: int) -> int:
    """The most memory extraction and chunking hold at once, as `chunk_file` runs them, on a text file of `size`."""
    text = _prose(size, emoji=False)
    path = tmp_path / f"{size}.txt"
    path.write_text(text, encoding="utf-8")
    expected_last = text[-200:]
    del text
    _tokenizer()  # loaded before tracing: a process holds it whatever it ingests
    tracemalloc.start()
    try:
        extracted = extract(path, path.name, ExtractionLimits(max_characters=path.stat().st_size))
        count, last = 0, ""
        for chunk in chunks(extracted.blocks(), StaticChunking()):
            count, last = count + 1, chunk.text
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert count > 100 and last.endswith(expected_last)
    return peak


def test_reading_and_chunking_a_text_file_holds_the_same_memory_whatever_its_size(tmp_path: Path) -> None:
    """A file three times the size costs no more memory to read and chunk (reading it whole cost twice its size);
    the activity's writing batch by batch is the remote-model test's below."""
    small, large = (_peak_reading_and_chunking(tmp_path, size) for size in (1 * MB, 3 * MB))
    print(f"peak traced memory reading and chunking 1 MiB of text: {small / MB:.1f} MiB; 3 MiB: {large / MB:.1f} MiB")
    assert large - small < MB // 2  # the 2 MiB more of text, held at once, would be 2-6 MiB more
    assert large < 8 * MB


async def test_a_small_file_is_chunked_as_before(store: Store, tmp_path: Path) -> None:
    text = _prose(40_000)
    written, stored, _ = await _ingest(store, tmp_path, text, Settings())
    assert stored == [(chunk.text, True) for chunk in _whole_text_chunks(text, StaticChunking())]
    assert written == len(stored) > 1


async def test_a_remote_models_file_is_written_in_batches_once_for_embed_chunks(store: Store, tmp_path: Path) -> None:
    text = _prose(40_000)
    remote = {
        "provider": "openai",
        "model_type": "embedding",
        "embedding_dimension": 8,
        "base_url": "http://127.0.0.1:9",
    }
    settings = Settings.model_validate({"models": {"remote-embedder": remote}, "ingestion_batch_size": 4})
    written, stored, _ = await _ingest(store, tmp_path, text, settings, ("remote-embedder", 8), attempts=2)
    assert stored == [(chunk.text, False) for chunk in _whole_text_chunks(text, StaticChunking())]
    assert written == len(stored) > 4


@pytest.mark.parametrize("room", [0, -1])
async def test_a_file_fits_its_stores_chunk_limit_by_its_count_of_chunks_not_a_bound(
    store: Store, tmp_path: Path, room: int
) -> None:
    text = _prose(40_000)
    count = sum(1 for _ in _whole_text_chunks(text, StaticChunking()))
    settings = Settings(max_chunks_per_vector_store=count + room)
    if room == 0:
        assert (await _ingest(store, tmp_path, text, settings))[0] == count
    else:
        with pytest.raises(
            ApplicationError, match=rf"This file has {count} chunks .*\(DA_MAX_CHUNKS_PER_VECTOR_STORE\)"
        ):
            await _ingest(store, tmp_path, text, settings)

"""Knowledge figures: ingestion throughput beside the embedding model's own, and search latency by store size.

    .venv/bin/python -m bench.knowledge_bench [--corpus-mb 10] [--sizes 1000,10000,100000] [--searches 200]
        [--engines sqlite,pgvector]

For each engine, starts the whole service (`serve.py`: dev server, API with its worker) on a scratch data
directory — its store in SQLite (sqlite-vec + FTS5), or in a PostgreSQL with pgvector that `pgserver` starts
from PyPI — and measures; then prints one JSON line, the SQLite figures at its top level and each other
engine's under its name (an engine that cannot start says why there instead):

- `embedding_chunks_per_s`: the built-in model embedding 800-token chunks of the corpus in this process, alone.
- `ingest_chunks_per_s`: the same corpus uploaded as 20 files and attached as one file batch, from the attach
  to every file `completed` (extraction, chunking, embedding, indexing, Temporal), end to end through the API;
  `ingest_vs_embedding` is its ratio to the bare figure (target: at least 0.5).
- `search_ms`: p50/p99 of `POST /v1/vector_stores/{id}/search` through the API at each store size (chunks put in
  with `vector-io/insert` and random vectors, so the sizes are quick to build; the search path is the same).
  On pgvector the HNSW index is dropped before the inserts and built once after them, as a bulk import would
  (inserted one at a time into the graph, 100,000 chunks took hours here); `fill_s` is the whole fill, index
  build included (the log has the build alone). The searches then run through the API as a user's do.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import openai

from bench.common import free_port, log, runtime_revision, spawn, stop_process, wait_for_http
from configuration.model_specs import BUILTIN_EMBEDDING_MODEL_ID
from knowledge.chunking import StaticChunking, chunks
from knowledge.embeddings import WordLlamaEmbeddings
from knowledge.pg_index import hnsw_index

DIMENSION = 256
"""The built-in model's."""

BulkLoad = Callable[[], contextlib.AbstractContextManager[None]]
"""Wraps the filling of a store, e.g. to build the vector index once afterwards."""

WORDS = [
    "harbour",
    "seal",
    "puffin",
    "cliff",
    "herring",
    "tide",
    "lighthouse",
    "keeper",
    "ledger",
    "invoice",
    "glacier",
    "moraine",
    "river",
    "delta",
    "orchard",
    "pruning",
    "sourdough",
    "starter",
    "compiler",
    "kernel",
    "scheduler",
    "turbine",
    "blade",
    "anchor",
    "mooring",
    "census",
]


def corpus(megabytes: float, files: int) -> list[str]:
    generator = random.Random(11)
    per_file = int(megabytes * 1024 * 1024 / files)
    texts = []
    for _ in range(files):
        lines, size = [], 0
        while size < per_file:
            line = " ".join(generator.choice(WORDS) for _ in range(16)) + ".\n"
            lines.append(line)
            size += len(line)
        texts.append("".join(lines))
    return texts


def bare_embedding(texts: list[str]) -> tuple[int, float]:
    pieces = [chunk.text for text in texts for chunk in chunks(text, StaticChunking())]
    model = WordLlamaEmbeddings()
    model.embed_now(pieces[:8])  # loaded
    started = time.perf_counter()
    for start in range(0, len(pieces), 128):
        model.embed_now(pieces[start : start + 128])
    return len(pieces), len(pieces) / (time.perf_counter() - started)


def ingest(client: openai.OpenAI, texts: list[str]) -> tuple[int, float]:
    file_ids = [
        client.files.create(file=(f"doc{i}.txt", text.encode()), purpose="assistants").id
        for i, text in enumerate(texts)
    ]
    store = client.vector_stores.create(name="bench-ingest")
    started = time.perf_counter()
    batch = client.vector_stores.file_batches.create_and_poll(store.id, file_ids=file_ids, poll_interval_ms=100)
    elapsed = time.perf_counter() - started
    assert batch.file_counts.completed == len(texts), batch
    total = 0
    for file_id in file_ids:
        total += len(list(client.vector_stores.files.content(file_id, vector_store_id=store.id)))
    return total, total / elapsed


def p50_p99(seconds: list[float]) -> dict[str, float | int]:
    values = np.array(seconds) * 1000
    return {
        "p50": round(float(np.percentile(values, 50)), 1),
        "p99": round(float(np.percentile(values, 99)), 1),
        "n": len(values),
    }


def search_latency(
    base_url: str, client: openai.OpenAI, size: int, searches: int, bulk_load: BulkLoad | None
) -> dict[str, float | int]:
    store = f"bench-{size}"
    filling = time.perf_counter()
    with httpx.Client(base_url=base_url, timeout=600) as http, (bulk_load or contextlib.nullcontext)():
        http.post(
            "/v1/vector-dbs", json={"vector_db_id": store, "embedding_model": BUILTIN_EMBEDDING_MODEL_ID}
        ).raise_for_status()
        generator = np.random.default_rng(size)
        for start in range(0, size, 2000):
            count = min(2000, size - start)
            vectors = generator.standard_normal((count, DIMENSION)).astype(np.float32)
            payload = [
                {
                    "content": " ".join(random.choices(WORDS, k=30)),
                    "metadata": {"document_id": f"doc{(start + index) % 50}", "token_count": 40},
                    "embedding": vector.round(4).tolist(),
                }
                for index, vector in enumerate(vectors)
            ]
            http.post("/v1/vector-io/insert", json={"vector_db_id": store, "chunks": payload}).raise_for_status()
    filled = round(time.perf_counter() - filling, 1)
    log(f"{size} chunks in {filled} s")
    # The vector DB is the vector store of that name in the OpenAI dialect.
    vector_store_id = next(found.id for found in client.vector_stores.list(limit=100) if found.name == store)
    timings = []
    for index in range(searches + 5):
        query = " ".join(random.choices(WORDS, k=6))
        started = time.perf_counter()
        client.vector_stores.search(vector_store_id, query=query, max_num_results=10)
        if index >= 5:
            timings.append(time.perf_counter() - started)
    return {**p50_p99(timings), "fill_s": filled}


@contextlib.contextmanager
def pgvector_store() -> Iterator[tuple[str, BulkLoad]]:
    """The URL of a scratch database on a PostgreSQL with pgvector started from PyPI, gone afterwards, and the
    bulk load of its stores: the HNSW index dropped before, built once after (the service makes it again
    only with the table, which the corpus's ingestion has made by then)."""
    import pgserver

    data = Path(tempfile.mkdtemp(prefix="da-bench-pgvector-"))
    server = pgserver.get_server(data, cleanup_mode="delete")

    @contextlib.contextmanager
    def bulk_load() -> Iterator[None]:
        server.psql(f"\\set ON_ERROR_STOP on\n\\c bench\nDROP INDEX IF EXISTS knowledge_vec_{DIMENSION}_hnsw;")
        yield
        started = time.perf_counter()
        server.psql(f"\\set ON_ERROR_STOP on\n\\c bench\nSET maintenance_work_mem = '1GB';\n{hnsw_index(DIMENSION)};")
        log(f"HNSW index built in {time.perf_counter() - started:.1f} s")

    try:
        server.psql('CREATE DATABASE "bench";')
        yield f"postgresql+asyncpg://postgres@/bench?host={data}", bulk_load
    finally:
        server.cleanup()


def measure(
    texts: list[str], sizes: list[int], searches: int, store_url: str | None, bulk_load: BulkLoad | None = None
) -> dict[str, Any]:
    """Ingest and search figures of the service on a store of its own (`store_url`; None: SQLite)."""
    data = Path(tempfile.mkdtemp(prefix="da-bench-knowledge-"))
    api_port = free_port()
    env = {
        "DA_DATA_DIR": str(data),
        "DA_API_PORT": str(api_port),
        "DA_TEMPORAL_PORT": str(free_port()),
        "DA_TEMPORAL_UI_PORT": str(free_port()),
        "DA_RATE_LIMIT_PER_MINUTE": "0",
        "DA_MAX_REQUEST_BYTES": str(64 * 1024 * 1024),
        **({"DA_STORE_URL": store_url} if store_url else {}),
        # Passed on, to compare searches with and without the vector cache (DA_VECTOR_CACHE_MB=0).
        **{k: v for k, v in os.environ.items() if k == "DA_VECTOR_CACHE_MB"},
    }
    service = spawn([sys.executable, "serve.py"], data / "serve.log", env)
    base_url = f"http://127.0.0.1:{api_port}"
    try:
        wait_for_http(f"{base_url}/v1/health", [service], 180)
        client = openai.OpenAI(base_url=f"{base_url}/v1", api_key="unused", max_retries=0, timeout=600)
        log("ingesting the corpus through the API")
        ingested, ingest_rate = ingest(client, texts)
        search = {}
        for size in sizes:
            log(f"search latency at {size} chunks")
            search[str(size)] = search_latency(base_url, client, size, searches, bulk_load)
    finally:
        stop_process(service)
    return {"ingested_chunks": ingested, "ingest_chunks_per_s": round(ingest_rate, 1), "search_ms": search}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--corpus-mb", type=float, default=10)
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--searches", type=int, default=200)
    parser.add_argument("--engines", default="sqlite,pgvector")
    parser.add_argument(
        "--pgvector-sizes", default=None, help="store sizes on pgvector (default: --sizes); its inserts are slower"
    )
    arguments = parser.parse_args()
    texts = corpus(arguments.corpus_mb, 20)
    sizes = [int(size) for size in arguments.sizes.split(",")]
    log(f"bare embedding of the {arguments.corpus_mb} MB corpus's chunks")
    chunk_count, bare = bare_embedding(texts)
    figures: dict[str, Any] = {
        "revision": runtime_revision(),
        "cpus": os.cpu_count(),
        "load_average": [round(load, 2) for load in os.getloadavg()],
        "corpus_mb": arguments.corpus_mb,
        "chunks": chunk_count,
        "embedding_chunks_per_s": round(bare, 1),
    }
    for engine in arguments.engines.split(","):
        log(f"engine {engine}")
        if engine == "sqlite":
            measured = measure(texts, sizes, arguments.searches, None)
            figures.update(measured)
            figures["ingest_vs_embedding"] = round(measured["ingest_chunks_per_s"] / bare, 2)
            log(f"sqlite: {json.dumps(measured)}")
            continue
        try:
            store = pgvector_store()
            url, bulk_load = store.__enter__()
        except Exception as cannot:
            figures[engine] = {"skipped": f"pgserver could not start a PostgreSQL with pgvector: {cannot}"}
            continue
        try:
            pg_sizes = arguments.pgvector_sizes or arguments.sizes
            measured = measure(texts, [int(size) for size in pg_sizes.split(",")], arguments.searches, url, bulk_load)
            measured["ingest_vs_embedding"] = round(measured["ingest_chunks_per_s"] / bare, 2)
            figures[engine] = measured
            log(f"{engine}: {json.dumps(measured)}")
        finally:
            store.__exit__(None, None, None)
    figures["load_average_after"] = [round(load, 2) for load in os.getloadavg()]
    print(json.dumps(figures))


if __name__ == "__main__":
    main()

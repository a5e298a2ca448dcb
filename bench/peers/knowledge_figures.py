"""Knowledge figures of one system, with bench/knowledge_bench.py's corpus and ingestion code.

The corpus (N MB in M files) is uploaded and attached as one file batch to a new vector store using the
server's default embedding model (the model server's hashed embeddings on both sides); the figure is
chunks/s from the attach to every file `completed`, with MB/s beside it, since each system chunks by its
own defaults, and the CPU seconds per MB its processes spent (the model server's embedding left out).
Then `POST /v1/vector_stores/{id}/search` p50 on that store.
"""

from __future__ import annotations

import random
import time
from typing import Any

import openai

from bench.common import log
from bench.knowledge_bench import WORDS, corpus, ingest, p50_p99
from bench.peers.cpu import tree_cpu_seconds
from bench.peers.plan import PeerPlan


def measure(base_url: str, root: int, plan: PeerPlan) -> dict[str, Any]:
    texts = corpus(plan.corpus_mb, plan.corpus_files)
    client = openai.OpenAI(base_url=f"{base_url}/v1", api_key="unused", max_retries=0, timeout=900)
    log(f"knowledge: ingesting {plan.corpus_mb:g} MB in {plan.corpus_files} files")
    started, cpu_before = time.perf_counter(), tree_cpu_seconds(root)
    chunks, chunks_per_s = ingest(client, texts)
    cpu = tree_cpu_seconds(root) - cpu_before
    elapsed = chunks / chunks_per_s if chunks_per_s else time.perf_counter() - started
    store = next(store.id for store in client.vector_stores.list(limit=100) if store.name == "bench-ingest")
    log(f"knowledge: search x{plan.searches}")
    choose = random.Random(7)
    timings = []
    for index in range(plan.searches + 5):
        query = " ".join(choose.choices(WORDS, k=6))
        began = time.perf_counter()
        found = client.vector_stores.search(store, query=query, max_num_results=10)
        if index >= 5:
            timings.append(time.perf_counter() - began)
        if not found.data:
            raise RuntimeError(f"search of {store} for {query!r} found nothing")
    megabytes = sum(len(text.encode()) for text in texts) / 1024 / 1024
    return {
        "ingest": {
            "files": len(texts),
            "mb": round(megabytes, 2),
            "chunks": chunks,
            "seconds": round(elapsed, 2),
            "chunks_per_s": round(chunks_per_s, 1),
            "mb_per_s": round(megabytes / elapsed, 3),
            "cpu_s_per_mb": round(cpu / megabytes, 2),
        },
        "search_ms": p50_p99(timings),
    }

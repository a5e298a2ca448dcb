"""The cost of retrieval: a file_search response's latency beside a plain response's, the model at 0 ms.

    .venv/bin/python -m bench.file_search_bench [--responses 100] [--corpus-mb 2]

Starts the whole service (`serve.py`: dev server, API with its worker) on a scratch data directory, with its
built-in offline model (it answers at once, so what is measured is the runtime's own work), fills one vector
store with the corpus, then sends blocking `POST /v1/responses` one after another and prints one JSON line:

- `plain_ms`: p50/p99 of a response with no tools ("hello" echoed: one inference step).
- `file_search_ms`: p50/p99 of a response whose model calls file_search (three steps: inference, the search as
  an activity — the query embedded, the index searched — and the inference reading its results).
- `retrieval_cost_ms`: the difference of the p50s. The offline model reports the passages it was given word
  for word (`answer_chars`), so a larger `--max-results` also measures a longer streamed answer.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path

import openai

from bench.common import free_port, log, runtime_revision, spawn, stop_process, wait_for_http
from bench.knowledge_bench import WORDS, corpus, p50_p99
from configuration.settings import OFFLINE_MODEL_ID


def timed(client: openai.OpenAI, count: int, **request: object) -> tuple[list[float], int]:
    """Latencies of `count` blocking creates, and the length of the last answer's text."""
    timings = []
    for index in range(count + 5):
        started = time.perf_counter()
        response = client.responses.create(model=OFFLINE_MODEL_ID, **request)  # type: ignore[call-overload]
        elapsed = time.perf_counter() - started
        assert response.status == "completed", response
        if index >= 5:  # the first ones warm the caches
            timings.append(elapsed)
    return timings, len(response.output_text)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--responses", type=int, default=100)
    parser.add_argument("--corpus-mb", type=float, default=2)
    parser.add_argument("--max-results", type=int, default=3)
    arguments = parser.parse_args()
    data = Path(tempfile.mkdtemp(prefix="da-bench-file-search-"))
    api_port = free_port()
    env = {
        "DA_DATA_DIR": str(data),
        "DA_API_PORT": str(api_port),
        "DA_TEMPORAL_PORT": str(free_port()),
        "DA_TEMPORAL_UI_PORT": str(free_port()),
        "DA_RATE_LIMIT_PER_MINUTE": "0",
    }
    service = spawn([sys.executable, "serve.py"], data / "serve.log", env)
    base_url = f"http://127.0.0.1:{api_port}"
    try:
        wait_for_http(f"{base_url}/v1/health", [service], 180)
        client = openai.OpenAI(base_url=f"{base_url}/v1", api_key="unused", max_retries=0, timeout=600)
        log(f"indexing a {arguments.corpus_mb} MB corpus in 10 files")
        file_ids = [
            client.files.create(file=(f"doc{i}.txt", text.encode()), purpose="assistants").id
            for i, text in enumerate(corpus(arguments.corpus_mb, 10))
        ]
        store = client.vector_stores.create(name="bench-file-search")
        batch = client.vector_stores.file_batches.create_and_poll(store.id, file_ids=file_ids, poll_interval_ms=100)
        assert batch.file_counts.completed == len(file_ids), batch
        chunks = sum(len(list(client.vector_stores.files.content(f, vector_store_id=store.id))) for f in file_ids)
        log(f"{arguments.responses} plain responses")
        plain_timings, _ = timed(client, arguments.responses, input="hello")
        log(f"{arguments.responses} file_search responses")
        words = random.Random(3)
        tool = {"type": "file_search", "vector_store_ids": [store.id], "max_num_results": arguments.max_results}
        question = f"Look up {' '.join(words.choices(WORDS, k=4))} in the documents."
        searched_timings, answer_chars = timed(client, arguments.responses, input=question, tools=[tool])
    finally:
        stop_process(service)
    plain, searched = p50_p99(plain_timings), p50_p99(searched_timings)
    print(
        json.dumps(
            {
                "revision": runtime_revision(),
                "cpus": os.cpu_count(),
                "load_average": [round(load, 2) for load in os.getloadavg()],
                "chunks": chunks,
                "max_num_results": arguments.max_results,
                "answer_chars": answer_chars,
                "plain_ms": plain,
                "file_search_ms": searched,
                "retrieval_cost_ms": round(float(searched["p50"]) - float(plain["p50"]), 1),
            }
        )
    )


if __name__ == "__main__":
    main()

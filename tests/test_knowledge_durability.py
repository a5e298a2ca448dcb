"""Ingestion survives a worker SIGKILLed mid-file: the file completes once, with an uninterrupted run's chunks."""

from __future__ import annotations

import contextlib
import random
import time
from pathlib import Path

import openai
import pytest
import sqlite_vec

from store.database import sqlite_module
from tests.knowledge_files import wait_for_file
from tests.processes import ProcessStack

pytestmark = pytest.mark.processes

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
]


def _document(megabytes: int) -> bytes:
    generator = random.Random(7)
    lines = []
    size = 0
    while size < megabytes * 1024 * 1024:
        line = " ".join(generator.choice(WORDS) + str(generator.randrange(1000)) for _ in range(14)) + ".\n"
        lines.append(line)
        size += len(line)
    return "".join(lines).encode()


def _index_rows(data_dir: Path, vector_store_id: str) -> tuple[int, int, int, int]:
    """(chunks, embedded chunks, vectors, keyword rows) of the store, read from its SQLite file."""
    with contextlib.closing(sqlite_module().connect(data_dir / "store.db")) as db:
        db.enable_load_extension(True)
        sqlite_vec.load(db)
        chunks, embedded = db.execute(
            "SELECT count(*), coalesce(sum(embedded), 0) FROM knowledge_chunks WHERE vector_store_id = ?",
            (vector_store_id,),
        ).fetchone()
        ids = "SELECT chunk_id FROM knowledge_chunks WHERE vector_store_id = ?"
        vectors = db.execute(
            f"SELECT count(*) FROM knowledge_vec_256_rowids WHERE rowid IN ({ids})", (vector_store_id,)
        )
        keywords = db.execute(f"SELECT count(*) FROM knowledge_fts_docsize WHERE id IN ({ids})", (vector_store_id,))
        return chunks, embedded, vectors.fetchone()[0], keywords.fetchone()[0]


@pytest.mark.timeout(900)
def test_worker_killed_mid_ingestion_completes_once(processes: ProcessStack, tmp_path: Path) -> None:
    client = openai.OpenAI(base_url=f"{processes.url}/v1", api_key="unused", max_retries=0, timeout=60)
    data_dir = Path(processes.env["DA_DATA_DIR"])
    file = client.files.create(file=("corpus.txt", _document(2)), purpose="assistants")

    calm = client.vector_stores.create(name="uninterrupted", file_ids=[file.id])
    assert wait_for_file(client, calm.id, file.id, seconds=300).status == "completed"
    expected, *_ = _index_rows(data_dir, calm.id)
    assert expected > 500

    stormy = client.vector_stores.create(name="interrupted", file_ids=[file.id])
    deadline = time.monotonic() + 120
    while _index_rows(data_dir, stormy.id)[1] < expected // 5:
        assert time.monotonic() < deadline, "ingestion did not get under way"
        time.sleep(0.1)
    processes.kill(processes.worker)
    halfway = _index_rows(data_dir, stormy.id)
    assert 0 < halfway[1] < expected, halfway  # killed mid-file
    processes.start_worker()

    done = wait_for_file(client, stormy.id, file.id, seconds=300)
    assert done.status == "completed", done
    assert _index_rows(data_dir, stormy.id) == (expected, expected, expected, expected)
    assert client.vector_stores.retrieve(stormy.id).file_counts.completed == 1
    calm_hits = client.vector_stores.search(calm.id, query="lighthouse keeper ledger").data
    stormy_hits = client.vector_stores.search(stormy.id, query="lighthouse keeper ledger").data
    assert [hit.content[0].text for hit in calm_hits] == [hit.content[0].text for hit in stormy_hits]

"""Ingestion survives a worker SIGKILLed mid-file: the file completes once, with an uninterrupted run's chunks.
An API process SIGKILLed between attaching a file and starting its ingestion leaves nothing stuck: the sweep of
unstarted ingestions starts it (or, for a cancelled batch, cancels it)."""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import openai
import pytest
import sqlite_vec
from temporalio.service import RPCError, RPCStatusCode

from hosting.fault_points import AFTER_ATTACHMENT_ROW
from store.database import sqlite_module
from tests.support.knowledge_files import WORDS, wait_for_file
from tests.support.processes import EVENT_SECONDS, ProcessStack, wait_until
from workflows.ingestion import workflow_id

pytestmark = pytest.mark.processes


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


@pytest.fixture(scope="module")
def corpus(processes: ProcessStack) -> tuple[str, int]:
    """A multi-megabyte file, and the chunks an uninterrupted ingestion of it makes."""
    client = _client(processes)
    file = client.files.create(file=("corpus.txt", _document(2)), purpose="assistants")
    calm = client.vector_stores.create(name="uninterrupted", file_ids=[file.id])
    assert wait_for_file(client, calm.id, file.id, seconds=300).status == "completed"
    expected, *_ = _index_rows(_data_dir(processes), calm.id)
    assert expected > 500
    return file.id, expected


def _client(processes: ProcessStack) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{processes.url}/v1", api_key="unused", max_retries=2, timeout=60)


def _data_dir(processes: ProcessStack) -> Path:
    return Path(processes.env["DA_DATA_DIR"])


def _interrupted(processes: ProcessStack, corpus: tuple[str, int], crash: Callable[[], None]) -> None:
    """Attach the corpus to a new store, `crash` once a fifth of it is indexed, and check the outcome."""
    file_id, expected = corpus
    client = _client(processes)
    stormy = client.vector_stores.create(name="interrupted", file_ids=[file_id])
    deadline = time.monotonic() + 120
    while _index_rows(_data_dir(processes), stormy.id)[1] < expected // 5:
        assert time.monotonic() < deadline, "ingestion did not get under way"
        time.sleep(0.1)
    crash()
    halfway = _index_rows(_data_dir(processes), stormy.id)
    assert 0 < halfway[1] < expected, halfway  # killed mid-file

    client = _client(processes)
    done = wait_for_file(client, stormy.id, file_id, seconds=300)
    assert done.status == "completed", done
    assert _index_rows(_data_dir(processes), stormy.id) == (expected, expected, expected, expected)
    assert client.vector_stores.retrieve(stormy.id).file_counts.completed == 1
    assert client.vector_stores.search(stormy.id, query="lighthouse keeper ledger").data


@pytest.mark.timeout(900)
def test_worker_killed_mid_ingestion_completes_once(processes: ProcessStack, corpus: tuple[str, int]) -> None:
    def crash() -> None:
        processes.kill(processes.worker)
        processes.start_worker()

    _interrupted(processes, corpus, crash)


@pytest.mark.timeout(900)
def test_whole_stack_killed_mid_ingestion_completes_once(processes: ProcessStack, corpus: tuple[str, int]) -> None:
    def crash() -> None:
        for process in (processes.api, processes.worker, processes.temporal):
            processes.kill(process)
        processes.start_temporal()
        processes.start_worker()
        processes.start_api()

    _interrupted(processes, corpus, crash)


NO_SWEEP = {"DA_INGESTION_SWEEP": "0"}


def _attach_and_crash(processes: ProcessStack, path: str, body: dict) -> None:
    """Restart the API armed to die between the attachment rows and their workflows, and attach there."""
    processes.kill(processes.api)
    processes.start_api(DA_TEST_FAULT=AFTER_ATTACHMENT_ROW, **NO_SWEEP)
    with pytest.raises(httpx.TransportError), httpx.Client(base_url=processes.url, timeout=30) as http:
        http.post(path, json=body)
    assert processes.api is not None and processes.api.wait(timeout=10) == -9
    processes.start_api(**NO_SWEEP)


def _ingestion_runs(processes: ProcessStack, vector_store_id: str, file_id: str) -> int:
    """How many runs the file's ingestion workflow has had. Whether it has any, Temporal says at once; how
    many, its visibility store, which is eventually consistent: it is asked until it lists at least one."""
    with contextlib.closing(sqlite_module().connect(_data_dir(processes) / "store.db")) as db:
        (ingestion_id,) = db.execute(
            "SELECT ingestion_id FROM vector_store_files WHERE vector_store_id = ? AND file_id = ?",
            (vector_store_id, file_id),
        ).fetchone()
    ingestion = workflow_id(vector_store_id, file_id, ingestion_id)

    async def started() -> bool:
        try:
            await (await processes.temporal_client()).get_workflow_handle(ingestion).describe()
        except RPCError as missing:
            assert missing.status == RPCStatusCode.NOT_FOUND, missing
            return False
        return True

    async def listed() -> int:
        client = await processes.temporal_client()
        return len([execution async for execution in client.list_workflows(f"WorkflowId = '{ingestion}'")])

    if not asyncio.run(started()):
        return 0
    return wait_until(lambda: asyncio.run(listed()), f"{ingestion} in Temporal's visibility", EVENT_SECONDS)


@pytest.fixture(scope="module")
def small_file(processes: ProcessStack) -> tuple[str, int]:
    """A small file, and the chunks an uninterrupted ingestion of it makes."""
    client = _client(processes)
    file = client.files.create(file=("small.txt", _document(1)[:40_000]), purpose="assistants")
    calm = client.vector_stores.create(name="uninterrupted", file_ids=[file.id])
    assert wait_for_file(client, calm.id, file.id).status == "completed"
    expected, *_ = _index_rows(_data_dir(processes), calm.id)
    assert expected > 5
    return file.id, expected


@pytest.mark.timeout(300)
def test_the_sweep_starts_an_ingestion_the_crashed_api_did_not(
    processes: ProcessStack, small_file: tuple[str, int]
) -> None:
    file_id, expected = small_file
    store_id = _client(processes).vector_stores.create(name="orphaned").id
    _attach_and_crash(processes, f"/v1/vector_stores/{store_id}/files", {"file_id": file_id})

    client = _client(processes)
    assert client.vector_stores.files.retrieve(file_id, vector_store_id=store_id).status == "in_progress"
    assert _ingestion_runs(processes, store_id, file_id) == 0  # nothing would ever finish it

    processes.kill(processes.api)
    processes.start_api(DA_INGESTION_SWEEP="1")
    client = _client(processes)
    done = wait_for_file(client, store_id, file_id, seconds=EVENT_SECONDS)
    assert done.status == "completed", done
    assert _index_rows(_data_dir(processes), store_id) == (expected, expected, expected, expected)
    assert client.vector_stores.retrieve(store_id).file_counts.completed == 1
    time.sleep(3)  # sweeps after the file completed start nothing more
    assert _ingestion_runs(processes, store_id, file_id) == 1
    assert client.vector_stores.files.retrieve(file_id, vector_store_id=store_id).status == "completed"


@pytest.mark.timeout(300)
def test_a_cancelled_batch_the_crashed_api_never_started_stays_cancelled(
    processes: ProcessStack, small_file: tuple[str, int]
) -> None:
    file_id, _ = small_file
    store_id = _client(processes).vector_stores.create(name="orphaned batch").id
    _attach_and_crash(processes, f"/v1/vector_stores/{store_id}/file_batches", {"file_ids": [file_id]})

    with contextlib.closing(sqlite_module().connect(_data_dir(processes) / "store.db")) as db:
        # The crashed create never answered: its batch id is only in the store.
        [(batch_id,)] = db.execute("SELECT batch_id FROM vector_store_files WHERE vector_store_id = ?", (store_id,))
    client = _client(processes)
    client.vector_stores.file_batches.cancel(batch_id, vector_store_id=store_id)

    processes.kill(processes.api)
    processes.start_api(DA_INGESTION_SWEEP="1")
    client = _client(processes)
    done = wait_for_file(client, store_id, file_id, seconds=EVENT_SECONDS)
    assert done.status == "cancelled", done
    time.sleep(3)
    assert _ingestion_runs(processes, store_id, file_id) == 0
    assert _index_rows(_data_dir(processes), store_id) == (0, 0, 0, 0)

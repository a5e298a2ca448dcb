"""Each attachment has an ingestion run of its own: a run that ends without finishing (an operator terminates
it) leaves the file `failed` with the reason once the sweep sees it, and attaching the file again starts afresh."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import openai
from temporalio.client import WorkflowExecutionStatus

from knowledge.engines import vector_index
from knowledge.ingestion_starter import IngestionStarter
from knowledge.ingestion_sweep import start_unstarted_ingestions
from store.database import open_database, sqlite_module
from store.knowledge.vector_stores import VectorStores
from tests.support.knowledge_files import WORDS, wait_for_file
from tests.support.stack import Stack
from workflows.ingestion import workflow_id


def _ingestion_id(stack: Stack, vector_store_id: str, file_id: str) -> str:
    path = Path(stack.settings.store_url.removeprefix("sqlite+aiosqlite:///"))
    db = sqlite_module().connect(path)
    try:
        row = db.execute(
            "SELECT ingestion_id FROM vector_store_files WHERE vector_store_id = ? AND file_id = ?",
            (vector_store_id, file_id),
        ).fetchone()
    finally:
        db.close()
    assert row is not None and row[0]
    return row[0]


def test_a_terminated_ingestion_fails_the_file_and_a_new_attachment_starts_afresh(stack: Stack) -> None:
    client = openai.OpenAI(base_url=f"{stack.base_url}/v1", api_key="unused", max_retries=0)
    text = " ".join(WORDS[(i * 7) % len(WORDS)] + str(i % 997) for i in range(600_000))  # about 6 MB
    file = client.files.create(file=("long.txt", text.encode()), purpose="assistants")
    store = client.vector_stores.create(name="terminated")
    client.vector_stores.files.create(file_id=file.id, vector_store_id=store.id)
    first_run = _ingestion_id(stack, store.id, file.id)
    handle = stack.client.get_workflow_handle(workflow_id(store.id, file.id, first_run))
    stack.background.run(handle.terminate(reason="an operator stopped it"))
    assert stack.background.run(handle.describe()).status == WorkflowExecutionStatus.TERMINATED
    assert client.vector_stores.files.retrieve(file.id, vector_store_id=store.id).status == "in_progress"

    stores = VectorStores(open_database(stack.settings.store_url), vector_index(stack.settings.store_url))
    starter = IngestionStarter(stack.client, stack.settings.task_queue)
    assert stack.background.run(start_unstarted_ingestions(stores, starter, timedelta(0))) == []
    failed = client.vector_stores.files.retrieve(file.id, vector_store_id=store.id)
    assert failed.status == "failed" and failed.last_error is not None
    assert "terminated" in failed.last_error.message and "attach the file again" in failed.last_error.message
    assert [hit.file_id for hit in client.vector_stores.search(store.id, query="lighthouse").data] == []

    client.vector_stores.files.create(file_id=file.id, vector_store_id=store.id)
    second_run = _ingestion_id(stack, store.id, file.id)
    assert second_run != first_run
    done = wait_for_file(client, store.id, file.id, seconds=300)
    assert done.status == "completed" and done.last_error is None, done
    assert client.vector_stores.search(store.id, query="lighthouse keeper").data[0].file_id == file.id

"""An operator's erasure of a tenant takes its knowledge and webhooks too, through the unmodified SDKs: files
(with their bytes on disk), vector stores (with chunks, vectors and keyword rows), llama-stack vector DBs,
webhook endpoints with their delivery log and outbox, a pending delivery's workflow stopped, its daily model usage;
another tenant's alike stay whole."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from llama_stack_client import LlamaStackClient
from temporalio.client import WorkflowExecutionStatus

from api.guards.auth import OPERATOR_PREFIX
from configuration.model_specs import BUILTIN_EMBEDDING_MODEL_ID
from store.database import sqlite_module
from store.knowledge.vector_stores import vector_db_store_id
from tests.knowledge.test_knowledge_vector_stores import chunk_rows
from tests.support.processes import EVENT_SECONDS
from tests.support.scripted_model import ScriptedModel, text
from tests.support.stack import SCRIPTED_MODEL, Stack
from tests.support.webhook_receiver import Receiver
from workflows.webhook_delivery import delivery_workflow_id

OPERATOR_KEY = "operator-key-0123456789"
KEYS = {"erasure-alice": "key-alice-0123", "erasure-bob": "key-bob-4567"}
"""Tenant names of this file alone: the suite's stack is shared by the test files of one worker, and an
erasure takes everything of its tenant there."""
NOTES = b"The harbour seal rests on rocky shores and dives for herring and cod."


@pytest.fixture
def url(stack: Stack) -> Iterator[str]:
    """An API with two tenants and the operator key, on the suite's stack."""
    keys = tuple(f"{tenant}:{key}" for tenant, key in KEYS.items())
    settings = stack.settings.model_copy(update={"api_keys": keys, "operator_key": OPERATOR_KEY})
    with stack.other_api(settings) as running:
        yield running


@pytest.fixture
def receivers() -> Iterator[dict[str, Receiver]]:
    running = {tenant: Receiver().start() for tenant in KEYS}
    yield running
    for receiver in running.values():
        receiver.stop()


def _outbox_rows(stack: Stack, tenant: str) -> int:
    path = Path(stack.settings.store_url.removeprefix("sqlite+aiosqlite:///"))
    db = sqlite_module().connect(path)
    try:
        return db.execute("SELECT count(*) FROM webhook_events WHERE tenant_id = ?", (tenant,)).fetchone()[0]
    finally:
        db.close()


def _usage_rows(stack: Stack, tenant: str) -> int:
    """The tenant's rows of daily model usage (the console's usage page)."""
    path = Path(stack.settings.store_url.removeprefix("sqlite+aiosqlite:///"))
    db = sqlite_module().connect(path)
    try:
        return db.execute("SELECT count(*) FROM model_usage_daily WHERE tenant_id = ?", (tenant,)).fetchone()[0]
    finally:
        db.close()


def _deliveries(http: httpx.Client, endpoint_id: str, status: str, count: int) -> list[dict[str, Any]]:
    deadline = time.monotonic() + EVENT_SECONDS
    while True:
        found = http.get(f"/v1/webhook_endpoints/{endpoint_id}/deliveries").json()["data"]
        if sum(delivery["status"] == status for delivery in found) >= count:
            return found
        assert time.monotonic() < deadline, f"no {count} {status} deliveries: {found}"
        time.sleep(0.1)


class Tenant:
    """One tenant's file, vector store with that file's chunks, vector DB with chunks, and webhook endpoint
    with a delivered event."""

    def __init__(self, name: str, url: str, receiver: Receiver, model: ScriptedModel) -> None:
        key = KEYS[name]
        self.oai = openai.OpenAI(base_url=f"{url}/v1", api_key=key, max_retries=0, timeout=60)
        self.http = httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=60)
        llama = LlamaStackClient(base_url=url, api_key=key, max_retries=0, timeout=60)
        self.file = self.oai.files.create(file=(f"{name}.md", NOTES), purpose="assistants")
        self.store = self.oai.vector_stores.create(name=f"{name} notes")
        attached = self.oai.vector_stores.files.create_and_poll(file_id=self.file.id, vector_store_id=self.store.id)
        assert attached.status == "completed"
        self.vector_db = f"{name}-db"
        self.vector_db_store = vector_db_store_id(name, self.vector_db)
        llama.vector_dbs.register(vector_db_id=self.vector_db, embedding_model=BUILTIN_EMBEDDING_MODEL_ID)
        llama.vector_io.insert(
            vector_db_id=self.vector_db,
            chunks=[{"content": "Otters sleep holding hands.", "metadata": {"document_id": name}}],
        )
        types = ["response.completed"]
        self.endpoint = self.oai.webhooks.create(name=name, url=receiver.url, event_types=types)  # type: ignore[arg-type]
        model.script(text(f"{name}'s answer"))
        self.oai.responses.create(model=SCRIPTED_MODEL, input="hello")
        self.deliveries = _deliveries(self.http, self.endpoint.id, "delivered", 1)


def test_an_erasure_takes_the_tenants_files_vector_stores_and_webhooks(
    stack: Stack, url: str, receivers: dict[str, Receiver], model: ScriptedModel
) -> None:
    alice = Tenant("erasure-alice", url, receivers["erasure-alice"], model)
    bob = Tenant("erasure-bob", url, receivers["erasure-bob"], model)
    # One of alice's deliveries still pending (its receiver failing), its workflow waiting for a retry.
    receivers["erasure-alice"].answer(*[500] * 50)
    model.script(text("again"))
    alice.oai.responses.create(model=SCRIPTED_MODEL, input="again")
    pending = next(d for d in _deliveries(alice.http, alice.endpoint.id, "pending", 1) if d["status"] == "pending")
    pending_workflow = delivery_workflow_id(alice.endpoint.id, pending["event_id"], 0)
    blobs = stack.settings.data_dir / "files"
    assert (blobs / alice.file.id).exists() and chunk_rows(stack, alice.store.id) > 0
    assert chunk_rows(stack, alice.vector_db_store) > 0 and _outbox_rows(stack, "erasure-alice") == 2
    assert _usage_rows(stack, "erasure-alice") >= 1 and _usage_rows(stack, "erasure-bob") >= 1

    operator = {"Authorization": f"Bearer {OPERATOR_KEY}"}
    erased = httpx.delete(f"{url}{OPERATOR_PREFIX}tenants/erasure-alice", headers=operator, timeout=60)
    assert erased.status_code == 200, erased.text
    deleted = erased.json()["deleted"]
    assert deleted["files"] == 1 and deleted["vector_stores"] == 2  # the vector store and the vector DB
    assert deleted["webhook_endpoints"] == 1 and deleted["webhook_deliveries"] == 2
    assert deleted["model_usage"] >= 1 and _usage_rows(stack, "erasure-alice") == 0

    # Every listing of alice's is empty, every direct read a 404; her bytes and index rows are gone.
    assert alice.oai.files.list().data == []
    assert alice.oai.vector_stores.list().data == []
    assert alice.oai.webhooks.list().data == []
    assert alice.http.get("/v1/vector-dbs").json()["data"] == []
    for path in (
        f"/v1/files/{alice.file.id}",
        f"/v1/files/{alice.file.id}/content",
        f"/v1/vector_stores/{alice.store.id}",
        f"/v1/vector_stores/{alice.store.id}/files",
        f"/v1/vector-dbs/{alice.vector_db}",
        f"/v1/webhook_endpoints/{alice.endpoint.id}",
        f"/v1/webhook_endpoints/{alice.endpoint.id}/deliveries",
    ):
        assert alice.http.get(path).status_code == 404, path
    assert not (blobs / alice.file.id).exists()
    assert chunk_rows(stack, alice.store.id) == 0 and chunk_rows(stack, alice.vector_db_store) == 0
    assert _outbox_rows(stack, "erasure-alice") == 0

    async def stopped() -> bool:
        described = await stack.client.get_workflow_handle(pending_workflow).describe()
        return described.status != WorkflowExecutionStatus.RUNNING

    deadline = time.monotonic() + EVENT_SECONDS
    while not stack.background.run(stopped()):
        assert time.monotonic() < deadline, "the pending delivery's workflow still runs"
        time.sleep(0.2)

    # Bob's alike are untouched.
    assert [file.id for file in bob.oai.files.list().data] == [bob.file.id]
    assert bob.oai.files.content(bob.file.id).read() == NOTES and (blobs / bob.file.id).exists()
    assert {store.id for store in bob.oai.vector_stores.list().data} == {bob.store.id, bob.vector_db_store}
    assert chunk_rows(stack, bob.store.id) > 0 and chunk_rows(stack, bob.vector_db_store) > 0
    assert [endpoint.id for endpoint in bob.oai.webhooks.list().data] == [bob.endpoint.id]
    assert _deliveries(bob.http, bob.endpoint.id, "delivered", 1) == bob.deliveries
    assert _outbox_rows(stack, "erasure-bob") == 1 and _usage_rows(stack, "erasure-bob") >= 1
    bob.oai.vector_stores.delete(bob.store.id)  # the suite's stack goes on: leave no endpoint behind
    bob.oai.webhooks.delete(bob.endpoint.id)

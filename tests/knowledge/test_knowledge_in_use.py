"""A vector store in use stays; one that cannot answer says why. A search or an insert marks the store in use
(its `expires_after` and the vector-store TTL count from then); an expired store, or one whose embedding model
is gone, answers a clear 409 instead of results or a 500; expired files are not listed."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import openai
import pytest
from sqlalchemy import update

from store.database import open_database
from store.knowledge.tables import FileRow, VectorStoreRow
from tests.support.stack import Stack

LONG_AGO = datetime.now(UTC) - timedelta(days=2)


@pytest.fixture
def client(stack: Stack) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{stack.base_url}/v1", api_key="unused", max_retries=0)


@pytest.fixture
def rest(stack: Stack) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=stack.base_url, timeout=60) as http:
        yield http


def _change(stack: Stack, table: Any, key: Any, value: str, **values: Any) -> None:
    database = open_database(stack.settings.store_url)

    async def write() -> None:
        await database.write(lambda tx: tx.execute(update(table).where(key == value).values(**values)))
        await database.dispose()

    stack.background.run(write())


def test_a_search_marks_the_store_in_use(stack: Stack, client: openai.OpenAI, rest: httpx.Client) -> None:
    store = client.vector_stores.create(name="in use", expires_after={"anchor": "last_active_at", "days": 3})
    _change(stack, VectorStoreRow, VectorStoreRow.vector_store_id, store.id, last_active_at=LONG_AGO)
    assert (client.vector_stores.retrieve(store.id).last_active_at or 0) < (
        datetime.now(UTC) - timedelta(days=1)
    ).timestamp()
    client.vector_stores.search(store.id, query="anything")
    searched = client.vector_stores.retrieve(store.id)
    assert (searched.last_active_at or 0) >= (datetime.now(UTC) - timedelta(minutes=5)).timestamp()
    assert searched.expires_at is not None and searched.expires_at > (datetime.now(UTC) + timedelta(days=2)).timestamp()

    registered = rest.post("/v1/vector-dbs", json={"vector_db_id": "in-use-db"})
    assert registered.status_code == 200, registered.text
    db = client.vector_stores.list(limit=100).data
    db_id = next(found.id for found in db if found.name == "in-use-db")
    _change(stack, VectorStoreRow, VectorStoreRow.vector_store_id, db_id, last_active_at=LONG_AGO)
    inserted = rest.post(
        "/v1/vector-io/insert",
        json={"vector_db_id": "in-use-db", "chunks": [{"content": "a puffin", "metadata": {"document_id": "d"}}]},
    )
    assert inserted.status_code == 200, inserted.text
    assert (client.vector_stores.retrieve(db_id).last_active_at or 0) >= (
        datetime.now(UTC) - timedelta(minutes=5)
    ).timestamp()


def test_an_expired_store_answers_no_search(stack: Stack, client: openai.OpenAI, rest: httpx.Client) -> None:
    store = client.vector_stores.create(name="expired", expires_after={"anchor": "last_active_at", "days": 1})
    _change(stack, VectorStoreRow, VectorStoreRow.vector_store_id, store.id, last_active_at=LONG_AGO)
    assert client.vector_stores.retrieve(store.id).status == "expired"
    with pytest.raises(openai.APIStatusError) as refused:
        client.vector_stores.search(store.id, query="anything")
    assert refused.value.status_code == 409 and "expired" in refused.value.message
    queried = rest.post("/v1/vector-io/query", json={"vector_db_id": store.id, "query": "anything"})
    assert queried.status_code == 409 and "expired" in queried.json()["detail"]


def test_a_store_whose_embedding_model_is_gone_answers_409(
    stack: Stack, client: openai.OpenAI, rest: httpx.Client
) -> None:
    store = client.vector_stores.create(name="orphaned model")
    _change(stack, VectorStoreRow, VectorStoreRow.vector_store_id, store.id, embedding_model="removed-model")
    with pytest.raises(openai.APIStatusError) as refused:
        client.vector_stores.search(store.id, query="anything")
    assert refused.value.status_code == 409 and "'removed-model'" in refused.value.message
    queried = rest.post("/v1/vector-io/query", json={"vector_db_id": store.id, "query": "anything"})
    assert queried.status_code == 409 and "'removed-model'" in queried.json()["detail"]
    inserted = rest.post("/v1/vector-io/insert", json={"vector_db_id": store.id, "chunks": [{"content": "x"}]})
    assert inserted.status_code == 409 and "'removed-model'" in inserted.json()["detail"]


def test_insert_ttl_seconds_is_refused_by_name(rest: httpx.Client) -> None:
    assert rest.post("/v1/vector-dbs", json={"vector_db_id": "ttl-db"}).status_code == 200
    inserted = rest.post(
        "/v1/vector-io/insert", json={"vector_db_id": "ttl-db", "chunks": [{"content": "x"}], "ttl_seconds": 60}
    )
    assert inserted.status_code == 400 and "ttl_seconds" in inserted.json()["detail"]


def test_expired_files_are_not_listed(stack: Stack, client: openai.OpenAI) -> None:
    kept = client.files.create(file=("kept.txt", b"kept"), purpose="assistants")
    gone = client.files.create(
        file=("gone.txt", b"gone"), purpose="assistants", expires_after={"anchor": "created_at", "seconds": 3600}
    )
    _change(stack, FileRow, FileRow.file_id, gone.id, expires_at=LONG_AGO)
    listed = {file.id for file in client.files.list(limit=10000).data}
    assert kept.id in listed and gone.id not in listed

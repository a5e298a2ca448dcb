"""Every knowledge route scoped to its tenant: another tenant's file, vector store, batch or vector DB is a 404."""

from __future__ import annotations

from typing import Any

import httpx
import openai

from configuration.model_specs import BUILTIN_EMBEDDING_MODEL_ID
from tests.support.knowledge_files import wait_for_file
from tests.support.stack import Stack

KNOWLEDGE_ROUTES = {
    ("get", "/v1/models"),
    ("get", "/v1/models/{model_id}"),
    ("post", "/v1/embeddings"),
    ("post", "/v1/inference/embeddings"),
    ("post", "/v1/files"),
    ("get", "/v1/files"),
    ("get", "/v1/files/{file_id}"),
    ("delete", "/v1/files/{file_id}"),
    ("get", "/v1/files/{file_id}/content"),
    ("post", "/v1/vector_stores"),
    ("get", "/v1/vector_stores"),
    ("get", "/v1/vector_stores/{vector_store_id}"),
    ("post", "/v1/vector_stores/{vector_store_id}"),
    ("delete", "/v1/vector_stores/{vector_store_id}"),
    ("post", "/v1/vector_stores/{vector_store_id}/search"),
    ("post", "/v1/vector_stores/{vector_store_id}/files"),
    ("get", "/v1/vector_stores/{vector_store_id}/files"),
    ("get", "/v1/vector_stores/{vector_store_id}/files/{file_id}"),
    ("post", "/v1/vector_stores/{vector_store_id}/files/{file_id}"),
    ("delete", "/v1/vector_stores/{vector_store_id}/files/{file_id}"),
    ("get", "/v1/vector_stores/{vector_store_id}/files/{file_id}/content"),
    ("post", "/v1/vector_stores/{vector_store_id}/file_batches"),
    ("get", "/v1/vector_stores/{vector_store_id}/file_batches/{batch_id}"),
    ("post", "/v1/vector_stores/{vector_store_id}/file_batches/{batch_id}/cancel"),
    ("get", "/v1/vector_stores/{vector_store_id}/file_batches/{batch_id}/files"),
    ("post", "/v1/vector-dbs"),
    ("get", "/v1/vector-dbs"),
    ("get", "/v1/vector-dbs/{vector_db_id}"),
    ("delete", "/v1/vector-dbs/{vector_db_id}"),
    ("post", "/v1/vector-io/insert"),
    ("post", "/v1/vector-io/query"),
    ("post", "/v1/tool-runtime/rag-tool/insert"),
    ("post", "/v1/tool-runtime/rag-tool/query"),
}
"""Walked here (tests/security/test_tenancy.py counts them as walked); models and embeddings read no tenant's
objects."""

_TENANT_FREE = {
    ("get", "/v1/models"),
    ("get", "/v1/models/{model_id}"),
    ("post", "/v1/embeddings"),
    ("post", "/v1/inference/embeddings"),
}
_CREATES_AND_LISTS = {
    ("post", "/v1/files"),
    ("get", "/v1/files"),
    ("post", "/v1/vector_stores"),
    ("get", "/v1/vector_stores"),
    ("post", "/v1/vector-dbs"),
    ("get", "/v1/vector-dbs"),
}


def _foreign_requests(ids: dict[str, str]) -> list[tuple[str, str, dict[str, Any] | None]]:
    """Every route that names a file, vector store, batch or vector DB, aimed at the given ones."""
    file, store, db = f"/v1/files/{ids['file_id']}", f"/v1/vector_stores/{ids['vector_store_id']}", ids["vector_db_id"]
    store_file, batch = f"{store}/files/{ids['file_id']}", f"{store}/file_batches/{ids['batch_id']}"
    return [
        ("get", file, None),
        ("get", f"{file}/content", None),
        ("delete", file, None),
        ("get", store, None),
        ("post", store, {"name": "stolen"}),
        ("post", f"{store}/search", {"query": "secret"}),
        ("post", f"{store}/files", {"file_id": ids["file_id"]}),
        ("get", f"{store}/files", None),
        ("get", store_file, None),
        ("post", store_file, {"attributes": {"x": "y"}}),
        ("get", f"{store_file}/content", None),
        ("delete", store_file, None),
        ("post", f"{store}/file_batches", {"file_ids": [ids["file_id"]]}),
        ("get", batch, None),
        ("post", f"{batch}/cancel", None),
        ("get", f"{batch}/files", None),
        ("delete", store, None),
        ("get", f"/v1/vector-dbs/{db}", None),
        ("post", "/v1/vector-io/insert", {"vector_db_id": db, "chunks": [{"content": "x", "metadata": {}}]}),
        ("post", "/v1/vector-io/query", {"vector_db_id": db, "query": "secret"}),
        (
            "post",
            "/v1/tool-runtime/rag-tool/insert",
            {
                "vector_db_id": db,
                "chunk_size_in_tokens": 128,
                "documents": [{"document_id": "d", "content": "x", "metadata": {}}],
            },
        ),
        ("post", "/v1/tool-runtime/rag-tool/query", {"vector_db_ids": [db], "content": "secret"}),
        ("delete", f"/v1/vector-dbs/{db}", None),
    ]


def test_another_tenants_knowledge_is_not_found_on_every_route(stack: Stack) -> None:
    settings = stack.settings.model_copy(update={"api_keys": ("kn-owner-0123", "kn-other-4567")})
    with stack.other_api(settings) as url:
        owner = openai.OpenAI(base_url=f"{url}/v1", api_key="kn-owner-0123", max_retries=0)
        file = owner.files.create(file=("secret.txt", b"The vault code is 0451."), purpose="assistants")
        store = owner.vector_stores.create(name="secret", file_ids=[file.id])
        assert wait_for_file(owner, store.id, file.id).status == "completed"
        batch = owner.vector_stores.file_batches.create(store.id, file_ids=[file.id])
        with httpx.Client(base_url=url, headers={"Authorization": "Bearer kn-owner-0123"}, timeout=60) as mine:
            db = {"vector_db_id": "kn-secret-db", "embedding_model": BUILTIN_EMBEDDING_MODEL_ID}
            mine.post("/v1/vector-dbs", json=db).raise_for_status()
        ids = {"file_id": file.id, "vector_store_id": store.id, "batch_id": batch.id, "vector_db_id": "kn-secret-db"}
        with httpx.Client(base_url=url, headers={"Authorization": "Bearer kn-other-4567"}, timeout=60) as other:
            for method, path, body in _foreign_requests(ids):
                refused = other.request(method, path, json=body)
                assert refused.status_code == 404, (method, path, refused.text)
            assert other.get("/v1/files").json()["data"] == []
            assert other.get("/v1/vector_stores").json()["data"] == []
            assert other.get("/v1/vector-dbs").json()["data"] == []
        # The batch attached the file anew: the owner's search finds it once that ingestion has completed too.
        assert wait_for_file(owner, store.id, file.id).status == "completed"
        assert owner.vector_stores.search(store.id, query="vault code").data[0].file_id == file.id
        assert owner.files.retrieve(file.id).id == file.id

    templates = {key: "{" + key + "}" for key in ("file_id", "vector_store_id", "batch_id", "vector_db_id")}
    walked = {(method, path) for method, path, _ in _foreign_requests(templates)}
    assert walked | _TENANT_FREE | _CREATES_AND_LISTS == KNOWLEDGE_ROUTES


def test_a_vector_db_id_is_the_tenants_own_name(stack: Stack) -> None:
    """Two tenants registering `docs` get a vector DB each: neither clashes with, sees nor reaches the other's."""
    settings = stack.settings.model_copy(update={"api_keys": ("kn-first-0123", "kn-second-4567")})
    register = {"vector_db_id": "docs", "embedding_model": BUILTIN_EMBEDDING_MODEL_ID}
    with (
        stack.other_api(settings) as url,
        httpx.Client(base_url=url, headers={"Authorization": "Bearer kn-first-0123"}, timeout=60) as first,
        httpx.Client(base_url=url, headers={"Authorization": "Bearer kn-second-4567"}, timeout=60) as second,
    ):
        for client, words in ((first, "The first tenant's lighthouse"), (second, "The second tenant's orchard")):
            registered = client.post("/v1/vector-dbs", json=register)
            assert registered.status_code == 200, registered.text
            assert registered.json()["identifier"] == "docs"
            chunk = {"content": words, "metadata": {"document_id": "d1"}}
            inserted = client.post("/v1/vector-io/insert", json={"vector_db_id": "docs", "chunks": [chunk]})
            assert inserted.status_code == 200, inserted.text

        for client, mine, theirs in ((first, "lighthouse", "orchard"), (second, "orchard", "lighthouse")):
            assert [db["identifier"] for db in client.get("/v1/vector-dbs").json()["data"]] == ["docs"]
            found = client.post("/v1/vector-io/query", json={"vector_db_id": "docs", "query": theirs}).json()
            assert [mine in chunk["content"] for chunk in found["chunks"]] == [True]
            stores = client.get("/v1/vector_stores").json()["data"]
            assert [store["name"] for store in stores] == ["docs"]

        assert first.delete("/v1/vector-dbs/docs").status_code == 200
        assert first.get("/v1/vector-dbs/docs").status_code == 404
        assert second.get("/v1/vector-dbs/docs").json()["identifier"] == "docs"
        assert second.delete("/v1/vector-dbs/docs").status_code == 200

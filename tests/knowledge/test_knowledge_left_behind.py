"""Nothing of a knowledge object is left behind: unregistering a vector DB deletes the files `rag-tool/insert`
made of its documents (bytes too), and an insert that fails part-way deletes every file it made."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.support.stack import Stack


@pytest.fixture
def rest(stack: Stack) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=stack.base_url, timeout=120) as http:
        yield http


def _files(rest: httpx.Client) -> dict[str, str]:
    listed = rest.get("/v1/files", params={"limit": 10000})
    assert listed.status_code == 200, listed.text
    return {file["id"]: file["filename"] for file in listed.json()["data"]}


def _insert(rest: httpx.Client, db: str, *documents: dict[str, Any]) -> httpx.Response:
    body = {"vector_db_id": db, "chunk_size_in_tokens": 256, "documents": list(documents)}
    return rest.post("/v1/tool-runtime/rag-tool/insert", json=body)


def test_unregistering_a_vector_db_deletes_the_files_its_inserts_made(rest: httpx.Client) -> None:
    assert rest.post("/v1/vector-dbs", json={"vector_db_id": "left-behind"}).status_code == 200
    upload = rest.post("/v1/files", files={"file": ("mine.txt", b"an upload of mine")}, data={"purpose": "assistants"})
    before = _files(rest)
    inserted = _insert(rest, "left-behind", {"document_id": "puffins", "content": "Puffins nest on cliffs."})
    assert inserted.status_code == 200, inserted.text
    made = set(_files(rest)) - set(before)
    assert [_files(rest)[file_id] for file_id in made] == ["puffins"]
    (file_id,) = made
    assert rest.get(f"/v1/files/{file_id}/content").content == b"Puffins nest on cliffs."

    assert rest.delete("/v1/vector-dbs/left-behind").status_code == 200
    assert rest.get(f"/v1/files/{file_id}").status_code == 404
    assert file_id not in _files(rest)
    assert rest.get(f"/v1/files/{upload.json()['id']}").status_code == 200  # the tenant's own upload stays


def test_an_insert_that_fails_part_way_leaves_no_file(rest: httpx.Client) -> None:
    assert rest.post("/v1/vector-dbs", json={"vector_db_id": "half-way"}).status_code == 200
    before = _files(rest)
    failed = _insert(
        rest,
        "half-way",
        {"document_id": "good", "content": "Herring shoals in the tide."},
        {"document_id": "blank", "content": "   "},
    )
    assert failed.status_code == 400 and "blank" in failed.text
    assert _files(rest) == before
    db = rest.get("/v1/vector-dbs/half-way").json()
    store = rest.get(f"/v1/vector_stores/{db['provider_resource_id']}")
    if store.status_code == 200:
        assert store.json()["file_counts"]["total"] == 0

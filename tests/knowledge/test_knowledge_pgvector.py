"""The knowledge store on PostgreSQL with pgvector: a PostgreSQL started from PyPI (`pgserver`, which ships
pgvector) inside the test, since the system PostgreSQL has no pgvector. Skipped, saying so, when it cannot start."""

from __future__ import annotations

import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import openai
import pytest
from llama_stack_client import LlamaStackClient

from configuration.model_specs import BUILTIN_EMBEDDING_MODEL_ID
from tests.support.knowledge_files import pdf_with_text, wait_for_file
from tests.support.stack import Stack


@pytest.fixture(scope="module")
def pgvector_url() -> Iterator[str]:
    try:
        import pgserver

        data = Path(tempfile.mkdtemp(prefix="da-pgvector-"))
        server = pgserver.get_server(data, cleanup_mode="delete")
        name = f"knowledge_{uuid.uuid4().hex[:8]}"
        server.psql(f'CREATE DATABASE "{name}";')
        server.psql("SELECT 1 FROM pg_available_extensions WHERE name = 'vector';")
    except Exception as cannot:
        pytest.skip(
            f"SKIPPED: pgvector path not tested — pgserver could not start a PostgreSQL with pgvector ({cannot})"
        )
    try:
        yield f"postgresql+asyncpg://postgres@/{name}?host={data}"
    finally:
        server.cleanup()


@pytest.fixture(scope="module")
def pg_stack(pgvector_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    running = Stack(tmp_path_factory.mktemp("pgvector"), store_url=pgvector_url)
    yield running
    running.close()


def test_files_vector_stores_and_search_on_pgvector(pg_stack: Stack) -> None:
    client = openai.OpenAI(base_url=f"{pg_stack.base_url}/v1", api_key="unused", max_retries=0)
    body = b"The harbour seal dives for herring.\n" * 40000  # 1.4 MB: several blob parts
    seals = client.files.create(file=("seals.txt", body), purpose="assistants")
    assert client.files.content(seals.id).content == body
    pdf = client.files.create(
        file=("club.pdf", pdf_with_text(["Members of the rowing club row at dawn."])), purpose="assistants"
    )
    store = client.vector_stores.create(name="pg")
    batch = client.vector_stores.file_batches.create_and_poll(
        store.id,
        files=[
            {"file_id": seals.id, "attributes": {"kind": "animal"}},
            {"file_id": pdf.id, "attributes": {"kind": "sport"}},
        ],
    )
    assert batch.file_counts.completed == 2, batch
    found = client.vector_stores.search(store.id, query="rowing at dawn", max_num_results=3)
    assert found.data[0].file_id == pdf.id and "rowing" in found.data[0].content[0].text
    filtered = client.vector_stores.search(
        store.id, query="rowing", filters={"type": "eq", "key": "kind", "value": "animal"}
    )
    assert {hit.file_id for hit in filtered.data} == {seals.id}
    hybrid = client.vector_stores.search(
        store.id,
        query="herring",
        extra_body={"ranking_options": {"hybrid_search": {"embedding_weight": 1, "text_weight": 1}}},
    )
    assert hybrid.data[0].file_id == seals.id

    client.files.delete(seals.id)
    assert {hit.file_id for hit in client.vector_stores.search(store.id, query="herring").data} == {pdf.id}
    assert client.vector_stores.delete(store.id).deleted


def test_rag_tool_on_pgvector(pg_stack: Stack) -> None:
    llama = LlamaStackClient(base_url=pg_stack.base_url, max_retries=0, timeout=120)
    llama.vector_dbs.register(vector_db_id="pg-rag", embedding_model=BUILTIN_EMBEDDING_MODEL_ID)
    assert llama.vector_dbs.retrieve("pg-rag").provider_id == "pgvector"
    llama.tool_runtime.rag_tool.insert(
        vector_db_id="pg-rag",
        chunk_size_in_tokens=128,
        documents=[{"document_id": "drills", "content": "Lifeboat drills are on Tuesdays at noon.", "metadata": {}}],
    )
    result = llama.tool_runtime.rag_tool.query(vector_db_ids=["pg-rag"], content="lifeboat drills")
    assert "Tuesdays at noon" in "".join(item.text for item in result.content)
    llama.vector_io.insert(
        vector_db_id="pg-rag",
        chunks=[{"content": "Otters sleep holding hands.", "metadata": {"document_id": "otters"}}],
    )
    assert llama.vector_io.query(vector_db_id="pg-rag", query="otters").chunks[0].metadata["document_id"] == "otters"


def test_a_bad_file_fails_alone_on_pgvector(pg_stack: Stack) -> None:
    client = openai.OpenAI(base_url=f"{pg_stack.base_url}/v1", api_key="unused", max_retries=0)
    junk = client.files.create(file=("junk.bin", bytes(range(256)) * 32), purpose="assistants")
    store = client.vector_stores.create(name="pg-bad", file_ids=[junk.id])
    failed = wait_for_file(client, store.id, junk.id)
    assert failed.status == "failed" and failed.last_error is not None
    assert failed.last_error.code == "unsupported_file"

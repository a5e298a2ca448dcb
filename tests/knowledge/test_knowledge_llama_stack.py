"""Knowledge in the llama-stack dialect with the official llama-stack-client 0.2.12, unmodified: vector DBs,
vector-io, and the RAG tool inserting documents by content and by URL (through the outbound policy)."""

from __future__ import annotations

from collections.abc import Iterator

import openai
import pytest
from fastapi import FastAPI
from fastapi.responses import PlainTextResponse, Response
from llama_stack_client import BadRequestError as LlamaBadRequest
from llama_stack_client import LlamaStackClient
from llama_stack_client import NotFoundError as LlamaNotFound

from configuration.model_specs import BUILTIN_EMBEDDING_MODEL_ID
from tests.support.knowledge_files import pdf_with_text
from tests.support.scripted_model import ThreadedServer
from tests.support.stack import Stack, free_port


@pytest.fixture(scope="module")
def documents() -> Iterator[ThreadedServer]:
    app = FastAPI()

    @app.get("/handbook.txt")
    def handbook() -> PlainTextResponse:
        return PlainTextResponse("Crew handbook. Lifeboat drills happen every Tuesday at noon on deck four.")

    @app.get("/charter.pdf")
    def charter() -> Response:
        return Response(
            pdf_with_text(["Charter of the rowing club.", "Members row at dawn."]), media_type="application/pdf"
        )

    server = ThreadedServer(app, free_port()).start()
    yield server
    server.stop()


def test_register_list_get_unregister(llama: LlamaStackClient, stack: Stack) -> None:
    registered = llama.vector_dbs.register(
        vector_db_id="lsc-registry", embedding_model=BUILTIN_EMBEDDING_MODEL_ID, embedding_dimension=256
    )
    assert registered.identifier == "lsc-registry" and registered.embedding_dimension == 256
    assert "lsc-registry" in [db.identifier for db in llama.vector_dbs.list()]
    assert llama.vector_dbs.retrieve("lsc-registry").embedding_model == BUILTIN_EMBEDDING_MODEL_ID
    # The same object in the OpenAI dialect: a vector store named as the vector DB, under an id of its own.
    oai = openai.OpenAI(base_url=f"{stack.base_url}/v1", api_key="unused", max_retries=0)
    same = [store.id for store in oai.vector_stores.list(limit=100) if store.name == "lsc-registry"]
    assert len(same) == 1 and same[0].startswith("vs_")
    assert oai.vector_stores.retrieve(same[0]).name == "lsc-registry"
    llama.vector_dbs.unregister("lsc-registry")
    with pytest.raises(LlamaNotFound):
        llama.vector_dbs.retrieve("lsc-registry")
    with pytest.raises(LlamaBadRequest):
        llama.vector_dbs.register(vector_db_id="x", embedding_model="no-such-model")
    with pytest.raises(LlamaBadRequest):
        llama.vector_dbs.register(vector_db_id="y", embedding_model=BUILTIN_EMBEDDING_MODEL_ID, embedding_dimension=3)


def test_vector_io_insert_and_query(llama: LlamaStackClient) -> None:
    llama.vector_dbs.register(vector_db_id="lsc-io", embedding_model=BUILTIN_EMBEDDING_MODEL_ID)
    llama.vector_io.insert(
        vector_db_id="lsc-io",
        chunks=[
            {"content": "Otters hold hands while they sleep.", "metadata": {"document_id": "otters"}},
            {"content": "Tax returns are filed in April.", "metadata": {"document_id": "taxes"}},
        ],
    )
    found = llama.vector_io.query(vector_db_id="lsc-io", query="sleeping otters", params={"max_chunks": 1})
    assert [chunk.metadata["document_id"] for chunk in found.chunks] == ["otters"]
    assert found.chunks[0].content == "Otters hold hands while they sleep." and 0 < found.scores[0] <= 1
    keyword = llama.vector_io.query(vector_db_id="lsc-io", query="April", params={"mode": "keyword"})
    assert keyword.chunks[0].metadata["document_id"] == "taxes"
    with pytest.raises(LlamaNotFound):
        llama.vector_io.query(vector_db_id="lsc-unknown", query="x")


def test_rag_tool_insert_by_content_and_url_then_query(llama: LlamaStackClient, documents: ThreadedServer) -> None:
    llama.vector_dbs.register(vector_db_id="lsc-rag", embedding_model=BUILTIN_EMBEDDING_MODEL_ID)
    llama.tool_runtime.rag_tool.insert(
        vector_db_id="lsc-rag",
        chunk_size_in_tokens=256,
        documents=[
            {
                "document_id": "recipes",
                "content": "Sourdough needs a starter fed with flour and water.",
                "metadata": {},
            },
            {"document_id": "handbook", "content": {"uri": f"{documents.allowed_url}/handbook.txt"}, "metadata": {}},
            {
                "document_id": "charter",
                "content": {"uri": f"{documents.allowed_url}/charter.pdf"},
                "mime_type": "application/pdf",
                "metadata": {"club": "rowing"},
            },
        ],
    )
    result = llama.tool_runtime.rag_tool.query(vector_db_ids=["lsc-rag"], content="When are the lifeboat drills?")
    text = "".join(item.text for item in result.content)
    assert text.startswith("knowledge_search tool found")
    assert "Tuesday at noon" in text and "Result 1" in text
    assert result.metadata["document_ids"][0] == "handbook"  # type: ignore[index]
    rowing = llama.tool_runtime.rag_tool.query(
        vector_db_ids=["lsc-rag"],
        content="rowing at dawn",
        query_config={"max_chunks": 1, "chunk_template": "{chunk.content}|{index}"},  # type: ignore[arg-type]
    )
    assert "Members row at dawn." in rowing.content[1].text  # type: ignore[index]
    assert rowing.metadata["document_ids"] == ["charter"]


def test_rag_tool_refuses_what_it_cannot_fetch_or_read(llama: LlamaStackClient, documents: ThreadedServer) -> None:
    llama.vector_dbs.register(vector_db_id="lsc-rag-bad", embedding_model=BUILTIN_EMBEDDING_MODEL_ID)
    with pytest.raises(LlamaBadRequest) as refused:  # loopback by address is not in DA_OUTBOUND_ALLOW
        llama.tool_runtime.rag_tool.insert(
            vector_db_id="lsc-rag-bad",
            chunk_size_in_tokens=256,
            documents=[{"document_id": "x", "content": {"uri": f"{documents.url}/handbook.txt"}, "metadata": {}}],
        )
    assert "x" in str(refused.value)
    with pytest.raises(LlamaBadRequest) as missing:
        llama.tool_runtime.rag_tool.insert(
            vector_db_id="lsc-rag-bad",
            chunk_size_in_tokens=256,
            documents=[{"document_id": "gone", "content": {"uri": f"{documents.allowed_url}/nothing"}, "metadata": {}}],
        )
    assert "404" in str(missing.value)
    with pytest.raises(LlamaBadRequest) as empty:
        llama.tool_runtime.rag_tool.insert(
            vector_db_id="lsc-rag-bad",
            chunk_size_in_tokens=256,
            documents=[{"document_id": "blank", "content": "   ", "metadata": {}}],
        )
    assert "blank" in str(empty.value) and "no text" in str(empty.value)

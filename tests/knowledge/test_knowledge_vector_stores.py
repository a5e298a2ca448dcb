"""Vector stores through the unmodified openai SDK: files ingested by workflows, searched with filters."""

from __future__ import annotations

from pathlib import Path

import openai
import pytest

from store.database import sqlite_module
from tests.support.knowledge_files import pdf_with_text, wait_for_file
from tests.support.stack import Stack

ANIMALS = """# Animals of the coast

The harbour seal rests on rocky shores and dives for herring and cod.
Puffins nest in burrows on steep cliffs and carry sand eels in their beaks.

## Inland

Red deer graze the moorland in large herds during the autumn rut.
"""
FINANCE = "Quarterly invoices are due within thirty days. Late payment incurs a two percent fee."


@pytest.fixture
def oai(stack: Stack) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{stack.base_url}/v1", api_key="unused", max_retries=0)


def chunk_rows(stack: Stack, vector_store_id: str) -> int:
    """Chunk rows and keyword-index rows of the store, read on a connection of the store's own SQLite library."""
    path = Path(stack.settings.store_url.removeprefix("sqlite+aiosqlite:///"))
    db = sqlite_module().connect(path)
    try:
        chunks = db.execute("SELECT count(*) FROM knowledge_chunks WHERE vector_store_id = ?", (vector_store_id,))
        keywords = db.execute("SELECT count(*) FROM knowledge_fts_content WHERE c1 = ?", (vector_store_id,))
        return chunks.fetchone()[0] + keywords.fetchone()[0]
    finally:
        db.close()


def test_create_with_files_poll_and_search_with_filters(oai: openai.OpenAI, stack: Stack) -> None:
    animals = oai.files.create(file=("animals.md", ANIMALS.encode()), purpose="assistants")
    finance = oai.files.create(file=("finance.txt", FINANCE.encode()), purpose="assistants")
    store = oai.vector_stores.create(name="notes", metadata={"team": "docs"})
    assert store.status == "completed" and store.file_counts.total == 0 and store.metadata == {"team": "docs"}

    attached = oai.vector_stores.files.create_and_poll(
        file_id=animals.id, vector_store_id=store.id, attributes={"topic": "nature", "year": 2024}
    )
    assert attached.status == "completed" and attached.last_error is None and attached.usage_bytes > 0
    oai.vector_stores.files.create_and_poll(
        file_id=finance.id, vector_store_id=store.id, attributes={"topic": "money", "year": 2025}
    )
    retrieved = oai.vector_stores.retrieve(store.id)
    assert retrieved.file_counts.completed == 2 and retrieved.usage_bytes > 0 and retrieved.status == "completed"

    found = oai.vector_stores.search(store.id, query="seabirds nesting on cliffs")
    assert found.data[0].file_id == animals.id and found.data[0].filename == "animals.md"
    assert "Puffins" in found.data[0].content[0].text and 0 < found.data[0].score <= 1
    assert found.data[0].attributes == {"topic": "nature", "year": 2024}

    money_only = oai.vector_stores.search(
        store.id, query="seabirds", filters={"type": "eq", "key": "topic", "value": "money"}
    )
    assert {result.file_id for result in money_only.data} == {finance.id}
    compound = oai.vector_stores.search(
        store.id,
        query="payment",
        filters={
            "type": "or",
            "filters": [{"type": "gte", "key": "year", "value": 2025}, {"type": "in", "key": "topic", "value": ["x"]}],
        },
        max_num_results=1,
    )
    assert [result.file_id for result in compound.data] == [finance.id]
    nothing = oai.vector_stores.search(store.id, query="seals", ranking_options={"score_threshold": 0.999})
    assert nothing.data == []
    hybrid = oai.vector_stores.search(
        store.id,
        query="herring",
        extra_body={"ranking_options": {"hybrid_search": {"embedding_weight": 1, "text_weight": 1}}},
    )
    assert hybrid.data[0].file_id == animals.id
    words_only = {"ranking_options": {"hybrid_search": {"embedding_weight": 0, "text_weight": 1}}}
    by_words = oai.vector_stores.search(store.id, query="herring", extra_body=words_only)
    assert by_words.data and {result.file_id for result in by_words.data} == {animals.id}
    money_words = oai.vector_stores.search(
        store.id, query="herring", filters={"type": "eq", "key": "topic", "value": "money"}, extra_body=words_only
    )
    assert animals.id not in {result.file_id for result in money_words.data}
    question = "What is the fee for late payment of an invoice?"
    rewritten = oai.vector_stores.search(store.id, query=question, rewrite_query=True, max_num_results=1)
    assert (rewritten.model_extra or {})["search_query"] == ["fee late payment invoice"]
    assert [result.file_id for result in rewritten.data] == [finance.id]
    assert (oai.vector_stores.search(store.id, query=question).model_extra or {})["search_query"] == [question]

    listed = oai.vector_stores.files.list(vector_store_id=store.id, filter="completed")
    assert {file.id for file in listed} == {animals.id, finance.id}
    content = oai.vector_stores.files.content(animals.id, vector_store_id=store.id)
    assert "harbour seal" in "".join(part.text or "" for part in content)

    updated = oai.vector_stores.files.update(animals.id, vector_store_id=store.id, attributes={"topic": "money"})
    assert updated.attributes == {"topic": "money"}
    assert (
        len(
            oai.vector_stores.search(store.id, query="x", filters={"type": "eq", "key": "topic", "value": "money"}).data
        )
        == 2
    )

    renamed = oai.vector_stores.update(store.id, name="renamed", expires_after={"anchor": "last_active_at", "days": 3})
    assert renamed.name == "renamed" and renamed.expires_at is not None
    assert store.id in [item.id for item in oai.vector_stores.list()]

    assert chunk_rows(stack, store.id) > 0
    oai.vector_stores.files.delete(finance.id, vector_store_id=store.id)
    assert {result.file_id for result in oai.vector_stores.search(store.id, query="invoices").data} == {animals.id}
    assert oai.vector_stores.delete(store.id).deleted
    assert chunk_rows(stack, store.id) == 0
    with pytest.raises(openai.NotFoundError):
        oai.vector_stores.retrieve(store.id)


def test_file_batches_upload_and_poll(oai: openai.OpenAI, tmp_path: Path) -> None:
    store = oai.vector_stores.create(name="batch")
    paths = []
    for index, text in enumerate((ANIMALS, FINANCE, "Tide tables list the high and low water times.")):
        path = tmp_path / f"doc{index}.md"
        path.write_text(text)
        paths.append(path)
    batch = oai.vector_stores.file_batches.upload_and_poll(store.id, files=[path.open("rb") for path in paths])
    assert batch.status == "completed" and batch.file_counts.completed == 3 and batch.file_counts.total == 3
    files = oai.vector_stores.file_batches.list_files(batch.id, vector_store_id=store.id)
    assert len(list(files)) == 3
    assert oai.vector_stores.file_batches.retrieve(batch.id, vector_store_id=store.id).status == "completed"
    cancelled = oai.vector_stores.file_batches.cancel(batch.id, vector_store_id=store.id)
    assert cancelled.file_counts.completed == 3  # nothing left to cancel
    assert oai.vector_stores.search(store.id, query="high water").data[0].content[0].text.startswith("Tide")


def test_a_pdf_is_read_through_its_text_layer(oai: openai.OpenAI) -> None:
    pdf = oai.files.create(
        file=("report.pdf", pdf_with_text(["Annual report of the glacier survey.", "Ice retreated 40 metres."])),
        purpose="assistants",
    )
    store = oai.vector_stores.create(name="pdf", file_ids=[pdf.id])
    file = wait_for_file(oai, store.id, pdf.id)
    assert file.status == "completed", file.last_error
    assert "glacier" in oai.vector_stores.search(store.id, query="glacier").data[0].content[0].text


def test_bad_files_fail_alone_with_a_reason_and_the_store_keeps_serving(oai: openai.OpenAI) -> None:
    good = oai.files.create(file=("good.txt", FINANCE.encode()), purpose="assistants")
    bad = {
        "empty": oai.files.create(file=("empty.txt", b""), purpose="assistants"),
        "junk": oai.files.create(file=("junk.bin", bytes(range(256)) * 64), purpose="assistants"),
        "pdf": oai.files.create(file=("broken.pdf", b"%PDF-1.4\n1 0 obj << /Type /Catalog"), purpose="assistants"),
        "json": oai.files.create(file=("data.json", b'{"unclosed": '), purpose="assistants"),
    }
    store = oai.vector_stores.create(name="mixed", file_ids=[good.id, *(file.id for file in bad.values())])
    outcomes = {name: wait_for_file(oai, store.id, file.id) for name, file in bad.items()}
    expected = {"empty": "empty", "junk": "binary data", "pdf": "not a readable PDF", "json": "not valid JSON"}
    for name, file in outcomes.items():
        assert file.status == "failed" and file.last_error is not None, name
        assert file.last_error.code in ("invalid_file", "unsupported_file")
        assert expected[name] in file.last_error.message, file.last_error.message
    assert wait_for_file(oai, store.id, good.id).status == "completed"
    counts = oai.vector_stores.retrieve(store.id).file_counts
    assert (counts.completed, counts.failed, counts.in_progress) == (1, 4, 0)
    assert oai.vector_stores.search(store.id, query="invoices").data[0].file_id == good.id


def test_unknown_ids_and_bad_searches_are_4xx(oai: openai.OpenAI) -> None:
    with pytest.raises(openai.NotFoundError):
        oai.vector_stores.retrieve("vs_unknown")
    with pytest.raises(openai.NotFoundError):
        oai.vector_stores.create(file_ids=["file-unknown"])
    store = oai.vector_stores.create(name="errors")
    with pytest.raises(openai.NotFoundError):
        oai.vector_stores.files.create(file_id="file-unknown", vector_store_id=store.id)
    with pytest.raises(openai.NotFoundError):
        oai.vector_stores.files.retrieve("file-unknown", vector_store_id=store.id)
    with pytest.raises(openai.NotFoundError):
        oai.vector_stores.file_batches.retrieve("vsfb_unknown", vector_store_id=store.id)
    file = oai.files.create(file=("a.txt", FINANCE.encode()), purpose="assistants")
    oai.vector_stores.files.create_and_poll(file_id=file.id, vector_store_id=store.id, attributes={"topic": "money"})
    with pytest.raises(openai.BadRequestError) as missing_key:
        oai.vector_stores.search(store.id, query="x", filters={"type": "eq", "key": "topik", "value": "money"})
    assert "topik" in missing_key.value.message and "topic" in missing_key.value.message
    with pytest.raises(openai.BadRequestError) as bad_filter:
        oai.vector_stores.search(store.id, query="x", filters={"type": "like", "key": "topic", "value": "m"})  # type: ignore[arg-type]
    assert "unknown filter type" in bad_filter.value.message
    with pytest.raises(openai.BadRequestError):
        oai.vector_stores.search(store.id, query="x", max_num_results=500)
    with pytest.raises(openai.BadRequestError):
        oai.vector_stores.create(
            chunking_strategy={"type": "static", "static": {"max_chunk_size_tokens": 10, "chunk_overlap_tokens": 0}}
        )


def test_deleting_a_file_removes_its_chunks_and_blob(oai: openai.OpenAI, stack: Stack) -> None:
    file = oai.files.create(file=("gone.md", ANIMALS.encode()), purpose="assistants")
    store = oai.vector_stores.create(name="deletion", file_ids=[file.id])
    assert wait_for_file(oai, store.id, file.id).status == "completed"
    assert chunk_rows(stack, store.id) > 0
    oai.files.delete(file.id)
    assert chunk_rows(stack, store.id) == 0
    assert oai.vector_stores.retrieve(store.id).file_counts.total == 0
    assert oai.vector_stores.search(store.id, query="puffins").data == []
    assert not (stack.settings.data_dir / "files" / file.id).exists()


def test_static_chunking_cuts_by_tokens_with_overlap(oai: openai.OpenAI) -> None:
    text = " ".join(f"sentence{index} about the sea." for index in range(600))
    file = oai.files.create(file=("long.txt", text.encode()), purpose="assistants")
    store = oai.vector_stores.create(
        name="chunks",
        file_ids=[file.id],
        chunking_strategy={"type": "static", "static": {"max_chunk_size_tokens": 200, "chunk_overlap_tokens": 100}},
    )
    assert wait_for_file(oai, store.id, file.id).status == "completed"
    parts = [part.text or "" for part in oai.vector_stores.files.content(file.id, vector_store_id=store.id)]
    assert len(parts) > 10
    assert parts[0][len(parts[0]) // 2 + 20 :][:30] in parts[1]  # the second half of one chunk opens the next


def test_cancelling_a_batch_stops_its_files_and_keeps_no_chunks(oai: openai.OpenAI, stack: Stack) -> None:
    big = " ".join(f"word{index % 5000} tide harbour" for index in range(400_000)).encode()  # ~7 MB
    file = oai.files.create(file=("big.txt", big), purpose="assistants")
    store = oai.vector_stores.create(name="cancel")
    batch = oai.vector_stores.file_batches.create(store.id, file_ids=[file.id])
    cancelled = oai.vector_stores.file_batches.cancel(batch.id, vector_store_id=store.id)
    assert cancelled.status in ("in_progress", "cancelled")
    assert wait_for_file(oai, store.id, file.id).status == "cancelled"
    assert oai.vector_stores.file_batches.retrieve(batch.id, vector_store_id=store.id).status == "cancelled"
    assert chunk_rows(stack, store.id) == 0

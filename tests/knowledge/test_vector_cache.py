"""A SQLite vector store search scored from the process's copy of the store's vectors answers as sqlite-vec's scan
does, filters included, and sees chunks another connection (the worker's ingestion, a file's deletion) added or
removed since the copy was made."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import openai
import pytest

from knowledge.vector_cache import CACHE
from tests.support.knowledge_files import WORDS
from tests.support.stack import Stack

QUERIES = ["harbour seal herring", "ledger invoice", "glacier moraine tide", "lighthouse keeper puffin cliff"]
FILTERS: list[dict[str, Any] | None] = [
    None,
    {"type": "eq", "key": "shelf", "value": "a"},
    {"type": "ne", "key": "shelf", "value": "a"},
]


@pytest.fixture
def oai(stack: Stack) -> Iterator[openai.OpenAI]:
    yield openai.OpenAI(base_url=f"{stack.base_url}/v1", api_key="unused", max_retries=0)


def _attach(oai: openai.OpenAI, store_id: str, name: str, text: str, shelf: str) -> str:
    file = oai.files.create(file=(name, text.encode()), purpose="assistants")
    attached = oai.vector_stores.files.create_and_poll(
        file_id=file.id,
        vector_store_id=store_id,
        attributes={"shelf": shelf},
        chunking_strategy={"type": "static", "static": {"max_chunk_size_tokens": 100, "chunk_overlap_tokens": 0}},
    )
    assert attached.status == "completed", attached.last_error
    return file.id


def _answers(oai: openai.OpenAI, store_id: str) -> list[list[tuple[str, str, float]]]:
    answers = []
    for query in QUERIES:
        for attribute_filter in FILTERS:
            extra = {"filters": attribute_filter} if attribute_filter is not None else {}
            found = oai.vector_stores.search(store_id, query=query, max_num_results=15, **extra)  # type: ignore[arg-type]
            answers.append([(hit.file_id, hit.content[0].text, hit.score) for hit in found.data])
    return answers


def _scanned(oai: openai.OpenAI, store_id: str, monkeypatch: pytest.MonkeyPatch) -> list[list[tuple[str, str, float]]]:
    """The answers with the cache off: every search a sqlite-vec scan."""
    with monkeypatch.context() as patched:
        patched.setattr(CACHE, "vectors", lambda *_: None)
        return _answers(oai, store_id)


def _same(got: list[list[tuple[str, str, float]]], expected: list[list[tuple[str, str, float]]]) -> bool:
    """The same chunks in the same order, scores equal but for float rounding (numpy sums in another order)."""
    return [[hit[:2] for hit in answer] for answer in got] == [
        [hit[:2] for hit in answer] for answer in expected
    ] and all(
        hit[2] == pytest.approx(want[2], abs=1e-5)
        for answer, wanted in zip(got, expected, strict=True)
        for hit, want in zip(answer, wanted, strict=True)
    )


def _cached(oai: openai.OpenAI, store_id: str) -> list[list[tuple[str, str, float]]]:
    """The answers once the store's current vectors are copied (a store is copied when a version is seen twice)."""
    _answers(oai, store_id)
    answers = _answers(oai, store_id)
    assert any(key[1] == store_id for key in CACHE._stores), "the searches were not answered from the cache"
    return answers


def test_cached_searches_answer_as_the_scan_does_and_see_other_writers(
    oai: openai.OpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = oai.vector_stores.create(name="cached")
    pick = random.Random(7)
    # No two chunks alike: equal vectors tie, and ties may be ordered either way.
    texts = {shelf: " ".join(f"{pick.choice(WORDS)} {pick.randrange(10**6)}" for _ in range(600)) for shelf in "abc"}
    files = {shelf: _attach(oai, store.id, f"{shelf}.txt", text, shelf) for shelf, text in texts.items()}

    scanned = _scanned(oai, store.id, monkeypatch)
    assert all(answer for answer in scanned[:2])
    assert _same(_cached(oai, store.id), scanned)

    # A file ingested by the worker (its own connection) holding the first query verbatim: the next search finds it.
    added = _attach(oai, store.id, "new.txt", QUERIES[0], "a")
    after_add = _answers(oai, store.id)
    assert after_add[0][0][0] == added and _same(after_add, _scanned(oai, store.id, monkeypatch))
    assert _same(_cached(oai, store.id), after_add)

    oai.vector_stores.files.delete(file_id=files["b"], vector_store_id=store.id)
    after_delete = _answers(oai, store.id)
    assert all(hit[0] != files["b"] for answer in after_delete for hit in answer)
    assert _same(after_delete, _scanned(oai, store.id, monkeypatch)) and not _same(after_delete, after_add)
    assert _same(_cached(oai, store.id), after_delete)

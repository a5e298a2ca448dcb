"""No knowledge parameter is accepted and ignored: each is honoured, or refused with a 400 naming it; and the
llama-stack vector DB list has no silent end."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import openai
import pytest

from configuration.settings import OFFLINE_MODEL_ID
from tests.support.stack import Stack


@pytest.fixture
def rest(stack: Stack) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=stack.base_url, timeout=120) as http:
        yield http


def test_vector_store_parameters_are_honoured_or_refused_by_name(stack: Stack) -> None:
    client = openai.OpenAI(base_url=f"{stack.base_url}/v1", api_key="unused", max_retries=0)
    with pytest.raises(openai.BadRequestError) as described:
        client.vector_stores.create(name="described", description="notes of the crew")
    assert described.value.body["param"] == "description"  # type: ignore[index]
    store = client.vector_stores.create(name="ranked")
    for ranker in ("auto", "none"):
        client.vector_stores.search(store.id, query="q", ranking_options={"ranker": ranker})
    with pytest.raises(openai.BadRequestError) as reranked:
        client.vector_stores.search(store.id, query="q", ranking_options={"ranker": "default-2024-11-15"})
    assert "ranker" in reranked.value.message
    tool = {"type": "file_search", "vector_store_ids": [store.id], "ranking_options": {"ranker": "default-2024-11-15"}}
    with pytest.raises(openai.BadRequestError) as searched:
        client.responses.create(model=OFFLINE_MODEL_ID, input="drills?", tools=[tool])  # type: ignore[list-item]
    assert "ranker" in searched.value.message


def test_rag_and_vector_db_parameters_are_honoured_or_refused_by_name(rest: httpx.Client) -> None:
    refused = rest.post("/v1/vector-dbs", json={"vector_db_id": "params", "provider_id": "faiss"})
    assert refused.status_code == 400 and "provider_id 'faiss'" in refused.json()["detail"]
    engine = rest.post("/v1/vector-dbs", json={"vector_db_id": "params"}).json()["provider_id"]
    assert rest.post("/v1/vector-dbs", json={"vector_db_id": "params", "provider_id": engine}).status_code == 200

    def query(config: dict[str, object]) -> httpx.Response:
        body = {"content": "puffins", "vector_db_ids": ["params"], "query_config": config}
        return rest.post("/v1/tool-runtime/rag-tool/query", json=body)

    assert query({"ranker": {"type": "rrf", "impact_factor": 60}}).status_code == 200
    assert query({"query_generator_config": {"type": "default", "separator": " "}}).status_code == 200
    weighted = query({"ranker": {"type": "weighted", "alpha": 0.3}})
    assert weighted.status_code == 400 and "ranker" in weighted.json()["detail"]
    llm = query({"query_generator_config": {"type": "llm", "model": "m", "template": "t"}})
    assert llm.status_code == 400 and "query_generator_config" in llm.json()["detail"]


def test_the_vector_db_list_has_no_silent_end(stack: Stack) -> None:
    settings = stack.settings.model_copy(update={"api_keys": ("many:many-key",), "page_limit_max": 3})
    with stack.other_api(settings) as url:
        headers = {"authorization": "Bearer many-key"}
        for number in range(7):
            made = httpx.post(f"{url}/v1/vector-dbs", json={"vector_db_id": f"db{number}"}, headers=headers)
            assert made.status_code == 200, made.text
        listed = httpx.get(f"{url}/v1/vector-dbs", headers=headers).json()["data"]
        assert sorted(db["identifier"] for db in listed) == [f"db{number}" for number in range(7)]

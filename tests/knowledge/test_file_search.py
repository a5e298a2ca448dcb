"""The Responses `file_search` tool through the unmodified openai SDK, with the offline model: the search is a
step of the durable turn, its `file_search_call` item shows results when included, the answer cites its files,
and the stream carries the three search events in the SDK's order."""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Iterator
from typing import Any

import openai
import pytest

from configuration.settings import OFFLINE_MODEL_ID
from tests.operations.test_docs import readme_blocks, run_block
from tests.support.knowledge_files import wait_for_file
from tests.support.scripted_model import ScriptedModel, text, tool_call
from tests.support.stack import SCRIPTED_MODEL, Stack

HANDBOOK = "Crew handbook. Lifeboat drills happen every Tuesday at noon on deck four."
RECIPES = "Galley recipes. The cook bakes rye bread on Fridays and serves herring on Sundays."
ASK = "Look up lifeboat drills in the documents."


@pytest.fixture
def oai(stack: Stack) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{stack.base_url}/v1", api_key="unused", max_retries=0)


@pytest.fixture
def library(oai: openai.OpenAI) -> Iterator[tuple[str, str]]:
    """A vector store with two small files; (its id, the handbook's file id)."""
    handbook = oai.files.create(file=("handbook.txt", HANDBOOK.encode()), purpose="assistants")
    recipes = oai.files.create(file=("recipes.txt", RECIPES.encode()), purpose="assistants")
    store = oai.vector_stores.create(name="ship", file_ids=[handbook.id, recipes.id])
    for file_id in (handbook.id, recipes.id):
        assert wait_for_file(oai, store.id, file_id).status == "completed"
    yield store.id, handbook.id
    oai.vector_stores.delete(store.id)


def _tool(store_id: str, **options: object) -> Any:
    """The tool as a user's code writes it, a plain dict (the SDK's types describe each tool's own keys)."""
    return {"type": "file_search", "vector_store_ids": [store_id], **options}


def test_a_search_step_shows_results_when_included_and_the_answer_cites_the_file(
    oai: openai.OpenAI, library: tuple[str, str]
) -> None:
    store_id, handbook_id = library
    response = oai.responses.create(
        model=OFFLINE_MODEL_ID,
        input=ASK,
        tools=[_tool(store_id, max_num_results=2)],
        include=["file_search_call.results"],
    )
    assert response.status == "completed", response.error
    call, message = response.output
    assert call.type == "file_search_call" and call.status == "completed"
    assert call.queries == ["lifeboat drills"]
    assert call.results is not None and call.results[0].file_id == handbook_id
    best = call.results[0]
    assert best.filename == "handbook.txt" and "Tuesday at noon" in best.text and 0 < best.score <= 1
    assert len(call.results) == 2  # max_num_results

    text = message.content[0]
    assert "Tuesday at noon" in text.text and "【" not in text.text  # the markers became annotations
    citations = [a for a in text.annotations if a.type == "file_citation"]
    assert citations[0].file_id == handbook_id and citations[0].filename == "handbook.txt"
    assert text.text[citations[0].index :].lstrip().startswith("Crew handbook")  # where the marker stood
    assert {citation.file_id for citation in citations} == {result.file_id for result in call.results}

    # Without include the call shows no results; the answer is the same.
    plain = oai.responses.create(model=OFFLINE_MODEL_ID, input=ASK, tools=[_tool(store_id)])
    assert plain.output[0].type == "file_search_call" and plain.output[0].results is None
    assert plain.output[1].content[0].text == text.text
    # A GET shows what the create answered.
    assert oai.responses.retrieve(response.id).output == response.output


def test_the_stream_has_the_three_search_events_in_order_and_a_replay_numbers_them_alike(
    oai: openai.OpenAI, library: tuple[str, str]
) -> None:
    store_id, handbook_id = library
    with oai.responses.stream(
        model=OFFLINE_MODEL_ID, input=ASK, tools=[_tool(store_id)], include=["file_search_call.results"]
    ) as stream:
        events = list(stream)
        final = stream.get_final_response()
    kinds = [event.type for event in events]
    search = [kind for kind in kinds if kind.startswith("response.file_search_call.")]
    assert search == [
        "response.file_search_call.in_progress",
        "response.file_search_call.searching",
        "response.file_search_call.completed",
    ]
    added = kinds.index("response.output_item.added")
    assert kinds[added : added + 5] == [
        "response.output_item.added",
        "response.file_search_call.in_progress",
        "response.file_search_call.searching",
        "response.file_search_call.completed",
        "response.output_item.done",
    ]
    assert events[added].item.type == "file_search_call" and events[added].item.status == "in_progress"
    assert events[added + 4].item.results[0].file_id == handbook_id
    assert [event.sequence_number for event in events] == list(range(len(events)))
    annotations = [event for event in events if event.type == "response.output_text.annotation.added"]
    assert annotations and annotations[0].annotation.file_id == handbook_id
    deltas = "".join(event.delta for event in events if event.type == "response.output_text.delta")
    assert deltas == final.output[1].content[0].text and "【" not in deltas
    assert final.output[1].content[0].annotations[0].file_id == handbook_id

    replayed = list(oai.responses.retrieve(final.id, stream=True))
    assert [(e.type, e.sequence_number) for e in replayed] == [(e.type, e.sequence_number) for e in events]
    resumed = list(oai.responses.retrieve(final.id, stream=True, starting_after=added + 1))
    assert [e.sequence_number for e in resumed] == list(range(added + 2, len(events)))
    assert resumed[0].type == "response.file_search_call.searching"


def test_tool_choice_forces_the_search_and_a_plain_question_searches_nothing(
    oai: openai.OpenAI, library: tuple[str, str]
) -> None:
    store_id, _ = library
    unforced = oai.responses.create(model=OFFLINE_MODEL_ID, input="Hello there", tools=[_tool(store_id)])
    assert [item.type for item in unforced.output] == ["message"]
    forced = oai.responses.create(
        model=OFFLINE_MODEL_ID, input="Hello there", tools=[_tool(store_id)], tool_choice={"type": "file_search"}
    )
    assert [item.type for item in forced.output] == ["file_search_call", "message"]
    assert forced.output[0].status == "failed"  # forced with no words to look up: the model reads why
    assert "needs a" in forced.output[1].content[0].text
    with pytest.raises(openai.BadRequestError, match="file_search"):
        oai.responses.create(model=OFFLINE_MODEL_ID, input="Hi", tool_choice={"type": "file_search"})


def test_chained_background_and_unstored_responses_search_too(oai: openai.OpenAI, library: tuple[str, str]) -> None:
    store_id, handbook_id = library
    first = oai.responses.create(model=OFFLINE_MODEL_ID, input="Hello", store=True)
    chained = oai.responses.create(
        model=OFFLINE_MODEL_ID, input=ASK, previous_response_id=first.id, tools=[_tool(store_id)]
    )
    assert chained.output[0].type == "file_search_call" and chained.status == "completed"

    conversation = oai.conversations.create()
    in_conversation = oai.responses.create(
        model=OFFLINE_MODEL_ID, input=ASK, conversation=conversation.id, tools=[_tool(store_id)]
    )
    assert in_conversation.output[0].type == "file_search_call"
    listed = [item.type for item in oai.conversations.items.list(conversation.id)]
    assert "file_search_call" in listed

    background = oai.responses.create(model=OFFLINE_MODEL_ID, input=ASK, tools=[_tool(store_id)], background=True)
    while background.status in ("queued", "in_progress"):
        time.sleep(0.1)
        background = oai.responses.retrieve(background.id)
    assert background.status == "completed" and background.output[0].type == "file_search_call"

    unstored = oai.responses.create(
        model=OFFLINE_MODEL_ID, input=ASK, tools=[_tool(store_id)], store=False, include=["file_search_call.results"]
    )
    assert unstored.output[0].results[0].file_id == handbook_id
    assert unstored.output[1].content[0].annotations[0].file_id == handbook_id


def test_another_tenants_or_an_unknown_vector_store_is_a_404(oai: openai.OpenAI, stack: Stack) -> None:
    with pytest.raises(openai.NotFoundError, match="vs_nope"):
        oai.responses.create(model=OFFLINE_MODEL_ID, input=ASK, tools=[_tool("vs_nope")])


def test_a_request_naming_a_deleted_store_is_a_404(oai: openai.OpenAI) -> None:
    other = oai.vector_stores.create(name="doomed")
    first = oai.responses.create(model=OFFLINE_MODEL_ID, input="Hello", tools=[_tool(other.id)])
    oai.vector_stores.delete(other.id)
    with pytest.raises(openai.NotFoundError):
        oai.responses.create(model=OFFLINE_MODEL_ID, input=ASK, previous_response_id=first.id, tools=[_tool(other.id)])


@pytest.mark.parametrize("dialect", ["openai", "llama_stack_client"])
def test_the_readme_chat_with_your_documents_quickstart_runs_as_written(stack: Stack, dialect: str) -> None:
    block = next(
        block
        for block in readme_blocks("python")
        if re.search(rf"^from {dialect} import", block, re.M) and ("file_search" in block or "builtin::rag" in block)
    )
    assert len([line for line in block.splitlines() if line.strip()]) <= 10
    out = run_block(block, [sys.executable, "-c"], stack.base_url)
    assert "Lifeboat drills are on Tuesdays at noon." in out
    if dialect == "openai":
        assert out.splitlines()[-1] == "handbook.txt"


def test_another_tenants_vector_store_is_a_404_and_its_files_are_never_searched(stack: Stack) -> None:
    settings = stack.settings.model_copy(update={"api_keys": ("fs-owner-0123", "fs-other-4567")})
    with stack.other_api(settings) as url:
        owner = openai.OpenAI(base_url=f"{url}/v1", api_key="fs-owner-0123", max_retries=0)
        other = openai.OpenAI(base_url=f"{url}/v1", api_key="fs-other-4567", max_retries=0)
        secret = owner.files.create(file=("secret.txt", b"The vault code is 0451."), purpose="assistants")
        store = owner.vector_stores.create(name="secret", file_ids=[secret.id])
        assert wait_for_file(owner, store.id, secret.id).status == "completed"
        ask = "Look up the vault code in the documents."
        with pytest.raises(openai.NotFoundError, match=store.id):
            other.responses.create(model=OFFLINE_MODEL_ID, input=ask, tools=[_tool(store.id)])
        mine = owner.responses.create(model=OFFLINE_MODEL_ID, input=ask, tools=[_tool(store.id)])
        assert "0451" in mine.output_text


def test_filters_and_score_threshold_narrow_the_search(oai: openai.OpenAI, library: tuple[str, str]) -> None:
    store_id, handbook_id = library
    files = {f.id for f in oai.vector_stores.files.list(store_id)}
    recipes_id = next(file_id for file_id in files if file_id != handbook_id)
    oai.vector_stores.files.update(file_id=recipes_id, vector_store_id=store_id, attributes={"kind": "galley"})
    oai.vector_stores.files.update(file_id=handbook_id, vector_store_id=store_id, attributes={"kind": "safety"})
    filtered = oai.responses.create(
        model=OFFLINE_MODEL_ID,
        input=ASK,
        tools=[_tool(store_id, filters={"type": "eq", "key": "kind", "value": "galley"})],
        include=["file_search_call.results"],
    )
    assert [r.file_id for r in filtered.output[0].results] == [recipes_id]
    assert filtered.output[0].results[0].attributes == {"kind": "galley"}
    strict = oai.responses.create(
        model=OFFLINE_MODEL_ID,
        input=ASK,
        tools=[_tool(store_id, ranking_options={"score_threshold": 1.0})],
        include=["file_search_call.results"],
    )
    assert strict.output[0].results == [] and "found no passages" in strict.output_text
    unknown = oai.responses.create(
        model=OFFLINE_MODEL_ID,
        input=ASK,
        tools=[_tool(store_id, filters={"type": "eq", "key": "colour", "value": "red"})],
    )
    assert unknown.status == "completed" and unknown.output[0].status == "failed"
    assert "colour" in unknown.output_text
    with pytest.raises(openai.BadRequestError, match="filters"):
        oai.responses.create(
            model=OFFLINE_MODEL_ID, input=ASK, tools=[_tool(store_id, filters={"type": "near", "key": "k"})]
        )


def test_a_forced_search_is_forced_once_then_the_model_answers(
    oai: openai.OpenAI, library: tuple[str, str], model: ScriptedModel
) -> None:
    store_id, _ = library
    model.script(tool_call("file_search", {"query": "drills"}), text("On Tuesdays."))
    response = oai.responses.create(
        model=SCRIPTED_MODEL, input="When?", tools=[_tool(store_id)], tool_choice={"type": "file_search"}
    )
    assert [item.type for item in response.output] == ["file_search_call", "message"]
    first, second = model.requests
    assert first["tool_choice"] == {"type": "function", "function": {"name": "file_search"}}
    assert second["tool_choice"] == "auto"
    assert [tool["function"]["name"] for tool in first["tools"]] == ["file_search"]


def test_a_store_deleted_while_the_response_runs_is_a_tool_error_the_model_reads(
    oai: openai.OpenAI, model: ScriptedModel
) -> None:
    doomed = oai.files.create(file=("doomed.txt", b"Soon gone."), purpose="assistants")
    store = oai.vector_stores.create(name="doomed", file_ids=[doomed.id])
    assert wait_for_file(oai, store.id, doomed.id).status == "completed"
    model.script(tool_call("file_search", {"query": "gone"}, delay_seconds=1.5), text("I could not search."))
    response = oai.responses.create(model=SCRIPTED_MODEL, input="Search", tools=[_tool(store.id)], background=True)
    oai.vector_stores.delete(store.id)  # while the model decides to search
    while response.status in ("queued", "in_progress"):
        time.sleep(0.1)
        response = oai.responses.retrieve(response.id)
    assert response.status == "completed", response.error
    call, message = response.output
    assert call.type == "file_search_call" and call.status == "failed" and call.queries == ["gone"]
    assert message.content[0].text.strip() == "I could not search."
    read = model.requests[-1]["messages"][-1]
    assert read["role"] == "tool" and f"vector store {store.id} was not found" in read["content"]

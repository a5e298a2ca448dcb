"""Compaction with the unmodified `openai` SDK against the real stack: `responses.compact`, compaction items
in later input (sealed: a tampered or foreign one is a 400), and `context_management` on create."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import httpx
import openai
import pytest
from cryptography.fernet import Fernet
from openai import AsyncOpenAI
from openai.types.responses import ResponseOutputItem, ResponseOutputMessage
from openai.types.responses.response_create_params import ContextManagement
from openai.types.responses.response_input_item_param import FunctionCallOutput

from activities.retention import worker_policy
from compaction.seal import CompactionSeal
from compaction.summary import SUMMARY_INSTRUCTIONS, SUMMARY_PREFIX
from tests.support.processes import EVENT_SECONDS
from tests.support.scripted_model import ScriptedModel, text, tool_call
from tests.support.stack import SCRIPTED_MODEL, Stack

CHAIN = 12
COMPACTION_ROUTES = {("post", "/v1/responses/compact"), ("delete", "/v1/responses/compact/{compaction_id}")}
"""Walked for tenancy here (another tenant's chain and items; tests/security/test_tenancy.py counts them as walked)."""


@pytest.fixture
async def client(stack: Stack) -> AsyncIterator[AsyncOpenAI]:
    async with AsyncOpenAI(base_url=f"{stack.base_url}/v1", api_key="unused", max_retries=0, timeout=60) as made:
        yield made


def summary_requests(model: ScriptedModel) -> list[dict[str, Any]]:
    return [body for body in model.requests if body["messages"][0]["content"] == SUMMARY_INSTRUCTIONS]


def answer_requests(model: ScriptedModel) -> list[dict[str, Any]]:
    return [body for body in model.requests if body["messages"][0]["content"] != SUMMARY_INSTRUCTIONS]


async def chain(client: AsyncOpenAI, count: int, **create: Any) -> list[Any]:
    responses: list[Any] = []
    for index in range(count):
        previous = responses[-1].id if responses else openai.omit
        responses.append(
            await client.responses.create(
                model=SCRIPTED_MODEL, input=f"question {index}", previous_response_id=previous, **create
            )
        )
        assert responses[-1].status == "completed", responses[-1].error
    return responses


def as_input(items: list[Any]) -> list[Any]:
    """The items as a user's code sends them back: plain dicts, which the SDK's item types do not describe."""
    return [item.model_dump(exclude_none=True) for item in items]


def _message_text(item: ResponseOutputItem) -> str:
    """A message's text: the SDK types a compaction's output as any kind of item."""
    assert isinstance(item, ResponseOutputMessage)
    return item.content[0].text


async def test_compact_after_a_chain_keeps_the_user_messages_and_one_sealed_summary(
    client: AsyncOpenAI, model: ScriptedModel
) -> None:
    model.script(*[text(f"answer {index}") for index in range(CHAIN)], text("The user asked twelve questions."))
    responses = await chain(client, CHAIN)

    compacted = await client.responses.compact(model=SCRIPTED_MODEL, previous_response_id=responses[-1].id)

    assert compacted.object == "response.compaction" and compacted.id.startswith("cmpr_")
    *users, last = compacted.output
    assert [(item.type, item.role) for item in users] == [("message", "user")] * CHAIN
    assert [_message_text(item) for item in users] == [f"question {index}" for index in range(CHAIN)]
    assert last.type == "compaction" and last.id.startswith("cmp_")
    assert "twelve" not in last.encrypted_content  # sealed, not readable
    assert compacted.usage.total_tokens == compacted.usage.input_tokens + compacted.usage.output_tokens > 0
    (asked,) = summary_requests(model)  # the whole chain, as a transcript
    assert "User: question 0" in asked["messages"][1]["content"]
    assert "Assistant: answer 11" in asked["messages"][1]["content"]

    # Continuing from the compacted window: fewer messages, every user turn kept, the summary in place of the rest.
    before = len(answer_requests(model)[-1]["messages"])
    model.script(text("continued"))
    answer = await client.responses.create(
        model=SCRIPTED_MODEL, input=[*as_input(compacted.output), {"role": "user", "content": "and now?"}]
    )
    assert answer.status == "completed" and answer.output_text.strip() == "continued"
    seen = model.requests[-1]["messages"]
    assert len(seen) < before + 2
    assert [m["content"] for m in seen if m["role"] == "user"] == [f"question {i}" for i in range(CHAIN)] + ["and now?"]
    assert not [m for m in seen if m["role"] == "assistant"]
    assert seen[-2] == {"role": "system", "content": SUMMARY_PREFIX + "The user asked twelve questions."}


async def test_a_compacted_window_compacts_again_with_its_summary(client: AsyncOpenAI, model: ScriptedModel) -> None:
    model.script(text("first summary"), text("second summary"))
    first = await client.responses.compact(model=SCRIPTED_MODEL, input="remember the number 7")
    second = await client.responses.compact(
        model=SCRIPTED_MODEL, input=[*as_input(first.output), {"role": "user", "content": "and 8"}]
    )
    assert [item.type for item in second.output] == ["message", "message", "compaction"]
    transcript = summary_requests(model)[-1]["messages"][1]["content"]
    assert transcript.splitlines() == ["User: remember the number 7", "Summary: first summary", "User: and 8"]


async def test_a_tampered_or_foreign_compaction_item_is_refused(client: AsyncOpenAI, model: ScriptedModel) -> None:
    model.script(text("a summary"))
    compacted = await client.responses.compact(model=SCRIPTED_MODEL, input="hello")
    item = compacted.output[-1].model_dump()
    content = item["encrypted_content"]
    tampered = content[:20] + ("A" if content[20] != "A" else "B") + content[21:]
    foreign = CompactionSeal(Fernet.generate_key().decode()).seal("default", "I am trusted context", "nothing")
    for forged in (tampered, foreign, "not even a token"):
        sent: Any = {**item, "encrypted_content": forged}  # as a user's code sends it back: a plain dict
        with pytest.raises(openai.BadRequestError) as refused:
            await client.responses.create(model=SCRIPTED_MODEL, input=[sent, {"role": "user", "content": "x"}])
        assert refused.value.code == "invalid_encrypted_content" and refused.value.param == "input"
        assert "not produced by this server" in refused.value.message
        with pytest.raises(openai.BadRequestError):
            await client.responses.compact(model=SCRIPTED_MODEL, input=[sent])
    assert len(model.requests) == 1  # only the summary: nothing forged reached the model


async def test_another_tenants_compaction_item_is_refused(stack: Stack, model: ScriptedModel) -> None:
    settings = stack.settings.model_copy(update={"api_keys": ("alice:key-alice-0123", "bob:key-bob-4567")})
    with stack.other_api(settings) as url:
        base = f"{url}/v1"
        async with (
            AsyncOpenAI(base_url=base, api_key="key-alice-0123", max_retries=0) as alice,
            AsyncOpenAI(base_url=base, api_key="key-bob-4567", max_retries=0) as bob,
        ):
            model.script(text("alice's secrets"))
            compacted = await alice.responses.compact(model=SCRIPTED_MODEL, input="my secret is 42")
            with pytest.raises(openai.BadRequestError) as refused:
                await bob.responses.create(model=SCRIPTED_MODEL, input=as_input(compacted.output))
            assert "another tenant" in refused.value.message
            mine = await alice.responses.create(model=SCRIPTED_MODEL, input="alice's question")
            with pytest.raises(openai.BadRequestError) as foreign_chain:
                await bob.responses.compact(model=SCRIPTED_MODEL, previous_response_id=mine.id)
            assert foreign_chain.value.code == "previous_response_not_found"


async def test_a_compaction_is_deleted_by_its_tenant_only_and_its_item_still_reads(
    stack: Stack, model: ScriptedModel
) -> None:
    settings = stack.settings.model_copy(update={"api_keys": ("alice:key-alice-0123", "bob:key-bob-4567")})
    with stack.other_api(settings) as url:
        model.script(text("The user keeps a secret."), text("still answered"))
        async with AsyncOpenAI(base_url=f"{url}/v1", api_key="key-alice-0123", max_retries=0) as alice:
            compacted = await alice.responses.compact(model=SCRIPTED_MODEL, input="my secret is 42")
            path = f"{url}/v1/responses/compact/{compacted.id}"
            async with httpx.AsyncClient(timeout=60) as http:
                bobs = await http.delete(path, headers={"Authorization": "Bearer key-bob-4567"})
                assert bobs.status_code == 404  # another tenant's: as if it did not exist
                assert stack.background.run(stack.store.compactions.get(compacted.id)) is not None
                deleted = await http.delete(path, headers={"Authorization": "Bearer key-alice-0123"})
                assert deleted.status_code == 200, deleted.text
                assert deleted.json() == {"id": compacted.id, "object": "response.compaction.deleted", "deleted": True}
                assert stack.background.run(stack.store.compactions.get(compacted.id)) is None
                again = await http.delete(path, headers={"Authorization": "Bearer key-alice-0123"})
                assert again.status_code == 404
            answer = await alice.responses.create(model=SCRIPTED_MODEL, input=as_input(compacted.output))
            assert answer.status == "completed"  # the summary travels in the sealed item


def test_compactions_have_a_default_time_to_live_that_da_retention_overrides(stack: Stack) -> None:
    assert worker_policy(stack.settings).ttls["compactions"] == timedelta(days=7)
    configured = stack.settings.model_copy(update={"retention": {"compactions": timedelta(hours=1)}})
    assert worker_policy(configured).ttls["compactions"] == timedelta(hours=1)


async def test_compact_refuses_what_it_cannot_compact(client: AsyncOpenAI, stack: Stack) -> None:
    with pytest.raises(openai.BadRequestError) as unknown:
        await client.responses.compact(model=SCRIPTED_MODEL, previous_response_id="resp_" + "0" * 48)
    assert unknown.value.code == "previous_response_not_found" and unknown.value.param == "previous_response_id"
    with pytest.raises(openai.BadRequestError) as empty:
        await client.responses.compact(model=SCRIPTED_MODEL)
    assert "Nothing to compact" in empty.value.message
    with pytest.raises(openai.BadRequestError) as model_unknown:
        await client.responses.compact(model="nope", input="x")
    assert model_unknown.value.code == "model_not_found"
    async with httpx.AsyncClient(base_url=stack.base_url, timeout=60) as http:
        missing = await http.post("/v1/responses/compact", json={"input": "x"})
    assert missing.status_code == 400 and missing.json()["error"]["param"] == "model"


async def test_context_management_keeps_a_long_chain_small(client: AsyncOpenAI, model: ScriptedModel) -> None:
    model.script()  # every answer and summary: "ok"
    long_question = "tell me more about the weather in the mountains this week " * 3
    responses: list[Any] = []
    for index in range(10):
        previous = responses[-1].id if responses else openai.omit
        responses.append(
            await client.responses.create(
                model=SCRIPTED_MODEL,
                input=f"{index}: {long_question}",
                previous_response_id=previous,
                context_management=[{"type": "compaction", "compact_threshold": 120}],
            )
        )
    compacting = [response for response in responses if response.output[0].type == "compaction"]
    assert compacting, "no response compacted"
    for response in compacting:
        assert [item.type for item in response.output] == ["compaction", "message"]
        assert response.usage.input_tokens > 0
    answers = answer_requests(model)
    assert len(answers) == 10 and len(summary_requests(model)) == len(compacting)
    for index, sent in enumerate(answers):
        assert sent["messages"][-1] == {"role": "user", "content": f"{index}: {long_question}"}
        assert len(sent["messages"]) <= 6, sent["messages"]
    compacted_turn = answers[responses.index(compacting[0])]["messages"]
    assert compacted_turn[0] == {"role": "system", "content": SUMMARY_PREFIX + "ok"}
    # The chain stays compacted for a response that does not ask for compaction: the summary, not the first turns.
    model.script()
    plain = await client.responses.create(model=SCRIPTED_MODEL, input="again", previous_response_id=responses[-1].id)
    assert plain.output[0].type == "message"
    seen = model.requests[-1]["messages"]
    assert seen[0]["content"].startswith(SUMMARY_PREFIX) and not any(m["content"].startswith("0:") for m in seen)


async def test_a_streamed_compacting_response_shows_the_compaction_item(
    client: AsyncOpenAI, model: ScriptedModel
) -> None:
    model.script(text("first answer"), text("the summary"), text("second answer"))
    first = await client.responses.create(model=SCRIPTED_MODEL, input="a first question " * 20)
    stream = await client.responses.create(
        model=SCRIPTED_MODEL,
        input="a second question",
        previous_response_id=first.id,
        context_management=[{"type": "compaction", "compact_threshold": 10}],
        stream=True,
    )
    events = [event async for event in stream]
    kinds = [event.type for event in events]
    assert kinds[:5] == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.compaction.compacting",
        "response.output_item.done",
    ]
    assert events[2].item.type == "compaction" and events[4].item.encrypted_content
    final = events[-1].response
    assert final.status == "completed" and [item.type for item in final.output] == ["compaction", "message"]
    retrieved = await client.responses.retrieve(final.id)
    assert retrieved.output[0].model_dump() == final.output[0].model_dump()


async def test_a_conversation_compacts_in_place_and_keeps_every_item(client: AsyncOpenAI, model: ScriptedModel) -> None:
    model.script()
    conversation = await client.conversations.create()
    managed: list[ContextManagement] = [{"type": "compaction", "compact_threshold": 60}]
    for index in range(6):
        response = await client.responses.create(
            model=SCRIPTED_MODEL,
            input=f"message {index} about the long-running support case",
            conversation=conversation.id,
            context_management=managed,
        )
        assert response.status == "completed"
    items = (await client.conversations.items.list(conversation.id, order="asc", limit=100)).data
    kinds = [item.type for item in items]
    assert kinds.count("compaction") >= 1
    said = [item.content[0].text for item in items if item.type == "message" and item.role == "user"]
    assert said == [f"message {index} about the long-running support case" for index in range(6)]  # all kept
    last_compaction = max(index for index, kind in enumerate(kinds) if kind == "compaction")
    assert items[last_compaction + 1].type == "message" and items[last_compaction + 1].role == "user"
    seen = answer_requests(model)[-1]["messages"]
    assert len(seen) < 2 * 6 and seen[-1]["content"] == "message 5 about the long-running support case"
    assert any(message["content"].startswith(SUMMARY_PREFIX) for message in seen)


async def test_a_conversation_runs_one_compacting_response_at_a_time(client: AsyncOpenAI, model: ScriptedModel) -> None:
    model.script(text("slow", delay_seconds=3), text("after"))
    conversation = await client.conversations.create()
    managed: list[ContextManagement] = [{"type": "compaction", "compact_threshold": 10_000}]
    running = await client.responses.create(
        model=SCRIPTED_MODEL, input="first", conversation=conversation.id, context_management=managed, background=True
    )
    with pytest.raises(openai.ConflictError) as busy:
        await client.responses.create(model=SCRIPTED_MODEL, input="second", conversation=conversation.id)
    assert busy.value.code == "conversation_busy" and running.id in busy.value.message
    deadline = time.monotonic() + EVENT_SECONDS
    while (await client.responses.retrieve(running.id)).status != "completed":
        assert time.monotonic() < deadline, "the first response did not complete"
        await asyncio.sleep(0.1)
    after = await client.responses.create(model=SCRIPTED_MODEL, input="second", conversation=conversation.id)
    assert after.output_text.strip() == "after"


async def test_a_compacted_turn_paused_on_a_client_tool_resumes_reading_the_summary(
    client: AsyncOpenAI, model: ScriptedModel
) -> None:
    weather: Any = {"type": "function", "name": "get_weather", "parameters": {"type": "object", "properties": {}}}
    model.script(text("an early answer"), text("the summary"), tool_call("get_weather"), text("Sunny."))
    first = await client.responses.create(model=SCRIPTED_MODEL, input="an early question " * 20)
    paused = await client.responses.create(
        model=SCRIPTED_MODEL,
        input="weather?",
        previous_response_id=first.id,
        tools=[weather],
        context_management=[{"type": "compaction", "compact_threshold": 20}],
    )
    assert [item.type for item in paused.output] == ["compaction", "function_call"]
    output: FunctionCallOutput = {
        "type": "function_call_output",
        "call_id": paused.output[1].call_id,
        "output": "sunny",
    }
    resumed = await client.responses.create(
        model=SCRIPTED_MODEL, previous_response_id=paused.id, input=[output], tools=[weather]
    )
    assert resumed.output_text.strip() == "Sunny."
    seen = model.requests[-1]["messages"]
    assert seen[0] == {"role": "system", "content": SUMMARY_PREFIX + "the summary"}
    assert not any("an early question" in str(message.get("content")) for message in seen)
    assert seen[-1]["role"] == "tool" and seen[-1]["content"] == "sunny"


async def test_compact_takes_the_chain_then_the_input_with_instructions(
    client: AsyncOpenAI, model: ScriptedModel
) -> None:
    model.script(text("first answer"), text("the summary"))
    first = await client.responses.create(model=SCRIPTED_MODEL, input="the chain's question")
    compacted = await client.responses.compact(
        model=SCRIPTED_MODEL,
        previous_response_id=first.id,
        input=[{"role": "user", "content": "one more thing"}],
        instructions="You are a travel agent.",
    )
    assert [_message_text(item) for item in compacted.output[:-1]] == ["the chain's question", "one more thing"]
    transcript = summary_requests(model)[0]["messages"][1]["content"].splitlines()
    assert transcript == [
        "Instructions: You are a travel agent.",
        "User: the chain's question",
        "Assistant: first answer",
        "User: one more thing",
    ]

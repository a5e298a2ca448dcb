"""`store: false` responses leave nothing behind once their turn has ended for good: the API's sweep deletes
their turn, steps, events, settings and response rows; a paused one stays resumable by a stateless replay
until it ends; stored responses are untouched."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from openai import AsyncOpenAI
from openai.types.responses.response_input_item_param import FunctionCallOutput
from sqlalchemy import Connection, func, select

from api.openai.responses import view
from api.services import Services
from api.turn_gateway import TurnGateway
from api.turns.sweep import delete_unstored_responses
from store.schema import Base
from tests.responses.test_responses_tools import WEATHER, assert_same_workflow
from tests.support.scripted_model import ScriptedModel, text, tool_call
from tests.support.stack import SCRIPTED_MODEL, Stack


@pytest.fixture
async def client(stack: Stack) -> AsyncIterator[AsyncOpenAI]:
    async with AsyncOpenAI(base_url=f"{stack.base_url}/v1", api_key="unused", max_retries=0, timeout=60) as made:
        yield made


def _runtime(stack: Stack) -> Services:
    gateway = TurnGateway(stack.client, stack.settings.task_queue)
    unread: Any = None  # the sweep reads none of the tools, events and streams
    return Services(
        stack.settings, stack.store, gateway, unread, unread, unread, settle_conversation=view.settle_conversation
    )


async def sweep(stack: Stack) -> list[str]:
    """The sweep's deletion as if every ended turn had ended long enough ago; the turns it deleted."""
    later = datetime.now(UTC) + timedelta(hours=1)
    return await asyncio.to_thread(stack.background.run, delete_unstored_responses(_runtime(stack), later))


async def row_counts(stack: Stack) -> dict[str, int]:
    def count(tx: Connection) -> dict[str, int]:
        tables = Base.metadata.tables.items()
        return {name: tx.scalar(select(func.count()).select_from(table)) or 0 for name, table in tables}

    return await asyncio.to_thread(stack.background.run, stack.store.database.read(count))


def grown(before: dict[str, int], after: dict[str, int]) -> set[str]:
    return {name for name in after if after[name] != before[name]}


async def test_an_ended_store_false_response_leaves_no_rows(
    client: AsyncOpenAI, model: ScriptedModel, stack: Stack
) -> None:
    await sweep(stack)  # what earlier tests left
    before = await row_counts(stack)
    model.script(text("ephemeral"))
    response = await client.responses.create(model=SCRIPTED_MODEL, input="x", store=False, instructions="Short.")
    assert response.output_text.strip() == "ephemeral"
    assert grown(before, await row_counts(stack)) >= {"turns", "steps", "turn_events", "turn_settings", "responses"}

    assert len(await sweep(stack)) == 1
    assert await row_counts(stack) == before


async def test_a_paused_store_false_response_is_kept_until_its_replay_ends_the_turn(
    client: AsyncOpenAI, model: ScriptedModel, stack: Stack
) -> None:
    await sweep(stack)
    before = await row_counts(stack)
    model.script(tool_call("get_weather", {"city": "Oslo"}), text("Snow."))
    first = await client.responses.create(
        model=SCRIPTED_MODEL,
        input="Weather in Oslo?",
        tools=[WEATHER],
        store=False,
    )
    [call] = first.output
    assert call.type == "function_call"
    assert await sweep(stack) == []  # paused: a stateless replay may still resume it

    replay: list[Any] = [
        {"role": "user", "content": "Weather in Oslo?"},
        {"type": "function_call", "call_id": call.call_id, "name": call.name, "arguments": call.arguments},
        {"type": "function_call_output", "call_id": call.call_id, "output": "snow"},
    ]
    second = await client.responses.create(model=SCRIPTED_MODEL, input=replay, tools=[WEATHER], store=False)
    assert second.output_text.strip() == "Snow."
    await assert_same_workflow(stack, first, second)

    assert len(await sweep(stack)) == 1
    assert await row_counts(stack) == before


async def test_stored_responses_are_untouched(client: AsyncOpenAI, model: ScriptedModel, stack: Stack) -> None:
    model.script(tool_call("get_weather", {"city": "Rome"}), text("Warm."))
    first = await client.responses.create(model=SCRIPTED_MODEL, input="Rome?", tools=[WEATHER])
    [call] = first.output
    output: FunctionCallOutput = {"type": "function_call_output", "call_id": call.call_id, "output": "warm"}
    # An unstored continuation of a stored response: its row goes, the turn stays for the stored one.
    second = await client.responses.create(
        model=SCRIPTED_MODEL,
        previous_response_id=first.id,
        input=[output],
        tools=[WEATHER],
        store=False,
    )
    assert second.output_text.strip() == "Warm."
    stored = (await client.responses.retrieve(first.id)).model_dump()
    before = await row_counts(stack)

    assert await sweep(stack) == []
    after = await row_counts(stack)
    assert after == before | {"responses": before["responses"] - 1}
    assert (await client.responses.retrieve(first.id)).model_dump() == stored

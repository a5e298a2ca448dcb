"""Compaction with the built-in offline model (no network), and its parts without a server: the seal, the
token estimate, the rule by which a compaction item stands for what came before it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from cryptography.fernet import Fernet
from openai import AsyncOpenAI

from activities.compaction import summarize
from api.openai.responses.compaction_items import as_read
from api.openai.responses.input_items import (
    CompactionItem,
    FunctionCallItem,
    FunctionCallOutputItem,
    InputItem,
    MessageItem,
)
from compaction.seal import Compacted, CompactionSeal, SealBroken
from compaction.summary import SUMMARY_PREFIX, estimate_tokens
from configuration.settings import OFFLINE_MODEL_ID
from providers.offline import OfflineModel
from tests.support.stack import Stack


@pytest.fixture
async def client(stack: Stack) -> AsyncIterator[AsyncOpenAI]:
    async with AsyncOpenAI(base_url=f"{stack.base_url}/v1", api_key="unused", max_retries=0, timeout=60) as made:
        yield made


async def test_the_offline_model_summarises_deterministically() -> None:
    messages = [{"role": "user", "content": f"question {index} " + "x" * 100} for index in range(12)]
    messages.insert(0, {"role": "system", "content": SUMMARY_PREFIX + "older things"})
    first = await summarize(OfflineModel(), OFFLINE_MODEL_ID, messages)
    again = await summarize(OfflineModel(), OFFLINE_MODEL_ID, messages)
    assert first == again
    assert first.text.startswith(
        "Summary of 13 earlier messages. (continues an earlier summary) The user said: «question 4"
    )
    assert "question 3 " not in first.text and first.text.count("«") == 8  # bounded: the last eight user lines
    assert first.input_tokens > 0 and first.output_tokens > 0


async def test_compact_and_continue_offline(client: AsyncOpenAI) -> None:
    first = await client.responses.create(model=OFFLINE_MODEL_ID, input="my name is Ada")
    second = await client.responses.create(model=OFFLINE_MODEL_ID, input="what is it?", previous_response_id=first.id)
    compacted = await client.responses.compact(model=OFFLINE_MODEL_ID, previous_response_id=second.id)
    assert [item.type for item in compacted.output] == ["message", "message", "compaction"]
    window: list[Any] = [item.model_dump(exclude_none=True) for item in compacted.output]
    answer = await client.responses.create(model=OFFLINE_MODEL_ID, input=[*window, {"role": "user", "content": "hi"}])
    assert answer.output_text == "You said: hi"


def test_the_seal_is_bound_to_its_key_and_tenant() -> None:
    key = Fernet.generate_key().decode()
    seal = CompactionSeal(key)
    sealed = seal.seal("acme", "the summary", "nothing")
    assert seal.open("acme", sealed) == Compacted("the summary", "nothing")
    with pytest.raises(SealBroken, match="another tenant"):
        seal.open("other", sealed)
    with pytest.raises(SealBroken, match="not produced by this server"):
        CompactionSeal(Fernet.generate_key().decode()).open("acme", sealed)
    # The credentials key itself does not open it: the compaction key is derived apart from it.
    with pytest.raises(Exception):  # noqa: B017 - Fernet's InvalidToken
        Fernet(key).decrypt(sealed.encode())


def test_estimate_counts_characters_by_four_and_a_few_per_message() -> None:
    assert estimate_tokens([{"role": "user", "content": "x" * 400}]) == 100 + 4
    call = {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "f", "arguments": "{}"}}]}
    assert estimate_tokens([call]) > 4


def test_a_compaction_item_stands_for_what_came_before_it() -> None:
    item = CompactionItem(encrypted_content="sealed")
    items: list[InputItem] = [
        MessageItem(role="user", content="one"),
        MessageItem(role="assistant", content="answer one"),
        FunctionCallItem(call_id="c1", name="f"),
        item,
        FunctionCallOutputItem(call_id="c1", output="late result"),
        MessageItem(role="user", content="two"),
    ]
    kept = as_read(items, {3: Compacted("S", "user_messages")})
    assert [(m.role, m.text()) for m in kept if isinstance(m, MessageItem)] == [
        ("user", "one"),
        ("system", SUMMARY_PREFIX + "S"),
        ("user", "two"),
    ]
    assert len(kept) == 3  # the result of a call the summary replaced is not read either
    replaced = as_read(items, {3: Compacted("S", "nothing")})
    assert [m.text() for m in replaced if isinstance(m, MessageItem)] == [SUMMARY_PREFIX + "S", "two"]

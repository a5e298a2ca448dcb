"""How often a create reads its turn's events: once per continuation, however long the chain.

The responses of a function-call loop are segments of one turn. Reading the turn's events per response of
the chain, and again to answer, made the 30th continuation cost ~10x the API CPU of the first (docs/benchmarks.md,
"The Responses adapter"). The worker reads events too (with a step's key prefix); only the API's whole-turn
reads are counted here.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator
from typing import Any

import pytest
from openai import AsyncOpenAI
from openai.types.responses.response_input_item_param import FunctionCallOutput

from store.turns.records import StoredEvent
from store.turns.turn_store import TurnStore
from tests.support.scripted_model import ScriptedModel, text, tool_call
from tests.support.stack import SCRIPTED_MODEL, Stack

LOOKUP: Any = {"type": "function", "name": "lookup", "parameters": {"type": "object", "properties": {}}}
CONTINUATIONS = 4


@pytest.fixture
async def client(stack: Stack) -> AsyncIterator[AsyncOpenAI]:
    async with AsyncOpenAI(base_url=f"{stack.base_url}/v1", api_key="unused", max_retries=0, timeout=60) as made:
        yield made


@pytest.fixture
def whole_turn_reads(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Calls of TurnStore.events_with_key_prefix(turn_id, "") by turn id; the real read still runs."""
    reads: Counter[str] = Counter()
    real = TurnStore.events_with_key_prefix

    async def counted(self: TurnStore, turn_id: str, prefix: str) -> list[StoredEvent]:
        if prefix == "":
            reads[turn_id] += 1
        return await real(self, turn_id, prefix)

    monkeypatch.setattr(TurnStore, "events_with_key_prefix", counted)
    return reads


async def test_a_continuation_reads_its_turn_once_however_long_the_chain(
    client: AsyncOpenAI, model: ScriptedModel, stack: Stack, whole_turn_reads: Counter[str]
) -> None:
    model.script(*[tool_call("lookup", {}) for _ in range(CONTINUATIONS + 1)], text("Done."))
    response: Any = await client.responses.create(model=SCRIPTED_MODEL, input="Look it up.", tools=[LOOKUP])
    reads_per_continuation = []
    for index in range(CONTINUATIONS + 1):
        assert [item.type for item in response.output] == ["function_call"], index
        output: FunctionCallOutput = {
            "type": "function_call_output",
            "call_id": response.output[0].call_id,
            "output": str(index),
        }
        whole_turn_reads.clear()
        response = await client.responses.create(
            model=SCRIPTED_MODEL, previous_response_id=response.id, input=[output], tools=[LOOKUP]
        )
        reads_per_continuation.append(sum(whole_turn_reads.values()))
    assert response.status == "completed" and response.output_text.strip() == "Done."
    assert reads_per_continuation == [1] * (CONTINUATIONS + 1)

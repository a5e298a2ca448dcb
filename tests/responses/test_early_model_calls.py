"""A foreground response's first model call, begun by the API hosting the worker while the workflow starts,
and adopted by its inference activity: made once, read whole, and never left running unadopted."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from activities.early_inference import EarlyInference
from domain.agents import ToolConfig
from providers.base import ChatRequest, FinishPart, ProviderUnavailable, ReplyPart, TextPart
from tests.support.processes import EVENT_SECONDS
from tests.support.rest import sse_events
from tests.support.scripted_model import ScriptedModel, failure, text, tool_call
from tests.support.stack import SCRIPTED_MODEL, Stack
from workflows.contracts import InferenceRequest, PendingWrites, TurnEnding


@pytest.fixture
def in_api(stack: Stack) -> Iterator[httpx.Client]:
    """An API that runs its own worker (make run's default) on a task queue no other worker polls."""
    alone = stack.settings.model_copy(
        update={"worker_in_api": True, "task_queue": f"{stack.settings.task_queue}-early-calls"}
    )
    with stack.other_api(alone) as url, httpx.Client(base_url=url, timeout=60) as http:
        yield http


def early_calls(http: httpx.Client) -> dict[str, float]:
    counts = {"adopted": 0.0, "abandoned": 0.0}
    for family in text_string_to_metric_families(http.get("/metrics").text):
        for sample in family.samples:
            if sample.name == "durable_agents_early_model_calls_total":
                counts[sample.labels["outcome"]] += sample.value
    return counts


def test_each_foreground_response_asks_the_model_once_through_an_adopted_early_call(
    in_api: httpx.Client, model: ScriptedModel
) -> None:
    model.script(
        text("Plain answer."),
        text("Streamed answer."),
        tool_call("get_weather", {"city": "Paris"}),
        text("Sunny in Paris."),
    )
    before = early_calls(in_api)
    plain = in_api.post("/v1/responses", json={"model": SCRIPTED_MODEL, "input": "Hi", "instructions": "Be brief."})
    streamed = in_api.post("/v1/responses", json={"model": SCRIPTED_MODEL, "input": "Stream it", "stream": True})
    weather = {"type": "function", "name": "get_weather", "parameters": {"type": "object", "properties": {}}}
    paused = in_api.post("/v1/responses", json={"model": SCRIPTED_MODEL, "input": "Weather?", "tools": [weather]})
    call = paused.json()["output"][0]
    answered = {"type": "function_call_output", "call_id": call["call_id"], "output": "sunny"}
    follow = {"model": SCRIPTED_MODEL, "previous_response_id": paused.json()["id"], "input": [answered]}
    resumed = in_api.post("/v1/responses", json=follow, headers={"Idempotency-Key": "early-calls-resume"})
    after = early_calls(in_api)

    assert plain.json()["output"][0]["content"][0]["text"] == "Plain answer. "
    streamed_events = [data for _, data in sse_events(streamed)]
    assert streamed_events[-1]["type"] == "response.completed"
    deltas = "".join(e["delta"] for e in streamed_events if e["type"] == "response.output_text.delta")
    assert deltas == "Streamed answer. "
    assert call["type"] == "function_call" and call["name"] == "get_weather"
    assert resumed.json()["status"] == "completed", resumed.json()
    assert resumed.json()["output"][0]["content"][0]["text"] == "Sunny in Paris. "
    # One request per model call, each asked as the activity asks it: the early call is the call.
    assert len(model.requests) == 4
    assert [m["role"] for m in model.requests[0]["messages"]] == ["system", "user"]
    assert model.requests[2]["tools"][0]["function"]["name"] == "get_weather"
    # The three new turns' first calls were begun early and adopted; the resumed one's was its activity's own.
    assert after["adopted"] - before["adopted"] == 3
    assert after["abandoned"] == before["abandoned"]


def test_an_early_call_the_provider_fails_is_retried_by_the_activity_and_the_response_completes(
    in_api: httpx.Client, model: ScriptedModel
) -> None:
    model.script(failure(503), text("Second time lucky."))
    response = in_api.post("/v1/responses", json={"model": SCRIPTED_MODEL, "input": "Try"})

    assert response.json()["status"] == "completed", response.json()
    assert response.json()["output"][0]["content"][0]["text"] == "Second time lucky. "
    assert len(model.requests) == 2


class _Model:
    """A ChatModel whose reply comes when the test says, and which says whether its call was cancelled."""

    def __init__(self, parts: list[ReplyPart], error: Exception | None = None) -> None:
        self.parts = parts
        self.error = error
        self.release = asyncio.Event()
        self.requests: list[ChatRequest] = []
        self.cancelled = asyncio.Event()

    async def stream(self, request: ChatRequest) -> AsyncIterator[ReplyPart]:
        self.requests.append(request)
        try:
            await self.release.wait()
            for part in self.parts:
                yield part
            if self.error is not None:
                raise self.error
        except asyncio.CancelledError:
            self.cancelled.set()
            raise


def _request(turn_id: str, **changes: object) -> InferenceRequest:
    return InferenceRequest(turn_id=turn_id, step_id="", tool_config=ToolConfig(), settings_id=turn_id).model_copy(
        update=changes
    )


def _serving(models: dict[str, _Model], adopt_within: float = 30.0) -> EarlyInference:
    """Early calls built as the activity would, each turn's asking its own model."""
    early = EarlyInference(adopt_within)

    async def build(request: InferenceRequest) -> tuple[ChatRequest, _Model, str]:
        chat = ChatRequest(model="m", messages=[{"role": "user", "content": request.turn_id}])
        return chat, models[request.turn_id], "m"

    early.serve(build)
    return early


async def test_the_activity_adopts_only_its_own_first_request_and_a_call_it_does_not_adopt_is_cancelled() -> None:
    first, second = _Model([TextPart("hi"), FinishPart("end_of_turn")]), _Model([TextPart("never read")])
    early = _serving({"t1": first, "t2": second})
    early.begin(_request("t1"))
    early.begin(_request("t2"))
    # The workflow's own request carries a step id, writes and an end: still the same model call.
    own = _request(
        "t1",
        step_id="step-1",
        pending=PendingWrites(events=[]),
        ending=TurnEnding(step_index=0, started_at="2026-01-01T00:00:00Z", last_inference=False, event_key="k"),
    )
    adopted = await early.adopt(own)
    assert adopted is not None
    (chat, _, model_id), call = adopted
    assert chat.messages == [{"role": "user", "content": "t1"}] and model_id == "m"
    first.release.set()
    assert [part async for part in call.parts()] == [TextPart("hi"), FinishPart("end_of_turn")]
    assert await early.adopt(own) is None  # adopted once

    # t2's workflow asks with another tool choice: not the call begun for it, which is cancelled.
    other = _request("t2", step_id="step-2", tool_config=ToolConfig(tool_choice="required"))
    assert await early.adopt(other) is None
    await asyncio.wait_for(second.cancelled.wait(), EVENT_SECONDS)
    assert len(second.requests) == 1


async def test_an_early_call_never_adopted_is_cancelled_after_its_window() -> None:
    model = _Model([TextPart("late")])
    early = _serving({"t3": model}, adopt_within=0.2)
    early.begin(_request("t3"))
    started = time.monotonic()
    await asyncio.wait_for(model.cancelled.wait(), EVENT_SECONDS)
    assert time.monotonic() - started >= 0.15
    assert await early.adopt(_request("t3", step_id="s")) is None


async def test_a_later_model_call_of_the_turn_does_not_adopt_and_a_failed_call_fails_its_adopter() -> None:
    model = _Model([TextPart("partial")], error=ProviderUnavailable("overloaded"))
    early = _serving({"t4": model})
    early.begin(_request("t4"))
    later = _request("t4", step_id="s2", pending=PendingWrites(first_new_step=1))
    assert await early.adopt(later) is None  # not the turn's first model call
    await asyncio.wait_for(model.cancelled.wait(), EVENT_SECONDS)

    model = _Model([TextPart("partial")], error=ProviderUnavailable("overloaded"))
    early = _serving({"t5": model})
    early.begin(_request("t5"))
    adopted = await early.adopt(_request("t5", step_id="s"))
    assert adopted is not None
    model.release.set()
    received: list[ReplyPart] = []
    with pytest.raises(ProviderUnavailable, match="overloaded"):
        async for part in adopted[1].parts():
            received.append(part)
    assert received == [TextPart("partial")]


async def test_an_adopted_call_is_read_to_its_end_however_long_past_the_adoption_window() -> None:
    model = _Model([TextPart("slow"), FinishPart("end_of_turn")])
    early = _serving({"t6": model}, adopt_within=0.2)
    early.begin(_request("t6"))
    adopted = await early.adopt(_request("t6", step_id="s"))
    assert adopted is not None
    await asyncio.sleep(0.5)  # a model still thinking when the window for unadopted calls has passed
    model.release.set()
    assert [part async for part in adopted[1].parts()] == [TextPart("slow"), FinishPart("end_of_turn")]
    assert not model.cancelled.is_set()

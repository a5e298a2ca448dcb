"""The Responses dialect's figures: non-streamed and streamed responses, a function-tool round trip,
concurrent clients, and the openai SDK's own overhead."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

import httpx
from openai import AsyncOpenAI

from bench.benchmark.plan import Plan
from bench.benchmark.stack import FAST_MODEL, cpu_ms_per_turn, cpu_seconds
from bench.benchmark.turns import ThroughputResult, describe, repeat
from bench.common import (
    HttpStatusError,
    iter_sse,
    json_request,
    log,
)

# --- The Responses dialect ------------------------------------------------------------------------

RESPONSE_TOOL: dict[str, Any] = {
    "type": "function",
    "name": "lookup",
    "description": "Look up",
    "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
}


def expect_response(body: dict[str, Any], output_types: list[str]) -> dict[str, Any]:
    """A completed response whose output items are of the wanted types, in order."""
    if body.get("status") != "completed":
        raise RuntimeError(f"response {body.get('id')} is {body.get('status')}: {body.get('error')}")
    got = [item.get("type") for item in body.get("output") or []]
    if got != output_types:
        raise RuntimeError(f"response {body.get('id')}: output {got}, expected {output_types}")
    return body


async def create_response(client: httpx.AsyncClient, body: dict[str, Any], output_types: list[str]) -> dict[str, Any]:
    made: dict[str, Any] = await json_request(client, "POST", "/v1/responses", body)
    return expect_response(made, output_types)


async def non_streamed_response(client: httpx.AsyncClient) -> float:
    started = time.perf_counter()
    await create_response(client, {"model": FAST_MODEL, "input": "Say something short."}, ["message"])
    return time.perf_counter() - started


async def response_first_delta(client: httpx.AsyncClient, model: str = FAST_MODEL) -> float:
    """POST (stream) → the first `response.output_text.delta` read; the stream is then read to its end,
    which must be `response.completed`."""
    body = {"model": model, "input": "Say something short.", "stream": True}
    started = time.perf_counter()
    first_delta: float | None = None
    async with client.stream("POST", "/v1/responses", json=body) as response:
        if response.status_code != 200:
            raise HttpStatusError(response.status_code, (await response.aread()).decode())
        async for event in iter_sse(response):
            kind = event.data.get("type")
            if first_delta is None and kind == "response.output_text.delta":
                first_delta = time.perf_counter()
            if kind in ("response.completed", "response.failed", "response.incomplete", "error"):
                expect_response(event.data.get("response") or event.data, ["message"])
                if first_delta is None:
                    raise RuntimeError("the response completed without a response.output_text.delta")
                return first_delta - started
    raise RuntimeError("the response's stream ended without a terminal event")


async def tool_round_trip(client: httpx.AsyncClient) -> float:
    """A response that calls the function tool → the next one, by previous_response_id, carrying its output."""
    started = time.perf_counter()
    paused = await create_response(
        client, {"model": FAST_MODEL, "input": "Use the tool.", "tools": [RESPONSE_TOOL]}, ["function_call"]
    )
    output = {"type": "function_call_output", "call_id": paused["output"][0]["call_id"], "output": "42"}
    resume = {"model": FAST_MODEL, "previous_response_id": paused["id"], "input": [output], "tools": [RESPONSE_TOOL]}
    await create_response(client, resume, ["message"])
    return time.perf_counter() - started


async def sdk_non_streamed_response(client: AsyncOpenAI) -> float:
    """The non-streamed figure through the `openai` SDK: what a user of the SDK sees."""
    started = time.perf_counter()
    made = await client.responses.create(model=FAST_MODEL, input="Say something short.")
    expect_response(made.model_dump(mode="json"), ["message"])
    return time.perf_counter() - started


async def response_client(client: httpx.AsyncClient, count: int, seconds: float, result: ThroughputResult) -> None:
    """One client creating `count` non-streamed responses one after another."""
    for _ in range(count):
        try:
            result.durations.append(await asyncio.wait_for(non_streamed_response(client), seconds))
        except Exception as error:
            result.errors.append(describe(error))


async def measure_responses(
    client: httpx.AsyncClient, api_url: str, plan: Plan, pids: dict[str, int]
) -> dict[str, Any]:
    """The Responses dialect's figures (model latency 0), each with the CPU per response of each process."""
    timeout = plan.turn_timeout

    async def sequential(label: str, one: Callable[[], Awaitable[float]], each: str = "response") -> dict[str, Any]:
        log(f"responses: {label} x{plan.iterations}")
        before = cpu_seconds(pids)
        phase = await repeat(plan.iterations, one, timeout, f"responses: {label}")
        cpu = cpu_ms_per_turn(before, cpu_seconds(pids), len(phase.results))
        return {**phase.figure(phase.results), f"cpu_ms_per_{each}": cpu}

    log(f"responses: warm-up, {plan.warmup} of each kind")
    for one in (non_streamed_response, response_first_delta, tool_round_trip):
        await repeat(plan.warmup, partial(one, client), timeout, "responses: warm-up")
    non_streamed = await sequential("non-streamed", lambda: non_streamed_response(client))
    first_delta = await sequential("first text delta", lambda: response_first_delta(client))
    round_trip = await sequential("function-tool round trip", lambda: tool_round_trip(client), "round_trip")
    async with AsyncOpenAI(base_url=f"{api_url}/v1", api_key="unused", max_retries=0, timeout=timeout) as sdk:
        await repeat(plan.warmup, lambda: sdk_non_streamed_response(sdk), timeout, "responses: warm-up")
        via_sdk = await sequential("non-streamed, openai SDK", lambda: sdk_non_streamed_response(sdk))
    clients, each = plan.response_clients, plan.responses_per_client
    log(f"responses: {clients} concurrent clients x {each} non-streamed responses")
    result = ThroughputResult([], [], 0.0, cpu_before=cpu_seconds(pids))
    started = time.perf_counter()
    await asyncio.gather(*(response_client(client, each, timeout, result) for _ in range(clients)))
    result.elapsed = time.perf_counter() - started
    result.cpu_after = cpu_seconds(pids)
    return {
        "non_streamed_ms": non_streamed,
        "post_to_first_text_delta_ms": first_delta,
        "function_tool_round_trip_ms": round_trip,
        "non_streamed_openai_sdk_ms": via_sdk,
        "concurrent": {
            "clients": clients,
            "responses_per_client": each,
            **result.figures("responses_per_s", "response_ms", "cpu_ms_per_response"),
        },
    }

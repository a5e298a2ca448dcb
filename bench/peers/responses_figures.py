"""The Responses figures of one system, measured with the same client code whichever system it is.

Plain httpx over loopback, as bench/benchmark/responses.py does, with the model ids passed in (a peer may
name its models differently): non-streamed response p50, POST → first `response.output_text.delta` p50 with
the 0 ms model and with the 100 ms TTFT / 30 ms-per-token model, and N concurrent clients each creating M
non-streamed responses one after another (responses/s and errors). Each figure carries the CPU
milliseconds per response of the system's processes (`root` and its descendants).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx

from bench.benchmark.turns import ThroughputResult, describe, repeat
from bench.common import HttpStatusError, iter_sse, json_request, log
from bench.peers.cpu import tree_cpu_seconds, with_cpu_ms
from bench.peers.plan import PeerPlan

TERMINAL = ("response.completed", "response.failed", "response.incomplete", "error")


def _completed_message(body: dict[str, Any]) -> None:
    if body.get("status") != "completed":
        raise RuntimeError(f"response {body.get('id')} is {body.get('status')}: {body.get('error')}")
    kinds = [item.get("type") for item in body.get("output") or []]
    if kinds != ["message"]:
        raise RuntimeError(f"response {body.get('id')}: output {kinds}, expected ['message']")


async def non_streamed(client: httpx.AsyncClient, model: str) -> float:
    started = time.perf_counter()
    made = await json_request(client, "POST", "/v1/responses", {"model": model, "input": "Say something short."})
    _completed_message(made)
    return time.perf_counter() - started


async def first_delta(client: httpx.AsyncClient, model: str) -> float:
    """POST (stream) → the first `response.output_text.delta`; the stream is read to `response.completed`."""
    body = {"model": model, "input": "Say something short.", "stream": True}
    started = time.perf_counter()
    first: float | None = None
    async with client.stream("POST", "/v1/responses", json=body) as response:
        if response.status_code != 200:
            raise HttpStatusError(response.status_code, (await response.aread()).decode())
        async for event in iter_sse(response):
            kind = event.data.get("type")
            if first is None and kind == "response.output_text.delta":
                first = time.perf_counter()
            if kind in TERMINAL:
                _completed_message(event.data.get("response") or event.data)
                if first is None:
                    raise RuntimeError("the response completed without a response.output_text.delta")
                return first - started
    raise RuntimeError("the response's stream ended without a terminal event")


async def _one_client(
    client: httpx.AsyncClient, model: str, count: int, seconds: float, result: ThroughputResult
) -> None:
    for _ in range(count):
        try:
            result.durations.append(await asyncio.wait_for(non_streamed(client, model), seconds))
        except Exception as error:
            result.errors.append(describe(error))


async def measure(base_url: str, fast: str, slow: str, root: int, plan: PeerPlan) -> dict[str, Any]:
    limits = httpx.Limits(max_connections=200, max_keepalive_connections=200)
    timeout, seconds = httpx.Timeout(plan.timeout, connect=5.0), plan.timeout
    figures: dict[str, Any] = {}
    async with httpx.AsyncClient(base_url=base_url, timeout=timeout, limits=limits) as client:
        log(f"responses: warm-up x{plan.warmup}")
        await repeat(plan.warmup, lambda: non_streamed(client, fast), seconds, "responses: warm-up")
        await repeat(plan.warmup, lambda: first_delta(client, fast), seconds, "responses: warm-up")
        await repeat(plan.warmup, lambda: first_delta(client, slow), seconds, "responses: warm-up")
        sequential = {
            "non_streamed_ms": lambda: non_streamed(client, fast),
            "first_delta_ms": lambda: first_delta(client, fast),
            "first_delta_ttft100_ms": lambda: first_delta(client, slow),
        }
        for name, one in sequential.items():
            log(f"responses: {name} x{plan.iterations}")
            phase, cpu = await with_cpu_ms(
                root, lambda phase: len(phase.results), repeat(plan.iterations, one, seconds, name)
            )
            figures[name] = {**phase.figure(phase.results), "cpu_ms_per_response": cpu}
        clients, each = plan.clients, plan.responses_per_client
        log(f"responses: {clients} concurrent clients x {each}")
        result = ThroughputResult([], [], 0.0, cpu_before={"system": tree_cpu_seconds(root)})
        started = time.perf_counter()
        await asyncio.gather(*(_one_client(client, fast, each, seconds, result) for _ in range(clients)))
        result.elapsed = time.perf_counter() - started
        result.cpu_after = {"system": tree_cpu_seconds(root)}
    figures["concurrent"] = {
        "clients": clients,
        "each": each,
        **result.figures("per_s", "response_ms", "cpu_ms_per_response"),
    }
    return figures

"""The Responses WebSocket-mode figures of one system, measured with the same client code whichever system it is.

One JSON text frame per client event on `ws://…/v1/responses`, as the openai SDK's `responses.connect()` sends
them: sequential responses on one open socket (send `response.create` → `response.completed`) p50; the first
`response.output_text.delta` over an open socket beside the same system's HTTP first delta (100 ms TTFT model);
N sockets at once, each creating M responses one after another (responses/s and errors); and the steering
latency where the system steers: `response.steer` sent after the first delta of a long reply → the first delta
of the successor it starts (a system that refuses or ignores the steer reports none).
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import httpx
from websockets.asyncio.client import ClientConnection, connect

from bench.benchmark.turns import ThroughputResult, describe, repeat
from bench.peers.cpu import tree_cpu_seconds, with_cpu_ms
from bench.peers.plan import PeerPlan
from bench.peers.responses_figures import TERMINAL, first_delta

PROMPT = "Say something short."
LONG_PROMPT = "Tell me a story in 40 words."
STEER = "Stop that: say something short instead."


def _ws_url(base_url: str) -> str:
    return base_url.replace("http://", "ws://", 1).rstrip("/") + "/v1/responses"


async def _next_event(socket: ClientConnection) -> dict[str, Any]:
    event: dict[str, Any] = json.loads(await socket.recv())
    if event.get("type") == "error":
        raise RuntimeError(f"error event: {event.get('error') or event}")
    return event


async def _create(socket: ClientConnection, model: str, prompt: str = PROMPT) -> None:
    await socket.send(json.dumps({"type": "response.create", "model": model, "input": prompt}))


async def _until_terminal(socket: ClientConnection) -> dict[str, Any]:
    while True:
        event = await _next_event(socket)
        if event.get("type") in TERMINAL:
            response: dict[str, Any] = event.get("response") or {}
            if response.get("status") != "completed":
                raise RuntimeError(f"response {response.get('id')} ended {response.get('status')}")
            return response


async def one_response(socket: ClientConnection, model: str) -> float:
    started = time.perf_counter()
    await _create(socket, model)
    await _until_terminal(socket)
    return time.perf_counter() - started


async def socket_first_delta(socket: ClientConnection, model: str) -> float:
    """`response.create` → the first `response.output_text.delta`, the response then read to its end."""
    started = time.perf_counter()
    await _create(socket, model)
    first: float | None = None
    while True:
        event = await _next_event(socket)
        if first is None and event.get("type") == "response.output_text.delta":
            first = time.perf_counter()
        if event.get("type") in TERMINAL:
            if first is None:
                raise RuntimeError("the response ended without a response.output_text.delta")
            return first - started


async def steer_latency(socket: ClientConnection, model: str, seconds: float) -> float | None:
    """`response.steer` after the first delta of a long reply → the first delta of the successor it starts (a
    delta carries no response id: it is the successor's once its `response.created` came); None when the system
    refuses the steer or the reply ends without a successor."""
    await _create(socket, model, LONG_PROMPT)
    target: str | None = None
    steered: float | None = None
    successor = False
    while True:
        event = await asyncio.wait_for(_next_event(socket), seconds)
        kind = event.get("type")
        if kind == "response.created":
            made = event["response"]
            if target is None:
                target = made["id"]
            elif made.get("previous_response_id") == target:
                successor = True
            else:
                raise RuntimeError(f"response {made.get('id')} does not continue the steered {target}")
        elif kind == "response.output_text.delta" and successor and steered is not None:
            latency = time.perf_counter() - steered
            await _until_terminal(socket)
            return latency
        elif kind == "response.output_text.delta" and steered is None:
            await socket.send(json.dumps({"type": "response.steer", "previous_response_id": target, "input": STEER}))
            steered = time.perf_counter()
        elif kind == "response.steer.failed" or (kind in TERMINAL and (successor or steered is None)):
            return None


async def _one_socket(url: str, model: str, count: int, seconds: float, result: ThroughputResult) -> None:
    try:
        async with connect(url, max_size=None, open_timeout=seconds) as socket:
            for _ in range(count):
                try:
                    result.durations.append(await asyncio.wait_for(one_response(socket, model), seconds))
                except Exception as error:
                    result.errors.append(describe(error))
                    return
    except Exception as error:
        result.errors.append(describe(error))


async def measure(base_url: str, fast: str, slow: str, root: int, plan: PeerPlan) -> dict[str, Any]:
    url, seconds = _ws_url(base_url), plan.timeout
    figures: dict[str, Any] = {}
    async with connect(url, max_size=None, open_timeout=seconds) as socket:
        await repeat(plan.warmup, lambda: one_response(socket, fast), seconds, "websocket: warm-up")
        await repeat(plan.warmup, lambda: socket_first_delta(socket, slow), seconds, "websocket: warm-up")
        for name, one in (
            ("ws_sequential_ms", lambda: one_response(socket, fast)),
            ("ws_first_delta_ttft100_ms", lambda: socket_first_delta(socket, slow)),
        ):
            phase, cpu = await with_cpu_ms(
                root, lambda phase: len(phase.results), repeat(plan.iterations, one, seconds, name)
            )
            figures[name] = {**phase.figure(phase.results), "cpu_ms_per_response": cpu}
    async with httpx.AsyncClient(base_url=base_url, timeout=httpx.Timeout(seconds, connect=5.0)) as client:
        phase, _ = await with_cpu_ms(
            root,
            lambda phase: len(phase.results),
            repeat(plan.iterations, lambda: first_delta(client, slow), seconds, "http_first_delta_ttft100_ms"),
        )
        figures["http_first_delta_ttft100_ms"] = phase.figure(phase.results)
    sockets, each = plan.clients, plan.responses_per_client
    result = ThroughputResult([], [], 0.0, cpu_before={"system": tree_cpu_seconds(root)})
    started = time.perf_counter()
    await asyncio.gather(*(_one_socket(url, fast, each, seconds, result) for _ in range(sockets)))
    result.elapsed = time.perf_counter() - started
    result.cpu_after = {"system": tree_cpu_seconds(root)}
    figures["ws_concurrent"] = {
        "sockets": sockets,
        "each": each,
        **result.figures("per_s", "response_ms", "cpu_ms_per_response"),
    }
    latencies: list[float] = []
    async with connect(url, max_size=None, open_timeout=seconds) as socket:
        for _ in range(max(3, plan.iterations // 5)):
            try:
                latency = await steer_latency(socket, slow, seconds)
            except Exception as error:
                figures["steer_failed"] = describe(error)
                break
            if latency is None:
                break
            latencies.append(latency)
    if latencies:
        ordered = sorted(latencies)
        figures["steer_to_successor_first_delta_ms"] = {
            "n": len(ordered),
            "p50": round(ordered[len(ordered) // 2] * 1000, 1),
            "max": round(ordered[-1] * 1000, 1),
        }
    else:
        figures["steer_to_successor_first_delta_ms"] = None
    return figures

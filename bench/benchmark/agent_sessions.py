"""The Agents API (beta) figures, beside the Responses dialect's: a session turn's latency and its first text
delta (model latency 0, plain httpx), measured as the SDK's `sessions.stream` does it: open the session's
event stream, post `agent.session.input.message`, read to `agent.session.idle`."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx

from bench.benchmark.plan import Plan
from bench.benchmark.stack import FAST_MODEL
from bench.benchmark.turns import repeat
from bench.common import HttpStatusError, log, percentiles_ms

BETA = {"OpenAI-Beta": "agents=v1"}
INPUT = {
    "type": "agent.session.input.message",
    "input": [{"role": "user", "content": [{"type": "input_text", "text": "Say something short."}]}],
}


async def _events(response: httpx.Response) -> AsyncIterator[dict[str, Any]]:
    async for line in response.aiter_lines():
        if line.startswith("data: ") and line != "data: [DONE]":
            yield json.loads(line.removeprefix("data: "))


async def idle_session(client: httpx.AsyncClient) -> str:
    """A new session whose first turn has ended (not measured): each measured turn starts on an idle one."""
    body = {"environment": {"type": "none"}, "agent": {"model": FAST_MODEL}, "input": "Hello.", "stream": True}
    async with client.stream("POST", "/v1/agents/sessions", json=body, headers=BETA) as response:
        if response.status_code != 200:
            raise HttpStatusError(response.status_code, (await response.aread()).decode())
        async for event in _events(response):
            if event["type"] == "agent.session.created":
                session_id: str = event["session"]["id"]
            if event["type"] == "agent.session.idle":
                return session_id
    raise RuntimeError("the session's first turn did not end")


async def session_turn(client: httpx.AsyncClient) -> tuple[float, float]:
    """POST input.message → (the session idle again, the first output_text.delta), in seconds."""
    session_id = await idle_session(client)
    path = f"/v1/agents/sessions/{session_id}/events"
    async with client.stream("GET", path, headers=BETA) as response:
        if response.status_code != 200:
            raise HttpStatusError(response.status_code, (await response.aread()).decode())
        started = time.perf_counter()
        posted = await client.post(path, json={"events": [INPUT]}, headers=BETA)
        if posted.status_code != 202:
            raise HttpStatusError(posted.status_code, posted.text)
        first_delta: float | None = None
        async for event in _events(response):
            if first_delta is None and event["type"] == "agent.session.turn.output_text.delta":
                first_delta = time.perf_counter() - started
            if event["type"] == "agent.session.turn.failed":
                raise RuntimeError(f"turn failed: {event['turn'].get('error')}")
            if event["type"] == "agent.session.idle" and first_delta is not None:
                return time.perf_counter() - started, first_delta
    raise RuntimeError("the session's stream ended before its turn did")


async def measure_agent_sessions(client: httpx.AsyncClient, plan: Plan) -> dict[str, Any]:
    log(f"agent sessions: warm-up x{plan.warmup}")
    await repeat(plan.warmup, lambda: session_turn(client), plan.turn_timeout, "agent sessions: warm-up")
    log(f"agent sessions: session turn x{plan.iterations}")
    phase = await repeat(plan.iterations, lambda: session_turn(client), plan.turn_timeout, "agent sessions")
    return {
        "session_turn_ms": {**percentiles_ms([total for total, _ in phase.results]), "errors": len(phase.errors)},
        "post_to_first_text_delta_ms": percentiles_ms([delta for _, delta in phase.results]),
        "first_errors": phase.errors[:3],
    }

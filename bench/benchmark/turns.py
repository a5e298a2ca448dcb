"""llama-stack turns over HTTP: one turn's latency, throughput of many sessions, the first text delta,
and a turn's cost as its session grows."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import httpx

from bench.benchmark.plan import Plan
from bench.benchmark.stack import cpu_ms_per_turn, cpu_seconds
from bench.common import (
    HttpStatusError,
    ModelServer,
    create_session,
    event_type,
    is_final,
    is_text_delta,
    iter_sse,
    log,
    percentiles_ms,
    tool_responses_for,
    turn_path,
)

# --- One turn, over HTTP -----------------------------------------------------------------------


@dataclass
class StreamResult:
    final: dict[str, Any]
    first_text_at: float | None


async def stream_until_final(client: httpx.AsyncClient, url: str, body: dict[str, Any]) -> StreamResult:
    """POST and read the SSE answer up to its final event, noting when the first text delta came."""
    async with client.stream("POST", url, json=body) as response:
        if response.status_code != 200:
            raise HttpStatusError(response.status_code, (await response.aread()).decode())
        first_text_at: float | None = None
        async for event in iter_sse(response):
            if first_text_at is None and is_text_delta(event.data):
                first_text_at = event.received_at
            if is_final(event.data):
                return StreamResult(event.data, first_text_at)
    raise RuntimeError(f"the stream of {url} ended without a final event")


def expect_final(result: StreamResult, wanted: str) -> dict[str, Any]:
    """The turn carried by the final event, which must be of the wanted type."""
    if "error" in result.final:
        raise RuntimeError(f"turn failed: {result.final['error']}")
    if event_type(result.final) != wanted:
        raise RuntimeError(f"expected {wanted}, got {event_type(result.final)}")
    turn: dict[str, Any] = result.final["event"]["payload"]["turn"]
    return turn


GROWTH_WORDS = 50


def user_turn(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}], "stream": True}


async def simple_turn(client: httpx.AsyncClient, agent_id: str, session_id: str) -> float:
    started = time.perf_counter()
    result = await stream_until_final(client, turn_path(agent_id, session_id), user_turn("Say something short."))
    expect_final(result, "turn_complete")
    return time.perf_counter() - started


async def tool_turn(client: httpx.AsyncClient, agent_id: str, session_id: str) -> float:
    started = time.perf_counter()
    path = turn_path(agent_id, session_id)
    paused = expect_final(await stream_until_final(client, path, user_turn("Use the tool.")), "turn_awaiting_input")
    resume = {"tool_responses": tool_responses_for(paused), "stream": True}
    result = await stream_until_final(client, f"{path}/{paused['turn_id']}/resume", resume)
    expect_final(result, "turn_complete")
    return time.perf_counter() - started


async def long_answer_turn(client: httpx.AsyncClient, agent_id: str, session_id: str) -> float:
    """A streamed turn the model answers in GROWTH_WORDS words (bench/model_server.py's rule)."""
    started = time.perf_counter()
    result = await stream_until_final(
        client, turn_path(agent_id, session_id), user_turn(f"Answer in {GROWTH_WORDS} words.")
    )
    expect_final(result, "turn_complete")
    return time.perf_counter() - started


TurnRunner = Callable[[httpx.AsyncClient, str, str], Awaitable[float]]
T = TypeVar("T")
MAX_PHASE_ERRORS = 3


def describe(error: BaseException) -> str:
    return (type(error).__name__ + (f": {error}" if str(error) else ""))[:300]


@dataclass
class Phase(Generic[T]):
    results: list[T]
    errors: list[str]

    def figure(self, values: list[float]) -> dict[str, Any]:
        return {**percentiles_ms(values), "errors": len(self.errors), "first_errors": self.errors[:3]}


async def repeat(count: int, one: Callable[[], Awaitable[T]], seconds: float, label: str) -> Phase[T]:
    """`count` runs one after another, each bounded by `seconds`. Errors are counted, not fatal; after
    a few the phase stops, since a stack that hangs every turn would otherwise cost count x seconds.
    (A hung turn's SSE stream never times out by itself: the API sends keepalives.)"""
    phase: Phase[T] = Phase([], [])
    for _ in range(count):
        try:
            phase.results.append(await asyncio.wait_for(one(), seconds))
        except Exception as error:
            phase.errors.append(describe(error))
            log(f"{label}: {phase.errors[-1]}")
            if len(phase.errors) >= MAX_PHASE_ERRORS:
                log(f"{label}: {MAX_PHASE_ERRORS} errors, phase stopped")
                break
    return phase


async def in_fresh_session(client: httpx.AsyncClient, agent_id: str, run: TurnRunner, label: str) -> float:
    """A new session (not timed), then the timed turn: iterations do not share history."""
    session_id = await create_session(client, agent_id, label)
    return await run(client, agent_id, session_id)


# --- Throughput ----------------------------------------------------------------------------------


@dataclass
class ThroughputResult:
    durations: list[float]
    errors: list[str]
    elapsed: float
    cpu_before: dict[str, float] = field(default_factory=dict)
    cpu_after: dict[str, float] = field(default_factory=dict)
    """CPU seconds of each process around the phase: where the time goes on a CPU-bound box."""

    def figures(self, rate: str, durations: str, cpu: str) -> dict[str, Any]:
        """The phase's report, with the keys it names its rate, its durations and its CPU per item under."""
        done = len(self.durations)
        return {
            "completed": done,
            "errors": len(self.errors),
            "first_errors": self.errors[:3],
            "elapsed_s": round(self.elapsed, 2),
            rate: round(done / self.elapsed, 2),
            durations: percentiles_ms(self.durations),
            cpu: cpu_ms_per_turn(self.cpu_before, self.cpu_after, done),
        }


async def session_worker(
    client: httpx.AsyncClient, agent_id: str, turns: int, turn_seconds: float, result: ThroughputResult
) -> None:
    """One client: a session and `turns` client-tool turns in it, one after another."""
    try:
        session_id = await create_session(client, agent_id, "throughput")
    except Exception as error:
        result.errors.extend([f"session: {error!r}"] * turns)
        return
    for _ in range(turns):
        try:
            result.durations.append(await asyncio.wait_for(tool_turn(client, agent_id, session_id), turn_seconds))
        except Exception as error:
            result.errors.append(describe(error))


async def measure_throughput(
    client: httpx.AsyncClient, agent_id: str, plan: Plan, pids: dict[str, int]
) -> ThroughputResult:
    result = ThroughputResult([], [], 0.0, cpu_before=cpu_seconds(pids))
    started = time.perf_counter()
    turns = plan.turns_per_session
    workers = [session_worker(client, agent_id, turns, plan.turn_timeout, result) for _ in range(plan.sessions)]
    await asyncio.gather(*workers)
    result.elapsed = time.perf_counter() - started
    result.cpu_after = cpu_seconds(pids)
    return result


# --- First text delta ----------------------------------------------------------------------------


@dataclass
class DeltaTiming:
    relay: float
    """Model's first token sent → our first text delta received."""
    to_model: float
    """Our POST sent → the model server received the request."""
    post_to_delta: float
    """Our POST sent → our first text delta received: what a user waits for the first word."""


async def first_delta_timing(client: httpx.AsyncClient, agent_id: str, model: ModelServer) -> DeltaTiming:
    """One turn on the slow model; the marker in the message finds the model's record of it."""
    session_id = await create_session(client, agent_id, "first-delta")
    marker = f"probe-{uuid.uuid4().hex}"
    posted_at = time.monotonic()
    result = await stream_until_final(client, turn_path(agent_id, session_id), user_turn(f"Say hello. {marker}"))
    expect_final(result, "turn_complete")
    if result.first_text_at is None:
        raise RuntimeError("the turn completed without a step_progress text delta")
    records = (await client.get(f"{model.url}/bench/requests", params={"contains": marker})).json()["requests"]
    if not records or records[0]["first_token_at"] is None:
        raise RuntimeError(f"the model server has no first-token record for {marker}")
    first = records[0]  # a retried inference would add later records; the first is what was relayed first
    return DeltaTiming(
        result.first_text_at - first["first_token_at"],
        first["received_at"] - posted_at,
        result.first_text_at - posted_at,
    )


# --- A turn's cost as its session grows ----------------------------------------------------------


async def measure_growth(client: httpx.AsyncClient, agent_id: str, plan: Plan, pids: dict[str, int]) -> dict[str, Any]:
    """`plan.growth_turns` streamed turns in one session; the first and last `plan.growth_window`
    turns compared by latency p50 and CPU per turn (the steadier figure on a shared machine)."""
    session_id = await create_session(client, agent_id, "growth")
    window = plan.growth_window

    async def turns(count: int, label: str) -> tuple[Phase[float], dict[str, float]]:
        before = cpu_seconds(pids)
        phase = await repeat(count, lambda: long_answer_turn(client, agent_id, session_id), plan.turn_timeout, label)
        return phase, cpu_ms_per_turn(before, cpu_seconds(pids), len(phase.results))

    first, first_cpu = await turns(window, "growth: first turns")
    middle_count = max(0, plan.growth_turns - 2 * window)
    middle, _ = await turns(middle_count, "growth: middle turns")
    last, last_cpu = await turns(window, "growth: last turns")
    first_p50, last_p50 = percentiles_ms(first.results)["p50"], percentiles_ms(last.results)["p50"]
    errors = first.errors + middle.errors + last.errors
    return {
        "turns": len(first.results) + len(middle.results) + len(last.results),
        "words_per_answer": GROWTH_WORDS,
        "window": window,
        "first_ms": {**percentiles_ms(first.results), "cpu_ms_per_turn": first_cpu},
        "last_ms": {**percentiles_ms(last.results), "cpu_ms_per_turn": last_cpu},
        "last_over_first_p50": round(last_p50 / first_p50, 2) if first_p50 and last_p50 else None,
        "errors": len(errors),
        "first_errors": errors[:3],
    }

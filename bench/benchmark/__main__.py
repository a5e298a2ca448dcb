"""Latency and throughput of the running stack, over real HTTP on loopback; prints one JSON line.

    .venv/bin/python bench/benchmark.py                 # full run (--iterations 50)
    .venv/bin/python bench/benchmark.py --quick         # smoke run, well under a minute of measuring
    .venv/bin/python bench/benchmark.py --responses-only  # only the Responses dialect's figures

It starts everything itself: two bench/model_server.py processes (latency 0, and TTFT 100 ms +
30 ms per token) and `serve.py` (dev server with its SQLite file, the API running the turns; with
`--separate-worker`, a worker.py runs them) with a temporary DA_DATA_DIR and free ports; it stops
them all at the end (SIGINT to serve.py). Figures:

- simple streamed turn: POST turn (stream) → turn_complete, p50/p95;
- client-tool turn: create → turn_awaiting_input → resume (stream) → turn_complete, p50/p95;
- throughput: N sessions (20) concurrently each running M (10) client-tool turns in sequence;
- first text delta (model TTFT 100 ms, 30 ms/token): from our POST to our receipt of the first
  step_progress text delta, and from the model server's first token send to that receipt (all
  stamped with time.monotonic(), one clock for all processes here);
- a turn's cost as its session grows: 300 streamed turns in one session, each answered with 50
  words; p50 latency and CPU per turn of the first 20 turns against the last 20;
- Temporal's floor: a one-activity workflow run with the temporalio SDK on the same dev server;
  and Temporal's part of a turn's way to its model: an eager start with a turn's search attributes
  and summary → its first task → its activity entered (eagerly), which a turn cannot do without;
- the Responses dialect (`/v1/responses`, model latency 0, plain httpx): non-streamed response p50,
  POST → first `response.output_text.delta` p50 (the client reads the SSE), a function-tool round
  trip (a response with a function_call → `previous_response_id` + function_call_output →
  completed), N (20) concurrent clients each creating M (10) non-streamed responses in sequence,
  and the non-streamed figure once more through the `openai` SDK (its overhead on the client's
  side). `--responses-only` measures only these.

Each measured turn gets a fresh session (not timed), so session history does not grow across
iterations, except in the session-growth phase; in the throughput phase each simulated client keeps
its one session, as a real one would.
Progress goes to stderr, the JSON line to stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import signal
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any, Generic, TypeVar

import httpx
from common import (
    REPO_ROOT,
    HttpStatusError,
    ModelServer,
    create_agent,
    create_session,
    event_type,
    free_port,
    is_final,
    is_text_delta,
    iter_sse,
    json_request,
    log,
    models_env,
    percentiles_ms,
    runtime_revision,
    spawn,
    start_model_server,
    stop_process,
    tool_responses_for,
    turn_path,
    wait_for_http,
)
from openai import AsyncOpenAI
from temporalio import activity, workflow
from temporalio.client import Client
from temporalio.common import SearchAttributePair, TypedSearchAttributes
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import UnsandboxedWorkflowRunner, Worker

from workflows import search_attributes

FAST_MODEL = "bench"
SLOW_MODEL = "bench-ttft"
SLOW_TTFT_MS = 100.0
SLOW_TOKEN_MS = 30.0
REQUEST_TIMEOUT = httpx.Timeout(30.0, connect=5.0)


# --- Temporal's floor: the smallest useful workflow, run on the same dev server --------------


_floor_activity_entered: dict[str, float] = {}
"""perf_counter() at each floor activity's start, by workflow id."""


@activity.defn(name="bench_floor_echo")
async def floor_echo(value: str) -> str:
    _floor_activity_entered[activity.info().workflow_id] = time.perf_counter()
    return value


@workflow.defn(name="BenchFloor")
class FloorWorkflow:
    """One activity and nothing else: the least a turn (which needs at least one) could cost."""

    @workflow.run
    async def run(self, value: str) -> str:
        return await workflow.execute_activity(floor_echo, value, start_to_close_timeout=timedelta(seconds=10))


@dataclass
class TemporalFloor:
    one_activity: list[float]
    """Client → workflow task → activity → workflow task → result, end to end."""
    eager_start_to_activity: list[float]
    """An eager start as a turn's (its search attributes and summary) → the activity entered."""


def _turn_like_start() -> dict[str, Any]:
    """What TurnGateway adds to a turn's start (workflows/search_attributes.py), with ids of a turn's length."""
    ids = str(uuid.uuid4())
    attributes = [
        SearchAttributePair(search_attributes.AGENT_ID, ids),
        SearchAttributePair(search_attributes.SESSION_ID, ids),
        SearchAttributePair(search_attributes.TURN_STATUS, "running"),
        SearchAttributePair(search_attributes.TENANT_ID, "default"),
    ]
    return {
        "search_attributes": TypedSearchAttributes(attributes),
        "static_summary": "Say hello.",
        "static_details": f"**Agent:** `{ids}`  \n**Session:** `{ids}`  \n**Turn:** `{ids}`",
        "request_eager_start": True,
    }


def floor_worker(client: Client, queue: str) -> Worker:
    """The floor's workflow and activity on `queue`, in this process (so an eager start is honoured).
    Unsandboxed, so the figures are the server round trips and SDK, not sandbox set-up."""
    return Worker(
        client,
        task_queue=queue,
        workflows=[FloorWorkflow],
        activities=[floor_echo],
        workflow_runner=UnsandboxedWorkflowRunner(),
    )


async def eager_start_to_activity(client: Client, queue: str) -> float:
    """Seconds from an eager start as a turn's (its search attributes and summary) to its activity entered,
    with `floor_worker` running on `queue`."""
    workflow_id = f"{queue}-eager-{uuid.uuid4().hex[:8]}"
    started = time.perf_counter()
    handle = await client.start_workflow(FloorWorkflow.run, "x", id=workflow_id, task_queue=queue, **_turn_like_start())
    await handle.result()
    return _floor_activity_entered.pop(workflow_id) - started


async def measure_temporal_floor(address: str, iterations: int, warmup: int) -> TemporalFloor:
    """Both floors, sequentially, on one worker in this process."""
    client = await Client.connect(address, data_converter=pydantic_data_converter)
    queue = f"bench-floor-{uuid.uuid4().hex[:8]}"
    floor = TemporalFloor([], [])
    async with floor_worker(client, queue):
        for index in range(warmup + iterations):
            started = time.perf_counter()
            await client.execute_workflow(FloorWorkflow.run, "x", id=f"{queue}-{index}", task_queue=queue)
            if index >= warmup:
                floor.one_activity.append(time.perf_counter() - started)
        for index in range(warmup + iterations):
            took = await eager_start_to_activity(client, queue)
            if index >= warmup:
                floor.eager_start_to_activity.append(took)
    return floor


# --- The stack ---------------------------------------------------------------------------------


@dataclass
class EmbeddedStack:
    """serve.py (dev server, API with its worker or a separate one) and our two model servers, in a temp
    directory."""

    workdir: Path
    worker_in_api: bool = True
    """serve.py's default; False: a separate worker.py runs the turns."""
    checkout: Path = REPO_ROOT
    """Whose serve.py (and code) runs: another checkout of the project, for bench/paired_ab.py."""
    api_port: int = field(default_factory=free_port)
    temporal_port: int = field(default_factory=free_port)
    ui_port: int = field(default_factory=free_port)
    fast: ModelServer | None = None
    slow: ModelServer | None = None
    serve: Any = None
    start_attempts: int = 0

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.api_port}"

    @property
    def temporal_address(self) -> str:
        return f"127.0.0.1:{self.temporal_port}"

    def start(self) -> None:
        self.fast = start_model_server(0, 0, self.workdir / "model-fast.log")
        self.slow = start_model_server(SLOW_TTFT_MS, SLOW_TOKEN_MS, self.workdir / "model-slow.log")
        for attempt in (1, 2):
            try:
                self._start_serve(attempt)
                return
            except RuntimeError as error:
                # One visible retry with a fresh data dir: serve.py once failed here now and then
                # (worker and API racing to create the store's tables on a fresh SQLite file).
                tail = (self.workdir / f"serve-{attempt}.log").read_text(errors="replace").splitlines()
                causes = [line for line in tail if "Error" in line][-1:]
                log(f"serve.py attempt {attempt} failed: {error}; {causes}")
                if attempt == 2:
                    raise

    def _start_serve(self, attempt: int) -> None:
        assert self.fast is not None and self.slow is not None
        self.start_attempts = attempt
        if attempt > 1:
            self.api_port, self.temporal_port, self.ui_port = free_port(), free_port(), free_port()
        env = {
            "DA_DATA_DIR": str(self.workdir / f"data-{attempt}"),
            "DA_API_PORT": str(self.api_port),
            "DA_TEMPORAL_PORT": str(self.temporal_port),
            "DA_TEMPORAL_UI_PORT": str(self.ui_port),
            "DA_MODELS": models_env({FAST_MODEL: self.fast, SLOW_MODEL: self.slow}),
            "DA_WORKER_IN_API": "true" if self.worker_in_api else "false",
            "DA_RATE_LIMIT_PER_MINUTE": "0",  # measures the runtime, not the per-key limiter
        }
        log(f"starting serve.py: API {self.api_url}, Temporal {self.temporal_address} (logs in {self.workdir})")
        serve = [sys.executable, str(self.checkout / "serve.py")]
        self.serve = spawn(serve, self.workdir / f"serve-{attempt}.log", env, cwd=self.checkout)
        try:
            wait_for_http(f"{self.api_url}/v1/health", [self.serve], 120)
        except RuntimeError:
            stop_process(self.serve, signal.SIGINT, 40)
            raise

    def stop(self) -> None:
        if self.serve is not None:
            stop_process(self.serve, signal.SIGINT, 40)
        for server in (self.fast, self.slow):
            if server is not None:
                stop_process(server.process, signal.SIGTERM, 10)

    def pids(self) -> dict[str, int]:
        """Our processes by role: serve.py's children (found by parent pid), the fast model, us."""
        roles = {"api": "uvicorn", "worker": "worker.py", "temporal": "temporal"}
        found = {"bench_client": os.getpid()}
        if self.fast is not None:
            found["model"] = self.fast.process.pid
        for proc in Path("/proc").glob("[0-9]*"):
            try:
                if _parent_pid(int(proc.name)) != self.serve.pid:
                    continue
                command = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            except (OSError, ValueError):
                continue
            found.update({role: int(proc.name) for role, word in roles.items() if word in command})
        return found


def _stat_fields(pid: int) -> list[str]:
    """/proc/<pid>/stat after the command name (which may contain spaces); field 3 is first."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def _parent_pid(pid: int) -> int:
    return int(_stat_fields(pid)[1])


def cpu_seconds(pids: dict[str, int]) -> dict[str, float]:
    """User + system CPU time each process has used so far (Linux /proc; empty elsewhere)."""
    ticks = os.sysconf("SC_CLK_TCK")
    used: dict[str, float] = {}
    for role, pid in pids.items():
        try:
            fields = _stat_fields(pid)
        except OSError:
            continue
        used[role] = (int(fields[11]) + int(fields[12])) / ticks
    return used


def cpu_ms_per_turn(before: dict[str, float], after: dict[str, float], turns: int) -> dict[str, float]:
    """CPU milliseconds each process spent per turn between two readings of cpu_seconds().
    Steadier than latency on a shared machine: what to compare when trying a design."""
    return {role: round(1000 * (after[role] - before[role]) / max(1, turns), 1) for role in after if role in before}


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


async def response_first_delta(client: httpx.AsyncClient) -> float:
    """POST (stream) → the first `response.output_text.delta` read; the stream is then read to its end,
    which must be `response.completed`."""
    body = {"model": FAST_MODEL, "input": "Say something short.", "stream": True}
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
        await repeat(plan.warmup, lambda one=one: one(client), timeout, "responses: warm-up")
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


# --- Report ------------------------------------------------------------------------------------------


def target(actual: float | int | None, op: str, bound: float) -> dict[str, Any]:
    met = None if actual is None else (actual <= bound if op == "<=" else actual >= bound)
    return {"target": f"{op} {bound:g}", "actual": actual, "met": met}


def targets(report: dict[str, Any]) -> dict[str, Any]:
    """The targets of issue #15, for the embedded stack with model latency 0 (first delta of the llama-stack
    dialect: TTFT 100 ms), for the figures this run measured."""
    found: dict[str, Any] = {}
    if "throughput" in report:
        throughput = report["throughput"]
        found |= {
            "simple_streamed_p50_ms": target(report["simple_streamed_ms"]["p50"], "<=", 85),
            "client_tool_p50_ms": target(report["client_tool_turn_ms"]["p50"], "<=", 190),
            "tool_turns_per_s": target(throughput["tool_turns_per_s"], ">=", 10),
            "throughput_errors": target(throughput["errors"], "<=", 0),
            "post_to_first_text_delta_p50_ms": target(report["first_text_delta_ms"]["post_to_delta"]["p50"], "<=", 135),
            "session_growth_last_over_first_p50": target(report["session_growth"]["last_over_first_p50"], "<=", 1.3),
        }
    if "responses" in report:
        responses = report["responses"]
        found |= {
            "responses_non_streamed_p50_ms": target(responses["non_streamed_ms"]["p50"], "<=", 60),
            "responses_first_text_delta_p50_ms": target(responses["post_to_first_text_delta_ms"]["p50"], "<=", 40),
            "responses_per_s": target(responses["concurrent"]["responses_per_s"], ">=", 24),
            "responses_concurrent_errors": target(responses["concurrent"]["errors"], "<=", 0),
        }
    return found


@dataclass
class Plan:
    iterations: int
    warmup: int
    sessions: int
    turns_per_session: int
    turn_timeout: float
    growth_turns: int
    growth_window: int
    response_clients: int
    responses_per_client: int
    responses_only: bool


def plan_from(args: argparse.Namespace) -> Plan:
    if args.quick:
        growth = min(args.growth_turns, 40)
        return Plan(min(args.iterations, 5), 1, 4, 3, args.turn_timeout, growth, 10, 4, 3, args.responses_only)
    window = min(20, args.growth_turns // 2)
    return Plan(
        args.iterations,
        args.warmup,
        args.sessions,
        args.turns_per_session,
        args.turn_timeout,
        args.growth_turns,
        window,
        args.response_clients,
        args.responses_per_client,
        args.responses_only,
    )


async def measure(stack: EmbeddedStack, plan: Plan) -> dict[str, Any]:
    limits = httpx.Limits(max_connections=200, max_keepalive_connections=200)
    async with httpx.AsyncClient(base_url=stack.api_url, timeout=REQUEST_TIMEOUT, limits=limits) as client:
        report = {} if plan.responses_only else await measure_llama_stack(client, stack, plan)
        report["responses"] = await measure_responses(client, stack.api_url, plan, stack.pids())
    if not plan.responses_only:
        log(f"Temporal floors x{plan.iterations}")
        measuring = measure_temporal_floor(stack.temporal_address, plan.iterations, plan.warmup)
        floor = await asyncio.wait_for(measuring, 120)
        report["temporal_floor_one_activity_ms"] = percentiles_ms(floor.one_activity)
        report["temporal_eager_start_to_activity_ms"] = percentiles_ms(floor.eager_start_to_activity)
    return report


async def measure_llama_stack(client: httpx.AsyncClient, stack: EmbeddedStack, plan: Plan) -> dict[str, Any]:
    """The llama-stack dialect's figures."""
    assert stack.slow is not None
    agent_id = await create_agent(client, FAST_MODEL)
    slow_agent_id = await create_agent(client, SLOW_MODEL)
    slow, timeout = stack.slow, plan.turn_timeout

    def fresh(run: TurnRunner, label: str) -> Callable[[], Awaitable[float]]:
        return lambda: in_fresh_session(client, agent_id, run, label)

    def probe() -> Awaitable[DeltaTiming]:
        return first_delta_timing(client, slow_agent_id, slow)

    log(f"warm-up: {plan.warmup} simple, {plan.warmup} client-tool, 1 slow-model turn")
    await repeat(plan.warmup, fresh(simple_turn, "warmup"), timeout, "warm-up")
    await repeat(plan.warmup, fresh(tool_turn, "warmup"), timeout, "warm-up")
    await repeat(1, probe, timeout, "warm-up")
    pids = stack.pids()
    log(f"simple streamed turns x{plan.iterations}")
    cpu_before = cpu_seconds(pids)
    simple = await repeat(plan.iterations, fresh(simple_turn, "simple"), timeout, "simple")
    simple_cpu = cpu_ms_per_turn(cpu_before, cpu_seconds(pids), len(simple.results))
    log(f"client-tool turns x{plan.iterations}")
    cpu_before = cpu_seconds(pids)
    tool = await repeat(plan.iterations, fresh(tool_turn, "tool"), timeout, "client-tool")
    tool_cpu = cpu_ms_per_turn(cpu_before, cpu_seconds(pids), len(tool.results))
    log(f"throughput: {plan.sessions} sessions x {plan.turns_per_session} client-tool turns")
    throughput = await measure_throughput(client, agent_id, plan, pids)
    log(f"first text delta x{plan.iterations} (model TTFT {SLOW_TTFT_MS:g} ms, {SLOW_TOKEN_MS:g} ms/token)")
    deltas = await repeat(plan.iterations, probe, timeout, "first text delta")
    log(f"session growth: {plan.growth_turns} turns of {GROWTH_WORDS} words in one session")
    growth = await measure_growth(client, agent_id, plan, pids)
    return {
        "simple_streamed_ms": {**simple.figure(simple.results), "cpu_ms_per_turn": simple_cpu},
        "client_tool_turn_ms": {**tool.figure(tool.results), "cpu_ms_per_turn": tool_cpu},
        "throughput": {
            "sessions": plan.sessions,
            "turns_per_session": plan.turns_per_session,
            **throughput.figures("tool_turns_per_s", "turn_ms", "cpu_ms_per_tool_turn"),
        },
        "first_text_delta_ms": {
            **deltas.figure([d.relay for d in deltas.results]),
            "model_ttft_ms": SLOW_TTFT_MS,
            "model_token_ms": SLOW_TOKEN_MS,
            "post_to_model_request_ms": percentiles_ms([d.to_model for d in deltas.results]),
            "post_to_delta": percentiles_ms([d.post_to_delta for d in deltas.results]),
        },
        "session_growth": growth,
    }


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Benchmark the embedded durable-agents stack over HTTP.")
    parser.add_argument("--iterations", type=int, default=50, help="measured turns per sequential figure")
    parser.add_argument("--warmup", type=int, default=5, help="unmeasured turns of each kind first")
    parser.add_argument("--sessions", type=int, default=20, help="concurrent sessions in the throughput phase")
    parser.add_argument("--turns-per-session", type=int, default=10, help="client-tool turns per session there")
    parser.add_argument("--turn-timeout", type=float, default=60, help="a turn not done by then is an error")
    parser.add_argument("--growth-turns", type=int, default=300, help="turns in the one session of the growth phase")
    parser.add_argument("--response-clients", type=int, default=20, help="concurrent Responses clients")
    parser.add_argument(
        "--responses-per-client", type=int, default=10, help="non-streamed responses each of them creates in turn"
    )
    parser.add_argument("--responses-only", action="store_true", help="only the Responses dialect's figures")
    parser.add_argument(
        "--quick",
        action="store_true",
        help="smoke run: 5 iterations, 4 sessions x 3 turns, 40 growth turns, 4 clients x 3 responses",
    )
    parser.add_argument("--timeout", type=float, default=900, help="give up after this many seconds")
    parser.add_argument(
        "--separate-worker",
        action="store_true",
        help="a worker.py runs the turns (DA_WORKER_IN_API=false) instead of serve.py's default, the API process",
    )
    parser.add_argument("--keep", action="store_true", help="keep the temp directory (logs, SQLite files)")
    return parser.parse_args()


def main() -> int:
    args = parse_args()
    plan = plan_from(args)
    # A SIGTERM (a test runner's timeout, say) unwinds through the `finally` below, which stops
    # the processes we started; otherwise they would outlive us.
    signal.signal(signal.SIGTERM, lambda _signum, _frame: sys.exit(143))
    workdir = Path(tempfile.mkdtemp(prefix="da-bench-"))
    stack = EmbeddedStack(workdir, worker_in_api=not args.separate_worker)
    ok = False
    try:
        stack.start()
        load_before = os.getloadavg()[0]
        started = time.perf_counter()
        report = asyncio.run(asyncio.wait_for(measure(stack, plan), timeout=args.timeout))
        report = {
            "benchmark": "durable-agents",
            "quick": args.quick,
            "iterations": plan.iterations,
            "revision": runtime_revision(),
            "cpus": os.cpu_count(),
            "worker": "separate process" if args.separate_worker else "in the API process",
            "stack_start_attempts": stack.start_attempts,
            "loadavg_1m": {"before": round(load_before, 2), "after": round(os.getloadavg()[0], 2)},
            **report,
            "measure_seconds": round(time.perf_counter() - started, 1),
        }
        report["targets"] = targets(report)
        print(json.dumps(report, separators=(",", ":")), flush=True)
        ok = True
    finally:
        log("stopping the stack")
        stack.stop()
        if ok and not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
        else:
            log(f"logs and data kept in {workdir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Turns under fire: kill -9 the worker every few seconds and check that no turn is lost or doubled.

    .venv/bin/python bench/chaos.py                      # 100 turns, 8 sessions, a kill every 5 s
    .venv/bin/python bench/chaos.py --quick              # 10 turns, a kill every 1 s; for the test suite
    .venv/bin/python bench/chaos.py --apis 2 --workers 2 --kill any \
        --store-url postgresql+asyncpg://postgres@127.0.0.1/chaos   # at scale: any process may die
    .venv/bin/python bench/chaos.py --worker-in-api      # serve.py's default: the API runs the turns, and dies

It starts the pieces itself, not serve.py, because only the worker may die: a Temporal dev server
(serve.py's command line, with its SQLite file in a temp dir), bench/model_server.py, the API
(uvicorn) and `python worker.py` — or `--apis` APIs and `--workers` workers on `--store-url`.
Several sessions run a mix of client-tool and plain turns concurrently while a worker is SIGKILLed
`--kill-every` seconds after it starts polling, and restarted at once (on a busy 2-core box a
worker can take longer than that just to start); with `--kill any` the victims take turns among
the workers and the APIs. With `--worker-in-api` there is no worker.py: the APIs run the turns, as
serve.py's do by default, and they are what gets killed. With several APIs, each session's requests
go to one API and move to the next when it does not answer.

The client recovers as a careful real one would: a broken or stalled stream is resumed with
GET .../turn/{id}/events?after=<last id>; a create that failed is looked up in the session before
it is retried (one turn at a time per session makes that safe); a resume that failed is retried
only while the turn awaits input, and a 409 means an earlier resume got through. At the end every
session is read back and one JSON line is printed; the exit status is 1 if a turn was lost or a
tool request was answered twice.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from common import (
    HttpStatusError,
    ModelServer,
    SseEvent,
    create_agent,
    create_session,
    event_type,
    free_port,
    iter_sse,
    json_request,
    log,
    models_env,
    payload_of,
    percentiles_ms,
    runtime_revision,
    spawn,
    start_model_server,
    stop_process,
    tool_responses_for,
    turn_path,
    wait_for_http,
    wait_for_port,
)
from model_server import SENTENCE, TOOL_RESULT_TEXT
from temporalio.api.enums.v1 import TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.client import Client

import serve
from settings import load_settings

MODEL = "bench"
# Streams get a keepalive every 15 s, so 25 s of silence means the connection is gone.
STREAM_TIMEOUT = httpx.Timeout(connect=5.0, read=25.0, write=10.0, pool=None)
RETRY_PAUSE_SECONDS = 0.5
# After a 409 on resume: how long the turn may show nothing new before we try resuming again.
AFTER_409_WATCH_SECONDS = 10.0


# --- The stack, piece by piece -------------------------------------------------------------------


@dataclass
class ChaosStack:
    """Dev server, model server, API and a worker that can be killed and restarted."""

    workdir: Path
    model_ttft_ms: float
    model_token_ms: float
    api_count: int = 1
    worker_count: int = 1
    store_url: str | None = None
    """None: a SQLite file in the data dir."""
    worker_in_api: bool = False
    temporal_port: int = field(default_factory=free_port)
    ui_port: int = field(default_factory=free_port)
    model: ModelServer | None = None
    temporal: subprocess.Popen[bytes] | None = None
    api_ports: list[int] = field(default_factory=list)
    apis: list[subprocess.Popen[bytes]] = field(default_factory=list)
    workers: list[subprocess.Popen[bytes]] = field(default_factory=list)
    worker_started_at: list[float] = field(default_factory=list)
    worker_kills: int = 0
    api_kills: int = 0

    @property
    def api_urls(self) -> list[str]:
        return [f"http://127.0.0.1:{port}" for port in self.api_ports]

    @property
    def api_url(self) -> str:
        return self.api_urls[0]

    @property
    def temporal_address(self) -> str:
        return f"127.0.0.1:{self.temporal_port}"

    @property
    def task_queue(self) -> str:
        return load_settings(self.env()).task_queue

    def env(self) -> dict[str, str]:
        assert self.model is not None
        return {
            "DA_DATA_DIR": str(self.workdir / "data"),
            "DA_TEMPORAL_PORT": str(self.temporal_port),
            "DA_TEMPORAL_UI_PORT": str(self.ui_port),
            "TEMPORAL_ADDRESS": self.temporal_address,
            "DA_MODELS": models_env({MODEL: self.model}),
            "DA_RATE_LIMIT_PER_MINUTE": "0",  # measures the runtime, not the per-key limiter
            "DA_WORKER_IN_API": str(self.worker_in_api).lower(),
            **({"DA_STORE_URL": self.store_url} if self.store_url else {}),
        }

    def start(self) -> None:
        self.model = start_model_server(self.model_ttft_ms, self.model_token_ms, self.workdir / "model.log")
        settings = load_settings(self.env())
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        # serve.py's own command line, so the dev server is configured exactly as `make run`'s.
        command = [*serve.dev_server_command(settings), "--headless"]
        self.temporal = spawn(command, self.workdir / "temporal.log", self.env())
        wait_for_port(self.temporal_port, self.temporal, 60)
        self.workers = [self.spawn_worker(n) for n in range(self.worker_count)]
        self.worker_started_at = [time.monotonic()] * self.worker_count
        if self.workers:
            self.wait_for_worker(0)
        self.api_ports = [free_port() for _ in range(self.api_count)]
        self.apis = [self.spawn_api(n) for n in range(self.api_count)]
        for number in range(self.api_count):
            self.wait_for_api(number)
        log(f"stack up: APIs {self.api_urls}, Temporal 127.0.0.1:{self.temporal_port} (logs in {self.workdir})")

    def wait_for_worker(self, number: int, seconds: float = 60) -> None:
        """Until Temporal sees the worker poll. It has created the store's tables by then, so the API
        does not create them at the same moment (on a fresh SQLite file that race can fail one)."""

        async def wait() -> bool:
            client = await Client.connect(self.temporal_address)
            return await wait_until_polling(client, self.task_queue, self.workers[number].pid, seconds)

        if not asyncio.run(wait()):
            raise RuntimeError(f"the worker did not poll within {seconds:.0f}s; see {self.workdir / 'worker.log'}")

    def wait_for_api(self, number: int) -> None:
        assert self.temporal is not None
        wait_for_http(f"{self.api_urls[number]}/v1/health", [self.apis[number], self.temporal], 90)

    def spawn_worker(self, number: int) -> subprocess.Popen[bytes]:
        return spawn([sys.executable, "worker.py"], self.workdir / f"worker{number}.log", self.env())

    def spawn_api(self, number: int) -> subprocess.Popen[bytes]:
        port = str(self.api_ports[number])
        uvicorn = [sys.executable, "-m", "uvicorn", "api.app:app", "--host", "127.0.0.1", "--port", port]
        return spawn(uvicorn, self.workdir / f"api{number}.log", self.env())

    def kill_and_restart_worker(self, number: int) -> None:
        """SIGKILL: no graceful shutdown, in-flight activities and workflow tasks just vanish."""
        self.workers[number].send_signal(signal.SIGKILL)
        self.workers[number].wait(timeout=10)
        self.worker_kills += 1
        self.worker_started_at[number] = time.monotonic()
        self.workers[number] = self.spawn_worker(number)

    def kill_and_restart_api(self, number: int) -> None:
        """SIGKILL mid-request: open streams break, a create may be cut between its two steps."""
        self.apis[number].send_signal(signal.SIGKILL)
        self.apis[number].wait(timeout=10)
        self.api_kills += 1
        self.apis[number] = self.spawn_api(number)

    def stop(self) -> None:
        for process, signum in (
            *((api, signal.SIGTERM) for api in self.apis),
            *((worker, signal.SIGINT) for worker in self.workers),
            (self.temporal, signal.SIGTERM),
        ):
            if process is not None:
                stop_process(process, signum, 20)
        if self.model is not None:
            stop_process(self.model.process, signal.SIGTERM, 10)


async def poller_pids(client: Client, task_queue: str) -> set[int]:
    """Pids of the workers Temporal has seen polling the queue; the SDK's default identity is pid@host."""
    request = DescribeTaskQueueRequest(
        namespace=client.namespace,
        task_queue=TaskQueue(name=task_queue),
        task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
    )
    identities = [poller.identity for poller in (await client.workflow_service.describe_task_queue(request)).pollers]
    return {int(head) for head, _, _ in (i.partition("@") for i in identities) if head.isdigit()}


async def wait_until_polling(
    client: Client, task_queue: str, pid: int, seconds: float, done: asyncio.Event | None = None
) -> bool:
    """Until the worker with this pid polls (False if it has not after `seconds`, or we are done)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and not (done and done.is_set()):
        if pid in await poller_pids(client, task_queue):
            return True
        await asyncio.sleep(0.1)
    return False


async def wait_until_healthy(url: str, seconds: float, done: asyncio.Event) -> bool:
    """Until the API answers its health check (False if it has not after `seconds`, or we are done)."""
    deadline = time.monotonic() + seconds
    async with httpx.AsyncClient(timeout=2) as client:
        while time.monotonic() < deadline and not done.is_set():
            try:
                if (await client.get(f"{url}/v1/health")).status_code == 200:
                    return True
            except httpx.HTTPError:
                pass
            await asyncio.sleep(0.1)
    return False


@dataclass
class Killer:
    """Kills a process `every` seconds after it is ready, then restarts it: the workers in turn (each
    once it polls, so each gets to do some work: a busy 2-core box can take longer than a short
    interval just to start one), or with `anything` the workers and the APIs (once healthy) in turn."""

    stack: ChaosStack
    client: Client
    task_queue: str
    every: float
    max_kills: int
    anything: bool = False
    ready_seconds: list[float] = field(default_factory=list)
    """For each worker started: how long from spawn until Temporal saw it poll."""

    def _victims(self) -> list[tuple[str, int]]:
        workers = [("worker", n) for n in range(len(self.stack.workers))]
        apis = [("api", n) for n in range(len(self.stack.apis))] if self.anything else []
        return [victim for pair in zip(workers, apis, strict=False) for victim in pair] + (
            workers[len(apis) :] + apis[len(workers) :]
        )

    async def run(self, done: asyncio.Event) -> None:
        stack = self.stack
        victims = self._victims()
        kills = 0
        while not done.is_set() and (self.max_kills <= 0 or kills < self.max_kills):
            kind, number = victims[kills % len(victims)]
            if kind == "worker":
                pid = stack.workers[number].pid
                if await wait_until_polling(self.client, self.task_queue, pid, 60, done):
                    self.ready_seconds.append(time.monotonic() - stack.worker_started_at[number])
                elif not done.is_set():
                    log(f"worker {pid} did not poll within 60 s; killing it anyway")
            else:  # every API up first: killing one while another restarts would leave clients none
                for url in stack.api_urls:
                    if not await wait_until_healthy(url, 60, done) and not done.is_set():
                        log(f"API {url} did not answer within 60 s; killing anyway")
            try:
                await asyncio.wait_for(done.wait(), timeout=self.every)
            except TimeoutError:
                restart = stack.kill_and_restart_worker if kind == "worker" else stack.kill_and_restart_api
                await asyncio.to_thread(restart, number)
                kills += 1
                log(f"{kind} {number} killed and restarted ({kills})")


# --- One turn, followed to its end whatever happens ---------------------------------------------


@dataclass
class TurnRecord:
    """What the client asked for and saw of one turn."""

    session_id: str
    kind: str
    """"tool" (a client-tool call, then a resume) or "plain"."""
    text: str
    idempotency_key: str = field(default_factory=lambda: uuid.uuid4().hex)
    turn_id: str | None = None
    outcome: str = "lost"
    seconds: float = 0.0
    last_event_id: int = 0
    duplicate_event_ids: int = 0
    pauses_seen: set[int] = field(default_factory=set)
    text_by_step: dict[str, str] = field(default_factory=dict)
    tool_call_deltas: Counter[str] = field(default_factory=Counter)
    recoveries: Counter[str] = field(default_factory=Counter)
    notes: list[str] = field(default_factory=list)

    def observe(self, event_id: int | None, data: dict[str, Any]) -> None:
        """Everything checked later is noted here: event ids, the turn id, deltas per step."""
        if event_id:
            if event_id <= self.last_event_id:
                self.duplicate_event_ids += 1
            self.last_event_id = max(self.last_event_id, event_id)
        payload = payload_of(data)
        turn = payload.get("turn") or (payload.get("step_details") or {})
        self.turn_id = self.turn_id or turn.get("turn_id")
        if payload.get("event_type") == "turn_awaiting_input" and event_id:
            self.pauses_seen.add(event_id)
        if payload.get("event_type") == "step_progress":
            delta, step_id = payload.get("delta", {}), payload.get("step_id", "")
            if delta.get("type") == "text":
                self.text_by_step[step_id] = self.text_by_step.get(step_id, "") + delta.get("text", "")
            elif delta.get("type") == "tool_call":
                self.tool_call_deltas[step_id] += 1

    def note(self, what: str, detail: str) -> None:
        self.recoveries[what] += 1
        if len(self.notes) < 5:
            self.notes.append(f"{what}: {detail[:200]}")


@dataclass
class Progress:
    """Turns finished so far, logged every tenth of the run so a long run shows it is alive."""

    total: int
    finished: int = 0

    def advance(self) -> None:
        self.finished += 1
        if self.finished % max(1, self.total // 10) == 0 or self.finished == self.total:
            log(f"{self.finished}/{self.total} turns finished")


@dataclass
class SessionContext:
    clients: list[httpx.AsyncClient]
    """One per API; the session talks to one at a time and moves on when it does not answer."""
    agent_id: str
    session_id: str
    rng: random.Random
    cut_fraction: float
    progress: Progress
    known_turns: set[str] = field(default_factory=set)
    api: int = 0

    @property
    def client(self) -> httpx.AsyncClient:
        return self.clients[self.api % len(self.clients)]

    def next_api(self) -> None:
        """The API did not answer (killed, restarting): send what follows to the next one."""
        self.api += 1

    @property
    def turns_url(self) -> str:
        return turn_path(self.agent_id, self.session_id)

    def plan_cut(self) -> int | None:
        """Whether to hang up on the next stream ourselves, and after how many events (0: at once).

        Only the worker is killed, so the API's streams rarely break on their own; cutting some
        exercises what a client must do when they do: find the turn, reconnect with ?after=.
        """
        return self.rng.randint(0, 3) if self.rng.random() < self.cut_fraction else None


async def follow(
    ctx: SessionContext,
    record: TurnRecord,
    method: str,
    url: str,
    body: Any = None,
    headers: dict[str, str] | None = None,
) -> dict[str, Any] | None:
    """Read a turn's SSE answer; its final event, or None if the stream broke or went silent.

    Non-200 answers raise HttpStatusError for the caller to judge.
    """
    cut_after = ctx.plan_cut()
    try:
        async with ctx.client.stream(method, url, json=body, headers=headers, timeout=STREAM_TIMEOUT) as response:
            if response.status_code != 200:
                raise HttpStatusError(response.status_code, (await response.aread()).decode(errors="replace"))
            seen = 0
            async for event in _cut(iter_sse(response), cut_after):
                record.observe(event.event_id, event.data)
                if "error" in event.data or event_type(event.data) in ("turn_complete", "turn_awaiting_input"):
                    return event.data
                seen += 1
            if cut_after is not None and seen == cut_after:
                record.note("stream_cut_by_client", f"after {seen} events")
                return None
    except httpx.HTTPError as error:
        record.note("stream_broken", repr(error))
        if isinstance(error, httpx.TransportError):
            ctx.next_api()
        return None
    record.note("stream_ended_early", url)
    return None


async def _cut(events: AsyncIterator[SseEvent], after: int | None) -> AsyncIterator[SseEvent]:
    """The events, stopping after `after` of them when a cut is planned."""
    if after == 0:
        return
    count = 0
    async for event in events:
        yield event
        count += 1
        if after is not None and count >= after:
            return


async def stored_turn(ctx: SessionContext, turn_id: str) -> dict[str, Any] | None:
    try:
        turn: dict[str, Any] = await json_request(ctx.client, "GET", f"{ctx.turns_url}/{turn_id}")
    except (HttpStatusError, httpx.HTTPError):
        return None
    return turn


async def find_new_turn(ctx: SessionContext) -> str | None:
    """The session's turn we have not seen yet: ours, since a session runs one turn at a time.

    Raises when the session cannot be read: only a positive "no new turn" may lead to a new create.
    """
    session = await json_request(ctx.client, "GET", f"/v1/agents/{ctx.agent_id}/session/{ctx.session_id}")
    new = [t["turn_id"] for t in session.get("turns", []) if t["turn_id"] not in ctx.known_turns]
    return new[-1] if new else None


async def create(ctx: SessionContext, record: TurnRecord) -> dict[str, Any] | None:
    """Start the turn. The Idempotency-Key makes a repeated create answer with the first one's turn."""
    body = {"messages": [{"role": "user", "content": record.text}], "stream": True}
    headers = {"Idempotency-Key": record.idempotency_key}
    try:
        return await follow(ctx, record, "POST", ctx.turns_url, body, headers)
    except HttpStatusError as error:
        if error.status != 409 and error.status < 500:
            raise
        record.note(f"create_http_{error.status}", str(error))
        if error.status >= 500:
            ctx.next_api()
        return None


async def resume(
    ctx: SessionContext, record: TurnRecord, paused: dict[str, Any], deadline: float
) -> dict[str, Any] | None:
    """Answer the pending calls; the final event that follows, or None for the caller to follow the events.

    Without an answer we cannot know whether the responses got through, so we retry while the turn
    looks paused; if they did, the workflow refuses the repeat with a 409. A 409 is not proof,
    though: a resume that reaches a workflow replaying after a worker crash can be refused while the
    turn then waits for input (see the report), and the stored status says awaiting_input in both
    cases until the next save. So after a 409 we watch the turn's events for a while: if nothing
    follows the pause and it still looks paused, we resume again. A later resume accepted after a
    409 is counted as `resume_accepted_after_409`: that 409 was wrong.
    """
    url = f"{ctx.turns_url}/{paused['turn_id']}/resume"
    body = {"tool_responses": tool_responses_for(paused, "42"), "stream": True}
    refused = False
    while time.monotonic() < deadline:
        try:
            final = await follow(ctx, record, "POST", url, body)
            if refused:
                record.note("resume_accepted_after_409", "a resume refused with 409 had not got through")
            if final is not None:
                return final
        except HttpStatusError as error:
            if error.status != 409 and error.status < 500:
                raise
            record.note(f"resume_http_{error.status}", str(error))
            if error.status >= 500:
                ctx.next_api()
            if error.status == 409:
                refused = True
                final = await watch_events(ctx, record, paused["turn_id"], AFTER_409_WATCH_SECONDS)
                if final is not None:
                    return final
        await asyncio.sleep(RETRY_PAUSE_SECONDS)
        turn = await stored_turn(ctx, paused["turn_id"])
        if turn is not None and turn.get("status") != "awaiting_input":
            return None
        record.note("resume_retry", f"turn is {turn and turn.get('status')}")
    return None


async def watch_events(ctx: SessionContext, record: TurnRecord, turn_id: str, seconds: float) -> dict[str, Any] | None:
    """Follow the turn's events after the last one seen, for at most `seconds`."""
    url = f"{ctx.turns_url}/{turn_id}/events?after={record.last_event_id}"
    try:
        return await asyncio.wait_for(follow(ctx, record, "GET", url), seconds)
    except TimeoutError:
        return None


async def recover(ctx: SessionContext, record: TurnRecord) -> dict[str, Any] | None:
    """No final event in hand: find the turn if we lack its id (or create it again), then reconnect."""
    await asyncio.sleep(RETRY_PAUSE_SECONDS)
    if record.turn_id is None:
        try:
            record.turn_id = await find_new_turn(ctx)
        except (HttpStatusError, httpx.HTTPError) as error:
            record.note("session_read_failed", repr(error))
            ctx.next_api()
            return None
        if record.turn_id is None:
            record.note("create_retry", "no new turn in the session")
            return await create(ctx, record)
        record.note("turn_found_in_session", record.turn_id)
        ctx.known_turns.add(record.turn_id)
    record.note("reconnect", f"after={record.last_event_id}")
    url = f"{ctx.turns_url}/{record.turn_id}/events"
    return await follow(ctx, record, "GET", f"{url}?after={record.last_event_id}")


def final_is_spurious_error(final: dict[str, Any]) -> bool:
    """The API's own 'workflow ended without finishing' has no event id and may be a blip; re-check."""
    return "error" in final and "ended without finishing" in str(final["error"].get("message", ""))


async def run_turn(ctx: SessionContext, record: TurnRecord, deadline_seconds: float) -> None:
    """Drive one turn to completed or failed; leave it 'lost' if the deadline passes first."""
    started = time.monotonic()
    deadline = started + deadline_seconds
    final = await create(ctx, record)
    while time.monotonic() < deadline:
        if record.turn_id:
            ctx.known_turns.add(record.turn_id)
        if final is None:
            final = await recover(ctx, record)
        elif "error" in final:
            turn = await stored_turn(ctx, record.turn_id) if record.turn_id else None
            if final_is_spurious_error(final) and turn is not None and turn.get("status") != "failed":
                record.note("spurious_stream_error", str(final["error"]))
                final = None
                continue
            record.outcome, record.notes = "failed", [*record.notes, str(final["error"])[:200]]
            break
        elif event_type(final) == "turn_awaiting_input":
            final = await resume(ctx, record, final["event"]["payload"]["turn"], deadline)
        else:
            record.outcome = "completed"
            break
    record.seconds = time.monotonic() - started


async def run_session(ctx: SessionContext, records: list[TurnRecord], deadline_seconds: float) -> SessionContext:
    """The session's turns in order. After a lost turn the session stays busy (409 to every new
    turn), so its remaining turns are skipped rather than counted as lost too."""
    for index, record in enumerate(records):
        try:
            await asyncio.wait_for(run_turn(ctx, record, deadline_seconds), timeout=deadline_seconds + 30)
        except Exception as error:  # a 4xx we did not expect, or a hang past the deadline
            record.outcome = "lost" if isinstance(error, TimeoutError) else "failed"
            record.notes.append(f"{type(error).__name__}: {error}"[:300])
        if record.outcome != "completed":
            log(f"turn {record.turn_id} ({record.kind}) {record.outcome}: {record.notes[-1:]}")
        ctx.progress.advance()
        if record.outcome == "lost":
            for skipped in records[index + 1 :]:
                skipped.outcome = "skipped"
                ctx.progress.advance()
            break
    return ctx


# --- The workload and the read-back --------------------------------------------------------------


def plan_turns(session_ids: list[str], turns: int) -> list[list[TurnRecord]]:
    """Turns dealt round-robin to sessions; tool and plain alternate within each session."""
    per_session: list[list[TurnRecord]] = [[] for _ in session_ids]
    for index in range(turns):
        slot = index % len(session_ids)
        own = len(per_session[slot])
        kind = "tool" if (own + slot) % 2 == 0 else "plain"
        text = f"Please use the tool, request {index}." if kind == "tool" else f"Say something, request {index}."
        per_session[slot].append(TurnRecord(session_ids[slot], kind, text))
    return per_session


def check_turn(
    record: TurnRecord, stored: dict[str, Any] | None, answered: Counter[str], samples: list[str]
) -> Counter[str]:
    """Compare one turn as stored with what was expected and what the client saw."""
    found: Counter[str] = Counter()
    if stored is None:
        found["missing_in_store"] += 1
        return found
    steps = stored.get("steps", [])
    executions = [s for s in steps if s["step_type"] == "tool_execution"]
    inferences = [s for s in steps if s["step_type"] == "inference"]
    expected_executions = 1 if record.kind == "tool" else 0
    found["extra_tool_executions"] += max(0, len(executions) - expected_executions)
    for step in executions:
        answered.update(r["call_id"] for r in step.get("tool_responses", []))
    if record.outcome == "completed" and len(inferences) != expected_executions + 1:
        found["unexpected_inference_steps"] += 1
    expected_text = TOOL_RESULT_TEXT if record.kind == "tool" else SENTENCE
    if record.outcome == "completed" and ((stored.get("output_message") or {}).get("content")) != expected_text:
        found["unexpected_output"] += 1
    for step in inferences:
        seen = record.text_by_step.get(step["step_id"])
        stored_text = step["model_response"]["content"]
        if seen is not None and seen != stored_text:
            found["stream_text_mismatches"] += 1
            if len(samples) < 3:
                samples.append(f"turn {record.turn_id}: streamed {seen!r}, stored {stored_text!r}")
        found["repeated_tool_call_deltas"] += max(0, record.tool_call_deltas[step["step_id"]] - 1)
    found["duplicate_event_ids"] += record.duplicate_event_ids
    found["extra_pauses_seen"] += max(0, len(record.pauses_seen) - expected_executions)
    if record.outcome == "lost" and stored.get("status") == "completed":
        found["completed_after_deadline"] += 1
    return found


async def read_back(
    client: httpx.AsyncClient, contexts: list[SessionContext], records: list[TurnRecord]
) -> dict[str, Any]:
    """Every session as stored, checked turn by turn against what the client asked for and saw."""
    stored: dict[str, dict[str, Any]] = {}
    for ctx in contexts:
        session = await json_request(client, "GET", f"/v1/agents/{ctx.agent_id}/session/{ctx.session_id}")
        stored.update({turn["turn_id"]: turn for turn in session.get("turns", [])})
    answered: Counter[str] = Counter()
    checks: Counter[str] = Counter()
    samples: list[str] = []
    for record in records:
        if record.outcome != "skipped":
            checks.update(check_turn(record, stored.get(record.turn_id or ""), answered, samples))
    duplicated_calls = sum(count - 1 for count in answered.values() if count > 1)
    ours = {r.turn_id for r in records}
    checks["unexpected_turns"] = sum(1 for turn_id in stored if turn_id not in ours)
    return {
        "duplicated_tool_requests": checks["extra_tool_executions"] + duplicated_calls,
        "duplicated_call_ids": duplicated_calls,
        "checks": dict(sorted(checks.items())),
        "mismatch_samples": samples,
    }


async def workload(stack: ChaosStack, args: argparse.Namespace) -> dict[str, Any]:
    limits = httpx.Limits(max_connections=100, max_keepalive_connections=100)
    others = [httpx.AsyncClient(base_url=url, timeout=30, limits=limits) for url in stack.api_urls[1:]]
    async with httpx.AsyncClient(base_url=stack.api_url, timeout=30, limits=limits) as client:
        clients = [client, *others]
        agent_id = await create_agent(client, MODEL)
        session_ids = [await create_session(client, agent_id, f"chaos-{i}") for i in range(args.sessions)]
        plans = plan_turns(session_ids, args.turns)
        done = asyncio.Event()
        killer = Killer(
            stack,
            await Client.connect(stack.temporal_address),
            stack.task_queue,
            args.kill_every,
            args.max_kills,
            anything=args.kill != "worker",
        )
        killing = asyncio.create_task(killer.run(done))
        victims = {"worker": "a worker", "any": "a worker or an API", "api": "an API (running its turns)"}[args.kill]
        log(f"{args.turns} turns over {args.sessions} sessions; {victims} killed every {args.kill_every:g} s")
        started = time.monotonic()
        try:
            progress = Progress(args.turns)
            contexts = [
                SessionContext(
                    clients, agent_id, session_id, random.Random(args.seed + i), args.cut_streams, progress, api=i
                )
                for i, session_id in enumerate(session_ids)
            ]
            runs = [
                run_session(ctx, plan, args.turn_deadline) for ctx, plan in zip(contexts, plans, strict=True) if plan
            ]
            await asyncio.gather(*runs)
        finally:
            done.set()
            await killing
        elapsed = time.monotonic() - started
        records = [record for plan in plans for record in plan]
        for number in range(len(stack.apis)):  # one may have been restarted a moment ago
            await asyncio.to_thread(stack.wait_for_api, number)
        log("reading every session back")
        checked = await read_back(client, contexts, records)
        for other in others:
            await other.aclose()
    return summarise(records, checked, stack, args, elapsed) | {
        "worker_start_to_poll_ms": percentiles_ms(killer.ready_seconds)
    }


def summarise(
    records: list[TurnRecord], checked: dict[str, Any], stack: ChaosStack, args: argparse.Namespace, elapsed: float
) -> dict[str, Any]:
    outcomes = Counter(record.outcome for record in records)
    recoveries: Counter[str] = Counter()
    for record in records:
        recoveries.update(record.recoveries)
    problems = [
        f"{r.kind} turn {r.turn_id}: {r.outcome}: {r.notes}" for r in records if r.outcome in ("lost", "failed")
    ]
    wrong_409s = [f"turn {r.turn_id}: {r.notes}" for r in records if r.recoveries["resume_accepted_after_409"]]
    return {
        "revision": runtime_revision(),
        "started": len(records) - outcomes["skipped"],
        "completed": outcomes["completed"],
        "lost": outcomes["lost"],
        "duplicated_tool_requests": checked["duplicated_tool_requests"],
        "failed": outcomes["failed"],
        "worker_kills": stack.worker_kills,
        "api_kills": stack.api_kills,
        "apis": len(stack.apis),
        "workers": len(stack.workers),
        "skipped_after_loss": outcomes["skipped"],
        "elapsed_seconds": round(elapsed, 1),
        "tool_turns": sum(1 for r in records if r.kind == "tool"),
        "plain_turns": sum(1 for r in records if r.kind == "plain"),
        "sessions": args.sessions,
        "kill_every_seconds": args.kill_every,
        "cut_streams": args.cut_streams,
        "turn_deadline_seconds": args.turn_deadline,
        "turn_ms": percentiles_ms([r.seconds for r in records]),
        "recoveries": dict(sorted(recoveries.items())),
        "checks": checked["checks"],
        "stream_mismatch_samples": checked["mismatch_samples"],
        "problems": problems[:10],
        "resume_409_then_accepted_samples": wrong_409s[:3],
    }


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Kill the worker repeatedly while turns run; count lost turns.")
    parser.add_argument("--turns", type=int, default=100)
    parser.add_argument("--sessions", type=int, default=8, help="sessions running turns concurrently")
    parser.add_argument("--kill-every", type=float, default=5.0, help="seconds a worker lives once it polls")
    parser.add_argument("--max-kills", type=int, default=0, help="stop killing after this many (0: never)")
    parser.add_argument("--turn-deadline", type=float, default=150.0, help="a turn not done by then is lost")
    parser.add_argument("--model-ttft-ms", type=float, default=20.0)
    parser.add_argument("--model-token-ms", type=float, default=20.0)
    parser.add_argument("--cut-streams", type=float, default=0.1, help="fraction of streams we hang up on ourselves")
    parser.add_argument("--seed", type=int, default=1, help="seeds the choice of streams to cut")
    parser.add_argument("--apis", type=int, default=1, help="API processes; sessions are spread across them")
    parser.add_argument("--workers", type=int, default=1, help="worker processes")
    parser.add_argument("--store-url", help="the store (e.g. PostgreSQL); default: a SQLite file in the temp dir")
    parser.add_argument("--kill", choices=("worker", "any"), default="worker", help="any: workers and APIs in turn")
    parser.add_argument("--quick", action="store_true", help="10 turns, 5 sessions, a kill every 1 s, at most 4")
    parser.add_argument(
        "--worker-in-api", action="store_true", help="the APIs run the turns (no worker.py) and are killed"
    )
    parser.add_argument("--keep", action="store_true", help="keep the temp directory (logs, SQLite files)")
    args = parser.parse_args()
    if args.quick:
        # 1 s: the 10 turns take about 2 s now, and the run must see at least one kill.
        args.turns, args.sessions, args.kill_every, args.max_kills = 10, 5, 1.0, 4
        args.turn_deadline = min(args.turn_deadline, 45.0)
    args.sessions = max(1, min(args.sessions, args.turns))
    args.apis = max(1, args.apis)
    args.workers = 0 if args.worker_in_api else max(1, args.workers)
    if args.worker_in_api:
        args.kill = "api"
    return args


def main() -> int:
    args = parse_args()
    # A SIGTERM (a test runner's timeout, say) unwinds through the `finally` below, which stops
    # the processes we started; otherwise they would outlive us.
    signal.signal(signal.SIGTERM, lambda _signum, _frame: sys.exit(143))
    workdir = Path(tempfile.mkdtemp(prefix="da-chaos-"))
    stack = ChaosStack(
        workdir, args.model_ttft_ms, args.model_token_ms, args.apis, args.workers, args.store_url, args.worker_in_api
    )
    report: dict[str, Any] | None = None
    try:
        stack.start()
        report = asyncio.run(workload(stack, args))
        print(json.dumps(report, separators=(",", ":")), flush=True)
    finally:
        log("stopping the stack")
        stack.stop()
        if report is not None and not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
        else:
            log(f"logs and data kept in {workdir}")
    return 1 if report is None or report["lost"] or report["duplicated_tool_requests"] else 0


if __name__ == "__main__":
    sys.exit(main())

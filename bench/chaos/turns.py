"""One turn, followed to its end whatever happens: create, stream, resume and recover as a careful client would."""

from __future__ import annotations

import asyncio
import random
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import httpx

from bench.common import (
    HttpStatusError,
    SseEvent,
    event_type,
    iter_sse,
    json_request,
    log,
    payload_of,
    tool_responses_for,
    turn_path,
)

# Streams get a keepalive every 15 s, so 25 s of silence means the connection is gone.
STREAM_TIMEOUT = httpx.Timeout(connect=5.0, read=25.0, write=10.0, pool=None)
RETRY_PAUSE_SECONDS = 0.5
# After a 409 on resume: how long the turn may show nothing new before we try resuming again.
AFTER_409_WATCH_SECONDS = 10.0

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

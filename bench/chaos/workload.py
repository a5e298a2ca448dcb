"""The workload of a chaos run (sessions of turns while processes die) and the read-back that checks every turn."""

from __future__ import annotations

import argparse
import asyncio
import random
import time
from collections import Counter
from typing import Any

import httpx
from temporalio.client import Client

from bench.chaos.stack import MODEL, ChaosStack, Killer
from bench.chaos.turns import Progress, SessionContext, TurnRecord, run_session
from bench.common import (
    create_agent,
    create_session,
    json_request,
    log,
    percentiles_ms,
    runtime_revision,
)
from bench.model_server import SENTENCE, TOOL_RESULT_TEXT

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

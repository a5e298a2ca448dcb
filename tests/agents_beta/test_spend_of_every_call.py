"""Every model call of a session's turn counts against its `spend_control`, not only its inferences: the turn's
compaction summary and its `llama_guard` shield calls are entered in the session's ledger at their models'
prices, with the token counts the model server reported, once per call however often the activity is retried.

Agents API agents name neither compaction nor shields, so the turn is started here as the runtime runs any turn
of a session with spend control: a detached turn whose start names the session (TurnStart.spend_session_id)."""

from __future__ import annotations

import time
import uuid
from datetime import UTC, datetime
from typing import Any

from openai import OpenAI
from sqlalchemy import select

from domain.content import CompletionMessage, UserMessage
from domain.turn_settings import ContextMessage, TurnSettings
from domain.turns import TurnStatus
from store.tenancy.spend import MICROCENTS_PER_CENT
from store.tenancy.tables import SpendEntryRow
from tests.support.scripted_model import GUARD_MODEL, Reply, ScriptedModel, text
from tests.support.spend_control import limit_body, spend_of
from tests.support.stack import PRICED_MODEL, Stack
from turn_client.starter import TurnStarter
from workflows.contracts import TurnPlan, TurnStart

TENANT = "default"
SUMMARY = "They talked about the weather in Paris."


def ledger(stack: Stack, session_id: str) -> dict[str, Any]:
    """The session's ledger: each entry's key with (model, input tokens, output tokens, cost in micro-cents)."""
    query = select(
        SpendEntryRow.step_id,
        SpendEntryRow.model,
        SpendEntryRow.input_tokens,
        SpendEntryRow.output_tokens,
        SpendEntryRow.cost_microcents,
    ).where(SpendEntryRow.session_id == session_id)
    rows = stack.background.run(stack.store.database.read(lambda tx: tx.execute(query).all()))
    return {row[0]: tuple(row[1:]) for row in rows}


def words(body: dict[str, Any]) -> int:
    """The prompt tokens the test model server reports for a request: its messages' words."""
    return sum(len(str(message.get("content") or "").split()) for message in body["messages"])


def start_counted_turn(stack: Stack, session_id: str) -> str:
    """A turn counted against `session_id` that compacts its prior context (any context is over a threshold of
    one token) and runs the `llama-guard` shield twice on its input; its id."""
    turn_id, settings_id = f"turn_{uuid.uuid4().hex}", f"set_{uuid.uuid4().hex}"
    started_at = datetime.now(UTC)
    question = "And what about tomorrow?"
    context: list[ContextMessage] = [
        UserMessage(content="What is the weather in Paris?"),
        CompletionMessage(content="Sunny and warm."),
    ]
    settings = TurnSettings(model=PRICED_MODEL, instructions="Answer briefly.")
    stack.background.run(
        stack.store.turns.begin_detached_turn(
            TENANT, turn_id, [UserMessage(content=question)], context, settings_id, settings, started_at
        )
    )
    plan = TurnPlan(
        model=PRICED_MODEL, settings_id=settings_id, input_shields=["llama-guard", "llama-guard"], compact_threshold=1
    )
    start = TurnStart(turn_id=turn_id, plan=plan, started_at=started_at, spend_session_id=session_id)
    stack.background.run(TurnStarter(stack.client, stack.settings.task_queue).start(start, TENANT, question))
    return turn_id


def test_a_sessions_ledger_counts_its_turns_compaction_summary_and_shield_calls_once_each(
    stack: Stack, client: OpenAI, model: ScriptedModel
) -> None:
    model.script(text("Hello."))
    session = client.beta.agents.sessions.create(
        environment={"type": "none"},
        agent={"model": PRICED_MODEL, "instructions": "Answer briefly."},
        input="Hello there.",
        extra_body=limit_body(1_000_000),
    )
    deadline = time.monotonic() + 30
    while client.beta.agents.sessions.retrieve(session.id).status != "idle" and time.monotonic() < deadline:
        time.sleep(0.05)
    before = ledger(stack, session.id)
    assert len(before) == 1  # the first turn's one inference

    # The second shield call fails once (a 500): its activity is retried, and calls the first shield again.
    model.script(text(SUMMARY), text("Rain tomorrow."), guard=(text("safe"), Reply(status=500)))
    turn_id = start_counted_turn(stack, session.id)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        turn = stack.background.run(stack.store.turns.get_turn(None, turn_id))
        if turn is not None and turn.status != TurnStatus.RUNNING:
            break
        time.sleep(0.1)
    assert turn is not None and turn.status == TurnStatus.COMPLETED, turn
    assert len(model.guard_requests) == 4  # safe, the failed call, then both again

    entries = ledger(stack, session.id)
    added = {key: entry for key, entry in entries.items() if key not in before}
    summary_request, answer_request = model.requests
    compaction = added.pop(f"{turn_id}:compaction")
    assert compaction == (PRICED_MODEL, words(summary_request), len(SUMMARY.split()), compaction[3])
    assert compaction[3] == (compaction[1] + compaction[2]) * MICROCENTS_PER_CENT  # a cent a token
    [shield_step] = [step for step in turn.steps if step.step_type == "shield_call"]
    guarded = [added.pop(f"{shield_step.step_id}:shield:{index}") for index in (0, 1)]
    guard_words = words(model.guard_requests[-1])
    assert all(entry == (GUARD_MODEL, guard_words, 1, 0) for entry in guarded), guarded  # an unpriced model
    [inference] = added.values()  # nothing else: one entry per call, the retried shield call's replaced
    assert inference == (PRICED_MODEL, words(answer_request), 2, (words(answer_request) + 2) * MICROCENTS_PER_CENT)

    consumed = sum(entry[3] for entry in entries.values()) // MICROCENTS_PER_CENT
    shown = spend_of(client.beta.agents.sessions.retrieve(session.id))
    assert shown is not None and shown.consumed == consumed

"""The timeline a turn's page draws, from a turn's steps and events as the store keeps them: what the other tests'
turns do not reach here — a compaction between two model calls, a spending limit's hold, a shield check, a
priced model — each gets its bar at its place, scaled to its time, with its usage and cost."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from api.console.turn_timeline import FIELD_CHARS, PAGE_CHARS, build
from configuration.loading import load_settings
from domain.content import CompletionMessage, ToolCall, ToolResponse
from domain.turns import InferenceStep, ShieldCallStep, ToolExecutionStep, Turn, TurnStatus
from store.turn_views import TurnView
from store.turns.records import StoredEvent

T0 = datetime(2026, 1, 1, tzinfo=UTC)
PRICED = {"priced": {"provider": "offline", "pricing": {"input": 1.0, "output": 2.0}}}


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def inference(step_id: str, start: float, end: float, reply: str) -> InferenceStep:
    message = CompletionMessage(content=reply)
    return InferenceStep(
        turn_id="t", step_id=step_id, started_at=at(start), completed_at=at(end), model_response=message
    )


def complete(step_id: str, step_type: str) -> dict:
    return {"event": {"payload": {"event_type": "step_complete", "step_id": step_id, "step_type": step_type}}}


def runtime(kind: str, **fields: object) -> dict:
    return {"runtime": {"kind": kind, **fields}}


def view_of(turn: Turn, bodies: list[dict]) -> TurnView:
    events = [StoredEvent(number, body) for number, body in enumerate(bodies, 1)]
    return TurnView(turn=turn, dialect="agents", events=events, last_event_id=len(events), model="priced")


def test_compaction_holds_and_shields_are_placed_between_the_steps_and_scaled_to_their_time() -> None:
    shield = ShieldCallStep(turn_id="t", step_id="s0", started_at=at(0), completed_at=at(1))
    steps = [shield, inference("i1", 1, 3, "first"), inference("i2", 7, 10, "second")]
    turn = Turn(
        turn_id="t",
        session_id="",
        input_messages=[],
        steps=steps,
        started_at=at(0),
        completed_at=at(10),
        status=TurnStatus.COMPLETED,
    )
    events = [
        complete("s0", "shield_call"),
        runtime("usage", step_id="i1", input_tokens=1000, output_tokens=500),
        complete("i1", "inference"),
        runtime("compaction", summary="They talked of <b>boats</b>.", estimated_tokens=900, replaced_messages=6),
        runtime("usage", step_id="compaction", input_tokens=900, output_tokens=100),
        runtime("budget_reached", limit_cents=1, consumed_cents=1),
        complete("i2", "inference"),
    ]
    timeline = build(view_of(turn, events), load_settings({"DA_MODELS": json.dumps(PRICED)}))

    shown = [(bar.kind, bar.seconds, bar.offset, bar.width) for bar in timeline.bars]
    assert shown == [
        ("shield_call", 1.0, 0.0, 100.0),
        ("inference", 2.0, 100.0, 200.0),
        ("wait", 4.0, 300.0, 400.0),  # the gap between the two model calls: its compaction, then the hold
        ("inference", 3.0, 700.0, 300.0),
    ]
    assert timeline.bars[0].label == "Shield: passed"
    assert timeline.bars[2].label == "Compaction, then held by the session's spending limit"
    assert timeline.bars[2].output_text == "They talked of <b>boats</b>." and timeline.bars[2].input_tokens == 900
    assert (timeline.bars[1].input_tokens, timeline.bars[1].output_tokens) == (1000, 500)
    assert timeline.bars[1].cost_microcents == (1000 * 1.0 + 500 * 2.0) * 100
    assert timeline.seconds == 10.0


def test_a_compaction_gets_the_gap_it_ran_in_with_its_summary_and_usage_and_a_running_turn_an_open_bar() -> None:
    turn = Turn(
        turn_id="t",
        session_id="",
        input_messages=[],
        steps=[inference("i1", 0, 1, "x" * (FIELD_CHARS + 10))],
        started_at=at(0),
        status=TurnStatus.RUNNING,
    )
    events = [
        complete("i1", "inference"),
        runtime("compaction", summary="They talked of <b>boats</b>.", estimated_tokens=900, replaced_messages=6),
        runtime("usage", step_id="compaction", input_tokens=900, output_tokens=100),
    ]
    timeline = build(view_of(turn, events), load_settings({}), now=at(4))

    first, compaction = timeline.bars
    assert first.output_text.endswith("10 more characters not shown here (the API has the step whole)")
    assert compaction.kind == "compaction" and compaction.open and compaction.seconds == 3.0
    assert compaction.output_text == "They talked of <b>boats</b>."  # as text: the template escapes it
    assert "6 earlier messages" in compaction.input_text and compaction.input_tokens == 900
    assert compaction.cost_microcents is None and timeline.cost_microcents is None  # no price, no cost shown
    assert PAGE_CHARS > FIELD_CHARS


def test_an_approved_and_a_denied_call_show_who_decided_when_and_why() -> None:
    decided = {"decided_by": "key-0123456789abcdef", "decided_at": "2026-01-01T00:00:02Z", "tenant": "acme"}
    tools = ToolExecutionStep(
        turn_id="t",
        step_id="x1",
        started_at=at(1),
        completed_at=at(3),
        tool_calls=[ToolCall(call_id="c1", tool_name="add", arguments={}), ToolCall(call_id="c2", tool_name="drop")],
        tool_responses=[
            ToolResponse(
                call_id="c1", tool_name="add", content="9", metadata={"decision": {"decision": "approved", **decided}}
            ),
            ToolResponse(
                call_id="c2",
                tool_name="drop",
                content="denied by the user: not on production",
                metadata={"decision": {"decision": "denied", "reason": "not on production", **decided}},
            ),
        ],
    )
    turn = Turn(
        turn_id="t",
        session_id="",
        input_messages=[],
        steps=[inference("i1", 0, 1, "calling"), tools],
        started_at=at(0),
        completed_at=at(3),
        status=TurnStatus.COMPLETED,
    )
    timeline = build(view_of(turn, [complete("i1", "inference"), complete("x1", "tool_execution")]), load_settings({}))
    [tool_bar] = [bar for bar in timeline.bars if bar.kind == "tool_execution"]
    assert "add: 9\n  (approved by key-0123456789abcdef at 2026-01-01T00:00:02Z)" in tool_bar.output_text
    assert "(denied by key-0123456789abcdef at 2026-01-01T00:00:02Z: not on production)" in tool_bar.output_text

"""A turn's steps as a timeline: one bar per step (model calls, tool calls, shields), and for the time between
steps what the turn did then (a compaction summary, a wait for a tool's output, an approval or a spending limit),
each placed and scaled against the turn's whole duration, with its input, output, usage and cost as text.

Steps carry their own start and end; compactions and waits do not, so they are the gaps the events place them
in: the time from the end of the step before to the start of the step after.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from configuration.settings import Settings
from domain.content import ToolCall
from domain.turns import InferenceStep, ShieldCallStep, Step, ToolExecutionStep, TurnStatus
from store.turn_views import TurnView

COMPACTION_STEP = "compaction"
"""The step id a compaction's usage event names (store/responses/compactions.py TURN_COMPACTION_KEY)."""
WAIT_LABELS = {
    "input": "Waiting for a client tool's output",
    "approval": "Waiting for an approval",
    "spend": "Held by the session's spending limit",
}
WAIT_NOTES = {
    WAIT_LABELS["input"]: "includes the wait for the client's output",
    WAIT_LABELS["approval"]: "includes the wait for its approval",
    WAIT_LABELS["spend"]: "includes the hold of the spending limit",
}
"""A wait the next step began with (a client tool's step runs from the call to its output) is told in its label."""
FOLD_SECONDS = 0.01
FIELD_CHARS = 4_000
PAGE_CHARS = 100_000
"""The most of a step's input or output, and of all of them together, that the page shows: a turn with huge tool
outputs or hundreds of steps still makes a page of well under 200 KB. The API has each step whole."""


@dataclass(frozen=True)
class Bar:
    """One entry of the timeline: what it was, when, and what went in and came out (as text)."""

    kind: str
    """`inference`, `tool_execution`, `shield_call`, `compaction`, `wait` or `running`."""
    label: str
    started_at: datetime
    ended_at: datetime
    open: bool = False
    """Still going: its end is now."""
    input_text: str = ""
    output_text: str = ""
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_microcents: int | None = None
    offset: float = 0.0
    """Where the bar begins, in thousandths of the turn's duration (the SVG's viewBox is 1000 wide)."""
    width: float = 0.0

    @property
    def seconds(self) -> float:
        return max(0.0, (self.ended_at - self.started_at).total_seconds())


@dataclass(frozen=True)
class Timeline:
    bars: list[Bar]
    started_at: datetime
    ended_at: datetime
    input_tokens: int
    output_tokens: int
    cost_microcents: int | None
    """None when no model call of the turn has a price (DA_MODELS `pricing`)."""

    @property
    def seconds(self) -> float:
        return max(0.0, (self.ended_at - self.started_at).total_seconds())


def content_text(content: Any) -> str:
    """Message content as plain text: a string as it is, text parts joined, anything else as JSON."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(content_text(part) for part in content)
    text = getattr(content, "text", None)
    if isinstance(text, str):
        return text
    dumped = content.model_dump(mode="json") if hasattr(content, "model_dump") else content
    return json.dumps(dumped, ensure_ascii=False, indent=2)


def _call_text(call: ToolCall) -> str:
    arguments = call.arguments_json or json.dumps(call.arguments, ensure_ascii=False)
    with contextlib.suppress(ValueError):
        arguments = json.dumps(json.loads(arguments), ensure_ascii=False, indent=2)
    return f"{call.tool_name}({arguments})"


def _decided(metadata: dict[str, Any] | None) -> str:
    """The approval decision a call ran (or was refused) under, as a line: who, when, why."""
    decision = (metadata or {}).get("decision")
    if not isinstance(decision, dict):
        return ""
    reason = f": {decision['reason']}" if decision.get("reason") else ""
    who, when = decision.get("decided_by") or "unknown", decision.get("decided_at") or "at an unrecorded time"
    return f"\n  ({decision.get('decision', 'decided')} by {who} at {when}{reason})"


def _step_bar(step: Step, start: datetime, end: datetime) -> Bar:
    if isinstance(step, InferenceStep):
        reply = step.model_response
        calls = "\n".join(f"calls {_call_text(call)}" for call in reply.tool_calls)
        output = "\n".join(part for part in (content_text(reply.content), calls) if part)
        return Bar("inference", "Model call", start, end, output_text=output)
    if isinstance(step, ToolExecutionStep):
        names = ", ".join(call.tool_name for call in step.tool_calls)
        arguments = "\n".join(_call_text(call) for call in step.tool_calls)
        results = "\n".join(
            f"{answer.tool_name}: {content_text(answer.content)}{_decided(answer.metadata)}"
            for answer in step.tool_responses
        )
        return Bar("tool_execution", f"Tool call {names}", start, end, input_text=arguments, output_text=results)
    assert isinstance(step, ShieldCallStep)
    verdict = "passed" if step.violation is None else f"violation ({step.violation.violation_level})"
    message = step.violation.user_message if step.violation and step.violation.user_message else ""
    return Bar("shield_call", f"Shield: {verdict}", start, end, output_text=message)


def _usage(view: TurnView) -> dict[str, tuple[int, int]]:
    found: dict[str, tuple[int, int]] = {}
    for event in view.events:
        runtime = event.body.get("runtime") or {}
        if runtime.get("kind") == "usage":
            tokens = (int(runtime.get("input_tokens") or 0), int(runtime.get("output_tokens") or 0))
            found[str(runtime.get("step_id"))] = tokens
    return found


def _cost(settings: Settings, model: str | None, tokens: tuple[int, int] | None) -> int | None:
    spec = settings.model(model) if model else None
    if tokens is None or spec is None or spec.pricing is None:
        return None
    return spec.pricing.cost_microcents(*tokens)


def build(view: TurnView, settings: Settings, now: datetime | None = None) -> Timeline:
    """The turn's timeline as of `now` (an unfinished turn's last bar is open up to it)."""
    now = now or datetime.now(UTC)
    turn = view.turn
    steps = {step.step_id: step for step in turn.steps}
    usage = _usage(view)
    bars: list[Bar] = []
    cursor = turn.started_at
    gap: Bar | None = None
    """What the turn did since `cursor`, known only once the next step begins (or the turn ends)."""
    placed: set[str] = set()
    for event in view.events:
        runtime = event.body.get("runtime") or {}
        payload = (event.body.get("event") or {}).get("payload") or {}
        kind = runtime.get("kind")
        found: Bar | None = None
        if kind == "compaction":
            tokens = usage.get(COMPACTION_STEP)
            summary = str(runtime.get("summary") or "")
            replaced = (
                f"{runtime.get('replaced_messages')} earlier messages, about {runtime.get('estimated_tokens')} tokens"
            )
            found = Bar(
                "compaction",
                "Compaction",
                cursor,
                cursor,
                input_text=replaced,
                output_text=summary,
                input_tokens=tokens[0] if tokens else None,
                output_tokens=tokens[1] if tokens else None,
                cost_microcents=_cost(settings, view.model, tokens),
            )
        elif kind == "budget_reached":
            found = Bar("wait", WAIT_LABELS["spend"], cursor, cursor)
        elif kind == "approval_requested":
            found = Bar("wait", WAIT_LABELS["approval"], cursor, cursor)
        elif payload.get("event_type") == "turn_awaiting_input" and (gap is None or gap.kind != "wait"):
            found = Bar("wait", WAIT_LABELS["input"], cursor, cursor)
        elif payload.get("event_type") == "step_complete" and payload.get("step_id") in steps:
            step_id = str(payload["step_id"])
            if step_id in placed:
                continue
            placed.add(step_id)
            step = steps[step_id]
            start = step.started_at or cursor
            end = step.completed_at or start
            bar = _step_bar(step, start, end)
            if gap is not None and gap.kind == "wait" and (start - cursor).total_seconds() < FOLD_SECONDS:
                bar = replace(bar, label=f"{bar.label} ({WAIT_NOTES.get(gap.label, gap.label.lower())})")
            elif gap is not None:
                bars.append(_closed(gap, cursor, max(cursor, start)))
            gap = None
            tokens = usage.get(step_id)
            if tokens is not None:
                cost = _cost(settings, view.model, tokens)
                bar = replace(bar, input_tokens=tokens[0], output_tokens=tokens[1], cost_microcents=cost)
            bars.append(bar)
            cursor = max(cursor, end)
        if found is not None:
            gap = found if gap is None else _merged(gap, found)
    ended = turn.completed_at if turn.status.is_final and turn.completed_at else now
    if gap is not None:
        bars.append(_closed(gap, cursor, max(cursor, ended), open=not turn.status.is_final))
    elif turn.status == TurnStatus.RUNNING:
        bars.append(Bar("running", "Running: the next step", cursor, max(cursor, ended), open=True))
    elif turn.status == TurnStatus.AWAITING_INPUT:
        bars.append(Bar("wait", WAIT_LABELS["input"], cursor, max(cursor, ended), open=True))
    return _scaled(bars, turn.started_at, max(ended, cursor))


def _merged(first: Bar, then: Bar) -> Bar:
    """Two things the turn did in one gap between steps (a compaction, then a hold): one bar for the gap, since
    the events do not say where one ended and the other began."""
    if then.label == first.label:
        return first
    texts = first if first.kind == "compaction" else then
    return replace(
        texts,
        kind="wait" if "wait" in (first.kind, then.kind) else texts.kind,
        label=f"{first.label}, then {then.label[0].lower()}{then.label[1:]}",
    )


def _closed(bar: Bar, start: datetime, end: datetime, open: bool = False) -> Bar:
    return replace(bar, started_at=start, ended_at=end, open=open)


def clip(text: str, budget: list[int]) -> str:
    """`text` cut to FIELD_CHARS and to what is left of the page's `budget` (a one-item list, spent here), saying
    how much was left out."""
    shown = text[: max(0, min(FIELD_CHARS, budget[0]))]
    budget[0] -= len(shown)
    if len(shown) == len(text):
        return text
    return f"{shown}\n… {len(text) - len(shown):,} more characters not shown here (the API has the step whole)"


def _scaled(bars: list[Bar], start: datetime, end: datetime) -> Timeline:
    total = max((end - start).total_seconds(), 1e-6)
    budget = [PAGE_CHARS]
    bars = [
        replace(bar, input_text=clip(bar.input_text, budget), output_text=clip(bar.output_text, budget)) for bar in bars
    ]
    costs = [bar.cost_microcents for bar in bars if bar.cost_microcents is not None]
    scaled = [
        replace(
            bar,
            offset=round(1000 * (bar.started_at - start).total_seconds() / total, 1),
            width=max(2.0, round(1000 * bar.seconds / total, 1)),  # an instant still shows as a sliver
        )
        for bar in bars
    ]
    return Timeline(
        bars=scaled,
        started_at=start,
        ended_at=end,
        input_tokens=sum(bar.input_tokens or 0 for bar in bars),
        output_tokens=sum(bar.output_tokens or 0 for bar in bars),
        cost_microcents=None if not costs else sum(costs),
    )

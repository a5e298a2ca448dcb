"""A turn's state as the workflow holds it, and how it is written: steps and events carried to the next activity or
written by a local activity, and the turn's end."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from typing import Literal

from temporalio import workflow
from temporalio.common import RetryPolicy

with workflow.unsafe.imports_passed_through():
    from pydantic import BaseModel

    from domain.agents import ToolConfig
    from domain.content import CompletionMessage
    from domain.events import KeyedEvent
    from domain.turns import InferenceStep, Step, ToolExecutionStep, TurnStatus
    from workflows import pauses
    from workflows.contracts import (
        PAYLOAD_BUDGET_BYTES,
        SAVE_PROGRESS_ACTIVITY,
        PendingWrites,
        ServerTool,
        SpendVerdict,
        SteerSubmission,
        TurnFinished,
        TurnOutcome,
        TurnPlan,
        TurnProgress,
        TurnStart,
    )
    from workflows.search_attributes import TURN_STATUS


def _step_line(step: Step) -> str:
    if isinstance(step, InferenceStep):
        calls = ", ".join(f"`{call.tool_name}`" for call in step.model_response.tool_calls)
        return f"inference → {'calls ' + calls if calls else 'answered'}"
    if isinstance(step, ToolExecutionStep):
        return "tool_execution · " + ", ".join(f"`{call.tool_name}`" for call in step.tool_calls)
    return f"{step.step_type}"


class TooLarge(Exception):
    """Something the turn would have to carry does not fit in a Temporal payload: the turn fails."""


CARRY_STEPS_PATCH = "pending-steps-within-payload-budget"
"""Pending steps too large to ride along with an activity's input are first written by a local activity."""


def _size(payload: BaseModel) -> int:
    return len(payload.model_dump_json())


STORE_RETRY = RetryPolicy(initial_interval=timedelta(milliseconds=200), maximum_interval=timedelta(seconds=10))


_TICK = timedelta(microseconds=1)


class TurnState:
    """The turn's state: what TurnWorkflow (workflows/turn.py) and its step kinds read and change."""

    _steer: SteerSubmission | None = None
    """The accepted steer not yet applied (workflows/turn_steps/steering.py)."""
    _regular_call_next = False
    """The next model call runs as a regular activity even in a segment of local ones (after a steer)."""

    def __init__(self, start: TurnStart) -> None:
        self._start = start
        self._plan: TurnPlan = start.turn_plan()
        self._tool_config: ToolConfig = start.tool_config or self._plan.tool_config or ToolConfig()
        self._status = TurnStatus.RUNNING
        self._stored_status = TurnStatus.RUNNING
        self._steps: list[Step] = []
        self._saved_steps = 0
        self._output: CompletionMessage | None = None
        self._completed_at: datetime | None = None
        self._error: str | None = None
        self._inferences = 0
        self._local_inference = start.local_inference
        """The current segment's model calls run as local activities (TurnStart.local_inference)."""
        self._pause = pauses.Pause()
        self._runtime_events: list[KeyedEvent] = []
        """Runtime events (domain: segment_started, tools_listed, approval_requested) the next write stores."""
        self._last_time = start.started_at
        self._saving: asyncio.Future[TurnOutcome | None] | None = None
        self._server_tools: list[ServerTool] = []
        self._listed_servers: list[str] = []
        """Labels of the request-named MCP servers listed so far: each is listed once per turn."""
        self._segment_server_calls = 0
        self._input_messages = start.input_messages
        self._spend_signals = 0
        """How many times the session's spending limit changed during this run (the spend_limit_changed signal)."""
        self._budget_hold: SpendVerdict | None = None
        """Set while the turn waits at a model call for its session's spending limit to be raised."""

    def _set_status(self, status: TurnStatus) -> None:
        self._status = status
        workflow.upsert_search_attributes([TURN_STATUS.value_set(status.value)])

    def _describe(self) -> None:
        """Keep the UI's "current details" telling what the turn did and what it waits for."""
        lines = [f"**Status:** {self._status.value}", "", f"**Steps so far:** {len(self._steps)}"]
        lines += [f"{i}. {_step_line(step)}" for i, step in enumerate(self._steps, start=1)]
        lines += self._pause.detail_lines()
        if self._budget_hold is not None:
            hold = self._budget_hold
            spent = f"{hold.consumed_cents}¢ of {hold.limit_cents}¢"
            lines += ["", f"**Waiting for the session's spending limit to be raised:** {spent} spent"]
        if self._error:
            lines += ["", f"**Error:** {self._error}"]
        if self._pause.ignored_signal:
            lines += ["", f"**Last signal ignored:** {self._pause.ignored_signal}"]
        workflow.set_current_details("\n".join(lines))

    def _steerable(self) -> bool:
        """Whether the `steer` update may take input for this turn: no output shield, no compaction, and the model
        call's activity either never writes the turn's end or holds back when a steer is marked (cut_steering)."""
        start, plan = self._start, self._plan
        if plan.output_shields or plan.compact_threshold is not None:
            return False
        return start.cut_steering or not start.inference_writes_end

    def _now(self) -> datetime:
        """workflow.now(), nudged so that consecutive timestamps strictly increase (clients compare them)."""
        self._last_time = max(workflow.now(), self._last_time + _TICK)
        return self._last_time

    def _add_step(self, step: Step) -> None:
        """Record a step; the next write stores it with its step_complete event."""
        self._steps.append(step)
        self._describe()

    async def _finish(self, message: CompletionMessage) -> TurnOutcome:
        self._conclude(TurnStatus.COMPLETED, message, self._now())
        return self._kept(await self._save(f"turn:complete:{len(self._steps)}", "turn_complete"))

    def _record_end(self, message: CompletionMessage, finished: TurnFinished) -> TurnOutcome:
        """The end the inference activity wrote (its last step, status, output and time), as this run's."""
        self._saved_steps = len(self._steps)
        self._stored_status = TurnStatus.COMPLETED
        self._last_time = max(self._last_time, finished.completed_at)
        self._conclude(TurnStatus.COMPLETED, message, finished.completed_at)
        return self._outcome()

    def _conclude(self, status: TurnStatus, output: CompletionMessage | None, completed_at: datetime) -> None:
        """The turn's end as this run holds it: status (and the UI's view of it), output and time."""
        self._output = output
        self._set_status(status)
        self._describe()
        self._completed_at = completed_at

    async def _end(self, status: TurnStatus, reason: str) -> TurnOutcome:
        """End the turn without an answer (failed, cancelled, expired), keeping its steps so far."""
        if self._saving is not None and not self._saving.done():
            await self._saving
        self._pause.clear()
        self._error = reason
        self._conclude(status, None, self._now())
        return self._kept(await self._save(f"turn:{status.value}:{len(self._steps)}", "error"))

    def _kept(self, ended: TurnOutcome | None) -> TurnOutcome:
        """The outcome: this run's end, or the one the store had already and kept (an answer its
        inference activity wrote in the very activation a cancel arrived in, which then ends here)."""
        if ended is None or ended.status == self._status:
            return self._outcome()
        self._output = None
        self._error = ended.error
        self._set_status(ended.status)
        self._describe()
        return ended

    def _outcome(self) -> TurnOutcome:
        """The workflow's result: a summary. The turn (which can be megabytes) is in the store."""
        return TurnOutcome(turn_id=self._start.turn_id, status=self._status, steps=len(self._steps), error=self._error)

    def _pending(self) -> PendingWrites:
        # A turn resumed after a pause is running again: the next write says so, so readers of the
        # store stop seeing awaiting_input as soon as the turn's next step begins.
        resumed = self._status == TurnStatus.RUNNING and self._stored_status != TurnStatus.RUNNING
        return PendingWrites(
            first_new_step=self._saved_steps,
            new_steps=self._steps[self._saved_steps :],
            status=TurnStatus.RUNNING if resumed else None,
            session_id=self._start.session_id if resumed else None,
            agent_id=self._start.agent_id if resumed else None,
            step_events=True,
            events=list(self._runtime_events),
        )

    async def _carry(self, *requests: BaseModel) -> PendingWrites:
        """The pending writes for these requests to carry (each request is built without them).

        Steps ride along with the next activity's input, saving a store round trip per step. When
        they would not fit in its payload (many large tool results at once), a local activity,
        whose input never enters the history, writes them first. A request too large even alone
        fails the turn instead of failing its workflow task forever.
        """
        own = max(_size(request) for request in requests)
        if own > PAYLOAD_BUDGET_BYTES:
            raise TooLarge(f"a request of {own:,} bytes, more than a turn can carry ({PAYLOAD_BUDGET_BYTES:,})")
        pending = self._pending()
        if pending.new_steps and own + _size(pending) > PAYLOAD_BUDGET_BYTES and workflow.patched(CARRY_STEPS_PATCH):
            await self._write(
                TurnProgress(
                    turn_id=self._start.turn_id, session_id=self._start.session_id, pending=pending, status=self._status
                )
            )
            pending = self._pending()
        return pending

    def _written(self, pending: PendingWrites) -> None:
        written = {event.key for event in pending.events}
        self._runtime_events = [event for event in self._runtime_events if event.key not in written]
        self._stored_status = pending.status or self._stored_status
        self._saved_steps = max(self._saved_steps, pending.first_new_step + len(pending.new_steps))

    async def _save(
        self,
        event_key: str,
        event: Literal["turn_awaiting_input", "turn_complete", "error"],
        awaiting: list[str] | None = None,
    ) -> TurnOutcome | None:
        """Write the pending steps and events with the turn's status, then its final event; the
        outcome of a turn that had ended already (the store keeps that end)."""
        pending = self._pending()
        progress = TurnProgress(
            turn_id=self._start.turn_id,
            session_id=self._start.session_id,
            pending=pending,
            status=self._status,
            output_message=self._output,
            completed_at=self._completed_at,
            error=self._error,
            event_key=event_key,
            event=event,
            agent_id=self._start.agent_id,
            awaiting=awaiting or [],
        )
        # Shielded: a cancellation must not interleave a later write with this one (see _end).
        self._saving = asyncio.ensure_future(self._write(progress))
        return await asyncio.shield(self._saving)

    async def _write(self, progress: TurnProgress) -> TurnOutcome | None:
        # A local activity: a store write takes milliseconds, and running it inside the workflow
        # task saves a round trip through the server per status change. Its writes are keyed, so
        # the re-run after a worker crash is harmless.
        ended: TurnOutcome | None = await workflow.execute_local_activity(
            SAVE_PROGRESS_ACTIVITY,
            progress,
            result_type=TurnOutcome | None,  # type: ignore[arg-type]  # the SDK takes a union; its stub says type. None from releases before the store kept a turn's end
            summary=f"store · {progress.status.value}",
            start_to_close_timeout=timedelta(seconds=10),
            retry_policy=STORE_RETRY,
        )
        self._written(progress.pending)
        self._stored_status = ended.status if ended else progress.status
        return ended

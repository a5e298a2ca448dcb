"""Spend control: a turn of a session with a spending limit checks the session's spend before each model call,
and while the limit is reached it waits there, durably, until the limit is raised or removed.

The wait is at the next model call, not inside the call that crossed the limit: that call's answer stands, no
further call is made, and lifting the limit resumes this same turn (the `spend_limit_changed` signal, which the
session's update sends to the waiting turn). Spend is never reset: a limit raised too little holds the turn again.
"""

from __future__ import annotations

from datetime import timedelta
from functools import partial

from temporalio import workflow

from workflows.turn_steps.state import STORE_RETRY, TurnState

with workflow.unsafe.imports_passed_through():
    from domain.events import KeyedEvent
    from workflows.contracts import (
        CHECK_SPEND_ACTIVITY,
        SpendCheck,
        SpendVerdict,
        TurnProgress,
        runtime_event,
    )

SPEND_CONTROL_PATCH = "session-spend-control"
"""Turns that count their session's spend check it before each model call (a local activity per call)."""
SPEND_EVERY_CALL_PATCH = "session-spend-every-call"
"""Such turns check it before their compaction summary and their shield calls too, not only their inferences."""


class SpendSteps(TurnState):
    async def _within_budget_for(self, what: str) -> None:
        """Before a model call other than an inference (`what`: "compaction", "shields"): as `_within_budget`,
        in turns started since such calls count. Earlier turns replay without the check."""
        if self._start.spend_session_id is None or not workflow.patched(SPEND_EVERY_CALL_PATCH):
            return
        await self._within_budget(what)

    async def _within_budget(self, what: str | None = None) -> None:
        """Return when the session's spend allows the next model call; until then, hold the turn."""
        session_id = self._start.spend_session_id
        if session_id is None:
            return
        if not workflow.patched(SPEND_CONTROL_PATCH):
            return
        holds = 0
        while True:
            seen = self._spend_signals
            verdict = await workflow.execute_local_activity(
                CHECK_SPEND_ACTIVITY,
                SpendCheck(session_id=session_id, turn_id=self._start.turn_id),
                result_type=SpendVerdict,
                summary="spend · check",
                start_to_close_timeout=timedelta(seconds=10),
                retry_policy=STORE_RETRY,
            )
            if verdict.allowed:
                if holds:
                    self._budget_hold = None
                    self._describe()
                    # Written with the model call's first writes: the session is at work again.
                    self._runtime_events.append(self._budget_event("resumed", holds, verdict, what))
                return
            holds += 1
            self._budget_hold = verdict
            self._runtime_events.append(self._budget_event("reached", holds, verdict, what))
            await self._write(
                TurnProgress(
                    turn_id=self._start.turn_id,
                    session_id=self._start.session_id,
                    pending=self._pending(),
                    status=self._status,
                )
            )
            self._describe()
            await workflow.wait_condition(partial(self._limit_changed_since, seen))

    def _limit_changed_since(self, seen: int) -> bool:
        return self._spend_signals > seen

    def _budget_event(self, kind: str, hold: int, verdict: SpendVerdict, what: str | None) -> KeyedEvent:
        """`budget_reached` (the turn is held) or `budget_resumed` (it goes on): runtime events the Agents API
        dialect shows as the session's status. `what` keeps apart the keys of checks made at one step count."""
        return runtime_event(
            f"budget:{kind}:{len(self._steps)}:{hold}" + (f":{what}" if what else ""),
            f"budget_{kind}",
            limit_cents=verdict.limit_cents,
            consumed_cents=verdict.consumed_cents,
        )

"""Shield calls: the input and output touchpoints' shields as one shield_call step each."""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy

from workflows.turn_steps.spend import SpendSteps

with workflow.unsafe.imports_passed_through():
    from domain.content import CompletionMessage, content_as_text
    from workflows import steps
    from workflows.contracts import (
        PROVIDER_REJECTED,
        RUN_SHIELDS_ACTIVITY,
        TOOL_HEARTBEAT_TIMEOUT,
        ShieldRequest,
        ShieldResult,
        Touchpoint,
    )


class ShieldSteps(SpendSteps):
    async def _guard(self, touchpoint: Touchpoint, texts: list[str] | None) -> CompletionMessage | None:
        """Run the touchpoint's shields as one shield_call step; the refusal to answer with, if violated.

        `texts` None: the turn's input messages (read from the store unless the start carried them)."""
        shields = self._plan.input_shields if touchpoint == "user-input" else self._plan.output_shields
        if not shields:
            return None
        await self._within_budget_for("shields")
        step_id = str(workflow.uuid4())
        started_at = self._now()
        if texts is None and self._input_messages:
            texts = [content_as_text(m.content) for m in self._input_messages]
        request = ShieldRequest(
            turn_id=self._start.turn_id,
            session_id=self._start.session_id,
            step_id=step_id,
            touchpoint=touchpoint,
            shield_ids=shields,
            texts=texts or [],
            texts_are_input=texts is None,
            instructions=self._start.agent_config.instructions if self._start.agent_config else "",
            spend_session_id=self._start.spend_session_id,
            settings_id=self._plan.settings_id,
        )
        pending = await self._carry(request)
        result = await workflow.execute_activity(
            RUN_SHIELDS_ACTIVITY,
            request.model_copy(update={"pending": pending}),
            result_type=ShieldResult,
            summary=f"shields · {touchpoint}",
            start_to_close_timeout=timedelta(minutes=2),
            heartbeat_timeout=TOOL_HEARTBEAT_TIMEOUT,
            retry_policy=RetryPolicy(maximum_attempts=5, non_retryable_error_types=[PROVIDER_REJECTED]),
        )
        self._written(pending)
        violation = result.violation
        self._add_step(steps.shield_call(self._start.turn_id, step_id, started_at, self._now(), violation))
        if violation is None or violation.violation_level != "error":
            return None
        return CompletionMessage(content=violation.user_message or "", stop_reason="end_of_turn")

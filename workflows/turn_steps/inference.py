"""Inference: one model call per step, with the documents a turn's input names fetched first."""

from __future__ import annotations

import asyncio
import contextlib
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError, TimeoutError
from temporalio.workflow import ActivityCancellationType

from workflows.turn_steps.spend import SpendSteps
from workflows.turn_steps.tools import ToolSteps

with workflow.unsafe.imports_passed_through():
    from domain.content import CompletionMessage
    from workflows import steps
    from workflows.contracts import (
        DOCUMENT_UNAVAILABLE,
        FETCH_DOCUMENTS_ACTIVITY,
        INFER_ACTIVITY,
        INFERENCE_HEARTBEAT_TIMEOUT,
        PROVIDER_REJECTED,
        REPLY_TOO_LARGE,
        TOOL_HEARTBEAT_TIMEOUT,
        FetchDocumentsRequest,
        FetchDocumentsResult,
        InferenceRequest,
        InferenceResult,
        TurnEnding,
        TurnFinished,
        steer_cut_key,
    )
    from workflows.search_attributes import RESPONSE_ID


INFERENCE_ATTEMPT_TIMEOUT = timedelta(minutes=10)
"""The longest one attempt at a model call may take."""
STEER_CUT_PATCH = "steer-cut-v1"
"""A steerable response's model call stops at the token where its steer is accepted (InferenceRequest.steer_cut_key);
before, it ran to its end."""
STEER_ARRIVAL_TIMEOUT = timedelta(seconds=60)
"""How long a model call that saw a steer's mark waits for the steer itself (the API sends it right after the
mark): past it the API died in between, and the turn goes on without it."""
LOCAL_RETRY_THRESHOLD = timedelta(seconds=5)
"""A local model call's retry that waits longer (the 4th on) waits as a durable timer, which releases the
workflow task: a cancel is not held up by a provider that keeps failing."""


class InferenceSteps(ToolSteps, SpendSteps):
    async def _infer(self, last: bool) -> tuple[CompletionMessage, TurnFinished | None]:
        """The model's message, and when the activity wrote it as the turn's end, the times it gave.
        `last`: the turn's last model call allowed (max_infer_iters)."""
        await self._within_budget()
        step_id = str(workflow.uuid4())
        started_at = self._now()
        ending = None
        # With output shields, an answer is checked before it may end the turn: the workflow writes the end.
        if not self._plan.output_shields and self._start.inference_writes_end:
            ending = TurnEnding(
                step_index=len(self._steps),
                started_at=started_at,
                last_inference=last,
                event_key=f"turn:complete:{len(self._steps) + 1}",
                agent_id=self._start.agent_id,
            )
        request = InferenceRequest(
            turn_id=self._start.turn_id,
            session_id=self._start.session_id,
            step_id=step_id,
            tool_config=self._tool_config,
            server_tools=self._offered_tools(),
            settings_id=self._plan.settings_id,
            ending=ending,
            compaction=self._plan.compact_threshold is not None,
            spend_session_id=self._start.spend_session_id,
            steer_cut_key=self._steer_cut_key(),
        )
        pending = await self._carry(request)
        result = await self._call_model(request.model_copy(update={"pending": pending}))
        self._written(pending)
        if result.steer_marked and self._steer is None and self._start.cut_steering:
            # The API marks the cut before it sends the update, which comes once this call's workflow task is done.
            with contextlib.suppress(asyncio.TimeoutError):
                await workflow.wait_condition(lambda: self._steer is not None, timeout=STEER_ARRIVAL_TIMEOUT)
        self._inferences += 1
        message, finished = result.message, result.finished
        completed_at = finished.step_completed_at if finished else self._now()
        self._add_step(steps.inference(self._start.turn_id, step_id, started_at, completed_at, message))
        return message, finished

    def _steer_cut_key(self) -> str | None:
        """What lets a steer cut this model call short: a call of a response (a segment) that the `steer` update may
        steer, made as a regular activity, or as a local one in a turn whose steers mark the cut first (a local call
        holds the workflow task that would take the steer: the mark is what ends it)."""
        if (self._local_inference and not self._start.cut_steering) or not self._steerable() or self._start.session_id:
            return None
        segments = workflow.info().typed_search_attributes.get(RESPONSE_ID) or []
        if not segments or not workflow.patched(STEER_CUT_PATCH):
            return None
        return steer_cut_key(segments[-1])

    async def _call_model(self, request: InferenceRequest) -> InferenceResult:
        """The inference activity, as a local one for a segment that runs its model calls locally."""
        common: Any = {
            "result_type": InferenceResult,
            "summary": f"inference · {self._plan.model}",
            "start_to_close_timeout": INFERENCE_ATTEMPT_TIMEOUT,
            # A cancelled turn's last events are written only after its model call has stopped.
            "cancellation_type": ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
            "retry_policy": RetryPolicy(
                initial_interval=timedelta(seconds=1),
                maximum_interval=timedelta(seconds=30),
                maximum_attempts=self._start.inference_max_attempts,
                non_retryable_error_types=[PROVIDER_REJECTED, REPLY_TOO_LARGE],
            ),
        }
        run_locally = self._local_inference and not self._regular_call_next
        self._regular_call_next = False
        if run_locally:
            # No heartbeat: the worker holding the call holds the workflow task too (the SDK extends it
            # while the call runs), so a dead worker is noticed by the task's timeout and the call made
            # again by the next one. Backoffs past LOCAL_RETRY_THRESHOLD wait as timers of the workflow's.
            try:
                local: InferenceResult = await workflow.execute_local_activity(
                    INFER_ACTIVITY, request, local_retry_threshold=LOCAL_RETRY_THRESHOLD, **common
                )
                return local
            except (ApplicationError, TimeoutError) as failed:
                # A local activity's failure comes unwrapped; the turn ends on an activity's, with it as cause.
                raise ActivityError(
                    str(failed),
                    scheduled_event_id=0,
                    started_event_id=0,
                    identity="",
                    activity_type=INFER_ACTIVITY,
                    activity_id="",
                    retry_state=None,
                ) from failed
        result: InferenceResult = await workflow.execute_activity(
            INFER_ACTIVITY, request, heartbeat_timeout=INFERENCE_HEARTBEAT_TIMEOUT, **common
        )
        return result

    async def _fetch_documents(self, urls: list[str]) -> None:
        result = await workflow.execute_activity(
            FETCH_DOCUMENTS_ACTIVITY,
            FetchDocumentsRequest(session_id=self._start.session_id, turn_id=self._start.turn_id, urls=urls),
            result_type=FetchDocumentsResult,
            summary=f"documents · fetch {len(urls)}",
            start_to_close_timeout=timedelta(minutes=2),
            heartbeat_timeout=TOOL_HEARTBEAT_TIMEOUT,
            retry_policy=RetryPolicy(maximum_attempts=3, non_retryable_error_types=[DOCUMENT_UNAVAILABLE]),
        )
        # Empty from this release on: the messages with their documents are in the turn's row.
        self._input_messages = result.input_messages

"""Running a sandboxed code call (workflows/code_tools.py): one attempt, never retried; a call cut by a crash
is answered from the store's record of it, as interrupted when it only started."""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError, is_cancelled_exception
from temporalio.workflow import ActivityCancellationType

from workflows.turn_steps.state import TurnState

with workflow.unsafe.imports_passed_through():
    from domain.content import ToolResponse
    from workflows import steps
    from workflows.code_tools import (
        CODE_CALL_OUTCOME_ACTIVITY,
        CODE_CALL_TIMEOUT,
        CODE_UNAVAILABLE,
        RUN_CODE_ACTIVITY,
        CodeCallOutcomeRequest,
    )
    from workflows.contracts import TOOL_HEARTBEAT_TIMEOUT, ToolRunRequest

CODE_SANDBOX_PATCH = "code-sandbox-v1"


class CodeCalls(TurnState):
    async def _run_code(self, request: ToolRunRequest) -> ToolResponse:
        workflow.patched(CODE_SANDBOX_PATCH)  # marks histories that ran code calls
        try:
            response: ToolResponse = await workflow.execute_activity(
                RUN_CODE_ACTIVITY,
                request,
                result_type=ToolResponse,
                summary=f"code · {request.call.tool_name}",
                start_to_close_timeout=CODE_CALL_TIMEOUT,
                heartbeat_timeout=TOOL_HEARTBEAT_TIMEOUT,
                retry_policy=RetryPolicy(maximum_attempts=1),  # code has side effects: never run twice
                cancellation_type=ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
            )
            return response
        except ActivityError as failure:
            if is_cancelled_exception(failure):
                raise
            cause = failure.cause
            if isinstance(cause, ApplicationError) and cause.type == CODE_UNAVAILABLE:
                return steps.answer(request.call, f"Error: {cause.message}", {"is_error": True})
            reason = cause.message if isinstance(cause, ApplicationError) else str(cause or failure)
        # The attempt was cut (a crash, a lost worker): what the store recorded of the call decides the answer.
        outcome: ToolResponse = await workflow.execute_activity(
            CODE_CALL_OUTCOME_ACTIVITY,
            CodeCallOutcomeRequest(run=request, failure=reason),
            result_type=ToolResponse,
            summary=f"code · {request.call.tool_name} · outcome",
            start_to_close_timeout=timedelta(seconds=60),
            retry_policy=RetryPolicy(maximum_interval=timedelta(seconds=10)),
        )
        return outcome

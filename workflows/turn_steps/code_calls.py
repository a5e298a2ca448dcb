"""Running a sandboxed code call (workflows/code_tools.py): on a worker of the host holding its container, one
attempt, never retried; a call cut by a crash is answered from the store's record of it, as interrupted when it
only started, and one that no worker of its host takes is answered as sent to a host that is gone."""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import (
    ActivityError,
    ApplicationError,
    TimeoutError,
    TimeoutType,
    is_cancelled_exception,
)
from temporalio.workflow import ActivityCancellationType

from workflows.turn_steps.state import TurnState

with workflow.unsafe.imports_passed_through():
    from domain.content import ToolResponse
    from workflows import steps
    from workflows.code_tools import (
        CODE_CALL_OUTCOME_ACTIVITY,
        CODE_CALL_TIMEOUT,
        CODE_HOST_ACTIVITY,
        CODE_UNAVAILABLE,
        RUN_CODE_ACTIVITY,
        CodeCallOutcomeRequest,
        CodeHost,
        code_error,
    )
    from workflows.contracts import TOOL_HEARTBEAT_TIMEOUT, PendingWrites, ToolRunRequest

CODE_SANDBOX_PATCH = "code-sandbox-v1"
CODE_HOST_ROUTING_PATCH = "code-host-routing-v1"
"""Calls go to the task queue of the host holding their container; before it, every call went to the shared
queue, and a worker of another host refused it."""


class CodeCalls(TurnState):
    async def _run_code(self, request: ToolRunRequest) -> ToolResponse:
        workflow.patched(CODE_SANDBOX_PATCH)  # marks histories that ran code calls
        routed: CodeHost | None = None
        if workflow.patched(CODE_HOST_ROUTING_PATCH):
            try:
                routed = await workflow.execute_activity(
                    CODE_HOST_ACTIVITY,
                    request,
                    result_type=CodeHost,
                    summary=f"code · {request.call.tool_name} · host",
                    start_to_close_timeout=timedelta(seconds=60),
                    heartbeat_timeout=TOOL_HEARTBEAT_TIMEOUT,
                    retry_policy=RetryPolicy(maximum_interval=timedelta(seconds=10)),
                )
            except ActivityError as failure:
                if not is_cancelled_exception(failure) and (unavailable := _unavailable(request, failure, True)):
                    return unavailable
                raise
            request = request.model_copy(update={"pending": PendingWrites()})  # `code_host` wrote them
        try:
            response: ToolResponse = await workflow.execute_activity(
                RUN_CODE_ACTIVITY,
                request,
                result_type=ToolResponse,
                summary=f"code · {request.call.tool_name}",
                task_queue=routed.task_queue if routed else None,
                schedule_to_start_timeout=timedelta(seconds=routed.start_timeout_seconds) if routed else None,
                start_to_close_timeout=CODE_CALL_TIMEOUT,
                heartbeat_timeout=TOOL_HEARTBEAT_TIMEOUT,
                retry_policy=RetryPolicy(maximum_attempts=1),  # code has side effects: never run twice
                cancellation_type=ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
            )
            return response
        except ActivityError as failure:
            if is_cancelled_exception(failure):
                raise
            if unavailable := _unavailable(request, failure, routed is not None):
                return unavailable
            cause = failure.cause
            if routed is not None and isinstance(cause, TimeoutError) and cause.type == TimeoutType.SCHEDULE_TO_START:
                return _host_gone(request, routed)
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


def _unavailable(request: ToolRunRequest, failure: ActivityError, itemised: bool) -> ToolResponse | None:
    """The answer to a call that could not be run at all (no sandbox, the container gone), if it was one;
    `itemised`: shown to a Responses client as a failed call (before routing, as an error only)."""
    cause = failure.cause
    if not isinstance(cause, ApplicationError) or cause.type != CODE_UNAVAILABLE:
        return None
    if itemised:
        return code_error(request, f"Error: {cause.message}")
    return steps.answer(request.call, f"Error: {cause.message}", {"is_error": True})


def _host_gone(request: ToolRunRequest, routed: CodeHost) -> ToolResponse:
    text = (
        f"Error: container {routed.container_id} is held by host {routed.host!r} (its files and its kernel are "
        f"there), and no worker of that host took the call within {routed.start_timeout_seconds:g} s: the host "
        "is gone or its workers are stopped. Nothing was run."
    )
    return code_error(request, text)

"""The API's side of Temporal: start a turn workflow, deliver tool responses, read a live turn."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from temporalio.api.enums.v1 import EventType, WorkflowTaskFailedCause
from temporalio.client import (
    RPCTimeoutOrCancelledError,
    WorkflowExecutionStatus,
    WorkflowFailureError,
    WorkflowUpdateFailedError,
)
from temporalio.common import WorkflowIDReusePolicy
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError, RPCStatusCode

from domain.content import ToolResponse
from domain.turns import Turn
from turn_client.starter import TRACE_MEMO, TurnStarter
from workflows.contracts import NOT_AWAITING_INPUT, SteerSubmission, ToolResponsesSubmission, turn_workflow_id
from workflows.turn import TurnWorkflow

log = logging.getLogger(__name__)

QUERY_TIMEOUT = timedelta(seconds=2)
UPDATE_ATTEMPTS = 5
STUCK_AFTER_ATTEMPTS = 3
REOPEN_WAIT = timedelta(seconds=5)
_REOPEN_POLICY = WorkflowIDReusePolicy.ALLOW_DUPLICATE


@dataclass(frozen=True)
class WorkflowState:
    running: bool
    failing: str | None = None
    """Why the running workflow's task keeps failing; None if it does not."""


class TurnNotRunning(Exception):
    """The turn's workflow is gone (finished, or deleted after Temporal's retention)."""


class TurnUnavailable(Exception):
    """The turn's workflow is running but could not be reached just now (a worker is restarting)."""


class SteerRejected(Exception):
    """The workflow refused the steer (the turn is not running, cannot be steered, or has one pending)."""

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message)
        self.code = code
        """The SDK's `response.steer.failed` code (workflows/turn_steps/steering.py)."""


class ResumeRejected(Exception):
    """The workflow refused the tool responses; the message says why."""

    def __init__(self, message: str, conflict: bool) -> None:
        super().__init__(message)
        self.conflict = conflict
        """True when the turn is in the wrong state (409), false when the responses are wrong (400)."""


class TurnGateway(TurnStarter):
    """The API's side of a turn's workflow: starting it (TurnStarter), and delivering to it, reading and ending it."""

    async def submit_tool_responses(self, turn_id: str, responses: list[ToolResponse]) -> int:
        """Deliver the responses; returns the pause mark of the pause they end.

        While a worker is being replaced the update can fail in transit (its workflow task died with
        the worker). That is not a refusal: try again, and only a workflow that is really gone makes
        the turn "not running".
        """
        return await self.submit(turn_id, ToolResponsesSubmission(tool_responses=responses))

    async def submit(self, turn_id: str, submission: ToolResponsesSubmission) -> int:
        """Deliver a whole submission (results, approval decisions, followup input, a new segment's plan);
        returns the pause mark of the pause it ends. Raises as `submit_tool_responses` does."""

        def rejected(cause: ApplicationError) -> Exception:
            return ResumeRejected(cause.message, conflict=cause.type == NOT_AWAITING_INPUT)

        mark: int = await self._update(turn_id, TurnWorkflow.submit_tool_responses, submission, rejected, None)
        return mark

    async def steer(self, turn_id: str, submission: SteerSubmission) -> str:
        """Queue user input for the running turn (its workflow's `steer` update); returns once the workflow has
        recorded it. The steer's id is the update's, so an attempt repeated in transit is taken once. Raises
        SteerRejected when the turn cannot take it, else as `submit` does."""

        def rejected(cause: ApplicationError) -> Exception:
            return SteerRejected(cause.message, cause.type or "steering_not_supported")

        steer_id: str = await self._update(turn_id, TurnWorkflow.steer, submission, rejected, submission.steer_id)
        return steer_id

    async def _update(
        self,
        turn_id: str,
        update: Any,
        argument: Any,
        rejected: Callable[[ApplicationError], Exception],
        update_id: str | None,
    ) -> Any:
        """Run one of the turn's updates. While a worker is being replaced an update can fail in transit (its
        workflow task died with the worker): that is no refusal, so it is tried again, and only a workflow that
        is really gone makes the turn "not running"."""
        handle = self._client.get_workflow_handle_for(TurnWorkflow.run, turn_workflow_id(turn_id))
        for attempt in range(1, UPDATE_ATTEMPTS + 1):
            try:
                return await handle.execute_update(update, argument, id=update_id)
            except WorkflowUpdateFailedError as failed:
                cause = failed.cause
                if not isinstance(cause, ApplicationError):
                    raise
                raise rejected(cause) from failed
            except (RPCError, RPCTimeoutOrCancelledError) as error:
                with contextlib.suppress(RPCError):
                    if not await self.is_running(turn_id):
                        raise TurnNotRunning(turn_id) from error
                log.warning("update of turn %s failed in transit (attempt %d): %s", turn_id, attempt, error)
                await asyncio.sleep(0.5 * attempt)
        raise TurnUnavailable(f"Turn {turn_id}'s workflow did not take the input in time; send it again")

    async def trace_carrier(self, turn_id: str) -> dict[str, str] | None:
        """The trace context the turn's create request recorded, if it was traced."""
        description = await self._client.get_workflow_handle(turn_workflow_id(turn_id)).describe()
        carrier: dict[str, str] | None = await description.memo_value(TRACE_MEMO, None)
        return carrier

    async def wait_closed(self, turn_id: str) -> bool:
        """Wait up to REOPEN_WAIT for the turn's workflow to close, however it ends; false if it has not.

        A turn its last model call completed is in the store a moment before its run has recorded
        that end and closed: a new run of the turn waits for it."""
        handle = self._client.get_workflow_handle(turn_workflow_id(turn_id))
        try:
            await asyncio.wait_for(handle.result(), REOPEN_WAIT.total_seconds())
        except TimeoutError:
            return False
        except WorkflowFailureError:
            pass
        except RPCError as error:
            if error.status != RPCStatusCode.NOT_FOUND:
                raise
        return True

    async def cancel(self, turn_id: str) -> None:
        await self._client.get_workflow_handle(turn_workflow_id(turn_id)).cancel()

    async def terminate(self, turn_id: str, reason: str) -> None:
        """Stop the turn's workflow at once, wherever it is; one that already ended is left as it was.

        For turns whose rows are being deleted: unlike a cancel, it needs no store write to finish.
        """
        try:
            await self._client.get_workflow_handle(turn_workflow_id(turn_id)).terminate(reason=reason)
        except RPCError as error:
            if error.status != RPCStatusCode.NOT_FOUND:
                raise

    async def live_turn(self, stored: Turn) -> Turn:
        """The running workflow's view of the stored turn, or the stored turn if no worker can answer now.

        A query needs a worker; when none is polling (all stopped, or restarting) the store holds
        the turn as of its last saved step. The workflow does not hold the user's messages (they
        can be megabytes): those, and the steps already saved, come from the store.
        """
        handle = self._client.get_workflow_handle_for(TurnWorkflow.run, turn_workflow_id(stored.turn_id))
        try:
            live = await handle.query(TurnWorkflow.turn, rpc_timeout=QUERY_TIMEOUT)
        except RPCError as error:
            log.warning("live view of turn %s unavailable (%s); serving the stored turn", stored.turn_id, error.message)
            return stored
        # Stored steps are the workflow's, written in order; after a continue-as-new the workflow
        # may hold them without their contents (they were too large to carry).
        steps = [*stored.steps, *live.steps[len(stored.steps) :]]
        return live.model_copy(update={"input_messages": stored.input_messages, "steps": steps})

    async def is_running(self, turn_id: str) -> bool:
        return (await self.state(turn_id)).running

    async def state(self, turn_id: str) -> WorkflowState:
        """Whether the turn's workflow runs, and whether its workflow task keeps failing.

        A workflow task that fails (a payload over Temporal's limit, a bug) is retried forever:
        the turn would stay running and its session busy. The first failure is recorded in the
        history; the SDK lets the following attempts time out. A task past STUCK_AFTER_ATTEMPTS
        attempts with a failure since the last completed one is reported with that failure's message.
        Attempts that only timed out (a worker killed mid-task) are not: the next worker resumes them.
        """
        handle = self._client.get_workflow_handle(turn_workflow_id(turn_id))
        try:
            description = await handle.describe()
        except RPCError as error:
            if error.status == RPCStatusCode.NOT_FOUND:
                return WorkflowState(running=False)
            raise
        if description.status != WorkflowExecutionStatus.RUNNING:
            return WorkflowState(running=False)
        if description.raw_description.pending_workflow_task.attempt < STUCK_AFTER_ATTEMPTS:
            return WorkflowState(running=True)
        failure = None
        async for event in handle.fetch_history_events():
            if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
                failure = None
            elif event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED:
                attributes = event.workflow_task_failed_event_attributes
                failure = attributes.failure.message or WorkflowTaskFailedCause.Name(attributes.cause)
        return WorkflowState(running=True, failing=failure)

    async def check_connection(self) -> None:
        await self._client.service_client.check_health()

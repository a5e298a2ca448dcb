"""The API's side of Temporal: start a turn workflow, deliver tool responses, read a live turn."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from temporalio.api.enums.v1 import EventType, WorkflowTaskFailedCause
from temporalio.client import (
    Client,
    RPCTimeoutOrCancelledError,
    WorkflowExecutionStatus,
    WorkflowFailureError,
    WorkflowUpdateFailedError,
)
from temporalio.common import SearchAttributePair, TypedSearchAttributes, WorkflowIDReusePolicy
from temporalio.exceptions import ApplicationError, WorkflowAlreadyStartedError
from temporalio.service import RPCError, RPCStatusCode

from domain.content import ToolResponse
from domain.turns import Turn, TurnStatus
from observability.tracing import current_trace_carrier, turn_context
from workflows.contracts import NOT_AWAITING_INPUT, ToolResponsesSubmission, TurnStart, turn_workflow_id
from workflows.search_attributes import AGENT_ID, RESPONSE_ID, SESSION_ID, TENANT_ID, TURN_STATUS
from workflows.turn import TurnWorkflow

log = logging.getLogger(__name__)

QUERY_TIMEOUT = timedelta(seconds=2)
WORKFLOW_TASK_TIMEOUT = timedelta(seconds=4)
UPDATE_ATTEMPTS = 5
STUCK_AFTER_ATTEMPTS = 3
REOPEN_WAIT = timedelta(seconds=5)
_REOPEN_POLICY = WorkflowIDReusePolicy.ALLOW_DUPLICATE
TRACE_MEMO = "trace"


def _shorten(text: str, limit: int = 120) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass(frozen=True)
class WorkflowState:
    running: bool
    failing: str | None = None
    """Why the running workflow's task keeps failing; None if it does not."""


class TurnNotRunning(Exception):
    """The turn's workflow is gone (finished, or deleted after Temporal's retention)."""


class TurnUnavailable(Exception):
    """The turn's workflow is running but could not be reached just now (a worker is restarting)."""


class ResumeRejected(Exception):
    """The workflow refused the tool responses; the message says why."""

    def __init__(self, message: str, conflict: bool) -> None:
        super().__init__(message)
        self.conflict = conflict
        """True when the turn is in the wrong state (409), false when the responses are wrong (400)."""


class TurnGateway:
    def __init__(self, client: Client, task_queue: str, eager_start: bool = False) -> None:
        self._client = client
        self._task_queue = task_queue
        self._eager_start = eager_start
        """A worker runs on this client: the server may hand it the turn's first task in the start
        call's reply, saving a round trip through the task queue."""

    async def start(
        self,
        start: TurnStart,
        tenant: str,
        summary: str,
        reopening: bool = False,
        extra_attributes: Sequence[SearchAttributePair[Any]] = (),
    ) -> None:
        """Start the turn's workflow; `summary` (the user's message) labels it in Temporal's UI, and
        `reopening` starts a new run of a turn whose workflow has closed.

        The tenant is only a search attribute (operators filter by it): the worker reads a turn's tenant
        from the store, so workflow inputs recorded before tenancy existed still run. With tracing on, the
        workflow carries the request's trace, and its memo the trace context that later requests of the
        turn (resumes) join. `extra_attributes`: more search attributes (a Responses turn's response and
        conversation ids)."""
        with turn_context(start.turn_id, start.session_id, start.agent_id):
            await self._start(start, tenant, summary, reopening, extra_attributes)

    async def _start(
        self,
        start: TurnStart,
        tenant: str,
        summary: str,
        reopening: bool,
        extra_attributes: Sequence[SearchAttributePair[Any]],
    ) -> None:
        trace = current_trace_carrier()
        owners: list[SearchAttributePair[Any]] = [
            *([SearchAttributePair(AGENT_ID, start.agent_id)] if start.agent_id is not None else []),
            *([SearchAttributePair(SESSION_ID, start.session_id)] if start.session_id is not None else []),
            # A resumed segment adds its id to the list (workflows/turn.py).
            *([SearchAttributePair(RESPONSE_ID, [start.segment_id])] if start.segment_id is not None else []),
        ]
        details = f"**Turn:** `{start.turn_id}`  \n**Model:** `{start.turn_plan().model}`"
        if start.agent_id is not None:
            details = f"**Agent:** `{start.agent_id}`  \n**Session:** `{start.session_id}`  \n" + details
        await self._client.start_workflow(
            TurnWorkflow.run,
            start,
            id=turn_workflow_id(start.turn_id),
            task_queue=self._task_queue,
            id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE
            if reopening
            else WorkflowIDReusePolicy.REJECT_DUPLICATE,
            # A task handed to a worker that was just killed is retried elsewhere after this long
            # (the default is 10 s); our workflow tasks take milliseconds.
            task_timeout=WORKFLOW_TASK_TIMEOUT,
            request_eager_start=self._eager_start,
            search_attributes=TypedSearchAttributes(
                [
                    *owners,
                    SearchAttributePair(TURN_STATUS, TurnStatus.RUNNING.value),
                    SearchAttributePair(TENANT_ID, tenant),
                    *extra_attributes,
                ]
            ),
            memo={TRACE_MEMO: trace} if trace else None,
            static_summary=_shorten(summary),
            static_details=details,
        )

    async def start_once(
        self, start: TurnStart, tenant: str, summary: str, extra_attributes: Sequence[SearchAttributePair[Any]] = ()
    ) -> bool:
        """Start the turn's first workflow unless one with its id exists or existed; true if this call did.

        The id is the turn's, so whoever comes second — a retried create, the sweep of turns a crash
        left unstarted, the first request itself — finds the workflow there and starts nothing.
        """
        try:
            await self.start(start, tenant, summary, extra_attributes=extra_attributes)
        except WorkflowAlreadyStartedError:
            return False
        return True

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
        handle = self._client.get_workflow_handle_for(TurnWorkflow.run, turn_workflow_id(turn_id))
        for attempt in range(1, UPDATE_ATTEMPTS + 1):
            try:
                return await handle.execute_update(TurnWorkflow.submit_tool_responses, submission)
            except WorkflowUpdateFailedError as failed:
                cause = failed.cause
                if not isinstance(cause, ApplicationError):
                    raise
                raise ResumeRejected(cause.message, conflict=cause.type == NOT_AWAITING_INPUT) from failed
            except (RPCError, RPCTimeoutOrCancelledError) as error:
                with contextlib.suppress(RPCError):
                    if not await self.is_running(turn_id):
                        raise TurnNotRunning(turn_id) from error
                log.warning("update of turn %s failed in transit (attempt %d): %s", turn_id, attempt, error)
                await asyncio.sleep(0.5 * attempt)
        raise TurnUnavailable(f"Turn {turn_id}'s workflow did not take the tool results in time; send them again")

    async def trace_carrier(self, turn_id: str) -> dict[str, str] | None:
        """The trace context the turn's create request recorded, if it was traced."""
        description = await self._client.get_workflow_handle(turn_workflow_id(turn_id)).describe()
        return await description.memo_value(TRACE_MEMO, None)

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

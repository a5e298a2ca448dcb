"""Starting a turn's workflow: for every dialect's routes (through api/turn_gateway.py, which adds the rest of
the API's side of a turn) and for a worker's activity that starts turns itself (an automation's delivery)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from temporalio.client import Client
from temporalio.common import SearchAttributePair, TypedSearchAttributes, WorkflowIDReusePolicy
from temporalio.exceptions import WorkflowAlreadyStartedError

from domain.turns import TurnStatus
from observability.tracing import current_trace_carrier, turn_context
from workflows.contracts import TurnStart, turn_workflow_id
from workflows.search_attributes import AGENT_ID, RESPONSE_ID, SESSION_ID, TENANT_ID, TURN_STATUS
from workflows.turn import TurnWorkflow

WORKFLOW_TASK_TIMEOUT = timedelta(seconds=4)
TRACE_MEMO = "trace"


def _shorten(text: str, limit: int = 120) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


class TurnStarter:
    def __init__(self, client: Client, task_queue: str, eager_start: bool = False) -> None:
        self._client = client
        self._task_queue = task_queue
        self._eager_start = eager_start
        """A worker runs on this client: the server may hand it the turn's first task in the start
        call's reply, saving a round trip through the task queue."""

    @property
    def client(self) -> Client:
        """The Temporal client, for workflows other than turns (compactions)."""
        return self._client

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

"""Starting and cancelling ingestion workflows, for the API (both dialects) that attaches files, and reading how
one ended, for the sweep."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable

from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.common import WorkflowIDConflictPolicy, WorkflowIDReusePolicy
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.service import RPCError, RPCStatusCode

from workflows.ingestion import IngestFile, IngestFileWorkflow, workflow_id

Run = tuple[str, str | None]
"""(file id, ingestion id) of an attachment: which run ingests it."""


class IngestionStarter:
    def __init__(self, client: Client, task_queue: str) -> None:
        self._client = client
        self._task_queue = task_queue

    async def start(self, vector_store_id: str, runs: Iterable[Run]) -> None:
        for file_id, ingestion_id in runs:
            # Each attachment has its own run: one started already (a retried request) is left to finish.
            await self._client.start_workflow(
                IngestFileWorkflow.run,
                IngestFile(vector_store_id, file_id, ingestion_id),
                id=workflow_id(vector_store_id, file_id, ingestion_id),
                task_queue=self._task_queue,
                id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
            )

    async def start_once(self, vector_store_id: str, file_id: str, ingestion_id: str | None) -> bool:
        """Start the attachment's ingestion unless its workflow runs or ran (within Temporal's retention); true if
        this call did. For the sweep: whoever comes second starts nothing, and an attachment whose ingestion ended
        is never ingested again."""
        try:
            await self._client.start_workflow(
                IngestFileWorkflow.run,
                IngestFile(vector_store_id, file_id, ingestion_id),
                id=workflow_id(vector_store_id, file_id, ingestion_id),
                task_queue=self._task_queue,
                id_conflict_policy=WorkflowIDConflictPolicy.FAIL,
                id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
            )
        except WorkflowAlreadyStartedError:
            return False
        return True

    async def ended(self, vector_store_id: str, file_id: str, ingestion_id: str | None) -> str | None:
        """How the attachment's run ended ("terminated", "timed_out", …); None while it runs, or if Temporal
        has no such run."""
        handle = self._client.get_workflow_handle(workflow_id(vector_store_id, file_id, ingestion_id))
        try:
            status = (await handle.describe()).status
        except RPCError as failed:
            if failed.status == RPCStatusCode.NOT_FOUND:
                return None
            raise
        if status is None or status == WorkflowExecutionStatus.RUNNING:
            return None
        return status.name.lower()

    async def cancel_one(self, vector_store_id: str, file_id: str, ingestion_id: str | None) -> bool:
        """Cancel the attachment's ingestion; false if it has no running workflow."""
        try:
            await self._client.get_workflow_handle(workflow_id(vector_store_id, file_id, ingestion_id)).cancel()
        except RPCError as failed:
            if failed.status == RPCStatusCode.NOT_FOUND:
                return False
            raise
        return True

    async def cancel(self, vector_store_id: str, runs: Iterable[Run]) -> None:
        for file_id, ingestion_id in runs:
            with contextlib.suppress(RPCError):  # finished meanwhile: nothing to cancel
                await self._client.get_workflow_handle(workflow_id(vector_store_id, file_id, ingestion_id)).cancel()

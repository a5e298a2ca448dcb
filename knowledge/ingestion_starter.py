"""Starting and cancelling ingestion workflows, for the API (both dialects) that attaches files."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable

from temporalio.client import Client
from temporalio.common import WorkflowIDConflictPolicy, WorkflowIDReusePolicy
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.service import RPCError, RPCStatusCode

from workflows.ingestion import IngestFile, IngestFileWorkflow, workflow_id


class IngestionStarter:
    def __init__(self, client: Client, task_queue: str) -> None:
        self._client = client
        self._task_queue = task_queue

    async def start(self, vector_store_id: str, file_ids: Iterable[str]) -> None:
        for file_id in file_ids:
            # Attaching a file again while it is ingested restarts its ingestion from the start.
            await self._client.start_workflow(
                IngestFileWorkflow.run,
                IngestFile(vector_store_id, file_id),
                id=workflow_id(vector_store_id, file_id),
                task_queue=self._task_queue,
                id_conflict_policy=WorkflowIDConflictPolicy.TERMINATE_EXISTING,
            )

    async def start_once(self, vector_store_id: str, file_id: str) -> bool:
        """Start the file's ingestion unless a workflow of its id runs or ran (within Temporal's retention);
        true if this call did. For the sweep: whoever comes second starts nothing, and a file whose ingestion
        ended is never ingested again."""
        try:
            await self._client.start_workflow(
                IngestFileWorkflow.run,
                IngestFile(vector_store_id, file_id),
                id=workflow_id(vector_store_id, file_id),
                task_queue=self._task_queue,
                id_conflict_policy=WorkflowIDConflictPolicy.FAIL,
                id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
            )
        except WorkflowAlreadyStartedError:
            return False
        return True

    async def cancel_one(self, vector_store_id: str, file_id: str) -> bool:
        """Cancel the file's ingestion; false if it has no running workflow."""
        try:
            await self._client.get_workflow_handle(workflow_id(vector_store_id, file_id)).cancel()
        except RPCError as failed:
            if failed.status == RPCStatusCode.NOT_FOUND:
                return False
            raise
        return True

    async def cancel(self, vector_store_id: str, file_ids: Iterable[str]) -> None:
        for file_id in file_ids:
            with contextlib.suppress(RPCError):  # finished meanwhile: nothing to cancel
                await self._client.get_workflow_handle(workflow_id(vector_store_id, file_id)).cancel()

"""Starting and cancelling ingestion workflows, for the API (both dialects) that attaches files."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable

from temporalio.client import Client
from temporalio.common import WorkflowIDConflictPolicy
from temporalio.service import RPCError

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

    async def cancel(self, vector_store_id: str, file_ids: Iterable[str]) -> None:
        for file_id in file_ids:
            with contextlib.suppress(RPCError):  # finished meanwhile: nothing to cancel
                await self._client.get_workflow_handle(workflow_id(vector_store_id, file_id)).cancel()

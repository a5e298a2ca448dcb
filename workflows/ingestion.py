"""`IngestFile`: one file attached to a vector store, read, chunked, embedded and indexed, durably.

Its id names the vector store, the file and the attachment (`ingest-<vector store id>-<file id>-<ingestion id>`),
so the Temporal UI finds it by either, and attaching the file again starts a run of its own: a run that outlives
its attachment finds it gone at its next write and ends writing nothing (files attached by an earlier release
have no ingestion id, and their runs the id without it).

The steps are activities (activities/ingestion.py): `chunk_file` writes the file's chunks to the store (with
the built-in embedding model, embedded and indexed batch by batch as they are written); `embed_chunks` embeds
and indexes the chunks not yet indexed, batch by batch, each batch in one transaction, and says how many it
did; the workflow calls it until none are left; `finish_file` records the outcome. No payload carries the
file's bytes or its vectors: only ids and counts cross Temporal. A crash of any process repeats at most the
batch that was in flight, and a repeated batch writes nothing twice, so the file ends with the chunks of an
uninterrupted run. A run that ends without recording an outcome (terminated by an operator, say) leaves the
file in progress until the sweep (knowledge/ingestion_sweep.py) marks it `failed`.

A file that cannot be read (empty, corrupt, binary, over a limit) fails at once with the reason; an embedding
model that keeps failing fails the file after a few minutes of retries; cancelling the workflow (a cancelled
file batch) stops it between batches and marks the file `cancelled`. Each ends with no chunks of the file kept.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError, is_cancelled_exception

CHUNK_FILE_ACTIVITY = "chunk_file"
EMBED_CHUNKS_ACTIVITY = "embed_chunks"
FINISH_FILE_ACTIVITY = "finish_file"
UNREADABLE_FILE_ERRORS = ["invalid_file", "unsupported_file"]
"""ApplicationError types of a file that no retry can read: its `last_error.code` is this type."""
FILE_DETACHED = "file_detached"
"""The file left the vector store (or the store was deleted) while it was being ingested: nothing to record."""
HEARTBEAT = timedelta(seconds=30)
"""A worker killed mid-activity is noticed after this long, and the activity runs again elsewhere."""

_NO_RETRY = [*UNREADABLE_FILE_ERRORS, FILE_DETACHED]
_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=1),
    backoff_coefficient=2.0,
    maximum_interval=timedelta(seconds=30),
    maximum_attempts=10,
    non_retryable_error_types=_NO_RETRY,
)


@dataclass(frozen=True)
class IngestFile:
    vector_store_id: str
    file_id: str
    ingestion_id: str | None = None


@dataclass(frozen=True)
class FileOutcome:
    vector_store_id: str
    file_id: str
    status: str
    last_error: dict[str, Any] | None = None
    ingestion_id: str | None = None


def workflow_id(vector_store_id: str, file_id: str, ingestion_id: str | None) -> str:
    return f"ingest-{vector_store_id}-{file_id}" + (f"-{ingestion_id}" if ingestion_id else "")


def _last_error(failure: ActivityError) -> dict[str, str] | None:
    """`last_error` for the file, or None when the file was detached (nothing left to record)."""
    cause = failure.cause
    if isinstance(cause, ApplicationError):
        if cause.type == FILE_DETACHED:
            return None
        if cause.type in UNREADABLE_FILE_ERRORS:
            return {"code": cause.type, "message": cause.message}
        reason = cause.message
    else:
        reason = str(cause or failure)
    return {
        "code": "server_error",
        "message": f"Ingestion failed after retries: {reason}. Check the embedding model, then attach the file again.",
    }


@workflow.defn(name="IngestFile")
class IngestFileWorkflow:
    @workflow.run
    async def run(self, file: IngestFile) -> str:
        outcome = FileOutcome(file.vector_store_id, file.file_id, "completed", None, file.ingestion_id)
        try:
            await workflow.execute_activity(
                CHUNK_FILE_ACTIVITY,
                file,
                start_to_close_timeout=timedelta(minutes=30),
                heartbeat_timeout=HEARTBEAT,
                retry_policy=_RETRY,
                result_type=int,
            )
            while await workflow.execute_activity(
                EMBED_CHUNKS_ACTIVITY,
                file,
                start_to_close_timeout=timedelta(minutes=10),
                heartbeat_timeout=HEARTBEAT,
                retry_policy=_RETRY,
                result_type=int,
            ):
                pass
        except ActivityError as failure:
            if is_cancelled_exception(failure):
                outcome = FileOutcome(file.vector_store_id, file.file_id, "cancelled", None, file.ingestion_id)
                return await self._finish(outcome)
            last_error = _last_error(failure)
            if last_error is None:
                return "detached"
            outcome = FileOutcome(file.vector_store_id, file.file_id, "failed", last_error, file.ingestion_id)
        except asyncio.CancelledError:
            outcome = FileOutcome(file.vector_store_id, file.file_id, "cancelled", None, file.ingestion_id)
        return await self._finish(outcome)

    async def _finish(self, outcome: FileOutcome) -> str:
        await workflow.execute_activity(
            FINISH_FILE_ACTIVITY,
            outcome,
            start_to_close_timeout=timedelta(minutes=1),
            retry_policy=RetryPolicy(maximum_interval=timedelta(seconds=30)),
        )
        return outcome.status

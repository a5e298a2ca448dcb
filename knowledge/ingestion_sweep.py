"""The sweep of ingestions that cannot finish: a crash between attaching a file (its row `in_progress`) and
starting its workflow, or a workflow that ended without recording an outcome (terminated by an operator, timed
out), must not leave the file in progress forever.

Every API process runs it, at start and then periodically; they may overlap safely, because an attachment's
workflow id is its own (`ingest-<vector store>-<file>-<ingestion id>`) and the sweep starts it only if no
workflow of that id runs or ran: a second start starts nothing, and an attachment whose ingestion ended is never
ingested again — if it ended and the file is still in progress, the file is marked `failed` with the reason. A
file of a cancelled batch is cancelled, not started.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime, timedelta

from knowledge.ingestion_starter import IngestionStarter
from store.knowledge.records import PendingIngestion
from store.knowledge.vector_stores import VectorStores

log = logging.getLogger(__name__)

SWEEP_BATCH = 100
"""Files looked at per sweep; the rest wait for the next one."""


async def start_unstarted_ingestions(
    stores: VectorStores, starter: IngestionStarter, older_than: timedelta
) -> list[tuple[str, str]]:
    """Start the ingestion of each file in progress for longer than `older_than` that has no workflow, and fail
    each whose workflow ended without recording an outcome; the (vector store, file) ids started. A row that
    cannot be handled is logged and left for the next sweep: it never stops the rows after it."""
    started: list[tuple[str, str]] = []
    for pending in await stores.in_progress_since(datetime.now(UTC) - older_than, SWEEP_BATCH):
        try:
            if await _sweep_one(stores, starter, pending):
                started.append((pending.vector_store_id, pending.file_id))
        except Exception:
            log.exception(
                "the sweep could not handle file %s of vector store %s; trying the rest",
                pending.file_id,
                pending.vector_store_id,
            )
    return started


async def _sweep_one(stores: VectorStores, starter: IngestionStarter, pending: PendingIngestion) -> bool:
    """Whether the file's ingestion was started."""
    ids = (pending.vector_store_id, pending.file_id)
    run = (*ids, pending.ingestion_id)
    if pending.store_gone:
        if await stores.drop_orphan(*ids):
            log.warning("removed file %s's attachment to vector store %s, which is gone", ids[1], ids[0])
        return False
    if pending.batch_cancelled:
        # Its batch was cancelled: a running ingestion is asked to stop (and records `cancelled`); a file
        # with none, because the API died before starting or cancelling it, is marked cancelled here.
        if not await starter.cancel_one(*run) and await stores.cancel_unstarted(*ids):
            log.warning("cancelled file %s of vector store %s: its batch was cancelled", ids[1], ids[0])
        return False
    if not await starter.start_once(*run):
        ended = await starter.ended(*run)
        if ended is not None and await stores.fail_ended(*run, _ended_error(ended)):
            log.warning("failed file %s of vector store %s: its ingestion workflow %s", ids[1], ids[0], ended)
        return False
    log.warning(
        "started the ingestion of file %s into vector store %s: the process that attached it died first",
        ids[1],
        ids[0],
    )
    # The batch may have been cancelled after the read above and before the start: its cancel found
    # no workflow to stop, so this one is stopped here.
    if await stores.batch_cancelled(*ids):
        await starter.cancel_one(*run)
    return True


def _ended_error(ended: str) -> dict[str, str]:
    return {
        "code": "server_error",
        "message": f"The file's ingestion workflow ended ({ended.replace('_', ' ')}) without finishing the file; "
        "attach the file again to ingest it.",
    }


async def sweep_forever(stores: VectorStores, starter: IngestionStarter, every: timedelta) -> None:
    """Sweep at once, then every `every`, for files at least that old; a failed sweep is logged and tried again."""
    while True:
        try:
            await start_unstarted_ingestions(stores, starter, every)
        except Exception:
            log.exception("the sweep of unstarted ingestions failed; trying again in %s", every)
        await asyncio.sleep(every.total_seconds())

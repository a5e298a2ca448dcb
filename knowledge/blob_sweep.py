"""The sweep of file bytes no file row owns: an upload's bytes are written before its row (a PostgreSQL store's
parts are committed as they arrive; a directory store's `.partial` file grows), so a crash mid-upload, or
between the bytes and the row, leaves bytes nothing reaches. Each API process sweeps at its start and then every
hour, for bytes at least an hour old: an upload under way writes newer ones, and is left alone.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime, timedelta

from knowledge.blobs import BlobStore
from store.knowledge.files import FileStore

log = logging.getLogger(__name__)

UNOWNED_AFTER = timedelta(hours=1)
SWEEP_BATCH = 100


async def remove_unowned_blobs(blobs: BlobStore, files: FileStore, older_than: timedelta = UNOWNED_AFTER) -> int:
    """Delete the bytes of up to a batch of files no row owns, written longer than `older_than` ago; how many."""
    removed = 0
    for file_id in await blobs.unowned(files.existing, datetime.now(UTC) - older_than, SWEEP_BATCH):
        try:
            await blobs.delete(file_id)
            removed += 1
        except Exception:
            log.exception("could not remove the unowned bytes of %s; trying the rest", file_id)
    if removed:
        log.warning("removed the bytes of %d files no file row owns (uploads a crash cut short)", removed)
    return removed


async def sweep_forever(blobs: BlobStore, files: FileStore) -> None:
    while True:
        try:
            while await remove_unowned_blobs(blobs, files) == SWEEP_BATCH:
                pass
        except Exception:
            log.exception("the sweep of unowned file bytes failed; trying again in %s", UNOWNED_AFTER)
        await asyncio.sleep(UNOWNED_AFTER.total_seconds())

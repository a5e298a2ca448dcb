"""Deleting a session or an agent also stops its unfinished turns' workflows, so nothing outlives its rows.

Workflows are terminated, not cancelled: a cancelled turn records its end in the store, and its rows are
going. The known ones are stopped before the rows are deleted, so that when Temporal cannot be reached
nothing is deleted and the caller can retry; any turn that began in between is returned by the delete
itself and stopped after it. A model call still in flight afterwards cannot write anything back: the
store refuses progress for a turn whose row is gone.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Collection

from fastapi import HTTPException
from temporalio.service import RPCError

from api.services import Services

log = logging.getLogger(__name__)


async def delete_with_turns(
    services: Services,
    what: str,
    unfinished: Collection[str],
    delete: Callable[[], Awaitable[list[str] | None]],
) -> bool:
    """Stop `unfinished` turns' workflows, run `delete`, then stop any it reports besides; false if nothing was found.

    `what` names the deleted thing in the workflows' termination reason, e.g. "Session 1234".
    """
    reason = f"{what} was deleted."
    await _terminate(services, unfinished, reason, "nothing was deleted; retry")
    still_unfinished = await delete()
    if still_unfinished is None:
        return False
    late = set(still_unfinished) - set(unfinished)
    await _terminate(services, late, reason, "the rows are deleted anyway; a running turn ends at its next store write")
    return True


async def _terminate(services: Services, turn_ids: Collection[str], reason: str, consequence: str) -> None:
    try:
        await asyncio.gather(*(services.turns.terminate(turn_id, reason) for turn_id in turn_ids))
    except RPCError as error:
        log.warning("stopping the workflows of turns %s failed: %s", sorted(turn_ids), error.message)
        raise HTTPException(
            503, f"Could not stop the workflows of turns {sorted(turn_ids)} (Temporal unavailable); {consequence}."
        ) from error

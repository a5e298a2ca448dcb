"""The sweep of unstarted turns: a crash between recording a turn and starting its workflow must not
lose the turn, even when its client never retries. The same sweep deletes what `store: false` responses
leave once their turn has ended.

Every API process runs it; they may overlap safely, because a turn's workflow id is the turn's
(`turn-<turn_id>`) and a second start of it starts nothing, and a deletion that finds nothing does nothing.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime, timedelta

from api.services import Services
from api.turns.agent_turn_start import turn_start, workflow_summary

log = logging.getLogger(__name__)

SWEEP_BATCH = 100
"""Turns looked at per sweep; the rest wait for the next one."""
UNSTORED_GRACE = timedelta(seconds=30)
"""How long a `store: false` response's rows outlive its turn's end: a blocking create or a live stream
may still be reading its last events."""


async def start_unstarted_turns(services: Services, older_than: timedelta) -> list[str]:
    """Start the workflow of each running turn older than `older_than` that has none; their ids.

    A turn still in its first model call has a workflow: starting it again is refused by Temporal
    and nothing happens. Only turns recorded before a crash and never started are started.
    """
    started: list[str] = []
    candidates = await services.store.turns.unstarted_turns(datetime.now(UTC) - older_than, SWEEP_BATCH)
    for candidate in candidates:
        if candidate.agent_id is None:
            await _fail_if_unstarted(services, candidate.turn.turn_id)
            continue
        agent = await services.store.turns.get_agent(candidate.tenant, candidate.agent_id)
        if agent is None:  # deleted meanwhile, with its sessions and turns
            continue
        turn = candidate.turn
        # URL documents are not stored: a swept turn goes without them (a retried create has them).
        start = turn_start(services, agent, turn, candidate.tools, [])
        if await services.turns.start_once(start, candidate.tenant, workflow_summary(turn.input_messages)):
            log.warning("started turn %s's workflow: the process that recorded the turn died first", turn.turn_id)
            started.append(turn.turn_id)
    return started


async def _fail_if_unstarted(services: Services, turn_id: str) -> None:
    """A detached turn (a response) cannot be started from its row: its plan (tools, MCP servers) is not
    stored. One whose workflow never started fails, so that its caller learns to create it again."""
    if await services.turns.is_running(turn_id):
        return
    reason = "Its workflow was never started (the API process that recorded it stopped first); create it again."
    await services.store.turns.abandon_turn(turn_id, reason)
    log.warning("failed turn %s: %s", turn_id, reason)


async def delete_unstored_responses(services: Services, ended_before: datetime) -> list[str]:
    """Delete the `store: false` responses whose turn ended (completed, failed, cancelled or expired; a paused
    one may still be resumed by a stateless replay) before `ended_before`, with their turn's steps, events,
    settings and row unless a stored response of the same turn still needs them; the turns deleted.

    A response in a conversation goes once its items are appended there: the conversation is settled first.
    Whatever a crash interrupts, the next sweep finds again: the rows are the record of what is left to do."""
    responses = services.store.responses
    deleted: list[str] = []
    for found in await responses.unstored_ended(ended_before, SWEEP_BATCH):
        if found.conversation_id is not None and not found.appended_to_conversation:
            await services.settle_conversation(services, found.tenant_id, found.conversation_id)
        if await responses.forget_unstored(found.turn_id) and await services.store.turns.delete_detached_turn(
            found.tenant_id, found.turn_id
        ):
            deleted.append(found.turn_id)
    return deleted


async def sweep_forever(services: Services, every: timedelta) -> None:
    """Sweep every `every`, for turns at least that old; a failed sweep is logged and tried again."""
    while True:
        await asyncio.sleep(every.total_seconds())
        try:
            await start_unstarted_turns(services, every)
            await delete_unstored_responses(services, datetime.now(UTC) - UNSTORED_GRACE)
        except Exception:
            log.exception("the sweep (unstarted turns, ended store:false responses) failed; trying again in %s", every)

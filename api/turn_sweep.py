"""The sweep of unstarted turns: a crash between recording a turn and starting its workflow must not
lose the turn, even when its client never retries.

Every API process runs it; they may overlap safely, because a turn's workflow id is the turn's
(`turn-<turn_id>`) and a second start of it starts nothing.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime, timedelta

from api.llama_stack.turn_starter import turn_start, workflow_summary
from api.runtime import Runtime

log = logging.getLogger(__name__)

SWEEP_BATCH = 100
"""Turns looked at per sweep; the rest wait for the next one."""


async def start_unstarted_turns(runtime: Runtime, older_than: timedelta) -> list[str]:
    """Start the workflow of each running turn older than `older_than` that has none; their ids.

    A turn still in its first model call has a workflow: starting it again is refused by Temporal
    and nothing happens. Only turns recorded before a crash and never started are started.
    """
    started: list[str] = []
    candidates = await runtime.store.unstarted_turns(datetime.now(UTC) - older_than, SWEEP_BATCH)
    for candidate in candidates:
        if candidate.agent_id is None:
            await _fail_if_unstarted(runtime, candidate.turn.turn_id)
            continue
        agent = await runtime.store.get_agent(candidate.tenant, candidate.agent_id)
        if agent is None:  # deleted meanwhile, with its sessions and turns
            continue
        turn = candidate.turn
        # URL documents are not stored: a swept turn goes without them (a retried create has them).
        start = turn_start(runtime, agent, turn, candidate.tools, [])
        if await runtime.turns.start_once(start, candidate.tenant, workflow_summary(turn.input_messages)):
            log.warning("started turn %s's workflow: the process that recorded the turn died first", turn.turn_id)
            started.append(turn.turn_id)
    return started


async def _fail_if_unstarted(runtime: Runtime, turn_id: str) -> None:
    """A detached turn (a response) cannot be started from its row: its plan (tools, MCP servers) is not
    stored. One whose workflow never started fails, so that its caller learns to create it again."""
    if await runtime.turns.is_running(turn_id):
        return
    reason = "Its workflow was never started (the API process that recorded it stopped first); create it again."
    await runtime.store.abandon_turn(turn_id, reason)
    log.warning("failed turn %s: %s", turn_id, reason)


async def sweep_forever(runtime: Runtime, every: timedelta) -> None:
    """Sweep every `every`, for turns at least that old; a failed sweep is logged and tried again."""
    while True:
        await asyncio.sleep(every.total_seconds())
        try:
            await start_unstarted_turns(runtime, every)
        except Exception:
            log.exception("the sweep of unstarted turns failed; trying again in %s", every)

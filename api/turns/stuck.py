"""Ending turns whose workflow task keeps failing, so they fail visibly instead of running forever.

Payloads are kept under Temporal's limits by design (references, limits at the door, checks in
the workflow), but a workflow task can still fail for a reason nobody foresaw, and Temporal then
retries it forever: the turn would stay `running` and its session refuse every new turn (409).
The API notices where it already asks whether a turn's workflow runs — when a new turn meets the
session's active one, and when a followed stream has been quiet for a while — terminates the
workflow and fails the turn with the task's failure as the reason.
"""

from __future__ import annotations

import logging

from api.services import Services

log = logging.getLogger(__name__)


async def still_running(services: Services, turn_id: str) -> bool:
    """Whether the turn's workflow still runs; a stuck one is ended first (its error event follows)."""
    state = await services.turns.state(turn_id)
    if state.failing is None:
        return state.running
    await fail_stuck_turn(services, turn_id, state.failing)
    return False


async def fail_stuck_turn(services: Services, turn_id: str, failure: str) -> None:
    reason = f"Its workflow task kept failing ({failure}); the turn was stopped so that its session can go on."
    log.error("turn %s: %s", turn_id, reason)
    await services.turns.terminate(turn_id, reason)
    await services.store.turns.abandon_turn(turn_id, reason)

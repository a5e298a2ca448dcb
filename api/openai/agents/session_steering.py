"""`agent.session.input.message` during an active turn: the message steers that turn.

The input goes to the turn's workflow through the same `steer` update as a Responses WebSocket's `response.steer`
(workflows/turn_steps/steering.py), without a segment of its own: the 202 is sent only once the workflow has
recorded it, so it survives a crash of the API process or of the worker, and the model reads it once, at the turn's
next safe boundary (after the model call in flight, where the turn would end or before its next model call). The
session's events then show it as a user `message` item (`agent.session.turn.item.added`).

Where it cannot apply — the turn waits for function results or MCP approvals, is ending, or was started by an
earlier release — the post is refused with 409 `active_turn_not_steerable`, the code the SDK's types give for a
session that cannot take more input while a request runs, and nothing is kept. An Idempotency-Key names the steer:
an attempt repeated in transit is taken once by the workflow.
"""

from __future__ import annotations

import hashlib

from agent_sessions.refusals import SessionRefused
from agent_sessions.session_turns import new_id
from api.services import Services
from api.turn_gateway import SteerRejected, TurnNotRunning, TurnUnavailable
from domain.content import InputMessage, UserMessage
from domain.turns import TurnStatus
from store.agent_sessions.sessions import BetaSessionRecord
from workflows.contracts import SteerSubmission

NOT_STEERABLE = "active_turn_not_steerable"


def not_steerable(session_id: str, why: str) -> SessionRefused:
    return SessionRefused(
        409,
        f"Session {session_id}'s active turn cannot take this message now: {why}. Send it once the session is "
        "idle (or cancel the turn with an agent.session.input.cancel event).",
        "events",
        NOT_STEERABLE,
    )


def _steer_id(record: BetaSessionRecord, idempotency_key: str | None, index: int) -> str:
    if idempotency_key is None:
        return new_id("steer")
    key = f"{record.tenant_id}\0{record.session_id}\0{idempotency_key}\0{index}"
    return "steer_" + hashlib.sha256(key.encode()).hexdigest()[:32]


async def steer_active_turn(
    services: Services,
    record: BetaSessionRecord,
    messages: list[InputMessage],
    idempotency_key: str | None,
    index: int,
) -> None:
    """Hand the session's active turn these messages (the post's event `index`); returns once its workflow holds
    them."""
    session_id = record.session_id
    fresh = await services.store.agent_sessions.session(record.tenant_id, session_id)
    turn_id = fresh.current_turn_id if fresh is not None else None
    status = await services.store.turns.turn_status(turn_id) if turn_id is not None else None
    if turn_id is None or status is None or status.is_final:
        raise not_steerable(session_id, "its turn is ending")
    if status == TurnStatus.AWAITING_INPUT:
        raise not_steerable(session_id, "the turn waits for function call results or MCP approvals")
    submission = SteerSubmission(
        steer_id=_steer_id(record, idempotency_key, index),
        segment_id=None,
        messages=[message for message in messages if isinstance(message, UserMessage)],
    )
    try:
        await services.turns.steer(turn_id, submission)
    except SteerRejected as refused:
        raise not_steerable(session_id, str(refused)) from refused
    except TurnNotRunning as gone:
        raise not_steerable(session_id, "its turn is ending") from gone
    except TurnUnavailable as unavailable:
        raise SessionRefused(503, str(unavailable)) from unavailable

"""What a GET shows of a session and its turns: the session object, its status and required actions, and
each turn with its items — all replayed from the turns' stored events by the same renderer the streams use,
so a stream ends with exactly what a GET shows."""

from __future__ import annotations

from typing import Any

from api.openai.agents.mcp_tools import shown_tools
from api.openai.agents.session_events import SessionObject, TurnEvents
from api.openai.agents.spend_control import with_spend
from api.openai.agents.wire import timestamp
from api.services import Services
from domain.content import content_as_text
from domain.turns import TurnStatus
from store.agent_sessions.sessions import BetaSessionRecord, SessionTurnRecord

_SESSION_STATUS = {
    "queued": "in_progress",
    "in_progress": "in_progress",
    "waiting": "requires_action",
    "completed": "idle",
    "cancelled": "idle",
    "failed": "failed",
}
_STORED_TURN_STATUS = {
    TurnStatus.RUNNING: "in_progress",
    TurnStatus.AWAITING_INPUT: "waiting",
    TurnStatus.COMPLETED: "completed",
    TurnStatus.CANCELLED: "cancelled",
    TurnStatus.FAILED: "failed",
    TurnStatus.EXPIRED: "failed",
}


def session_object(
    record: BetaSessionRecord, status: str, required_actions: list[dict[str, Any]], error: str | None
) -> dict[str, Any]:
    body = record.body
    spend = body.get("spend_control") or {}
    return {
        "id": record.session_id,
        "object": "agent.session",
        "agent": body["agent"] | {"tools": shown_tools(body["agent"].get("tools") or [])},
        "created_at": timestamp(record.created_at),
        "last_active_at": timestamp(record.last_active_at),
        "environment": body.get("environment") or {"type": "none"},
        "status": status,
        "required_actions": required_actions,
        "error": error,
        "metadata": body.get("metadata") or {},
        "usage": None,
        "vault_ids": body.get("vault_ids") or [],
        "spend_control": {"limit": spend.get("limit"), "consumed": spend.get("consumed")},
        **({"prompt_cache_options": body["prompt_cache_options"]} if body.get("prompt_cache_options") else {}),
    }


def session_objects(record: BetaSessionRecord) -> SessionObject:
    return lambda status, actions, error: session_object(record, status, actions, error)


def turn_renderer(record: BetaSessionRecord, turn: SessionTurnRecord, skip_through: int = -1) -> TurnEvents:
    return TurnEvents(
        session_id=record.session_id,
        turn_id=turn.turn_id,
        agent_id=record.body["agent"]["id"],
        created_at=turn.created_at,
        session=session_objects(record),
        skip_through=skip_through,
    )


async def replayed(services: Services, record: BetaSessionRecord, turn: SessionTurnRecord) -> TurnEvents:
    """The turn's renderer after every event stored so far; its status corrected by the stored one when the
    turn ended without a final event (abandoned before its workflow ran)."""
    renderer = turn_renderer(record, turn)
    renderer.open()
    events = await services.store.turns.events_with_key_prefix(turn.turn_id, "")
    stored = await services.store.turns.turn_status(turn.turn_id)
    for event in events:
        renderer.feed(event.body, stored if "error" in event.body else None)
    if stored is None:  # its rows are gone (deleted with its session, or erased): nothing runs
        renderer.status = "completed"
    elif not renderer.finished and stored.is_final:
        renderer.status = _STORED_TURN_STATUS[stored]
        if renderer.status == "failed":
            found = await services.store.turns.get_turn(None, turn.turn_id)
            message = (found.error if found is not None else None) or "The turn failed."
            renderer.error = {"code": "server_error", "message": message}
    return renderer


async def session_view(services: Services, record: BetaSessionRecord) -> dict[str, Any]:
    """The session as a GET shows it, with its spend (a held turn's session is `in_progress`: its status is one
    the SDK's types know; `spend_control` says the limit is reached)."""
    shown = await _session_of_turns(services, record)
    return with_spend(shown, await services.store.spend.state(record.session_id))


async def _session_of_turns(services: Services, record: BetaSessionRecord) -> dict[str, Any]:
    """The session as its latest turn has it: its status is that turn's."""
    if record.current_turn_id is None:
        return session_object(record, "idle", [], None)
    turn = await services.store.agent_sessions.session_turn(record.current_turn_id)
    if turn is None:
        return session_object(record, "idle", [], None)
    renderer = await replayed(services, record, turn)
    # Only a waiting turn asks for anything: a cancelled or ended one may still hold the calls it stopped at.
    actions = renderer.required_actions() if renderer.status == "waiting" else []
    if actions:
        posted = await services.store.agent_sessions.tool_results(turn.turn_id)
        actions = [action for action in actions if action.get("call_id", action.get("request_id")) not in posted]
    error = renderer.error["message"] if renderer.error else None
    return session_object(record, _SESSION_STATUS[renderer.status], actions, error)


async def turn_items(
    services: Services, record: BetaSessionRecord, turn: SessionTurnRecord
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The turn object and its items: the user's input messages, then what the turn produced, in order."""
    renderer = await replayed(services, record, turn)
    stored = await services.store.turns.get_turn(None, turn.turn_id)
    inputs = []
    for number, message in enumerate(stored.input_messages if stored is not None else []):
        inputs.append(
            {
                "id": f"msg_{turn.turn_id}_input_{number}",
                "type": "message",
                "role": "user",
                "status": "completed",
                "content": [{"type": "input_text", "text": content_as_text(message.content)}],
                "turn_id": turn.turn_id,
            }
        )
    produced = [item for _, item in sorted(renderer.items.values(), key=lambda found: found[0])]
    return renderer.turn_object(), inputs + produced

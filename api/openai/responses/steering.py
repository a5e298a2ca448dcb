"""`response.steer` on a Responses WebSocket: user input queued into a running response.

The successor response is recorded first (its row, a later segment of the same turn, with the steer's input and the
steered response's settings). Then an event of the turn (`steer_cut_key`, which no stream shows) marks the steer for
the model call in flight: it stops at its next token, the steered response ending `incomplete` with what streamed
(activities/inference.py), and a call that may write the turn's end writes none. Then the turn's workflow takes the
input through its `steer` update (workflows/turn_steps/steering.py), which answers once the input is in the workflow's
history — a response's model call is a local activity, holding the workflow task until the mark ends it — and only
then is `response.steer.accepted` sent: from then on the steer survives any crash and is applied once. A call that
saw the mark waits for the steer; if the API died between the two, the turn goes on without it after a minute. A
refused update forgets the row and the input comes back in `response.steer.failed`. The successor's events follow
the steered response's on its lane; after a reconnect, `GET /v1/responses` lists it, its `previous_response_id`
naming the steered one. A response that stops for client tool results or approvals keeps the input for the
caller's resumption instead: `response.steer.pending` names what it waits for.
"""

from __future__ import annotations

import dataclasses
import logging
import uuid
from datetime import UTC, datetime
from typing import Any

from api.openai.responses import ids, view
from api.openai.responses.create import stored_input
from api.openai.responses.input_items import MessageItem
from api.openai.responses.websocket_connection import Connection, Lane, with_lane
from api.turn_gateway import SteerRejected, TurnNotRunning, TurnUnavailable
from domain.content import UserMessage
from domain.turns import TurnStatus
from store.responses.responses import ResponseRecord
from workflows.contracts import SteerSubmission, runtime_event, steer_cut_key

log = logging.getLogger(__name__)


class SteerFailed(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def steer_messages(steering: str | list[dict[str, Any]]) -> list[MessageItem]:
    if isinstance(steering, str):
        return [MessageItem(role="user", content=steering)]
    return [MessageItem.model_validate(item | {"type": "message"}) for item in steering]


async def queue_steer(connection: Connection, record: ResponseRecord, steering: Any, lane: Lane) -> str:
    """Record the successor and hand the turn the input; the steer's id once the workflow holds it."""
    services = connection.services
    messages = steer_messages(steering)
    responses = services.store.responses
    segment = len(await responses.of_turn(record.turn_id))
    successor = dataclasses.replace(
        record,
        response_id=ids.new_response_id(),
        segment_index=segment,
        previous_response_id=record.response_id,
        request=record.request | {"input": stored_input(list(messages))},
        created_at=datetime.now(UTC),
        request_hash=None,
    )
    await responses.add(successor)
    steer_id = "steer_" + uuid.uuid4().hex
    await _mark_for_cut(connection, record, steer_id)
    submission = SteerSubmission(
        steer_id=steer_id,
        segment_id=successor.response_id,
        messages=[UserMessage(content=message.text()) for message in messages],
    )
    try:
        await services.turns.steer(record.turn_id, submission)
    except SteerRejected as refused:
        await responses.forget(successor.response_id)
        raise SteerFailed(refused.code, str(refused)) from refused
    except TurnNotRunning as gone:
        await responses.forget(successor.response_id)
        raise SteerFailed("response_already_completed", f"Response '{record.response_id}' has ended.") from gone
    except TurnUnavailable as unavailable:
        await responses.forget(successor.response_id)
        raise SteerFailed("successor_creation_failed", str(unavailable)) from unavailable
    connection.enqueue(lane, lambda: _follow(connection, record, successor, steer_id, lane))
    return steer_id


async def _mark_for_cut(connection: Connection, record: ResponseRecord, steer_id: str) -> None:
    """Tell the steered response's model call in flight to stop at its next token (and one that may write the turn's
    end not to). A failed write only lets the call run to its end, as a crash before it would."""
    cut = runtime_event(steer_cut_key(record.response_id), "steer_accepted", steer_id=steer_id)
    try:
        await connection.services.store.turns.save_turn_progress(record.turn_id, events=[cut])
    except Exception:
        log.exception("marking response %s steered failed; its model call runs to its end", record.response_id)


async def _follow(
    connection: Connection, steered: ResponseRecord, successor: ResponseRecord, steer_id: str, lane: Lane
) -> None:
    """After the steered response's events (the lane runs this next): the successor's, or, when the turn paused
    for its caller before taking the steer, `response.steer.pending` with what the caller must send — its
    resumption then carries the input, and the successor recorded for it is forgotten."""
    services = connection.services
    begun = (await view.segment(services, successor)).after is not None
    if begun or await services.store.turns.turn_status(steered.turn_id) != TurnStatus.AWAITING_INPUT:
        await connection.stream_record(successor, lane)
        return
    await services.store.responses.forget(successor.response_id)
    output = (await view.response_object(services, steered))["output"]
    required = [
        {"type": "function_call_output", "call_id": item["call_id"], "name": item["name"]}
        for item in output
        if item["type"] == "function_call"
    ] + [
        {"type": "mcp_approval_response", "approval_request_id": item["id"]}
        for item in output
        if item["type"] == "mcp_approval_request"
    ]
    pending = {
        "type": "response.steer.pending",
        "sequence_number": connection.last_sequence.get(steered.response_id, 0),
        "reason": "waiting_for_required_input",
        "required_input": required,
        "steer": {"id": steer_id, "previous_response_id": steered.response_id},
    }
    await connection.send(with_lane(pending, lane))

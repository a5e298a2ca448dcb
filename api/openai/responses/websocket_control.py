"""`response.inject` and `response.steer` on a Responses WebSocket.

Inject hands a response that waits for client-owned tool outputs (or MCP approval decisions) those items. It takes
the path of `POST /v1/responses` with the same items (create.py, `resume_only`): validated, then submitted to the
waiting turn by its workflow's update, which takes them once, so a retried inject cannot apply them twice. The
turn continues as the next response of the chain (its `previous_response_id` names the waiting one), streamed on
the waiting response's lane after `response.inject.created`. Anything that cannot be committed comes back in
`response.inject.failed` with the items, nothing written.

Steer queues user input into a running response (api/openai/responses/steering.py) and answers
`response.steer.accepted`, or `response.steer.failed` with the reason the input cannot be committed: the response
is unknown (or another tenant's, or an unstored one of another connection), has finished, is bound to a
conversation, or its turn refuses the steer; the client keeps its input.
"""

from __future__ import annotations

from typing import Any

from api.openai.errors import OpenAIError
from api.openai.responses import ids, view
from api.openai.responses.create import prior_context, resume_only
from api.openai.responses.request import parse_create
from api.openai.responses.steering import SteerFailed, queue_steer
from api.openai.responses.websocket_connection import ClientEventError, Connection, Lane, with_lane
from store.responses.responses import ResponseRecord

INHERITED = (
    "model",
    "instructions",
    "max_output_tokens",
    "max_tool_calls",
    "metadata",
    "parallel_tool_calls",
    "safety_identifier",
    "store",
    "temperature",
    "text",
    "tool_choice",
    "tools",
    "top_p",
    "truncation",
    "user",
)
"""The settings the response that continues a waiting one takes from it."""
INJECTABLE = frozenset({"function_call_output", "mcp_approval_response"})
IN_FLIGHT = ("queued", "in_progress")


async def _visible(connection: Connection, response_id: str) -> ResponseRecord | None:
    """The caller's response, if it may name it here: stored, or made on this connection."""
    record = await connection.services.store.responses.get(connection.tenant, response_id)
    if record is None or not (record.store or response_id in connection.made):
        return None
    return record


async def inject(connection: Connection, event: dict[str, Any]) -> None:
    response_id, items = event.get("response_id"), event.get("input")
    if not isinstance(response_id, str) or not response_id:
        raise ClientEventError("'response_id' must name the response that waits for these items.", "response_id")
    if not isinstance(items, list) or not items or not all(isinstance(item, dict) for item in items):
        raise ClientEventError("'input' must be a non-empty list of input items.", "input")
    kinds = {item.get("type") for item in items}
    if not kinds <= INJECTABLE:
        raise ClientEventError(
            "'input' of response.inject takes function_call_output and mcp_approval_response items only; "
            f"got {sorted(str(kind) for kind in kinds - INJECTABLE)}.",
            "input",
            "invalid_value",
        )
    lane = connection.made.get(response_id)
    connection.enqueue(lane, lambda: _inject(connection, response_id, items, lane))


async def _inject(connection: Connection, response_id: str, items: list[dict[str, Any]], lane: Lane) -> None:
    async def failed(code: str, message: str) -> None:
        error = {"code": code, "message": message}
        number = connection.last_sequence.get(response_id, 0)
        body = {"type": "response.inject.failed", "response_id": response_id, "sequence_number": number}
        await connection.send(with_lane(body | {"input": items, "error": error}, lane))

    record = await _visible(connection, response_id)
    if record is None:
        return await failed("response_not_found", f"Response with id '{response_id}' not found.")
    answered = [item.get("call_id") or item.get("approval_request_id") for item in items]
    services = connection.services
    waiting = await services.store.turns.pending_calls(connection.tenant, [str(key) for key in answered])
    if any(waiting.get(str(key)) != record.turn_id for key in answered):
        return await failed(
            "response_already_completed",
            f"Response '{response_id}' does not wait for these items (answered already, or never asked for).",
        )
    inherited = {key: record.request[key] for key in INHERITED if key in record.request}
    continuation = {"input": items, "stream": True} | inherited
    if record.conversation_id is not None:
        continuation["conversation"] = record.conversation_id
    else:
        continuation["previous_response_id"] = response_id
    body = parse_create(continuation)
    try:
        context = await prior_context(services, services.store.responses, connection.tenant, body, connection.made)
        key_id = connection.principal.key_id
        created = await resume_only(services, connection.tenant, ids.new_response_id(), body, context, key_id)
    except OpenAIError as refused:
        if refused.status_code >= 500:
            raise
        detail: dict[str, Any] = refused.detail if isinstance(refused.detail, dict) else {}
        return await failed("response_already_completed", str(detail.get("message", refused.detail)))
    if created is None:
        return await failed("response_already_completed", f"Response '{response_id}' no longer waits for input.")
    number = connection.last_sequence.get(response_id, 0)
    body_created = {"type": "response.inject.created", "response_id": response_id, "sequence_number": number}
    await connection.send(with_lane(body_created, lane))
    await connection.stream(created, lane)


async def steer(connection: Connection, event: dict[str, Any]) -> None:
    target, steering = event.get("previous_response_id"), event.get("input")
    lane = connection.made.get(target) if isinstance(target, str) else None

    async def failed(code: str, message: str) -> None:
        number = connection.last_sequence.get(str(target), 0)
        error = {"code": code, "message": message, "type": "invalid_request_error"}
        body = {"type": "response.steer.failed", "sequence_number": number, "error": error}
        await connection.send(with_lane(body | {"steer": {"input": steering, "previous_response_id": target}}, lane))

    if not isinstance(target, str) or not target:
        return await failed("response_not_found", "'previous_response_id' must name the response to steer.")
    if not _steerable_input(steering):
        return await failed(
            "invalid_input", "Steering input is a string or a non-empty list of user messages (type, role, content)."
        )
    record = await _visible(connection, target)
    if record is None:
        return await failed("response_not_found", f"Response with id '{target}' not found.")
    status = (await view.response_object(connection.services, record))["status"]
    if status not in IN_FLIGHT:
        return await failed("response_already_completed", f"Response '{target}' has already ended ({status}).")
    if record.conversation_id is not None:
        return await failed("steering_not_supported", "A response bound to a conversation cannot be steered.")
    try:
        steer_id = await queue_steer(connection, record, steering, lane)
    except SteerFailed as refused:
        return await failed(refused.code, str(refused))
    accepted = {"id": steer_id, "previous_response_id": target}
    number = connection.last_sequence.get(target, 0)
    await connection.send(
        with_lane({"type": "response.steer.accepted", "sequence_number": number, "steer": accepted}, lane)
    )


def _steerable_input(steering: Any) -> bool:
    if isinstance(steering, str):
        return bool(steering)
    if not isinstance(steering, list) or not steering:
        return False
    return all(
        isinstance(item, dict)
        and item.get("type", "message") == "message"
        and item.get("role") == "user"
        and isinstance(item.get("content"), str | list)
        for item in steering
    )

"""`/v1/agents/sessions/{id}/events`: the caller's input events (POST, 202) and the session's event stream
(GET, Server-Sent Events).

Input: `input.message` starts a turn on an idle session and steers the active turn of a busy one
(api/openai/agents/session_steering.py), `input.cancel` cancels the active turn,
`input.tool_result` answers one pending function call, `input.mcp_approval_request_result` decides one pending
MCP call (`approve` runs it; `deny` and `cancel` do not, and the model reads that it was denied, with the
decision's `reason`, our extension). The SDK posts
one result per call while the turn's workflow resumes once per pause, so results and decisions are kept until
every pending call and approval request has one, then delivered together. A call id the session's turn does
not wait for gets exactly the 400 the SDK's retry rule recognises (`Unknown pending tool call: <id>`). With an
Idempotency-Key, a retried post is accepted again and does nothing more.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import Body, Header, Response

from agent_sessions.announce import announce
from agent_sessions.session_turns import SessionBusy, input_messages, start_turn
from api.guards.tenancy import PrincipalDep
from api.openai.agents.routing import beta_router
from api.openai.agents.session_routes import stored_session, streamed
from api.openai.agents.session_steering import steer_active_turn
from api.openai.agents.session_stream import cursor_for, session_sse
from api.openai.agents.session_view import replayed
from api.openai.agents.wire import InputEvents, parse
from api.openai.errors import OpenAIError, invalid
from api.services import Services, ServicesDep
from api.turn_gateway import ResumeRejected, TurnNotRunning, TurnUnavailable
from domain.content import InterleavedContent, TextContentItem, ToolResponse
from domain.turn_settings import ApprovalDecision
from domain.turns import TurnStatus
from store.agent_sessions.sessions import BetaSessionRecord
from tool_runtime.output_limit import truncate_content
from workflows.contracts import ToolResponsesSubmission

router = beta_router(tags=["agent sessions (beta)"])

OUT_OF_SCOPE_INPUTS = {
    "agent.session.input.computer_use_approval_request_result": "computer use is not supported by this server",
}


def unknown_call(call_id: str) -> OpenAIError:
    """Exactly the refusal the SDK retries briefly (lib/streaming/agents/_tools.py, is_pending_call_race)."""
    return OpenAIError(400, f"Unknown pending tool call: {call_id}", "events", "invalid_request_error")


@router.post("/agents/sessions/{session_id}/events", status_code=202)
async def post_events(
    session_id: str,
    raw: Annotated[dict[str, Any], Body(description="{'events': [session input events]}")],
    services: ServicesDep,
    principal: PrincipalDep,
    idempotency_key: Annotated[str | None, Header(max_length=200)] = None,
) -> Response:
    tenant = principal.tenant
    record = await stored_session(services, tenant, session_id)
    sessions = services.store.agent_sessions
    if idempotency_key is not None and await sessions.input_key_seen(tenant, session_id, idempotency_key):
        return Response(status_code=202)
    body = parse(InputEvents, raw, "events")
    for index, event in enumerate(body.events):
        kind = event.get("type")
        if kind == "agent.session.input.message":
            try:
                await start_turn(services, tenant, session_id, event.get("input"), idempotency_key)
            except SessionBusy:
                messages = input_messages(event.get("input"))
                await steer_active_turn(services, record, messages, idempotency_key, index)
        elif kind == "agent.session.input.cancel":
            await _cancel(services, record)
        elif kind == "agent.session.input.tool_result":
            await _tool_result(services, record, event)
        elif kind == "agent.session.input.mcp_approval_request_result":
            await _approval_result(services, record, event, index, principal.key_id)
        elif kind in OUT_OF_SCOPE_INPUTS:
            raise invalid(f"events[{index}]: {kind} is not accepted: {OUT_OF_SCOPE_INPUTS[kind]}.", "events")
        else:
            raise invalid(f"events[{index}]: unknown input event type {kind!r}.", "events")
    if idempotency_key is not None:
        await sessions.remember_input_key(tenant, session_id, idempotency_key, datetime.now(UTC))
    return Response(status_code=202)


async def _cancel(services: Services, record: BetaSessionRecord) -> None:
    """Cancel the session's active turn; with none active there is nothing to do (a cancel that crossed the
    turn's end is not an error)."""
    fresh = await services.store.agent_sessions.session(record.tenant_id, record.session_id)
    turn_id = fresh.current_turn_id if fresh is not None else None
    if turn_id is None:
        return
    status = await services.store.turns.turn_status(turn_id)
    if status is not None and not status.is_final:
        await services.turns.cancel(turn_id)


def _content(event: dict[str, Any], call_id: str) -> tuple[Any, bool]:
    """The result's content for the model, and whether the caller's tool failed."""
    if event.get("success") is False:
        error = event.get("error")
        return (str(error) if error else "The tool failed."), True
    output = event.get("output")
    if output is None or isinstance(output, str):
        return output or "", False
    if isinstance(output, list):
        parts = []
        for part in output:
            if isinstance(part, dict) and part.get("type") == "input_text":
                parts.append({"type": "text", "text": str(part.get("text", ""))})
            elif isinstance(part, dict) and part.get("type") == "input_image":
                parts.append({"type": "text", "text": f"[image: {part.get('image_url') or part.get('file_id')}]"})
            else:
                raise invalid(
                    f"The output of tool call {call_id} has a part this server cannot read: {part!r}.", "events"
                )
        return parts, False
    raise invalid(f"The output of tool call {call_id} must be a string or a list of input_text parts.", "events")


async def _tool_result(services: Services, record: BetaSessionRecord, event: dict[str, Any]) -> None:
    call_id = str(event.get("call_id") or "")
    turn_id = str(event.get("turn_id") or "")
    sessions = services.store.agent_sessions
    turn = await sessions.session_turn(turn_id) if turn_id else None
    if turn is None or turn.session_id != record.session_id:
        raise unknown_call(call_id)
    if await services.store.turns.turn_status(turn_id) != TurnStatus.AWAITING_INPUT:
        raise unknown_call(call_id)
    stored = await services.store.turns.get_turn(None, turn_id)
    calls = {
        call.call_id: call for call in (stored.output_message.tool_calls if stored and stored.output_message else [])
    }
    if call_id not in calls:
        raise unknown_call(call_id)
    content, failed = _content(event, call_id)
    await _answer(services, record, turn_id, call_id, content, failed)


async def _approval_result(
    services: Services, record: BetaSessionRecord, event: dict[str, Any], index: int, key_id: str
) -> None:
    """Keep one request's decision with who made it (the caller's key id) and when; `response.reason` is our
    extension: why, which a denial's model reads."""
    request_id = str(event.get("request_id") or "")
    response = event.get("response")
    decision = response.get("decision") if isinstance(response, dict) else None
    if not isinstance(response, dict) or response.get("type") != "mcp_tool_call" or decision not in DECISIONS:
        raise invalid(
            f"events[{index}].response must be {{'type': 'mcp_tool_call', 'decision': 'approve' | 'deny' | 'cancel'}}.",
            "events",
        )
    reason = response.get("reason")
    if reason is not None and (not isinstance(reason, str) or len(reason) > REASON_MAX):
        raise invalid(f"events[{index}].response.reason must be a string of at most {REASON_MAX} characters.", "events")
    fresh = await services.store.agent_sessions.session(record.tenant_id, record.session_id)
    current = [fresh.current_turn_id] if fresh is not None and fresh.current_turn_id is not None else []
    turn_id = (await services.store.turns.pending_calls(record.tenant_id, [request_id], current)).get(request_id)
    if turn_id is None:
        raise invalid(
            f"No MCP approval request {request_id!r} is pending on session {record.session_id}: answer the "
            "request_id of one of the session's required_actions.",
            "events",
        )
    decided = {
        "decision": decision,
        "reason": reason,
        "decided_by": key_id,
        "decided_at": datetime.now(UTC).isoformat(),
    }
    await _answer(services, record, turn_id, request_id, decided, False)


DECISIONS = ("approve", "deny", "cancel")
REASON_MAX = 2000


async def _answer(
    services: Services, record: BetaSessionRecord, turn_id: str, answered: str, content: Any, failed: bool
) -> None:
    """Keep one call's result or one request's decision; once every pending one has its own, resume the turn
    with all of them."""
    sessions = services.store.agent_sessions
    results = await sessions.add_tool_result(turn_id, answered, content, failed)
    stored = await services.store.turns.get_turn(None, turn_id)
    calls = {
        call.call_id: call for call in (stored.output_message.tool_calls if stored and stored.output_message else [])
    }
    turn = await sessions.session_turn(turn_id)
    assert turn is not None
    requests = [
        action["request_id"]
        for action in (await replayed(services, record, turn)).required_actions()
        if action["type"] == "mcp_approval_request"
    ]
    if any(pending not in results for pending in [*calls, *requests]):
        return  # more to come: the turn resumes with all of them
    limit = services.settings.max_tool_output_chars
    responses = []
    for pending, call in calls.items():
        body, is_error = results[pending]
        value: InterleavedContent = body if isinstance(body, str) else [TextContentItem.model_validate(p) for p in body]
        responses.append(
            ToolResponse(
                call_id=pending,
                tool_name=call.tool_name,
                content=truncate_content(value, limit),
                metadata={"is_error": True} if is_error else None,
            )
        )
    decisions = [_decision(request, results[request][0], record.tenant_id) for request in requests]
    try:
        mark = await services.turns.submit(
            turn_id, ToolResponsesSubmission(tool_responses=responses, approvals=decisions)
        )
    except ResumeRejected as refused:
        if not refused.conflict:
            raise invalid(f"Turn {turn_id} did not take the results: {refused}", "events") from refused
        # It no longer waits: these results resumed it already (an attempt of the update that reached the
        # workflow while a worker was being replaced), or another post of them did.
    except TurnNotRunning as gone:
        raise invalid(f"Turn {turn_id} has ended; its calls wait for nothing.", "events") from gone
    except TurnUnavailable as unavailable:
        raise OpenAIError(503, str(unavailable)) from unavailable
    else:  # the turn works again, as the session's event stream says with its `agent.session.in_progress`
        resumed = f"pause{mark}"
        await announce(services, record.tenant_id, "agent.session.in_progress", record.session_id, turn_id, resumed)
    await sessions.forget_tool_results(turn_id)


def _decision(request_id: str, kept: dict[str, Any], tenant: str) -> ApprovalDecision:
    """The decision as `_approval_result` kept it (one kept by an earlier release has only `decision`)."""
    decision = kept["decision"]
    reason = kept.get("reason") or ("the user dismissed the request" if decision == "cancel" else None)
    decided_at = kept.get("decided_at")
    return ApprovalDecision(
        approval_request_id=request_id,
        approve=decision == "approve",
        reason=reason,
        decided_by=kept.get("decided_by"),
        tenant=tenant if kept.get("decided_by") else None,
        decided_at=datetime.fromisoformat(decided_at) if decided_at else None,
    )


@router.get("/agents/sessions/{session_id}/events")
async def stream_events(
    session_id: str,
    services: ServicesDep,
    principal: PrincipalDep,
    last_event_id: Annotated[str | None, Header(max_length=200)] = None,
    after: str | None = None,
    include_obfuscation: bool | None = None,
) -> Any:
    """The session's events: its active turn's from the start (or only what follows `Last-Event-ID` /
    `after`, when resuming), then each later turn's, live, until the client leaves."""
    record = await stored_session(services, principal.tenant, session_id)
    cursor = await cursor_for(services, record, after or last_event_id)  # before answering: no input is missed
    return streamed(services, principal, session_sse(services, record, cursor))
